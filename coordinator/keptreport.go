package coordinator

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/ralph-dev/ralph/mdstate"
)

// An iteration's outcome and its agent's report are one step. The task's
// status, the iteration's result (outcome, tokens, cost) and the agent's
// report (summary, learnings, to-dos, decisions, and the guidance it
// answered) are saved in one write of RALPH_TASKS.md, the report in the
// session block under the result (mdstate.IterationReport); the report
// goes to AGENT.md, RALPH_TODO.md and the progress entry after it. So a
// kill or an error in between never leaves the status without the report
// (a learning, a to-do, the summary and decisions once were lost for
// good): a session recovered with a result files what of it is missing
// (restoreEntry), the learnings and to-dos not there yet and the progress
// entry with its summary and decisions. The next write of the session,
// after the entry, drops both.

// iterationReport is what the session keeps of an agent's report and
// the guidance it answered, with the secrets r knows redacted as in the
// progress entry; nil when there is nothing to keep.
func iterationReport(rep AgentReport, delivered []string, r *redactor) *mdstate.IterationReport {
	k := mdstate.IterationReport{Summary: r.redact(rep.Summary), Learnings: redactAll(rep.Learnings, r),
		Todos: redactAll(rep.Todos, r), Decisions: redactAll(rep.Decisions, r), Guidance: redactAll(delivered, r)}
	if k.Summary == "" && len(k.Learnings)+len(k.Todos)+len(k.Decisions)+len(k.Guidance) == 0 {
		return nil
	}
	return &k
}

// redactAll is texts with the secrets r knows redacted.
func redactAll(texts []string, r *redactor) []string {
	if texts == nil {
		return nil
	}
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = r.redact(t)
	}
	return out
}

// recordOutcome saves an iteration's outcome and files its agent's report
// as one step: the report is kept with the task's status and the
// iteration's result in one write, then the learnings and to-dos are
// filed. The same write takes the guidance the agent answered (delivered)
// off the queue, and may begin the next iteration (ahead.go). The progress
// entry, with the summary and decisions and what could not be filed,
// follows (iterate).
func (c *Coordinator) recordOutcome(ctx context.Context, task *mdstate.Item, a attempt, d *decision, delivered []string) (filed, error) {
	c.delivered = delivered
	if err := c.saveOutcome(task, a, d, iterationReport(a.Report, delivered, c.opts.redactor()), c.mayBeginAhead(ctx, a, d)); err != nil {
		// Still queued: whoever writes the session next leaves it there.
		c.delivered = nil
		return filed{}, err
	}
	return c.fileReport(a.Report)
}

// keptReport is the report an older ralph kept in .ralph/report.json
// instead of the session block.
type keptReport struct {
	Session   string   `json:"session"`
	Iteration int      `json:"iteration"`
	Task      string   `json:"task"`
	Summary   string   `json:"summary,omitempty"`
	Learnings []string `json:"learnings,omitempty"`
	Todos     []string `json:"todos,omitempty"`
	Decisions []string `json:"decisions,omitempty"`
	Guidance  []string `json:"guidance,omitempty"`
}

func keptReportPath(root string) string {
	return filepath.Join(root, mdstate.RuntimeDir, "report.json")
}

// reportKeptFor returns the report kept for the iteration old was in: the
// session's, or for a session an older ralph saved, the one it kept in
// .ralph/report.json if it names that iteration. It is empty when none was
// kept.
func reportKeptFor(root string, old *mdstate.Session) *mdstate.IterationReport {
	if old.Report != nil {
		return old.Report
	}
	data, err := os.ReadFile(keptReportPath(root))
	if err != nil {
		return &mdstate.IterationReport{}
	}
	var k keptReport
	if json.Unmarshal(data, &k) != nil || k.Session != old.ID || k.Iteration != old.Iteration || k.Task != old.Task {
		return &mdstate.IterationReport{}
	}
	return &mdstate.IterationReport{Summary: k.Summary, Learnings: k.Learnings, Todos: k.Todos, Decisions: k.Decisions, Guidance: k.Guidance}
}

// finishKeptReport files the learnings and to-dos of the report kept for
// the interrupted iteration old, and returns it for its progress entry,
// with the guidance its agent answered.
func (c *Coordinator) finishKeptReport(old *mdstate.Session) (AgentReport, []string, filed, error) {
	k := reportKeptFor(c.opts.Root, old)
	rep := AgentReport{Summary: k.Summary, Learnings: k.Learnings, Todos: k.Todos, Decisions: k.Decisions}
	f, err := c.fileReport(rep)
	return rep, k.Guidance, f, err
}
