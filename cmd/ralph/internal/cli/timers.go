package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/coordinator/proc"
)

// agentTimerSlack is the timer slack of a command that runs agents
// (proc.RelaxTimers): its timers may fire up to a millisecond late, far
// below anything it times (a second's status line, a 50 ms debounce, a
// grace of seconds). The Linux default, 50 µs, had the Go runtime's
// monitor thread wake 33 times an iteration of a run of short agents:
// with 1 ms, 50-task runs took 5.75 -> 4.75 ms of ralph's CPU and 10.36 ->
// 9.78 ms an iteration (14 pairs in turns; the agents keep their own
// slack). 5 ms saved no more time.
const agentTimerSlack = time.Millisecond

// relaxTimers gives a command that runs agents agentTimerSlack.
func (f *Factory) relaxTimers(cmd *cobra.Command) {
	if runsAgents(cmd) {
		proc.RelaxTimers(agentTimerSlack)
	}
}
