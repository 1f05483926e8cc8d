package coordinator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/mdstate"
)

// iterate gives one task to one child agent and writes back what came of
// it: the task's status with the iteration's result, what the agent
// reported, the progress entry, the commit.
// An iteration begun ahead (ahead.go) was begun by the last one's write.
func (c *Coordinator) iterate(ctx context.Context, task *mdstate.Item, ahead *beganAhead) (IterationOutcome, error) {
	if ahead != nil {
		c.startedEvent(task, ahead.open)
	} else {
		if err := c.preflight(); err != nil {
			return "", err
		}
		if err := c.begin(task); err != nil {
			return "", err
		}
	}
	var owed *pendingCommit
	if c.opts.Commit {
		var err error
		if owed, err = c.keepTaskCommit(ctx, task); err != nil {
			return "", err
		}
	}
	agentLog := openLogAhead(c.opts.Root, c.logName(task.ID), c.opts.Resources, c.opts.redactor(), &c.logs)
	defer agentLog.discard() // an agent that never started leaves no log
	// The iteration's context is registered before the prompt is read: an
	// urgent message queued from now on either is in the prompt or stops
	// the agent.
	iterCtx, cancel := c.iterationContext(ctx)
	defer cancel(nil)
	// A person who took the task since begin's write (while git status
	// ran, say) was told to no one: look once more. From now on Notify
	// reaches this iteration.
	c.stopIfTaken()
	prompt, guidance, err := c.prompt(ctx, task.ID)
	if err != nil {
		return "", err
	}
	a, err := c.runIteration(ctx, iterCtx, cancel, task.ID, prompt, agentLog)
	if err != nil {
		return "", err
	}
	// The next agent starts now if the run looks set to go on (warm.go).
	c.warmNext(ctx, a)
	// The last iteration's entry, appended beside this agent (ahead.go),
	// is counted before ralph looks at what the agent changed; one the
	// agent's change kept out goes in after the look.
	if err := c.joinEntry(); err != nil {
		return "", err
	}
	if err := c.restoreAdditions(); err != nil {
		return "", err
	}
	if lookedProbe != nil {
		lookedProbe()
	}
	if err := c.settleEntry(); err != nil {
		return "", err
	}
	d := c.decide(task, a)
	var delivered []string
	if a.Answered {
		delivered = guidance
	}
	it := c.session.Iteration // the outcome's write may begin the next
	unfiled, err := c.recordOutcome(ctx, task, a, &d, delivered)
	if err != nil {
		return "", err
	}
	entry := iterationEntry(c.opts.Now(), task, it, AgentLabel(c.opts.Agent.Name(), runModel(c.opts.Model, a.Result)), a, d.note, delivered)
	entry.Fields = append(entry.Fields, unfiled.fields()...)
	entry = redactEntry(entry, c.opts.redactor())
	c.queueEntry(entry)
	if c.ahead == nil {
		// No agent starts next: none is held, and the entry goes in now.
		c.dropWarm()
		if err := c.settleEntry(); err != nil {
			return "", err
		}
	}
	if owed != nil {
		// After the entry, so that the task's commit holds it (commit.go).
		if err := c.commitTask(ctx, owed, task, a.Outcome == OutcomeDone); err != nil {
			return "", err
		}
	}
	if len(delivered) > 0 {
		// Off the queue in the outcome's write (recordOutcome).
		c.emit(Event{Kind: EventGuidanceDelivered, Iteration: it, Task: task.ID, Delivered: delivered})
	}
	c.emit(Event{Kind: EventIterationDone, Iteration: it, Task: task.ID, Title: task.Title, Outcome: a.Outcome, Reason: d.note,
		TokensIn: a.Result.Usage.In, TokensOut: a.Result.Usage.Out, CostUSD: a.Result.CostUSD,
		UsageUnknown: !usageKnown(a.Result), CostUnknown: !costKnown(a.Result),
		AgentSession: a.Result.SessionID, Model: runModel(c.opts.Model, a.Result)})
	return a.Outcome, nil
}

// lookedProbe, set by a test, is called in each iteration once ralph has
// looked for what an older copy of a file dropped, before it files the
// agent's report.
var lookedProbe func()

