package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/ralph-dev/ralph/mdstate"
)

// When an agent completes its task and nothing stops the run before the
// next, the write that saves the task as done also begins the next
// iteration: the next task in progress, the session in phase "agent" of
// the next iteration, holding the done iteration's result under its own
// name ("result: iteration 3, T4: …") until its progress entry is in the
// log. One write of RALPH_TASKS.md an iteration instead of two: the
// begin's write cost about as much as the rest of the iteration's
// bookkeeping together (docs/benchmarks.md).
//
// It is done only when the next iteration would begin at once anyway:
// after a completed task (the circuit breaker has nothing to count), with
// no pause, stop, wait, backoff or limit due, no commit owed (a task's
// commit holds the file as the task left it), a task ready once the done
// one is (mdstate's NextOnceDone: what the loop would pick from the
// file the write makes), the disk and the state files fit for the next
// agent, and nothing of an older copy of the file being written again in
// the same write. Otherwise the loop picks and begins the next task with a
// write of its own, as before.
//
// A new session's first write begins its first iteration the same way,
// when the loop would begin it at once (mayBeginFirst: the checks it
// makes before an iteration, none of which a new session's write
// changes): one write of RALPH_TASKS.md fewer at the start of every run,
// on the way to its first agent.
//
// A kill after that write and before the entry is appended leaves a
// session in phase "agent" with a named result: recovery writes the
// entry from it and the report kept with it (restoreEntry), and then
// puts the next task back to pending as it does for any interrupted
// agent.

// The done iteration's progress entry is then appended beside the next
// agent's start, not before it: the session holds the done iteration's
// result under its own name until the entry is in the log, so a kill
// before then loses nothing (recovery writes the entry from it, as above).
// The next prompt shows the entry as the log will read once it is in
// (mdstate.Log.Appended). The append starts once the next iteration's
// begin is on disk, runs while the agent starts and works, and is waited
// for when the agent ends, before ralph looks at what the agent changed
// and before any write that would drop the named result. It goes onto the
// log only as ralph's last write left it: one the agent changed first (an
// older copy put back) waits until ralph has looked at the change, since
// an addition to an older copy would hide what the copy lost. A failed
// append stops the agent and ends the run with the append's error, with
// the session as a kill would leave it.

// beganAhead is the next iteration, begun by the write that saved the
// last one's outcome.
type beganAhead struct {
	task *mdstate.Item
	open int // tasks a run may still do, this one included
	// after is the iteration whose write began this one, and its task:
	// 0 and "" for a session's first, begun by the session's first write.
	after     int
	afterTask string
}

// mayBeginAhead reports whether the next iteration may begin in the write
// of the outcome a, as decided by d: the checks the loop makes before it
// picks a task and begins it, but for those the write makes itself (the
// limits, with the iteration counted; the pick, on the file it writes).
func (c *Coordinator) mayBeginAhead(ctx context.Context, a attempt, d *decision) bool {
	if a.Outcome != OutcomeDone || d.status != mdstate.Done || !c.nothingDue(ctx) {
		return false
	}
	if r, _ := c.lowDisk(); r != "" {
		return false
	}
	return c.preflight() == nil
}

// nothingDue reports whether, after a completed task, the next iteration
// would follow at once as far as ralph knows without reading a file: a
// run of all tasks, with no commit owed, not stopped or paused, and no
// backoff, retry, wait or cut limit due.
func (c *Coordinator) nothingDue(ctx context.Context) bool {
	if c.opts.Commit || c.opts.TaskID != "" || ctx.Err() != nil {
		return false
	}
	if !c.pace.clear() || !c.session.WaitUntil.IsZero() {
		return false
	}
	paused, _ := c.pauseRequested()
	return !paused
}

// clear reports whether nothing is due before the next iteration: no
// abort, backoff, retry of a task first, or limit that stopped an agent.
func (p *pacing) clear() bool {
	return p.abort == "" && p.wait == 0 && !p.again && p.retry == "" && p.cut == ""
}

