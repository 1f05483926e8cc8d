package coordinator

import (
	"context"
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
// reported, the commit, the progress entry.
func (c *Coordinator) iterate(ctx context.Context, task *mdstate.Item) (IterationOutcome, error) {
	if err := c.preflight(); err != nil {
		return "", err
	}
	if err := c.begin(task); err != nil {
		return "", err
	}
	var dirtyBefore []string
	if c.opts.Commit {
		dirtyBefore = dirtyPaths(ctx, c.opts.Root)
	}
	// The iteration's context is registered before the prompt is read: an
	// urgent message queued from now on either is in the prompt or stops
	// the agent.
	iterCtx, cancel := c.iterationContext(ctx)
	defer cancel(nil)
	prompt, guidance, err := c.prompt(ctx, task.ID)
	if err != nil {
		return "", err
	}
	a, err := c.runIteration(iterCtx, cancel, task.ID, prompt)
	if err != nil {
		return "", err
	}
	d := c.decide(task, a)
	if err := c.recordOutcome(task, a, d); err != nil {
		return "", err
	}
	var delivered []string
	if a.Answered {
		delivered = guidance
	}
	commit := ""
	if c.opts.Commit && a.Outcome == OutcomeDone {
		var failed string
		// Not under ctx: a stop that comes after the agent's answer
		// must not lose the commit of a task that is now done.
		cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		commit, failed = c.commitTask(cctx, dirtyBefore, task)
		stop()
		if failed != "" {
			d.note = strings.TrimSpace(d.note + " commit failed: " + failed)
		}
	}
	entry := redactEntry(iterationEntry(c.opts.Now(), task, c.session.Iteration, AgentLabel(c.opts.Agent.Name(), c.opts.Model), a, d.note, commit, delivered), c.opts.redactor())
	if err := c.p.AppendProgress(entry); err != nil {
		return "", err
	}
	c.session.Result = nil // in the log now; the next session write drops it
	dropKeptReport(c.opts.Root)
	c.emit(Event{Kind: EventStateWritten, File: mdstate.ProgressFile})
	if len(delivered) > 0 {
		// Off the queue with the session's next write: a crash before it
		// delivers the guidance once more, never not at all.
		c.delivered = delivered
		c.emit(Event{Kind: EventGuidanceDelivered, Iteration: c.session.Iteration, Task: task.ID, Delivered: delivered})
	}
	c.emit(Event{Kind: EventIterationDone, Iteration: c.session.Iteration, Task: task.ID, Title: task.Title, Outcome: a.Outcome, Reason: d.note,
		TokensIn: a.Result.Usage.In, TokensOut: a.Result.Usage.Out, CostUSD: a.Result.CostUSD})
	return a.Outcome, nil
}

// begin opens an iteration: the task in progress, in the session's write.
func (c *Coordinator) begin(task *mdstate.Item) error {
	s := &c.session
	s.Iteration++
	s.Task, s.Phase = task.ID, mdstate.PhaseAgent
	s.WaitUntil = time.Time{}
	c.pace.retry, c.pace.again = "", false
	if err := c.saveSession(func(e *mdstate.ChecklistEdit) error { return e.SetStatus(task.ID, mdstate.InProgress) }); err != nil {
		return err
	}
	c.emit(Event{Kind: EventTaskStarted, Iteration: s.Iteration, Task: task.ID, Title: task.Title})
	return nil
}

// runIteration runs the agent in a context of its own, which an urgent
// message cancels without ending the run, and so does a budget: --max-time
// when its time is up, --max-cost and --max-tokens as soon as the usage
// the agent streams reaches them.
func (c *Coordinator) runIteration(iterCtx context.Context, cancel context.CancelCauseFunc, id, prompt string) (attempt, error) {
	if c.opts.MaxTime > 0 {
		t := time.AfterFunc(c.timeLeft(), func() { cancel(&limitHit{limitTime}) })
		defer t.Stop()
	}
	s := &c.session
	a, err := runAgent(iterCtx, c.opts, request{
		Prompt:   prompt,
		LogName:  fmt.Sprintf("%s-%03d-%s.log", s.ID, s.Iteration, id),
		OnStart:  c.recordChild,
		Mark:     sessionMark(c.opts.Root, s.ID),
		OnEvent:  c.forward(id, c.newSpending(), cancel),
		OnNotice: func(text string) { c.emit(Event{Kind: EventNotice, Text: text}) },
	})
	s.Child, s.ChildStart = 0, 0
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

// iterationContext is the context of one iteration, which Queue's urgent
// messages cancel (through stopIter) without ending the run. Its cancel
// function also forgets it.
func (c *Coordinator) iterationContext(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	iterCtx, cancel := context.WithCancelCause(ctx)
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

// recordChild saves the agent's pid at once: after a crash of ralph, the
// next start finds the agent's group there and stops it, if that very
// process (pid and start time) still runs.
func (c *Coordinator) recordChild(pid int) {
	c.session.Child = pid
	c.session.ChildStart, _ = proc.StartTime(pid)
	if err := c.saveSession(nil); err != nil {
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
	note     string
}

// decide applies the failure policy, the rate-limit wait and the
// interrupt rules to an iteration's outcome.
func (c *Coordinator) decide(task *mdstate.Item, a attempt) decision {
	d := decision{status: mdstate.Pending, attempts: task.Attempts, note: a.Note}
	switch a.Outcome {
	case OutcomeDone:
		d.status = mdstate.Done
	case OutcomeBlocked:
		d.status = mdstate.Blocked
	case OutcomeInterrupted:
		d.note = fmt.Sprintf("interrupted at %s in iteration %d", c.opts.Now().UTC().Format(time.RFC3339), c.session.Iteration)
		if c.pace.cutTask == task.ID {
			d.note = fmt.Sprintf("stopped at %s in iteration %d: %s reached", c.opts.Now().UTC().Format(time.RFC3339), c.session.Iteration, c.limitFlag(c.pace.cut))
		}
		if a.Urgent {
			// An urgent message cut it short: the same task goes first.
			d.note += "; " + a.Note
			c.pace.retry = task.ID
		}
	case OutcomeRateLimited:
		// Not the task's fault: wait for the reset and try the same task
		// again, without counting an attempt.
		c.session.WaitUntil, c.pace.waited = c.limitUntil(a.Result.ResetAt), time.Time{}
		c.pace.retry = task.ID
		d.note += "; waiting until " + c.session.WaitUntil.UTC().Format(time.RFC3339)
	case OutcomeFailed:
		d.attempts++
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
		d.status, d.note = mdstate.Skipped, d.note+skippedNote(giveUpPolicy, 0)
	case d.attempts >= c.opts.MaxAttempts:
		d.status, d.note = mdstate.Skipped, d.note+skippedNote(giveUpAttempts, d.attempts)
	default:
		c.pace.wait = min(c.opts.Backoff<<max(d.attempts-1, 0), time.Minute)
		c.pace.again, c.pace.attempts = true, d.attempts
	}
}

// saveOutcome writes the task's new status, attempts and note with the
// iteration's result and usage, in one atomic write: if ralph dies before
// the progress entry is appended, the next start writes it from them
// (restoreEntry). An error leaves the session's counters as they were: the
// next start recovers the iteration as interrupted.
func (c *Coordinator) saveOutcome(task *mdstate.Item, a attempt, d decision) error {
	s := &c.session
	before := *s
	// Costs are kept to 1/100 of a cent, as the files show them: the
	// session's total is then exactly the sum of its entries.
	a.Result.CostUSD = math.Round(a.Result.CostUSD*1e4) / 1e4
	s.TokensIn += a.Result.Usage.In
	s.TokensOut += a.Result.Usage.Out
	s.CostUSD += a.Result.CostUSD
	s.Phase = mdstate.PhaseWriting
	if a.Outcome == OutcomeDone {
		s.Done++
	}
	s.Result = &mdstate.IterationResult{Outcome: string(a.Outcome), TokensIn: a.Result.Usage.In, TokensOut: a.Result.Usage.Out,
		CostUSD: a.Result.CostUSD, Duration: a.Took.Round(time.Second)}
	err := c.saveSession(func(e *mdstate.ChecklistEdit) error {
		if e.Checklist().Find(task.ID) == nil {
			// A person removed the task while its agent worked: the
			// iteration is still recorded, in the session and the log.
			return nil
		}
		if err := e.SetStatus(task.ID, d.status); err != nil {
			return err
		}
		if d.attempts != task.Attempts {
			if err := e.SetMeta(task.ID, "attempts", strconv.Itoa(d.attempts)); err != nil {
				return err
			}
		}
		if d.note != "" {
			return e.AddMeta(task.ID, "note", d.note)
		}
		return nil
	})
	if err != nil {
		*s = before
	}
	return err
}

// prompt builds the child's prompt: the context block, the queued
// guidance, and the reporting protocol. It returns the guidance it gave.
func (c *Coordinator) prompt(ctx context.Context, id string) (string, []string, error) {
	// The coordinator's Project reuses the parse of its own last write;
	// the work tree status (a git process) and a fresh project scan are
	// not worth their cost on every iteration.
	r, err := BuildReport(ctx, c.opts.Root, ReportOptions{Project: c.p, Scanned: c.scanned, NoStatus: true, Git: c.opts.Git})
	if err != nil {
		return "", nil, err
	}
	c.scanned = r.Project
	text, _ := r.Prompt(PromptOptions{Task: id})
	tasks, err := c.p.LoadChecklist(mdstate.TasksKind)
	if err != nil {
		return "", nil, err
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