// begin opens an iteration: the task in progress, in the session's write.
// A task a person started, finished, skipped, blocked or removed since it
// was picked is left as it is: begin then reports errNotReady and
// nothing of the iteration is counted.
func (c *Coordinator) begin(task *mdstate.Item) error {
	s := &c.session
	before := *s
	s.Iteration++
	s.Task, s.Phase = task.ID, mdstate.PhaseAgent
	s.WaitUntil = time.Time{}
	var was mdstate.Status
	open := 0
	err := c.saveTask(task.ID, func(e *mdstate.ChecklistEdit) (err error) {
		_, was, open, err = c.beginIn(e, task)
		return err
	})
	if err != nil {
		// errNotReady too: the loop reads the tasks again.
		*s = before
		return err
	}
	c.pace.retry, c.pace.again = "", false
	c.own.marked(task.ID, was, mdstate.InProgress)
	c.startedEvent(task, open)
	return nil
}

// beginIn marks task in progress in e, the write that begins its
// iteration, if e's file has it as it was picked (startable); otherwise
// it changes nothing and returns errNotReady. It returns the task as the
// file has it, the status it had, and the tasks a run may still do, this
// one included.
func (c *Coordinator) beginIn(e *mdstate.ChecklistEdit, task *mdstate.Item) (cur *mdstate.Item, was mdstate.Status, open int, err error) {
	tasks := e.Checklist()
	cur = tasks.Find(task.ID)
	if cur == nil || !c.startable(cur, task) {
		return nil, "", 0, errNotReady
	}
	was, open = cur.Status, runnableTasks(tasks)
	return cur, was, open, e.SetStatus(cur.ID, mdstate.InProgress)
}

// openTasks counts the tasks not yet done or skipped: pending, in
// progress or blocked.
func openTasks(tasks *mdstate.Checklist) int {
	counts := tasks.Counts()
	return counts[mdstate.Pending] + counts[mdstate.InProgress] + counts[mdstate.Blocked]
}

// runnableTasks counts the tasks a run may still do: pending or in
// progress (a blocked one waits for a person).
func runnableTasks(tasks *mdstate.Checklist) int {
	counts := tasks.Counts()
	return counts[mdstate.Pending] + counts[mdstate.InProgress]
}

// errNotReady reports a picked task that a person changed before its
// iteration began.
var errNotReady = errors.New("the task changed before its iteration began")

// startable reports whether the picked task may start, now that it reads
// cur: not if a person changed its status since the pick; a pending one,
// or one in progress that ralph itself marked (a crash's leftover, or its
// own mark written again after an older copy of the file); a blocked or
// skipped one only when --task asked for it.
func (c *Coordinator) startable(cur, picked *mdstate.Item) bool {
	if cur.Status != picked.Status {
		return false
	}
	switch cur.Status {
	case mdstate.Pending:
		return true
	case mdstate.InProgress:
		_, taken := c.plan.personal(cur.ID)
		return !taken
	case mdstate.Done:
		return false
	}
	return c.opts.TaskID == cur.ID
}

// runIteration runs the agent in a context of its own, which an urgent
// message cancels without ending the run, and so does a budget: --max-time
// when its time is up, --max-cost and --max-tokens as soon as the usage
// the agent streams reaches them.
func (c *Coordinator) runIteration(ctx, iterCtx context.Context, cancel context.CancelCauseFunc, id, prompt string, agentLog *logAhead) (attempt, error) {
	if c.opts.MaxTime > 0 {
		t := time.AfterFunc(c.timeLeft(), func() { cancel(&limitHit{limitTime}) })
		defer t.Stop()
	}
	s := &c.session
	if p := personCause(iterCtx); p != nil {
		// Taken before the agent started: none is started (a warm one is
		// let go).
		c.dropWarm()
		return attempt{Outcome: OutcomeInterrupted, Taken: true, Note: "stopped: " + p.Error()}, nil
	}
	// The iteration's start (begin's save) is on disk before its agent
	// starts, or before a warm one, started already, gets its prompt
	// (warm.go); its flush went on while the prompt was built.
	if err := c.p.Sync(); err != nil {
		return attempt{}, err
	}
	// The last iteration's entry goes in beside this agent (ahead.go).
	c.startEntry(cancel)
	w := c.takeWarm()
	running := &procSlot{}
	if w != nil {
		running = &w.proc
	}
	forward, early := c.forward(id, c.newSpending(), cancel), c.warmEarly(ctx, iterCtx, running)
	req := request{
		Prompt:    prompt,
		LogName:   c.logName(id),
		Log:       agentLog,
		OnStart:   c.recordChild,
		OnProcess: running.set,
		Mark:      sessionMark(c.opts.Root, s.ID),
		OnEvent:   func(ev agent.Event) { forward(ev); early(ev) },
		OnNotice:  func(text string) { c.emit(Event{Kind: EventNotice, Text: text}) },
		Logs:      &c.logs,
	}
	var a attempt
	var err error
	if w != nil {
		a, err = w.run(c.opts, req)
	} else {
		a, err = runAgent(iterCtx, c.opts, req)
	}
	if k := limitCause(iterCtx); k != "" {
		c.pace.cut = k
		if a.Outcome == OutcomeInterrupted {
			// An answer that came in before the stop still counts; only
			// a task cut short goes back to pending.
			c.pace.cutTask = id
		}
	}
	return a, err
}

