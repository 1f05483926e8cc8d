package coordinator

import (
	"context"
	"encoding/json"
	"errors"
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
//
// The record and the status are written as one step of mdstate's
// (Project.UpdateChecklistAfter): their temporary files at once, then the
// record renamed into place, then the task file swapped in, then both
// folders flushed at once. A kill between the two renames leaves a record
// for an iteration the task file does not say is being written, which
// recovery ignores (it names its session, iteration and task); after both,
// recovery files it. mdstate's Record documents the ordering rule.

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
	// Guidance is the queued guidance the agent received and answered,
	// taken off the queue by the same write as the outcome.
	Guidance []string `json:"guidance,omitempty"`
}

func keptReportPath(root string) string {
	return filepath.Join(root, mdstate.RuntimeDir, "report.json")
}

// reportRecord is the record of the current iteration's report, which
// replaces the last iteration's.
func (c *Coordinator) reportRecord(task string, rep AgentReport, delivered []string) (mdstate.Record, error) {
	k := keptReport{Session: c.session.ID, Iteration: c.session.Iteration, Task: task,
		Summary: rep.Summary, Learnings: rep.Learnings, Todos: rep.Todos, Decisions: rep.Decisions, Guidance: delivered}
	data, err := json.MarshalIndent(k, "", "  ")
	if err != nil {
		return mdstate.Record{}, err
	}
	return mdstate.Record{Path: keptReportPath(c.opts.Root), Data: append(data, '\n'), Perm: 0o600}, nil
}

// reportKeptError says that the report could not be kept, when err is the
// record's failure.
func reportKeptError(err error) error {
	var rec *mdstate.RecordError
	if errors.As(err, &rec) {
		return ioError("keep the agent's report", rec.Err)
	}
	return err
}

// recordOutcome saves an iteration's outcome and files its agent's report
// as one step: the report is kept with the task's status and the
// iteration's result (one step of mdstate's, the report first), then the
// learnings and to-dos are filed. The same write takes the guidance the
// agent answered (delivered) off the queue, and may begin the next
// iteration (ahead.go). The progress entry, with the summary and decisions
// and what could not be filed, follows (iterate).
func (c *Coordinator) recordOutcome(ctx context.Context, task *mdstate.Item, a attempt, d *decision, delivered []string) (filed, error) {
	rec, err := c.reportRecord(task.ID, a.Report, delivered)
	if err != nil {
		return filed{}, err
	}
	c.delivered = delivered
	if err := c.saveOutcome(task, a, d, &rec, c.mayBeginAhead(ctx, a, d)); err != nil {
		// Still queued: whoever writes the session next leaves it there.
		c.delivered = nil
		return filed{}, reportKeptError(err)
	}
	return c.fileReport(a.Report)
}

// reportKeptFor returns the report kept for the iteration old was in, and
// the guidance its agent answered, or nothing when none was kept (an
// older ralph, a deleted .ralph/) or the record is another iteration's.
func reportKeptFor(root string, old *mdstate.Session) (AgentReport, []string) {
	data, err := os.ReadFile(keptReportPath(root))
	if err != nil {
		return AgentReport{}, nil
	}
	var k keptReport
	if json.Unmarshal(data, &k) != nil || k.Session != old.ID || k.Iteration != old.Iteration || k.Task != old.Task {
		return AgentReport{}, nil
	}
	return AgentReport{Summary: k.Summary, Learnings: k.Learnings, Todos: k.Todos, Decisions: k.Decisions}, k.Guidance
}

// finishKeptReport files the learnings and to-dos of the report kept for
// the interrupted iteration old, and returns it for its progress entry,
// with the guidance its agent answered.
func (c *Coordinator) finishKeptReport(old *mdstate.Session) (AgentReport, []string, filed, error) {
	rep, delivered := reportKeptFor(c.opts.Root, old)
	f, err := c.fileReport(rep)
	return rep, delivered, f, err
}

// dropKeptReport takes the record out of place once the progress entry
// is written (mdstate.RetireRecord). One that cannot be does no harm: it
// names an iteration that is over, and recovery ignores it.
func dropKeptReport(root string) {
	mdstate.RetireRecord(keptReportPath(root))
}
