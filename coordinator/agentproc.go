package coordinator

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/ralph-dev/ralph/mdstate"
)

// The running agent's process ID is a runtime detail: it changes with
// every iteration and tells a person nothing, so it is kept in
// .ralph/agent.json, not in the Session section. Losing it loses nothing:
// recovery also finds an interrupted session's processes by their mark
// (killSurvivors).

// AgentProcess is the agent process a session's iteration started.
type AgentProcess struct {
	Session   string `json:"session"`
	Iteration int    `json:"iteration"`
	Task      string `json:"task"`
	PID       int    `json:"pid"` // the agent's process and group ID
	// Start is the process's start time in clock ticks since boot, so
	// that recovery stops that process and never one that reused its pid.
	Start uint64 `json:"start,omitempty"`
}

func agentProcessPath(root string) string {
	return filepath.Join(root, mdstate.RuntimeDir, "agent.json")
}

// RunningAgent returns the agent process the project's coordinator
// recorded last, if any: the one at work now, or, when ralph was killed,
// the one it left. Between two iterations of a run it is the last one's,
// which has ended (its Iteration says which). ok is false when none is
// recorded.
func RunningAgent(root string) (a AgentProcess, ok bool) {
	data, err := os.ReadFile(agentProcessPath(root))
	if err != nil || json.Unmarshal(data, &a) != nil || a.PID <= 0 {
		return AgentProcess{}, false
	}
	return a, true
}

// recordAgent keeps a's record, replacing the last one. Not flushed: the
// record serves a ralph that died while the machine ran on (a crash of the
// machine leaves no agent to stop), and a record torn by one is no record.
func recordAgent(root string, a AgentProcess) error {
	data, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(root, mdstate.RuntimeDir), 0o755); err != nil {
		return err
	}
	return mdstate.ReplaceFile(agentProcessPath(root), append(data, '\n'), 0o644)
}

// dropAgentRecord forgets the last agent process once the run that
// started it is over: an empty record is none (emptied, not removed: the
// next run's record then creates no file). Between two iterations the
// last one's record stays, as it would after a crash: recovery stops the
// process it names only if it is that iteration's and still runs (pid
// and start time), and the next agent's record replaces it. Emptying it
// after each agent cost a journaled truncate, 80 µs on ext4, between the
// agent's end and the next one's start. One that cannot be emptied does no
// harm, for the same reason.
func dropAgentRecord(root string) { _ = os.Truncate(agentProcessPath(root), 0) }

// agentOf returns the agent process session old's iteration left, from
// the record, or from the Session section of a file an older ralph wrote.
func agentOf(root string, old *mdstate.Session) (pid int, start uint64) {
	if a, ok := RunningAgent(root); ok && a.Session == old.ID && a.Iteration == old.Iteration {
		return a.PID, a.Start
	}
	return old.Child, old.ChildStart
}
