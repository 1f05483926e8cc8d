package cli

import (
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// agentGCPercent is the garbage collector's rate for the commands that run
// agents (the runtime's default). ralph's main sets a fifth of it for every
// command (GOGC=400): most live for milliseconds and allocate a few
// megabytes, and a collection would cost more than it saves. A command
// that runs agents lives for as many iterations as there are tasks, and
// an iteration allocates about 300 KB: at that rate the heap does not
// reach its first goal (16 MB) in a 50-task run, so every iteration's
// allocations land on pages never touched before, and each first touch is
// a page fault (about 55 an iteration, some 25 µs each on a virtual
// machine). At the default rate the heap is collected every 4 MB or so
// and goes round the pages it has: 50-task runs of the instant agent, 16
// pairs in turns, 11.09 -> 10.09 ms an iteration, 19.2 -> 16.8 ms of CPU
// (every process) an iteration (docs/benchmarks.md). GOGC, when set,
// still decides.
const agentGCPercent = 100

// collectForAgents sets agentGCPercent for a command that runs agents.
func (f *Factory) collectForAgents(cmd *cobra.Command) {
	if !runsAgents(cmd) || slices.ContainsFunc(f.Env.Environ, func(kv string) bool { return strings.HasPrefix(kv, "GOGC=") }) {
		return
	}
	debug.SetGCPercent(agentGCPercent)
}