// logName is the name of the log of the current iteration's agent, on
// task id.
func (c *Coordinator) logName(id string) string {
	return fmt.Sprintf("%s-%03d-%s.log", c.session.ID, c.session.Iteration, id)
}

// iterationContext is the context of one iteration, which Queue's urgent
// messages cancel (through stopIter) without ending the run. Its cancel
// function also forgets it.
func (c *Coordinator) iterationContext(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	var iterCtx context.Context
	var cancel context.CancelCauseFunc
	if w := c.warm; w != nil {
		// The warm agent runs under it already.
		iterCtx, cancel = w.iterCtx, w.iterCancel
	} else {
		iterCtx, cancel = context.WithCancelCause(ctx)
	}
	c.ctl.Lock()
	c.stopIter = cancel
	c.ctl.Unlock()
	return iterCtx, func(cause error) {
		cancel(cause)
		c.ctl.Lock()
		c.stopIter = nil
		c.ctl.Unlock()
	}
}

// recordChild keeps the agent's pid in .ralph/ at once: after a crash of
// ralph, the next start finds the agent's group there and stops it, if
// that very process (pid and start time) still runs.
func (c *Coordinator) recordChild(pid int) {
	start, _ := proc.StartTime(pid)
	a := AgentProcess{Session: c.session.ID, Iteration: c.session.Iteration, Task: c.session.Task, PID: pid, Start: start}
	if err := recordAgent(c.opts.Root, a); err != nil {
		c.emit(Event{Kind: EventNotice, Task: c.session.Task, Text: "ralph could not record the agent's pid: " + err.Error()})
	}
}

// forward turns the agent's events into the engine's, and holds the
// usage they report against the budgets: once the session reaches one, it
// stops the agent through stop. It runs on the agent's reader goroutine.
func (c *Coordinator) forward(id string, sp *spending, stop context.CancelCauseFunc) func(agent.Event) {
	it := c.session.Iteration
	return func(ev agent.Event) {
		e := Event{Iteration: it, Task: id}
		switch ev.Kind {
		case agent.EventText:
			e.Kind, e.Text = EventAgentText, ev.Text
		case agent.EventToolUse:
			e.Kind, e.Tool = EventToolUse, ev.Tool
		case agent.EventToolResult:
			e.Kind, e.Tool, e.Text = EventToolResult, ev.Tool, ev.Text
		case agent.EventUsage:
			sp.add(ev.Usage, ev.CostUSD)
			if k := sp.over(); k != "" {
				stop(&limitHit{k})
			}
			e.Kind, e.TokensIn, e.TokensOut, e.CostUSD = EventUsage, sp.usage.In, sp.usage.Out, sp.cost
		case agent.EventResult:
			// The agent has answered: a budget its final figure passes
			// ends the run after this iteration (limitReached), without
			// cutting the answer short.
			sp.settle(ev.Usage, ev.CostUSD)
			e.Kind, e.TokensIn, e.TokensOut, e.CostUSD = EventUsage, sp.usage.In, sp.usage.Out, sp.cost
			// Nothing reported (the exec agent): null in JSON, not 0.
			e.UsageUnknown, e.CostUnknown = sp.usage == (agent.Usage{}), sp.cost == 0
		case agent.EventRetry:
			e.Kind, e.Text, e.Attempt, e.Delay, e.APIStatus = EventRetry, ev.Text, ev.Attempt, ev.Delay, ev.APIStatus
		default:
			return
		}
		c.emit(e)
	}
}

// decision is what an iteration's outcome does to its task.
type decision struct {
	status   mdstate.Status
	attempts int
	note     string // for the progress entry and the event
	// counted is set for a failed attempt or a block: the task's note is
	// then this one, counted with the same reason's (failnote.go), not note.
	counted *countedNote
}

// giveUp skips the task, saying why after the failure's reason.
func (d *decision) giveUp(why string) {
	d.status, d.note = mdstate.Skipped, d.note+why
	if d.counted != nil {
		d.counted.gaveUp = why
	}
}

