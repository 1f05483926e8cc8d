package coordinator

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/gitctx"
	"github.com/ralph-dev/ralph/mdstate"
)

// run is one run, from opening the session to saving how it ended.
func (c *Coordinator) run(ctx context.Context) (Outcome, error) {
	c.started = c.opts.Now()
	c.pace, c.ahead = pacing{}, nil
	// The breaker compares the first iteration's tree with a clean one.
	c.brk.stale, c.brk.tree, c.brk.treeKnown = 0, "", true
	c.scanned = nil // a new go.mod and the like show from the next run on
	c.skippedBefore = nil
	if tasks, err := c.p.LoadChecklist(mdstate.TasksKind); err == nil {
		prepareAgent(c.opts, tasks)
		c.skippedBefore = c.skippedEarlier(tasks)
	}
	stop, err := c.open(ctx)
	if err != nil {
		return Outcome{}, err
	}
	if stop != nil {
		return *stop, nil
	}
	// The machine's list of projects (ralph sessions --all) hears of the
	// session as it opens and once it is saved as ended or paused. It is a
	// convenience: failing to write it stops nothing.
	// The first record is off the run's way, beside the first iteration.
	recorded := make(chan struct{})
	id, at := c.session.ID, c.opts.Now()
	go func() {
		defer close(recorded)
		_ = c.opts.Registry.Record(c.opts.Root, id, at)
	}()
	defer func() {
		<-recorded
		_ = c.opts.Registry.Record(c.opts.Root, c.session.ID, c.opts.Now())
	}()
	out, err := c.loop(ctx)
	c.dropWarm() // an error ended the loop while one was held
	// An entry still queued (an error ended the loop before the next
	// agent) goes in before the session's last write.
	if serr := c.settleEntry(); err == nil {
		err = serr
	}
	if c.opts.SingleRun {
		// Nothing the watcher tells matters once the loop is over: the
		// last writes take a person's edits in themselves.
		c.unwatch()
		// No agent starts any more: the supervisors exit while the end
		// is written (about 1.5 ms off a run), not once ralph is done.
		proc.LetIdleGo()
	}
	return c.finish(out, err)
}

// skippedEarlier are the tasks ralph gave up on in an earlier session:
// all of them when this run starts a new session; when it continues one,
// those whose last progress entry is older than the session (a task with
// no entry counts as this session's).
func (c *Coordinator) skippedEarlier(tasks *mdstate.Checklist) []string {
	ids := gaveUp(tasks)
	s, _ := tasks.Session()
	if s == nil || s.Status == mdstate.SessionEnded || c.opts.NewSession || len(ids) == 0 {
		return ids
	}
	lg, _ := c.p.ReadProgress(200)
	var earlier []string
	for _, id := range ids {
		if e := lastEntryFor(lg, id); e != nil && !e.Time.IsZero() && e.Time.Before(s.Started) {
			earlier = append(earlier, id)
		}
	}
	return earlier
}

// prepareAgent has o's agent get ready while the run opens, when there is
// a task for it to do: the first agent then starts without waiting for
// its supervisor to. A run that finds nothing to do starts none.
func prepareAgent(o Options, tasks *mdstate.Checklist) {
	if p, ok := o.Agent.(preparer); ok && (o.TaskID != "" || runnableTasks(tasks) > 0) {
		p.Prepare()
	}
}

// Prepare has the agent of a run about to open with o get ready, as the
// run's own start does, for a caller with more to do first: ralph run
// calls it once it has read the tasks, and the first agent's supervisor
// (about 10 ms of its own start on the machines of issue 14) starts beside
// the rest of the run's start.
func Prepare(o Options) {
	if o.Project == nil {
		return
	}
	if tasks, err := o.Project.LoadChecklist(mdstate.TasksKind); err == nil {
		prepareAgent(o, tasks)
	}
}