// beginInWrite begins the iteration after done's in e, the write of
// done's outcome, when the next task can be known from e: it returns the
// task begun, or nil when the loop is to decide (a limit is reached, no
// task is ready, or the write changes more than done's status).
func (c *Coordinator) beginInWrite(e *mdstate.ChecklistEdit, done *mdstate.Item) (*beganAhead, error) {
	if len(c.plan.restored) > 0 {
		return nil, nil
	}
	if r, _ := c.limitReached(); r != "" {
		return nil, nil
	}
	tasks := e.Checklist() // done is in progress in it, not yet done
	next := tasks.NextOnceDone(done.ID)
	if next == nil {
		return nil, nil
	}
	if err := e.SetStatus(next.ID, mdstate.InProgress); err != nil {
		return nil, err
	}
	s := &c.session
	b := &beganAhead{task: next, after: s.Iteration, afterTask: done.ID,
		open: runnableTasks(tasks) - 1} // done counts no more: it was in progress in tasks
	r := *s.Result
	r.Iteration, r.Task = s.Iteration, done.ID
	s.Result = &r
	s.Iteration++
	s.Task, s.Phase = next.ID, mdstate.PhaseAgent
	return b, nil
}

// mayBeginFirst reports whether a new session's first write may begin its
// first iteration: the checks the loop makes before it begins one
// (nextTask's, begin's preflight), made before that write. A --task run,
// one that commits, and one that any check would hold back open the
// session alone, and the loop begins the iteration with a write of its own.
func (c *Coordinator) mayBeginFirst(ctx context.Context) bool {
	if c.opts.TaskID != "" || c.opts.Commit || ctx.Err() != nil || !c.pace.clear() {
		return false
	}
	if paused, _ := c.pauseRequested(); paused {
		return false
	}
	if r, _ := c.limitReached(); r != "" {
		return false
	}
	if r, _ := c.breaker(); r != "" {
		return false
	}
	if r, _ := c.lowDisk(); r != "" {
		return false
	}
	return c.preflight() == nil
}

// openSession writes the new session c.session, and in the same write
// begins its first iteration on task, picked from the file as it was read
// before, when mayBeginFirst allows and the file still has task as it was
// picked (startable); otherwise the session opens alone, in phase
// "starting", and the loop picks and begins.
func (c *Coordinator) openSession(ctx context.Context, task *mdstate.Item) error {
	if !c.mayBeginFirst(ctx) {
		return c.saveSession(nil)
	}
	s := &c.session
	var b *beganAhead
	var was mdstate.Status
	err := c.saveTask(task.ID, func(e *mdstate.ChecklistEdit) error {
		// Run again on a file that changed meanwhile: from the start.
		b, s.Iteration, s.Task, s.Phase = nil, 0, "", mdstate.PhaseStarting
		cur, st, open, err := c.beginIn(e, task)
		if errors.Is(err, errNotReady) {
			return nil // the session opens alone; the loop picks again
		}
		if err != nil {
			return err
		}
		was, b = st, &beganAhead{task: cur, open: open}
		s.Iteration++
		s.Task, s.Phase = cur.ID, mdstate.PhaseAgent
		return nil
	})
	if err != nil {
		s.Iteration, s.Task, s.Phase = 0, "", mdstate.PhaseStarting
		return err
	}
	if b != nil {
		c.own.marked(b.task.ID, was, mdstate.InProgress)
		c.ahead = b
	}
	return nil
}

// stopDue reports whether the run is to stop before the next agent: it
// was stopped or paused since the write that began the next iteration.
func (c *Coordinator) stopDue(ctx context.Context) bool {
	paused, _ := c.pauseRequested()
	return paused || ctx.Err() != nil
}

