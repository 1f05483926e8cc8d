package coordinator

import (
	"cmp"
	"fmt"
	"strconv"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/mdstate"
)

// resume continues the session recorded in RALPH_TASKS.md, if it was
// interrupted (it says running, but this coordinator now holds the lock, so
// its ralph is gone) or paused: the same id, iteration counter, token and
// cost totals, git baseline and start time. After an interruption it first
// stops the recorded agent if that very process still runs, puts the task
// it was doing back to pending with attempts+1 and a note saying when and
// in which phase it was cut short, and records a "recovered" progress
// entry. It reports whether it resumed.
func (c *Coordinator) resume() (bool, error) {
	tasks, err := c.p.LoadChecklist(mdstate.TasksKind)
	if err != nil {
		return false, err
	}
	old, _ := tasks.Session()
	if old == nil {
		return false, nil
	}
	switch old.Status {
	case mdstate.SessionRunning, mdstate.SessionInterrupted, mdstate.SessionPaused:
	default:
		return false, nil
	}
	// Killed as it ended (interrupted), or as a --new-session run ended
	// it (paused): it is ended, not resumed.
	if ended, err := c.endedAlready(old); err != nil || ended {
		return false, err
	}
	interrupted := old.Status != mdstate.SessionPaused
	c.session = c.continued(old)
	if interrupted {
		// Recovered even when a new session follows: the agent stopped,
		// the task put back, a lost entry written.
		if err := c.recoverInterrupted(old, tasks); err != nil {
			return false, err
		}
	}
	if c.opts.NewSession {
		c.pace.retry = ""
		return false, c.endReplaced()
	}
	if !interrupted {
		if err := c.saveSession(nil); err != nil {
			return false, err
		}
	}
	c.emit(Event{Kind: EventResumed, Session: old.ID, Task: old.Task, Iteration: old.Iteration, Text: resumedText(old, interrupted)})
	return true, nil
}

// continued is the session old, running again under this coordinator.
func (c *Coordinator) continued(old *mdstate.Session) mdstate.Session {
	s := *old
	// Runtime details live in .ralph/ (agentproc.go) and the lock, not here.
	s.Status, s.Phase, s.Reason, s.PID, s.Line = mdstate.SessionRunning, mdstate.PhaseStarting, "", 0, 0
	s.Child, s.ChildStart, s.Result, s.Report = 0, 0, nil, nil
	if !s.WaitUntil.IsZero() {
		c.pace.retry = s.Task // a limit stopped it: it goes first after the wait
	}
	s.Agent, s.Model = c.opts.Agent.Name(), c.opts.Model
	if n := c.iterationLimit(); n > 0 {
		s.MaxIterations = s.Iteration + n
	}
	return s
}

func resumedText(old *mdstate.Session, interrupted bool) string {
	how := "paused"
	if interrupted {
		how = "interrupted"
	}
	what := fmt.Sprintf("resuming session %s (%s at iteration %d", old.ID, how, old.Iteration)
	if old.Task != "" {
		what += ", task " + old.Task
	}
	if interrupted && old.Phase != "" {
		what += ", phase " + string(old.Phase)
	}
	return what + ")"
}

// recoverInterrupted cleans up after a session's coordinator died: it
// stops the recorded agent if that very process (or what is left of its
// group) still runs, writes the last iteration's entry if it was lost,
// records a "recovered" entry, and puts the task that was in progress back
// to pending with attempts+1 and a note (skipped once the attempts reach
// --max-attempts), in the write that saves the session as running again.
// A kill in the middle repeats it: the entry is written once, the attempt
// counted once.
func (c *Coordinator) recoverInterrupted(old *mdstate.Session, tasks *mdstate.Checklist) error {
	killed := 0
	if pid, start := agentOf(c.opts.Root, old); pid > 0 {
		if ok, err := proc.KillGroupIfSame(pid, start); err != nil {
			return fmt.Errorf("stop the interrupted session's agent (pid %d): %w", pid, err)
		} else if ok {
			killed = pid
		}
	}
	dropAgentRecord(c.opts.Root)
	c.killSurvivors(old)
	var task *mdstate.Item
	if old.Task != "" {
		if t := tasks.Find(old.Task); t != nil && t.Status == mdstate.InProgress {
			task = t
		}
	}
	// Killed after iterate saved the task's new status but before its
	// progress entry was appended: the entry is written now, before the
	// session moves on (phase "starting").
	if err := c.restoreEntry(resultIteration(old), tasks); err != nil {
		return err
	}
	// With --commit, killed before the task's commit: it is made now,
	// with the task's entry and before recovery's own (commit.go).
	c.finishTaskCommit(old, tasks)
	// The entry before the session's write: a kill between the two
	// writes it again, rather than not at all.
	if err := c.appendEntry(recoveredEntry(c.opts.Now(), old, killed)); err != nil {
		return err
	}
	return c.saveSession(func(e *mdstate.ChecklistEdit) error {
		if task == nil {
			return nil
		}
		return c.putBack(e, task, old)
	})
}