// decide applies the failure policy, the rate-limit wait and the
// interrupt rules to an iteration's outcome.
func (c *Coordinator) decide(task *mdstate.Item, a attempt) decision {
	d := decision{status: mdstate.Pending, attempts: task.Attempts, note: a.Note}
	switch {
	case a.Outcome == OutcomeDone:
		d.status = mdstate.Done
	case a.Outcome == OutcomeBlocked:
		d.status = mdstate.Blocked
		d.counted = &countedNote{kind: noteBlocked, reason: a.Note, times: 1, last: c.opts.Now()}
	case a.Outcome == OutcomeInterrupted && a.Taken:
		// The person's status stays (saveOutcome); the note says why.
	case a.Outcome == OutcomeInterrupted:
		d.note = fmt.Sprintf("interrupted at %s in iteration %d", c.opts.Now().UTC().Format(time.RFC3339), c.session.Iteration)
		if c.pace.cutTask == task.ID {
			d.note = fmt.Sprintf("stopped at %s in iteration %d: %s reached", c.opts.Now().UTC().Format(time.RFC3339), c.session.Iteration, c.limitFlag(c.pace.cut))
		}
		if a.Urgent {
			// An urgent message cut it short: the same task goes first.
			d.note += "; " + a.Note
			c.pace.retry = task.ID
		}
	case a.Outcome == OutcomeRateLimited:
		// Not the task's fault: wait for the reset and try the same task
		// again, without counting an attempt.
		c.session.WaitUntil, c.pace.waited = c.limitUntil(a.Result.ResetAt), time.Time{}
		c.pace.retry = task.ID
		d.note += "; waiting until " + c.session.WaitUntil.UTC().Format(time.RFC3339)
	case a.Outcome == OutcomeFailed:
		d.attempts++
		d.counted = &countedNote{kind: noteFailed, reason: a.Note, times: 1, last: c.opts.Now()}
		c.failurePolicy(task.ID, &d)
	}
	return d
}

// failurePolicy decides what a failed attempt leads to.
func (c *Coordinator) failurePolicy(id string, d *decision) {
	switch {
	case c.opts.OnFailure == AbortOnFailure:
		c.pace.abort = fmt.Sprintf("%s failed and --on-failure is abort: %s", id, d.note)
	case c.opts.OnFailure == SkipOnFailure:
		d.giveUp(skippedNote(giveUpPolicy, 0))
	case d.attempts >= c.opts.MaxAttempts:
		d.giveUp(skippedNote(giveUpAttempts, d.attempts))
	default:
		c.pace.wait = min(c.opts.Backoff<<max(d.attempts-1, 0), time.Minute)
		c.pace.again, c.pace.attempts = true, d.attempts
	}
}

// saveOutcome writes the task's new status, attempts and note with the
// iteration's result and usage and its agent's report (rep), in one
// atomic write: if ralph dies before
// the progress entry is appended, the next start writes it from them
// (restoreEntry). An error leaves the session's counters as they were: the
// next start recovers the iteration as interrupted. A task whose status a
// person changed while its agent worked keeps the person's status; ralph's
// outcome goes in a note under it and in d's note, for the progress entry.
// With ahead, the same write may begin the next iteration (ahead.go): it
// is then in c.ahead.
func (c *Coordinator) saveOutcome(task *mdstate.Item, a attempt, d *decision, rep *mdstate.IterationReport, ahead bool) error {
	s := &c.session
	before := *s
	// Costs are kept to 1/100 of a cent, as the files show them: the
	// session's total is then exactly the sum of its entries.
	a.Result.CostUSD = math.Round(a.Result.CostUSD*1e4) / 1e4
	// "unknown" while no agent of the session has reported a figure;
	// partial once some iterations have and some have not.
	s.AddUsage(a.Result.Usage.In, a.Result.Usage.Out, usageKnown(a.Result))
	s.AddCost(a.Result.CostUSD, costKnown(a.Result))
	done, it := s.Done, s.Iteration
	result := &mdstate.IterationResult{Outcome: string(a.Outcome), TokensIn: a.Result.Usage.In, TokensOut: a.Result.Usage.Out,
		CostUSD: a.Result.CostUSD, Duration: a.Took.Round(time.Second)}
	var kept string
	var next *beganAhead
	err := c.saveTask(task.ID, func(e *mdstate.ChecklistEdit) error {
		// Run again on a file that changed meanwhile: from the start.
		kept, next = "", nil
		s.Iteration, s.Task, s.Phase, s.Result, s.Report = it, task.ID, mdstate.PhaseWriting, result, rep
		// The session counts the tasks it completed: not one a person
		// skipped or blocked meanwhile.
		s.Done = done
		if a.Outcome == OutcomeDone {
			s.Done++
		}
		if e.Checklist().Find(task.ID) == nil {
			// A person removed the task while its agent worked: the
			// iteration is still recorded, in the session and the log.
			kept = "a person removed the task while its agent worked"
			return nil
		}
		if st, took := c.plan.personal(task.ID); took {
			if st != mdstate.Done {
				s.Done = done
			}
			kept = personKeptNote(st, a.Outcome, c.opts.Now())
			return e.AddMeta(task.ID, "note", kept)
		}
		if err := writeOutcome(e, task, d); err != nil || !ahead {
			return err
		}
		var err error
		next, err = c.beginInWrite(e, task)
		return err
	})
	if err != nil {
		*s = before
		return err
	}
	if kept != "" {
		// The person has decided: no retry, no wait, no abort.
		c.pace.again, c.pace.retry, c.pace.abort, c.pace.wait = false, "", "", 0
		c.session.WaitUntil = time.Time{}
		d.note = strings.TrimSuffix(strings.TrimSpace(kept+"; "+d.note), ";")
		return nil
	}
	c.own.marked(task.ID, mdstate.InProgress, d.status)
	if next != nil {
		c.own.marked(next.task.ID, mdstate.Pending, mdstate.InProgress)
		c.ahead = next
	}
	return nil
}