// open recovers the project's files, then continues the recorded session
// or starts a new one, whose first write begins its first iteration when
// nothing stands before it (openSession). It returns an outcome when there
// is nothing to do: no session is opened then and nothing is written.
func (c *Coordinator) open(ctx context.Context) (*Outcome, error) {
	// A half-merged state file is never written, and its tasks are not
	// run: the person resolves the conflict first.
	if err := c.p.CheckConflicts(); err != nil {
		return nil, err
	}
	if err := c.p.Recover(); err != nil {
		return nil, err
	}
	c.tellRescued()
	sweepOneShots(c.opts.Root, func(text string) { c.emit(Event{Kind: EventNotice, Text: text}) })
	resumed, err := c.resume()
	if err != nil || resumed {
		return nil, err
	}
	// The last session has ended by now; its last commit may be owed.
	if err := c.finishEndCommit(); err != nil {
		return nil, err
	}
	tasks, err := c.p.LoadChecklist(mdstate.TasksKind)
	if err != nil {
		return nil, err
	}
	first, stop := c.pick(tasks)
	if stop != nil {
		// Nothing to do: no session opens, and this run's counts are
		// none (not the last session's).
		if stop.Reason == StopAllDone {
			stop.Detail = "nothing to do, " + stop.Detail
		}
		return stop, nil
	}
	c.own.reset()
	last, _ := tasks.Session()
	c.session = mdstate.Session{
		ID: sessionID(c.started, last), Status: mdstate.SessionRunning, Phase: mdstate.PhaseStarting,
		MaxIterations: c.iterationLimit(), Agent: c.opts.Agent.Name(), Model: c.opts.Model,
		Started: c.started, Updated: c.started,
	}
	if repo, err := gitctx.Open(c.opts.Root, proc.Runner{}); err == nil {
		if h, err := repo.Head(); err == nil {
			c.session.Baseline = h.Hash
		}
		repo.Close()
	}
	return nil, c.openSession(ctx, first)
}

// sessionIDLayout is the form of a session's id: its start, in UTC, to
// the second.
const sessionIDLayout = "20060102-150405"

// sessionID names a session that starts at started: its start to the
// second or, when the session before it (last, the one the file holds)
// has that id or a later one, as one that started in the same second
// has, the second after last's. A project's session ids then never
// repeat: its agents' logs, its progress log's summaries and `ralph
// sessions` tell sessions apart by them.
func sessionID(started time.Time, last *mdstate.Session) string {
	t := started.UTC().Truncate(time.Second)
	if last != nil {
		if prev, err := time.Parse(sessionIDLayout, last.ID); err == nil && !t.After(prev) {
			t = prev.Add(time.Second)
		}
	}
	return t.Format(sessionIDLayout)
}

// loop runs iterations until something stops it.
func (c *Coordinator) loop(ctx context.Context) (Outcome, error) {
	defer c.oneProc()()
	done := 0
	for {
		// The next iteration, when the last one's write began it: the
		// checks below were made before that write (ahead.go). A stop
		// or a pause since takes it back, and is said below.
		if c.ahead != nil && c.stopDue(ctx) {
			c.dropWarm()
			if err := c.settleEntry(); err != nil {
				return Outcome{TasksDone: done}, err
			}
			if err := c.saveSession(c.undoAhead()); err != nil {
				return Outcome{TasksDone: done}, err
			}
		}
		task, ahead := (*mdstate.Item)(nil), c.ahead
		c.ahead = nil
		if ahead != nil {
			task = ahead.task
		} else {
			t, stop, err := c.nextTask(ctx)
			if err != nil {
				return Outcome{TasksDone: done}, err
			}
			if stop != nil {
				stop.TasksDone = done
				return *stop, nil
			}
			if t == nil {
				continue
			}
			task = t
		}
		before := c.session.Done
		outcome, err := c.iterate(ctx, task, ahead)
		if errors.Is(err, errNotReady) {
			continue // a person changed the task since it was picked
		}
		if err != nil {
			return Outcome{TasksDone: done}, err
		}
		done += c.session.Done - before // not a task a person took meanwhile
		c.afterIteration(ctx, outcome == OutcomeDone)
		if c.pace.abort != "" {
			return Outcome{Reason: StopFailed, Detail: c.pace.abort, TasksDone: done}, nil
		}
		if c.opts.TaskID != "" {
			if r, detail, again := c.onlyTaskNext(ctx, outcome); !again {
				return Outcome{Reason: r, Detail: detail, TasksDone: done}, nil
			}
		}
	}
}

// oneProc narrows the process to one processor for the loop, when
// Options.OneProc asks, its threads pinned to one CPU, and returns what
// gives both back.
func (c *Coordinator) oneProc() (restore func()) {
	if !c.opts.OneProc {
		return func() {}
	}
	was := runtime.GOMAXPROCS(1)
	unpin := proc.PinToOneCPU()
	return func() {
		unpin()
		runtime.GOMAXPROCS(was)
	}
}