// undoAhead is the write that takes back an iteration begun ahead whose
// agent is not to start: a stop or a pause came after the write that
// began it, or an error ended the run after that write. Its task is
// pending again, the session as the outcome's write would have left it
// alone, in phase "writing" of the done iteration: the next start writes
// that iteration's entry if it is not in the log, and counts no attempt
// for a task that was never tried. The first iteration, begun by the
// session's first write, goes back to a session in phase "starting".
// Without an iteration begun ahead it is nil, a write of the session
// alone.
func (c *Coordinator) undoAhead() func(e *mdstate.ChecklistEdit) error {
	b := c.ahead
	if b == nil {
		return nil
	}
	c.ahead = nil
	s := &c.session
	s.Iteration, s.Task, s.Phase = b.after, b.afterTask, mdstate.PhaseWriting
	if b.after == 0 {
		s.Phase = mdstate.PhaseStarting
	}
	if r := s.Result; r != nil && r.Task != "" {
		own := *r
		own.Iteration, own.Task = 0, ""
		s.Result = &own
	}
	c.own.marked(b.task.ID, mdstate.InProgress, mdstate.Pending)
	return func(e *mdstate.ChecklistEdit) error {
		if cur := e.Checklist().Find(b.task.ID); cur == nil || cur.Status != mdstate.InProgress {
			return nil // a person's since
		}
		return e.SetStatus(b.task.ID, mdstate.Pending)
	}
}

// startedEvent tells that task's iteration began; open counts the tasks
// the run may still do, task included.
func (c *Coordinator) startedEvent(task *mdstate.Item, open int) {
	s := &c.session
	doneInRun := s.Done - c.doneAtStart
	if c.opts.TaskID != "" {
		doneInRun, open = 0, 1 // a --task run has one task
	}
	c.runnable = open
	c.emit(Event{Kind: EventTaskStarted, Iteration: s.Iteration, Task: task.ID, Title: task.Title,
		Position: doneInRun + 1, Total: doneInRun + open})
}

// entryAhead is a done iteration's progress entry, appended beside the
// next iteration's agent.
type entryAhead struct {
	entry mdstate.Entry
	done  chan struct{} // closed once the append is over; nil until it starts
	err   error         // the append's, once done is closed
}

// queueEntry keeps e for the append beside the next agent's start.
func (c *Coordinator) queueEntry(e mdstate.Entry) { c.entry = &entryAhead{entry: e} }

// entryQueued is the entry the next append is to write, nil when none
// waits or its append has started.
func (c *Coordinator) entryQueued() *mdstate.Entry {
	if q := c.entry; q != nil && q.done == nil {
		return &q.entry
	}
	return nil
}

// startEntry starts the queued entry's append, if one waits: onto the
// log only as ralph's last write left it (mdstate.AppendProgressOnOwn).
// A failed append stops the iteration through stop; joinEntry says why.
func (c *Coordinator) startEntry(stop context.CancelCauseFunc) {
	q := c.entry
	if q == nil || q.done != nil {
		return
	}
	q.done = make(chan struct{})
	go func() {
		defer close(q.done)
		q.err = c.p.AppendProgressOnOwn(q.entry)
		if q.err != nil && !errors.Is(q.err, mdstate.ErrChangedSinceOwnWrite) {
			stop(fmt.Errorf("ralph could not append the last iteration's progress entry: %w", q.err))
		}
	}()
}

// joinEntry waits for the append started beside the agent, if one was.
// An entry it kept out, because someone changed the log first (the agent
// put back an older copy, say), stays queued: settleEntry appends it once
// ralph has looked at what the change took away (restoreAdditions).
func (c *Coordinator) joinEntry() error {
	q := c.entry
	if q == nil || q.done == nil {
		return nil
	}
	<-q.done
	if errors.Is(q.err, mdstate.ErrChangedSinceOwnWrite) {
		q.done, q.err = nil, nil
		return nil
	}
	c.entry = nil
	if q.err != nil {
		return q.err
	}
	c.noteEntry(q.entry)
	c.entryIn()
	return nil
}

// settleEntry has the queued entry in the log: it waits for the append
// started beside the agent, and appends now an entry still queued.
func (c *Coordinator) settleEntry() error {
	if err := c.joinEntry(); err != nil {
		return err
	}
	q := c.entry
	if q == nil {
		return nil
	}
	c.entry = nil
	if err := c.appendEntry(q.entry); err != nil {
		return err
	}
	c.entryIn()
	return nil
}

// entryIn is what follows an iteration's entry landing in the log: the
// session's next write drops the result it kept for it.
func (c *Coordinator) entryIn() { c.session.Result, c.session.Report = nil, nil }