// killSurvivors stops whatever the interrupted session's agents left
// running. When ralph dies, the supervisor of its agent kills everything
// the agent started (proc's Containment); when the supervisor was killed
// too (kill -9 of every ralph process, the OOM killer), the processes that
// left the agent's group live on, but they carry the session's mark.
// Failing to stop one is told, not fatal: the work can go on beside it.
func (c *Coordinator) killSurvivors(old *mdstate.Session) {
	n, err := proc.KillMarked(sessionMark(c.opts.Root, old.ID))
	switch {
	case err != nil:
		c.emit(Event{Kind: EventNotice, Text: "ralph could not stop every process the interrupted session's agent left running: " + err.Error()})
	case n > 0:
		c.emit(Event{Kind: EventNotice, Text: fmt.Sprintf("stopped %d processes the interrupted session's agent left running", n)})
	}
}

// sessionMark is the mark (proc.Cmd.Mark) on the processes of a session's
// agents: the session's id and the project's root, since ids are times
// and two projects can start sessions in the same second.
func sessionMark(root, id string) string {
	return id + "@" + root
}

// putBack returns an interrupted session's task to pending with
// attempts+1 and a note, or skips it once its attempts are used up. A
// task interrupted again has one note counting the times (failnote.go).
func (c *Coordinator) putBack(e *mdstate.ChecklistEdit, task *mdstate.Item, old *mdstate.Session) error {
	attempts := task.Attempts + 1
	status := mdstate.Pending
	note := countedNote{kind: noteInterrupted, reason: recoveredReason(orNone(string(old.Phase)), old.Iteration), times: 1, last: old.Updated}
	if attempts >= c.opts.MaxAttempts {
		status, note.gaveUp = mdstate.Skipped, skippedNote(giveUpAttempts, attempts)
	}
	if err := e.SetStatus(task.ID, status); err != nil {
		return err
	}
	if err := e.SetMeta(task.ID, "attempts", strconv.Itoa(attempts)); err != nil {
		return err
	}
	return addCounted(e, task.ID, note)
}

// endReplaced ends the session a --new-session run replaces, with its
// summary entry, as a clean finish would (end): the summary, then the
// session saved ended; or, when the summary cannot be written, saved in
// phase "ending", for the next start to write it.
func (c *Coordinator) endReplaced() error {
	c.session.Phase, c.session.Reason = mdstate.PhaseEnding, string(StopReplaced)
	if err := c.summarize(Outcome{Reason: StopReplaced, Detail: "a new session (--new-session) replaced it"}); err != nil {
		_ = c.saveSession(nil) // may fail the same way; then the session stays as recovery left it
		return err
	}
	c.session.Status, c.session.Phase = mdstate.SessionEnded, ""
	return c.saveSession(nil)
}

// restoreEntry writes the progress entry of an interrupted session's last
// iteration when ralph was killed in phase "writing", after it saved the
// task's new status with the iteration's result but before it appended the
// entry. Without it the session's totals would count tokens no entry shows,
// and a done task would have no "outcome: done" entry. The entry, if it was
// written, is no older than that save (the session's "updated"), and names
// the task's ID (a person may have renamed it since) and the iteration. A
// session saved by an older ralph has no result: a done task still gets
// its entry, without duration, tokens or cost.
func (c *Coordinator) restoreEntry(old *mdstate.Session, tasks *mdstate.Checklist) error {
	if old.Phase != mdstate.PhaseWriting || old.Task == "" || old.Iteration == 0 {
		return nil
	}
	t := tasks.Find(old.Task)
	switch {
	case t == nil && old.Result != nil:
		// A person removed the task meanwhile: its entry still counts.
		t = &mdstate.Item{ID: old.Task, Title: "(removed from " + mdstate.TasksFile + ")"}
	case t == nil || (old.Result == nil && t.Status != mdstate.Done):
		return nil
	}
	log, err := c.p.ReadProgress(1000)
	if err != nil {
		return err
	}
	since := old.Updated.Truncate(time.Second)
	if since.IsZero() {
		since = old.Started.Truncate(time.Second)
	}
	if hasIterationEntry(log, t.ID, old.Iteration, since) {
		return nil // written before the kill
	}
	rep, delivered, unfiled, err := c.finishKeptReport(old)
	if err != nil {
		return err
	}
	e := restoredEntry(c.opts.Now(), old, t, rep, delivered)
	e.Fields = append(e.Fields, unfiled.fields()...)
	return c.appendEntry(redactEntry(e, c.opts.redactor()))
}