// nextTask makes the checks before an iteration and picks its task. It
// returns the task, or why the run stops, or neither when the loop is to
// look again (after a wait, a backoff cut short).
func (c *Coordinator) nextTask(ctx context.Context) (*mdstate.Item, *Outcome, error) {
	stop := func(r StopReason, detail string) (*mdstate.Item, *Outcome, error) {
		return nil, &Outcome{Reason: r, Detail: detail}, nil
	}
	// An interrupt is checked first: a Ctrl-C during the last allowed
	// iteration is still an interrupt (exit 130, session paused), not
	// a limit. A limit stops only a run that has a task left to start:
	// finishing the last task in the last allowed iteration is all done.
	if ctx.Err() != nil {
		return stop(StopInterrupted, "stopped")
	}
	if paused, _ := c.pauseRequested(); paused {
		return stop(StopPaused, "paused")
	}
	if err := c.catchUp(); err != nil {
		return nil, nil, err
	}
	tasks, err := c.p.LoadChecklist(mdstate.TasksKind)
	if err != nil {
		return nil, nil, err
	}
	task, none := c.pick(tasks)
	if none != nil {
		return nil, none, nil
	}
	if r, detail := c.limitReached(); r != "" {
		return stop(r, detail)
	}
	if until := c.session.WaitUntil; !until.IsZero() && !until.Equal(c.pace.waited) {
		// Stopped during the wait, or waited: either way the tasks are
		// read again, since a person may have changed them meanwhile.
		// The wait stays in the session until the next iteration
		// starts: a stop right after it still retries the same task
		// first.
		if c.waitLimit(ctx, until) {
			c.pace.waited = until
		}
		c.waitOver()
		return nil, nil, nil
	}
	if r, detail := c.breaker(); r != "" {
		return stop(r, detail)
	}
	if !c.backoff(ctx, task.ID) {
		return nil, nil, nil // stopped or paused during the backoff: said at the top
	}
	if r, detail := c.lowDisk(); r != "" {
		return stop(r, detail)
	}
	return task, nil, nil
}

// onlyTaskNext decides, for a --task run, whether to go on after an
// iteration: again when another attempt (or the same task after a limit's
// wait) follows, or when a stop is to be reported at the loop's top.
func (c *Coordinator) onlyTaskNext(ctx context.Context, outcome IterationOutcome) (StopReason, string, bool) {
	switch {
	case ctx.Err() != nil:
		// Reported as an interrupt at the top of the loop: exit 130, not
		// "all done".
		return "", "", true
	case outcome == OutcomeInterrupted:
		// An urgent message stopped the iteration: the task goes on.
		return "", "", true
	case outcome != OutcomeDone && (c.pace.again || !c.session.WaitUntil.IsZero()):
		return "", "", true
	case outcome != OutcomeDone:
		// Exit 0 means the work is done: a failed or blocked --task run
		// is not.
		return StopNoneReady, c.opts.TaskID + " was not completed", false
	}
	return StopAllDone, "ran " + c.opts.TaskID, false
}

// finish saves how the run ended: a clean end gets its summary entry and
// an ended session; an interrupt or a pause leaves the session paused; an
// error leaves it running, as a crash would, for the next start to recover.
func (c *Coordinator) finish(out Outcome, err error) (_ Outcome, ferr error) {
	dropAgentRecord(c.opts.Root) // the run's last agent is gone
	defer func() {
		// The last entry's flush (mdstate.Project.FlushLater) is over
		// before the run says it is.
		if serr := c.p.Sync(); ferr == nil {
			ferr = serr
		}
	}()
	if err == nil {
		err = c.catchUp()
	}
	if err == nil && !out.Reason.pauses() {
		err = c.end(out)
	}
	if err != nil {
		c.keepRecoverable(err)
		out.Session, out.Iterations = c.session, c.session.Iteration
		return out, err
	}
	c.session.Phase, c.session.Child, c.session.ChildStart = "", 0, 0
	c.session.Status = mdstate.SessionEnded
	if out.Reason.pauses() {
		c.session.Status = mdstate.SessionPaused
	}
	c.session.Reason = string(out.Reason)
	err = c.saveSession(c.undoAhead()) // none begun: the loop took it, or stopped before
	if err == nil && !out.Reason.pauses() {
		// The ended session too: a run that ends leaves a clean work
		// tree. A paused one goes on, and its next task's commit takes
		// what it wrote meanwhile.
		c.commitEnd()
	}
	out.Session, out.Iterations = c.session, c.session.Iteration
	return out, err
}