// writeOutcome has e write an iteration's decision under its task. A done
// task loses its failure notes and attempts line; a failure or a block is
// counted with the same reason's note (failnote.go).
func writeOutcome(e *mdstate.ChecklistEdit, task *mdstate.Item, d *decision) error {
	if err := e.SetStatus(task.ID, d.status); err != nil {
		return err
	}
	if d.status == mdstate.Done {
		if err := ClearFailures(e, task.ID); err != nil {
			return err
		}
	} else if d.attempts != task.Attempts {
		if err := e.SetMeta(task.ID, "attempts", strconv.Itoa(d.attempts)); err != nil {
			return err
		}
	}
	switch {
	case d.counted != nil:
		return addCounted(e, task.ID, *d.counted)
	case d.note != "":
		return e.AddMeta(task.ID, "note", d.note)
	}
	return nil
}

// personKeptNote is ralph's view of a task whose status a person changed
// while its agent worked: the person's status stays, this says what the
// agent came to.
func personKeptNote(st mdstate.Status, out IterationOutcome, now time.Time) string {
	if out == OutcomeInterrupted {
		return fmt.Sprintf("a person marked it %s at %s; ralph stopped its agent and kept their status", st, now.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("a person marked it %s while its agent worked; the agent's outcome was %s (%s); ralph kept their status", st, out, now.UTC().Format(time.RFC3339))
}

// prompt builds the child's prompt: the context block, the queued
// guidance, and the reporting protocol. It returns the guidance it gave.
func (c *Coordinator) prompt(ctx context.Context, id string) (string, []string, error) {
	// The coordinator's Project reuses the parse of its own last write;
	// the work tree status (a git process) and a fresh project scan are
	// not worth their cost on every iteration.
	r, err := BuildReport(ctx, c.opts.Root, ReportOptions{Project: c.p, Scanned: c.scanned, NoStatus: true, Git: c.opts.Git, History: &c.history, Holder: &c.holder})
	if err != nil {
		return "", nil, err
	}
	c.scanned = r.Project
	if e := c.entryQueued(); e != nil {
		// The last iteration's entry goes in beside this agent's start.
		r.State.Progress = r.State.Progress.Appended(*e, recentEntries)
	}
	text, _ := r.Prompt(PromptOptions{Task: id})
	// The guidance is the one in the tasks the prompt was built from. A
	// message queued since goes into the next prompt, or stops this
	// iteration if it is urgent (the context above is registered).
	tasks := r.State.Tasks
	if tasks == nil {
		var err error
		if tasks, err = c.p.LoadChecklist(mdstate.TasksKind); err != nil {
			return "", nil, err
		}
	}
	var b strings.Builder
	b.WriteString(text)
	var given []string
	for _, g := range tasks.Guidance() {
		given = append(given, g.Text)
	}
	b.WriteString(guidanceBlock(given))
	b.WriteString("\n" + Protocol)
	return b.String(), given, nil
}