// resultIteration is the session as it was when the result it holds was
// saved: old itself, or, when the write that saved the result began the
// next iteration (ahead.go), old in phase "writing" of the iteration the
// result names.
func resultIteration(old *mdstate.Session) *mdstate.Session {
	r := old.Result
	if r == nil || r.Task == "" {
		return old
	}
	s, own := *old, *r
	s.Iteration, s.Task, s.Phase = r.Iteration, r.Task, mdstate.PhaseWriting
	own.Iteration, own.Task = 0, ""
	s.Result = &own
	return &s
}

// summarize records a session's end in the progress log.
func (c *Coordinator) summarize(out Outcome) error {
	s := &c.session
	e := summaryEntry(c.opts.Now(), s, string(out.Reason), c.opts.Now().Sub(s.Started), out.Detail)
	return c.appendEntry(e)
}

// endedAlready ends the recorded session old when it had ended: its
// summary is the progress log's last entry (ralph was killed between the
// summary and the session's last save: end), or it was saved in phase
// "ending" (the summary could not be written, or an older ralph saved
// "ending" before it wrote the summary). It reports whether it did.
func (c *Coordinator) endedAlready(old *mdstate.Session) (bool, error) {
	log, err := c.p.ReadProgress(1)
	if err != nil {
		return false, err
	}
	var summary *mdstate.Entry
	if n := len(log.Recent); n > 0 && isSummaryOf(log.Recent[n-1], old.ID) {
		summary = &log.Recent[n-1]
	}
	if summary == nil && old.Phase != mdstate.PhaseEnding {
		return false, nil
	}
	return true, c.finishEnded(old, summary)
}

// finishEnded completes a session that was killed while it ended: its
// summary entry is written when there is none (summary is nil), and the
// session is recorded as ended, for the reason its summary gives. The run
// then starts a new session.
func (c *Coordinator) finishEnded(old *mdstate.Session, summary *mdstate.Entry) error {
	reason := old.Reason
	if summary != nil {
		reason = summaryReason(*summary, reason)
	} else {
		e := summaryEntry(c.opts.Now(), old, cmp.Or(reason, "unknown"), -1, "written on the next start: ralph was stopped while it ended the session")
		if err := c.p.AppendProgress(e); err != nil {
			return err
		}
	}
	c.session = *old
	c.session.Status, c.session.Phase, c.session.Child, c.session.ChildStart, c.session.Line = mdstate.SessionEnded, "", 0, 0, 0
	c.session.Result, c.session.Report, c.session.Reason = nil, nil, reason
	return c.saveSession(nil)
}

// Recover cleans up after a session whose ralph died (a SIGKILLed chat or
// run), without starting a run: the agent it left is stopped, its task
// goes back to pending with a note, a lost entry is written, and the
// session is saved paused, for the next run to continue. A front end that
// holds the project without running (ralph chat) calls it when it starts,
// so that what it shows and what its conversation reads is the state
// after the crash, not before. It reports what it recovered ("" when the
// recorded session was not interrupted), and refuses while a run or a
// conversation turn is under way.
func (c *Coordinator) Recover() (string, error) {
	if err := c.beginTalk(); err != nil { // one user of the session at a time
		return "", err
	}
	defer c.endTalk()
	if err := c.p.CheckConflicts(); err != nil {
		return "", err
	}
	if err := c.p.Recover(); err != nil {
		return "", err
	}
	c.tellRescued()
	sweepOneShots(c.opts.Root, func(text string) { c.emit(Event{Kind: EventNotice, Text: text}) })
	tasks, err := c.p.LoadChecklist(mdstate.TasksKind)
	if err != nil {
		return "", err
	}
	old, _ := tasks.Session()
	if old == nil || (old.Status != mdstate.SessionRunning && old.Status != mdstate.SessionInterrupted) {
		return "", nil
	}
	if ended, err := c.endedAlready(old); err != nil || ended {
		return fmt.Sprintf("session %s had ended; its end is recorded", old.ID), err
	}
	c.session = c.continued(old)
	if err := c.recoverInterrupted(old, tasks); err != nil {
		return "", err
	}
	c.session.Status, c.session.Phase, c.session.Reason = mdstate.SessionPaused, "", string(StopInterrupted)
	if err := c.saveSession(nil); err != nil {
		return "", err
	}
	what := fmt.Sprintf("recovered session %s, interrupted at iteration %d", old.ID, old.Iteration)
	if old.Task != "" {
		what += ": " + old.Task + " is back to pending"
	}
	return what + "; /run continues it", nil
}
