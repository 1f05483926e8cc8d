package coordinator

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/ralph-dev/ralph/mdstate"
)

// An iteration's outcome and its agent's report are one step. The task's
// status (with the iteration's result: outcome, tokens, cost) is saved in
// one write of RALPH_TASKS.md; the report goes to AGENT.md, RALPH_TODO.md
// and the progress entry after it. So that a kill or an error in between
// never leaves the status without the report (a learning, a to-do, the
// summary and decisions once were lost for good), the report is kept
// first, durably, in .ralph/report.json, a write-ahead record like the
// progress journal. A session recovered in phase "writing" files what of
// it is missing (restoreEntry): learnings and to-dos not there yet, and
// the progress entry with its summary and decisions.

// keptReport is the record in .ralph/report.json: the iteration it
// belongs to and what its agent reported.
type keptReport struct {
	Session   string   `json:"session"`
	Iteration int      `json:"iteration"`
	Task      string   `json:"task"`
	Summary   string   `json:"summary,omitempty"`
	Learnings []string `json:"learnings,omitempty"`
	Todos     []string `json:"todos,omitempty"`
	Decisions []string `json:"decisions,omitempty"`
}

func keptReportPath(root string) string {
	return filepath.Join(root, mdstate.RuntimeDir, "report.json")
}

// keepReport records the current iteration's report before its outcome is
// saved. It replaces the last iteration's record.
func (c *Coordinator) keepReport(task string, rep AgentReport) error {
	k := keptReport{Session: c.session.ID, Iteration: c.session.Iteration, Task: task,
		Summary: rep.Summary, Learnings: rep.Learnings, Todos: rep.Todos, Decisions: rep.Decisions}
	data, err := json.MarshalIndent(k, "", "  ")
	if err != nil {
		return err
	}
	path := keptReportPath(c.opts.Root)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return ioError("keep the agent's report", err)
	}
	if err := mdstate.WriteFileAtomic(path, append(data, '\n'), 0o600); err != nil {
		return ioError("keep the agent's report", err)
	}
	return nil
}

// recordOutcome saves an iteration's outcome and files its agent's report
// as one step: the report is kept, then the task's status and the
// iteration's result are saved, then the learnings and to-dos are filed.
// The progress entry, with the summary and decisions and what could not
// be filed, follows (iterate).
func (c *Coordinator) recordOutcome(task *mdstate.Item, a attempt, d *decision) (filed, error) {
	if err := c.keepReport(task.ID, a.Report); err != nil {
		return filed{}, err
	}
	if err := c.saveOutcome(task, a, d); err != nil {
		return filed{}, err
	}
	return c.fileReport(a.Report)
}

// reportKeptFor returns the report kept for the iteration old was in, or
// an empty one when none was kept (an older ralph, a deleted .ralph/) or
// the record is another iteration's.
func reportKeptFor(root string, old *mdstate.Session) AgentReport {
	data, err := os.ReadFile(keptReportPath(root))
	if err != nil {
		return AgentReport{}
	}
	var k keptReport
	if json.Unmarshal(data, &k) != nil || k.Session != old.ID || k.Iteration != old.Iteration || k.Task != old.Task {
		return AgentReport{}
	}
	return AgentReport{Summary: k.Summary, Learnings: k.Learnings, Todos: k.Todos, Decisions: k.Decisions}
}

// finishKeptReport files the learnings and to-dos of the report kept for
// the interrupted iteration old, and returns it for its progress entry.
func (c *Coordinator) finishKeptReport(old *mdstate.Session) (AgentReport, filed, error) {
	rep := reportKeptFor(c.opts.Root, old)
	f, err := c.fileReport(rep)
	return rep, f, err
}

// dropKeptReport removes the record once the progress entry is written.
// One that cannot be removed does no harm: it names an iteration that is
// over, and recovery ignores it.
func dropKeptReport(root string) {
	_ = os.Remove(keptReportPath(root))
}