// end writes a clean end's summary, which finish follows with the
// session's last save ("ended"). A kill between the two leaves a running
// session whose summary is the log's last entry: the next start ends it
// (endedAlready), and does not resume it, which would write a second
// summary. The phase "ending" is saved only when the summary could not be
// written (keepRecoverable): the next start writes it then. With --commit
// the session's last commit is owed before the summary: a session ended on
// the next start has that commit made then (commit.go).
func (c *Coordinator) end(out Outcome) error {
	if err := c.keepEndCommit(); err != nil {
		return err
	}
	c.session.Phase, c.session.Reason = mdstate.PhaseEnding, string(out.Reason)
	return c.summarize(out)
}

// keepRecoverable saves the session after an error (a state file ralph
// cannot write, say) as running, as a crash leaves it, so that the next
// start recovers it: the task goes back to pending, an entry lost on the
// way is written, a summary that could not be written is.
func (c *Coordinator) keepRecoverable(err error) {
	if c.session.Status == "" {
		return
	}
	if c.session.Phase != mdstate.PhaseEnding {
		c.session.Reason = oneLineText("error: " + err.Error())
	}
	c.session.Child = 0
	// may fail the same way; the lock's release says "interrupted" anyway
	_ = c.saveSession(c.undoAhead())
}

// pick chooses the next task, or says why there is none.
func (c *Coordinator) pick(tasks *mdstate.Checklist) (*mdstate.Item, *Outcome) {
	if id := c.opts.TaskID; id != "" {
		t := tasks.Find(id)
		switch {
		case t == nil:
			return nil, &Outcome{Reason: StopNoneReady, Detail: fmt.Sprintf("no task %s in %s", id, mdstate.TasksFile)}
		case t.Status == mdstate.Done:
			return nil, &Outcome{Reason: StopAllDone, Detail: t.ID + " is already done"}
		case c.own.takenBy(t.ID, t.Status):
			return nil, &Outcome{Reason: StopNoneReady, Detail: fmt.Sprintf("a person marked %s %s while it ran; `ralph task reopen %s` runs it again", t.ID, t.Status, t.ID)}
		}
		return t, nil
	}
	if c.pace.retry != "" {
		for t := range tasks.EachReady() {
			if t.ID == c.pace.retry {
				return t, nil
			}
		}
	}
	if t := tasks.Next(); t != nil {
		return t, nil
	}
	return nil, noneReady(tasks, c.skippedBefore)
}

// noneReady says why no task is ready. Tasks ralph gave up on in this run
// make it a failure; those it gave up on before (skippedBefore) are
// reported, not failures: the run did all it could. So are the tasks that
// wait, directly or through others, for a skipped one: no run can start
// them until a person reopens it.
func noneReady(tasks *mdstate.Checklist, skippedBefore []string) *Outcome {
	var skipped, earlier []string
	for _, id := range gaveUp(tasks) {
		if slices.Contains(skippedBefore, id) {
			earlier = append(earlier, id)
		} else {
			skipped = append(skipped, id)
		}
	}
	stuck := waitingOnSkipped(tasks)
	open := openTasks(tasks) - len(stuck)
	if open == 0 && len(skipped) > 0 {
		return &Outcome{Reason: StopFailed, Detail: "no task left to run; gave up on " + strings.Join(skipped, ", ") + " after failed attempts (see their notes; `ralph task reopen ID` tries one again)" + waitsDetail(stuck)}
	}
	if open == 0 {
		detail := "every task is done"
		if len(earlier) > 0 || len(stuck) > 0 {
			detail = "every task that can run is done"
		}
		if len(earlier) > 0 {
			which := "one"
			if len(earlier) == 1 {
				which = "it"
			}
			detail += fmt.Sprintf("; %s skipped earlier after failed attempts (`ralph task reopen %s` tries %s again)",
				strings.Join(earlier, ", "), earlier[0], which)
		}
		return &Outcome{Reason: StopAllDone, Detail: detail + waitsDetail(stuck)}
	}
	skipped = append(skipped, earlier...)
	detail := fmt.Sprintf("%d tasks left, none ready (blocked, in progress, or waiting for others)", open)
	if open == 1 {
		detail = "1 task left, not ready (blocked, in progress, or waiting for others)"
	}
	if len(skipped) > 0 {
		detail += "; gave up on " + strings.Join(skipped, ", ") + " after failed attempts (see their notes)"
	}
	return &Outcome{Reason: StopNoneReady, Detail: detail + waitsDetail(stuck)}
}

// waitOnSkip is a pending task that can never start: it waits for a
// skipped task, directly or through other tasks.
type waitOnSkip struct {
	task, skipped string
}

// waitingOnSkipped lists the pending tasks that wait for a skipped one,
// each with the skipped task it waits for (the first found), in file order.
func waitingOnSkipped(tasks *mdstate.Checklist) []waitOnSkip {
	memo := map[string]string{} // task ID -> the skipped task it waits for, "" for none
	var cause func(id string) string
	cause = func(id string) string {
		if c, ok := memo[id]; ok {
			return c // an answer already found, or a cycle (marked "" below)
		}
		memo[id] = ""
		t := tasks.Find(id)
		if t == nil || t.Status == mdstate.Done {
			return ""
		}
		if t.Status == mdstate.Skipped {
			memo[id] = id
			return id
		}
		for _, dep := range t.After {
			if c := cause(dep); c != "" {
				memo[id] = c
				return c
			}
		}
		return ""
	}
	var waits []waitOnSkip
	for _, t := range tasks.All() {
		if t.Status != mdstate.Pending {
			continue
		}
		for _, dep := range t.After {
			if c := cause(dep); c != "" {
				waits = append(waits, waitOnSkip{task: t.ID, skipped: c})
				break
			}
		}
	}
	return waits
}

// waitsDetail says which tasks wait for a skipped one, or nothing.
func waitsDetail(waits []waitOnSkip) string {
	if len(waits) == 0 {
		return ""
	}
	var parts []string
	for _, w := range waits {
		parts = append(parts, fmt.Sprintf("%s waits for %s, which is skipped", w.task, w.skipped))
	}
	return "; " + strings.Join(parts, "; ") + " (`ralph task reopen ID` runs a skipped task again)"
}

// saveSession writes the session block, with fn's task changes in the same
// atomic write. Each write first compares the file with what ralph wrote
// before (reconcileTasks): a status a person changed is theirs, and one an
// older copy of the file replaced is written again. fn reads what that
// found in c.plan.
func (c *Coordinator) saveSession(fn func(e *mdstate.ChecklistEdit) error) error {
	return c.saveTask("", fn)
}

// saveTask is saveSession for a write whose fn sets task id's status.
func (c *Coordinator) saveTask(id string, fn func(e *mdstate.ChecklistEdit) error) error {
	c.session.Updated = c.opts.Now()
	if c.own.session != nil && c.own.session.ID != c.session.ID {
		c.own.reset() // another session's edits are not this one's
	}
	after, err := c.updateTasks(func(e *mdstate.ChecklistEdit) error {
		c.brk.sawTasks(e.Checklist().Source())
		plan, err := c.own.reconcileTasks(e, id)
		if err != nil {
			return err
		}
		c.plan = plan
		if len(c.delivered) > 0 {
			if err := e.DropGuidance(c.delivered); err != nil {
				return err
			}
		}
		if fn != nil {
			if err := fn(e); err != nil {
				return err
			}
		}
		s := c.session
		return e.SetSession(&s)
	})
	if err != nil {
		return err
	}
	c.brk.wrote(after.Source())
	c.delivered = nil
	c.own.settle(c.plan)
	c.own.wroteSession(c.session)
	if len(c.plan.restored) > 0 {
		c.emit(Event{Kind: EventNotice, Text: restoredNote(mdstate.TasksFile, c.plan.restored)})
	}
	c.saved(c.session)
	c.emit(Event{Kind: EventStateWritten, File: mdstate.TasksFile})
	return nil
}

// waitFor waits d, or less when the run is stopped or paused, or when
// --max-time is up first (the run then ends with it); it reports whether
// the whole wait passed.
func (c *Coordinator) waitFor(ctx context.Context, d time.Duration) bool {
	_, pausing := c.pauseRequested()
	timeUp := c.opts.MaxTime > 0 && c.timeLeft() < d
	if timeUp {
		d = max(c.timeLeft(), 0)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-pausing:
		return false
	case <-t.C:
		if timeUp {
			c.pace.cut = limitTime
			return false
		}
		return true
	}
}
