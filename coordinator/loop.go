package coordinator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/gitctx"
	"github.com/ralph-dev/ralph/mdstate"
	"github.com/ralph-dev/ralph/projectdetect"
)

// Agent runs one child agent to completion. coordinator/agent's backends
// satisfy it; tests may too.
type Agent interface {
	Name() string
	Run(ctx context.Context, req agent.Request, onEvent func(agent.Event)) (agent.Result, error)
}

// Options configure a coordinator. Zero values mean "no limit" or the
// documented default.
type Options struct {
	Root             string
	Agent            Agent
	Model            string
	MaxIterations    int
	MaxCost          float64       // USD
	MaxTime          time.Duration // wall clock for the whole session
	TaskID           string        // work on this task only
	Env              []string      // the children's environment; nil: ralph's
	Command          string        // who runs it, for the lock: "ralph run"
	NoOutputTimeout  time.Duration // default 10 minutes
	IterationTimeout time.Duration // default 60 minutes
	Grace            time.Duration // SIGINT to SIGKILL; default 3 s
	// Commit commits each completed task: the files its agent changed
	// (never one that was already dirty before the task) and the state
	// files, as "ralph: ID title".
	Commit bool
	// NewSession starts a new session even when the last one was
	// interrupted or paused; by default ralph continues it.
	NewSession bool
	// OnFailure is what a failed attempt (a crash, a hang, an error, an
	// end without COMPLETE) leads to: "retry" (the default) tries again
	// after Backoff, doubling up to a minute, until MaxAttempts, then skips
	// the task with the reason; "skip" skips it at once; "abort" stops the
	// run with the task back to pending.
	OnFailure   string
	MaxAttempts int // default 3
	// Breaker stops the run (exit 3) after this many iterations in a row
	// that neither completed a task nor changed the work tree; 0 means 3,
	// a negative value turns it off. It starts afresh with every run and
	// whenever a person edits RALPH_TASKS.md.
	Breaker int
	Backoff time.Duration // first retry's wait; zero: none (ralph run's flag defaults to 2 s)
	Now     func() time.Time
}

// EventKind names what happened.
type EventKind string

// The events a front end receives. Agent text and tool events may be
// dropped when the front end is slow; the others are always delivered.
const (
	EventTaskStarted   EventKind = "task_started"
	EventAgentText     EventKind = "agent_text" // may be dropped
	EventToolUse       EventKind = "tool_use"   // may be dropped
	EventUsage         EventKind = "usage"      // may be dropped
	EventIterationDone EventKind = "iteration_done"
	EventStateWritten  EventKind = "state_written"
	EventStopped       EventKind = "stopped"
)

// Event is one thing that happened, for a front end to show.
type Event struct {
	Kind      EventKind `json:"event"`
	Time      time.Time `json:"time"`
	Iteration int       `json:"iteration,omitempty"`
	Task      string    `json:"task,omitempty"`
	Title     string    `json:"title,omitempty"`
	Text      string    `json:"text,omitempty"`
	Tool      string    `json:"tool,omitempty"`
	TokensIn  int64     `json:"tokens_in,omitempty"`
	TokensOut int64     `json:"tokens_out,omitempty"`
	CostUSD   float64   `json:"cost_usd,omitempty"`
	Outcome   string    `json:"outcome,omitempty"` // done, blocked, failed, interrupted
	Reason    string    `json:"reason,omitempty"`
	File      string    `json:"file,omitempty"` // for state_written
}

// StopReason says why a run ended.
type StopReason string

// The reasons, each with its exit code in cmd/ralph.
const (
	StopAllDone     StopReason = "all_done"    // every task done: exit 0
	StopNoneReady   StopReason = "none_ready"  // tasks left, none can run: exit 1
	StopLimit       StopReason = "limit"       // iterations, cost or time: exit 3
	StopInterrupted StopReason = "interrupted" // stopped by the user: exit 130
	StopPaused      StopReason = "paused"      // paused after an iteration: exit 0
	StopFailed      StopReason = "failed"      // a task failed under --on-failure abort: exit 1
	// StopReplaced ends a session that a --new-session run replaces; no
	// run returns it.
	StopReplaced StopReason = "new_session"
)

// Outcome is how a run ended.
type Outcome struct {
	Reason     StopReason
	Detail     string
	Iterations int
	TasksDone  int
	Session    mdstate.Session
}

// withDefaults fills in the documented defaults.
func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NoOutputTimeout == 0 {
		o.NoOutputTimeout = 10 * time.Minute
	}
	if o.IterationTimeout == 0 {
		o.IterationTimeout = 60 * time.Minute
	}
	if o.Grace == 0 {
		o.Grace = 3 * time.Second
	}
	if o.OnFailure == "" {
		o.OnFailure = "retry"
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 3
	}
	if o.Breaker == 0 {
		o.Breaker = 3
	}
	return o
}

// Coordinator is ralph's engine for one project. Create it with New, which
// takes the project's lock; front ends call Run, Pause, Queue and read
// Events; Close gives the lock up.
type Coordinator struct {
	opts   Options
	p      *mdstate.Project
	lock   *Lock
	events chan Event
	once   sync.Once
	paused atomic.Bool
	mu     sync.Mutex
	queued []string
	// pausing is closed by the first Pause: it cuts a wait short.
	pausing   chan struct{}
	pauseOnce sync.Once
	session   mdstate.Session
	started   time.Time
	// scanned is the project scan, made once a session: what kind of
	// project it is does not change from one task to the next.
	scanned *projectdetect.Project
	abort   string        // set when a failure stops the run
	wait    time.Duration // backoff before the next iteration
	// again is set when the last iteration failed and its task will be
	// tried again (the failure policy allows another attempt).
	again bool
	// limitWait is the last backoff for a rate limit that named no reset.
	limitWait time.Duration
	// retry is the task a usage or rate limit stopped: once the wait is
	// over it runs first, if it is still ready. waited is the end of the
	// last wait this run saw through.
	retry  string
	waited time.Time
	// stale counts iterations in a row without progress (the breaker);
	// tree is the work tree's fingerprint after the last iteration, and
	// lastTasks the task file as ralph last wrote it.
	stale     int
	tree      string
	lastTasks []byte
}

// New takes the project's coordinator lock (failing at once with
// *ErrLocked when another coordinator holds it) and prepares a session.
func New(opts Options) (*Coordinator, error) {
	if opts.Agent == nil {
		return nil, errors.New("no agent configured")
	}
	opts = opts.withDefaults()
	host, _ := os.Hostname()
	lock, err := AcquireLock(opts.Root, LockInfo{PID: os.Getpid(), Host: host, Command: opts.Command, Since: opts.Now()})
	if err != nil {
		return nil, err
	}
	p := mdstate.Open(opts.Root)
	return &Coordinator{opts: opts, p: p, lock: lock, events: make(chan Event, 256), pausing: make(chan struct{})}, nil
}

// Events returns the event stream. It is closed when Run returns; a front
// end must read it until then.
func (c *Coordinator) Events() <-chan Event { return c.events }

// Queue adds guidance for the next agent: it goes into the next prompt.
func (c *Coordinator) Queue(msg string) {
	c.mu.Lock()
	c.queued = append(c.queued, msg)
	c.mu.Unlock()
}

// Pause stops the run after the current iteration, or at once when it
// waits for a usage limit to reset.
func (c *Coordinator) Pause() {
	c.paused.Store(true)
	c.pauseOnce.Do(func() { close(c.pausing) })
}

// Close releases the lock.
func (c *Coordinator) Close() { c.lock.Release() }

func (c *Coordinator) emit(e Event) {
	e.Time = c.opts.Now()
	switch e.Kind {
	case EventAgentText, EventToolUse, EventUsage:
		select { // streaming detail: drop rather than stall the agent
		case c.events <- e:
		default:
		}
	default:
		c.events <- e
	}
}

// Run works through the tasks until none is ready, a limit is reached, the
// run is paused, or ctx is cancelled (a hard stop: the child's group is
// stopped and its task goes back to pending).
func (c *Coordinator) Run(ctx context.Context) (out Outcome, err error) {
	defer c.once.Do(func() { close(c.events) })
	c.started = c.opts.Now()
	if err := c.p.Recover(); err != nil {
		return out, err
	}
	resumed, err := c.resume()
	if err != nil {
		return out, err
	}
	if !resumed {
		// Nothing to do: no session is opened and nothing is written.
		tasks, err := c.p.LoadChecklist(mdstate.TasksKind)
		if err != nil {
			return out, err
		}
		if _, stop := c.pick(tasks); stop != nil {
			prev, _ := tasks.Session()
			if prev != nil {
				stop.Session = *prev
				stop.Iterations = prev.Iteration
			}
			c.emit(Event{Kind: EventStopped, Reason: string(stop.Reason), Text: stop.Detail})
			return *stop, nil
		}
		c.session = mdstate.Session{
			ID: c.started.UTC().Format("20060102-150405"), Status: "running", Phase: "starting",
			MaxIterations: c.opts.MaxIterations, Agent: c.opts.Agent.Name(), Model: c.opts.Model,
			Started: c.started, Updated: c.started, PID: os.Getpid(),
		}
		if repo, err := gitctx.Open(c.opts.Root); err == nil {
			if h, err := repo.Head(); err == nil {
				c.session.Baseline = h.Hash
			}
			repo.Close()
		}
		if err := c.saveSession(nil); err != nil {
			return out, err
		}
	}
	defer func() {
		if err == nil && c.session.Status != "" && out.Reason != StopInterrupted && out.Reason != StopPaused {
			// "ending" first: a crash between the summary and the final
			// save is then ended on the next start, not resumed (which
			// would write a second summary).
			c.session.Phase, c.session.Reason = "ending", string(out.Reason)
			if err = c.saveSession(nil); err == nil {
				err = c.summarize(out)
			}
		}
		if err != nil && c.session.Status != "" {
			// Not a stop but an error (a state file ralph cannot write,
			// say): the session is left running, as a crash leaves it, so
			// that the next start recovers it: the task goes back to
			// pending, an entry lost on the way is written, a summary
			// that could not be written is.
			if c.session.Phase != "ending" {
				c.session.Reason = oneLineText("error: " + err.Error())
			}
			c.session.Child = 0
			_ = c.saveSession(nil) // may fail the same way; the lock's release says "interrupted" anyway
			out.Session = c.session
			out.Iterations = c.session.Iteration
			c.emit(Event{Kind: EventStopped, Reason: "error", Text: err.Error()})
			return
		}
		c.session.Phase = ""
		c.session.Child = 0
		c.session.Updated = c.opts.Now()
		switch out.Reason {
		case StopInterrupted, StopPaused:
			c.session.Status = "paused"
			c.session.Reason = string(out.Reason)
		default:
			c.session.Status = "ended"
			c.session.Reason = string(out.Reason)
		}
		if werr := c.saveSession(nil); werr != nil && err == nil {
			err = werr
		}
		out.Session = c.session
		out.Iterations = c.session.Iteration
		c.emit(Event{Kind: EventStopped, Reason: string(out.Reason), Text: out.Detail})
	}()
	for {
		// An interrupt is checked first: a Ctrl-C during the last allowed
		// iteration is still an interrupt (exit 130, session paused), not
		// a limit. A limit stops only a run that has a task left to start:
		// finishing the last task in the last allowed iteration is all done.
		if ctx.Err() != nil {
			return Outcome{Reason: StopInterrupted, Detail: "stopped", TasksDone: out.TasksDone}, nil
		}
		if c.paused.Load() {
			return Outcome{Reason: StopPaused, Detail: "paused", TasksDone: out.TasksDone}, nil
		}
		tasks, err := c.p.LoadChecklist(mdstate.TasksKind)
		if err != nil {
			return out, err
		}
		task, stop := c.pick(tasks)
		if stop != nil {
			stop.TasksDone = out.TasksDone
			return *stop, nil
		}
		if r, detail := c.limitReached(); r != "" {
			return Outcome{Reason: r, Detail: detail, TasksDone: out.TasksDone}, nil
		}
		if until := c.session.WaitUntil; !until.IsZero() && !until.Equal(c.waited) {
			// Stopped during the wait, or waited: either way the tasks are
			// read again, since a person may have changed them meanwhile.
			// The wait stays in the session until the next iteration
			// starts: a stop right after it still retries the same task
			// first.
			if c.waitLimit(ctx, until) {
				c.waited = until
			}
			continue
		}
		if r, detail := c.breaker(); r != "" {
			return Outcome{Reason: r, Detail: detail, TasksDone: out.TasksDone}, nil
		}
		if w := c.wait; w > 0 {
			// The backoff after a failure, only when another iteration
			// follows; a stop ends it at once.
			c.wait = 0
			select {
			case <-ctx.Done():
				continue
			case <-time.After(w):
			}
		}
		done, err := c.iterate(ctx, task)
		if err != nil {
			return out, err
		}
		if done {
			out.TasksDone++
		}
		c.afterIteration(ctx, done)
		if c.abort != "" {
			return Outcome{Reason: StopFailed, Detail: c.abort, TasksDone: out.TasksDone}, nil
		}
		if c.opts.TaskID != "" {
			switch {
			case ctx.Err() != nil:
				// Reported as an interrupt at the top of the loop: exit
				// 130, not "all done".
				continue
			case !done && (c.again || !c.session.WaitUntil.IsZero()):
				// Another attempt (the failure policy allows it), or the
				// same task after a usage limit's wait.
				continue
			case !done:
				// Exit 0 means the work is done: a failed or blocked
				// --task run is not.
				return Outcome{Reason: StopNoneReady, Detail: c.opts.TaskID + " was not completed", TasksDone: out.TasksDone}, nil
			}
			return Outcome{Reason: StopAllDone, Detail: "ran " + c.opts.TaskID, TasksDone: out.TasksDone}, nil
		}
	}
}

func (c *Coordinator) limitReached() (StopReason, string) {
	s := &c.session
	switch {
	case s.MaxIterations > 0 && s.Iteration >= s.MaxIterations:
		return StopLimit, fmt.Sprintf("reached the iteration limit (%d of %d)", s.Iteration, s.MaxIterations)
	case c.opts.MaxCost > 0 && s.CostUSD >= c.opts.MaxCost:
		return StopLimit, fmt.Sprintf("reached --max-cost $%.2f (spent $%.4f)", c.opts.MaxCost, s.CostUSD)
	case c.opts.MaxTime > 0 && c.opts.Now().Sub(c.started) >= c.opts.MaxTime:
		return StopLimit, fmt.Sprintf("reached --max-time %s", c.opts.MaxTime)
	}
	return "", ""
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
		}
		return t, nil
	}
	ready := tasks.Ready()
	for _, t := range ready {
		if t.ID == c.retry {
			return t, nil
		}
	}
	if len(ready) > 0 {
		return ready[0], nil
	}
	counts := tasks.Counts()
	open := counts[mdstate.Pending] + counts[mdstate.InProgress] + counts[mdstate.Blocked]
	skipped := gaveUp(tasks)
	if open == 0 && len(skipped) > 0 {
		return nil, &Outcome{Reason: StopFailed, Detail: "no task left to run; gave up on " + strings.Join(skipped, ", ") + " after failed attempts (see their notes; `ralph task reopen ID` tries one again)"}
	}
	if open == 0 {
		return nil, &Outcome{Reason: StopAllDone, Detail: "every task is done"}
	}
	detail := fmt.Sprintf("%d tasks left, none ready (blocked, in progress, or waiting for others)", open)
	if open == 1 {
		detail = "1 task left, not ready (blocked, in progress, or waiting for others)"
	}
	if len(skipped) > 0 {
		detail += "; gave up on " + strings.Join(skipped, ", ") + " after failed attempts (see their notes)"
	}
	return nil, &Outcome{Reason: StopNoneReady, Detail: detail}
}

// saveSession writes the session block, with fn's task changes in the same
// atomic write.
func (c *Coordinator) saveSession(fn func(e *mdstate.ChecklistEdit) error) error {
	c.session.Updated = c.opts.Now()
	after, err := c.p.UpdateChecklist(mdstate.TasksKind, func(e *mdstate.ChecklistEdit) error {
		// Bytes other than ralph's last write: a person edited the tasks,
		// so the circuit breaker starts afresh.
		if c.lastTasks != nil && !bytes.Equal(e.Checklist().Source(), c.lastTasks) {
			c.stale = 0
		}
		if fn != nil {
			if err := fn(e); err != nil {
				return err
			}
		}
		s := c.session
		return e.SetSession(&s)
	})
	if err == nil {
		c.lastTasks = after.Source()
		c.emit(Event{Kind: EventStateWritten, File: mdstate.TasksFile})
	}
	return err
}

// iterate gives one task to one child agent and writes back what came of
// it. It reports whether the task was completed.
func (c *Coordinator) iterate(ctx context.Context, task *mdstate.Item) (bool, error) {
	s := &c.session
	s.Iteration++
	s.Task, s.Phase = task.ID, "agent"
	s.WaitUntil, c.retry, c.again = time.Time{}, "", false
	id, title := task.ID, task.Title
	if err := c.saveSession(func(e *mdstate.ChecklistEdit) error { return e.SetStatus(id, mdstate.InProgress) }); err != nil {
		return false, err
	}
	c.emit(Event{Kind: EventTaskStarted, Iteration: s.Iteration, Task: id, Title: title})

	var dirtyBefore []string
	if c.opts.Commit {
		dirtyBefore = dirtyPaths(ctx, c.opts.Root)
	}
	prompt, err := c.prompt(ctx, id)
	if err != nil {
		return false, err
	}
	logPath := filepath.Join(c.opts.Root, mdstate.RuntimeDir, "logs", fmt.Sprintf("%s-%03d-%s.log", s.ID, s.Iteration, id))
	_ = os.MkdirAll(filepath.Dir(logPath), 0o755)
	raw, err := os.Create(logPath)
	if err != nil {
		return false, fmt.Errorf("create the iteration log: %w", err)
	}
	defer raw.Close()

	start := c.opts.Now()
	res, runErr := c.opts.Agent.Run(ctx, agent.Request{
		Prompt: prompt, Dir: c.opts.Root, Model: c.opts.Model, Env: c.opts.Env, RawLog: raw,
		NoOutputTimeout: c.opts.NoOutputTimeout, Timeout: c.opts.IterationTimeout, Grace: c.opts.Grace,
		OnStart: func(pid int) {
			// Recorded at once: after a crash of ralph, the next start
			// finds the agent's group here and stops it, if that very
			// process (pid and start time) still runs.
			s.Child = pid
			s.ChildStart, _ = proc.StartTime(pid)
			if err := c.saveSession(nil); err != nil {
				c.emit(Event{Kind: EventAgentText, Task: id, Text: "(ralph could not record the agent's pid: " + err.Error() + ")"})
			}
		},
	}, func(ev agent.Event) {
		switch ev.Kind {
		case "text":
			c.emit(Event{Kind: EventAgentText, Iteration: s.Iteration, Task: id, Text: ev.Text})
		case "tool_use":
			c.emit(Event{Kind: EventToolUse, Iteration: s.Iteration, Task: id, Tool: ev.Tool})
		case "usage", "result":
			c.emit(Event{Kind: EventUsage, Iteration: s.Iteration, Task: id, TokensIn: ev.Usage.In, TokensOut: ev.Usage.Out, CostUSD: ev.CostUSD})
		}
	})
	took := c.opts.Now().Sub(start)
	s.Child, s.ChildStart = 0, 0
	// The counters below change with the write that saves the outcome, or
	// not at all: an error there leaves the session as it was.
	before := *s
	// Costs are kept to 1/100 of a cent, as the files show them: the
	// session's total is then exactly the sum of its entries.
	res.CostUSD = math.Round(res.CostUSD*1e4) / 1e4
	s.TokensIn += res.Usage.In
	s.TokensOut += res.Usage.Out
	s.CostUSD += res.CostUSD
	s.Phase = "writing"

	rep := ParseReport(res.Final)
	outcome, note := "failed", ""
	newStatus := mdstate.Pending
	switch {
	case runErr != nil:
		note = "the agent could not start: " + runErr.Error()
	case res.ErrorKind == "interrupted" || (ctx.Err() != nil && (res.IsError || res.ErrorKind != "" || rep.Verdict == VerdictNone)):
		// Stopped before it answered. An answer that came in before the
		// stop counts: the work is not thrown away.
		outcome, note = "interrupted", fmt.Sprintf("interrupted at %s in iteration %d", c.opts.Now().UTC().Format(time.RFC3339), s.Iteration)
	case res.ErrorKind == agent.KindRateLimit:
		// Not the task's fault: wait for the reset and try the same task
		// again, without counting an attempt.
		outcome, note = "rate_limited", failureNote(res)
		s.WaitUntil, c.waited = c.limitUntil(res.ResetAt), time.Time{}
		c.retry = id
		note += "; waiting until " + s.WaitUntil.UTC().Format(time.RFC3339)
	case res.IsError || res.ErrorKind != "":
		note = failureNote(res)
	case rep.Verdict == VerdictComplete:
		outcome, newStatus = "done", mdstate.Done
	case rep.Verdict == VerdictBlocked:
		outcome, newStatus, note = "blocked", mdstate.Blocked, rep.Reason
	default:
		note = "the agent ended without <promise>COMPLETE</promise>"
		if res.ExitCode == 0 {
			note += " (exit code 0 is not completion)"
		}
	}
	// A note is one line in the files; the event's reason must be too (a
	// crashed child's stderr tail has several).
	note = oneLineText(note)
	attempts := task.Attempts
	if outcome == "failed" {
		attempts++
		switch {
		case c.opts.OnFailure == "abort":
			c.abort = fmt.Sprintf("%s failed and --on-failure is abort: %s", id, note)
		case c.opts.OnFailure == "skip":
			newStatus, note = mdstate.Skipped, note+skippedBySkip
		case attempts >= c.opts.MaxAttempts:
			newStatus, note = mdstate.Skipped, note+skippedAfter(attempts)
		default:
			c.wait = min(c.opts.Backoff<<max(attempts-1, 0), time.Minute)
			c.again = true
		}
	}
	// The outcome and usage go into the same write as the status: if ralph
	// dies before the progress entry below is appended, the next start
	// writes it from them (restoreEntry).
	if outcome == "done" {
		s.Done++
	}
	s.Result = &mdstate.IterationResult{Outcome: outcome, TokensIn: res.Usage.In, TokensOut: res.Usage.Out,
		CostUSD: res.CostUSD, Duration: took.Round(time.Second)}
	err = c.saveSession(func(e *mdstate.ChecklistEdit) error {
		if e.Checklist().Find(id) == nil {
			// A person removed the task while its agent worked: the
			// iteration is still recorded, in the session and the log.
			return nil
		}
		if err := e.SetStatus(id, newStatus); err != nil {
			return err
		}
		if attempts != task.Attempts {
			if err := e.SetMeta(id, "attempts", strconv.Itoa(attempts)); err != nil {
				return err
			}
		}
		if note != "" {
			return e.AddMeta(id, "note", note)
		}
		return nil
	})
	if err != nil {
		*s = before // recovered as an interrupted iteration on the next start
		return false, err
	}
	if err := c.writeReport(rep); err != nil {
		return false, err
	}
	var commit string
	if c.opts.Commit && outcome == "done" {
		hash, cerr := c.commit(ctx, dirtyBefore, "ralph: "+id+" "+title)
		switch {
		case cerr != nil:
			note = strings.TrimSpace(note + " commit failed: " + cerr.Error())
		case hash != "":
			commit = hash[:7]
			s.Commits++ // saved with the next write of the session
		}
	}
	entry := mdstate.Entry{Time: c.opts.Now(), Title: id + ": " + title, Fields: []mdstate.Field{
		{Key: "outcome", Value: outcome},
		{Key: "agent", Value: AgentLabel(c.opts.Agent.Name(), c.opts.Model)},
		{Key: "iteration", Value: strconv.Itoa(s.Iteration)},
		{Key: "duration", Value: took.Round(time.Second).String()},
		{Key: "tokens", Value: fmt.Sprintf("%d in, %d out", res.Usage.In, res.Usage.Out)},
		{Key: "cost", Value: fmt.Sprintf("$%.4f", res.CostUSD)},
	}}
	if note != "" {
		entry.Fields = append(entry.Fields, mdstate.Field{Key: "note", Value: note})
	}
	if commit != "" {
		entry.Fields = append(entry.Fields, mdstate.Field{Key: "commit", Value: commit})
	}
	if rep.Summary != "" {
		entry.Fields = append(entry.Fields, mdstate.Field{Key: "summary", Value: rep.Summary})
	}
	if len(rep.Decisions) > 0 {
		entry.Fields = append(entry.Fields, mdstate.Field{Key: "decisions", List: rep.Decisions})
	}
	if err := c.p.AppendProgress(entry); err != nil {
		return false, err
	}
	s.Result = nil // in the log now; the next session write drops it
	c.emit(Event{Kind: EventStateWritten, File: mdstate.ProgressFile})
	c.emit(Event{Kind: EventIterationDone, Iteration: s.Iteration, Task: id, Title: title, Outcome: outcome, Reason: note,
		TokensIn: res.Usage.In, TokensOut: res.Usage.Out, CostUSD: res.CostUSD})
	return outcome == "done", nil
}

// prompt builds the child's prompt: the context block, queued guidance,
// and the reporting protocol.
func (c *Coordinator) prompt(ctx context.Context, id string) (string, error) {
	// The coordinator's Project reuses the parse of its own last write;
	// the work tree status (a git process) and a fresh project scan are
	// not worth their cost on every iteration.
	r, err := BuildReport(ctx, c.opts.Root, ReportOptions{Project: c.p, Scanned: c.scanned, NoStatus: true})
	if err != nil {
		return "", err
	}
	c.scanned = r.Project
	text, _ := r.Prompt(PromptOptions{Task: id})
	var b strings.Builder
	b.WriteString(text)
	c.mu.Lock()
	queued := c.queued
	c.queued = nil
	c.mu.Unlock()
	if len(queued) > 0 {
		b.WriteString("\n## Guidance from the user\n\n")
		for _, q := range queued {
			b.WriteString("- " + oneLineText(q) + "\n")
		}
	}
	b.WriteString("\n" + Protocol)
	return b.String(), nil
}

// writeReport files the agent's learnings and to-dos.
func (c *Coordinator) writeReport(rep AgentReport) error {
	for _, l := range rep.Learnings {
		// Agents repeat what they were told: a learning AGENT.md already
		// has is not added again.
		if a, err := c.p.LoadAgent(); err == nil && hasLearning(a, l) {
			continue
		}
		if err := c.p.Learn(l); err != nil {
			return err
		}
		c.emit(Event{Kind: EventStateWritten, File: mdstate.AgentFile})
	}
	if len(rep.Todos) == 0 {
		return nil
	}
	if _, err := os.Stat(c.p.Path(mdstate.TodoFile)); errors.Is(err, os.ErrNotExist) {
		if err := mdstate.WriteFileAtomic(c.p.Path(mdstate.TodoFile), []byte(mdstate.Templates[mdstate.TodoFile]), 0o644); err != nil {
			return err
		}
	}
	_, err := c.p.UpdateChecklist(mdstate.TodoKind, func(e *mdstate.ChecklistEdit) error {
		for _, t := range rep.Todos {
			if _, err := e.Add(t); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		c.emit(Event{Kind: EventStateWritten, File: mdstate.TodoFile})
	}
	return err
}

// The notes ralph adds to a task it gives up on; gaveUp finds them.
const skippedBySkip = "; skipped (--on-failure skip)"

func skippedAfter(attempts int) string {
	return fmt.Sprintf("; skipped after %d failed attempts", attempts)
}

var skippedAfterRe = regexp.MustCompile(`; skipped after [0-9]+ failed attempts$`)

// gaveUp lists the skipped tasks ralph gave up on, by the note it left:
// they keep a run from reporting "all done", also after a restart. A task
// a person skipped does not count.
func gaveUp(tasks *mdstate.Checklist) []string {
	var ids []string
	for _, t := range tasks.Items {
		if t.Status != mdstate.Skipped || len(t.Notes) == 0 {
			continue
		}
		if last := t.Notes[len(t.Notes)-1]; strings.HasSuffix(last, skippedBySkip) || skippedAfterRe.MatchString(last) {
			ids = append(ids, t.ID)
		}
	}
	return ids
}

func failureNote(res agent.Result) string {
	switch res.ErrorKind {
	case "no_output":
		return "the agent printed nothing for too long and was stopped"
	case "timeout":
		return "the agent ran past the iteration timeout and was stopped"
	case "rate_limit":
		return fmt.Sprintf("usage or rate limit (HTTP %d): %s", res.APIStatus, res.ErrorText)
	case "crashed":
		return fmt.Sprintf("the agent crashed (exit code %d): %s", res.ExitCode, res.ErrorText)
	}
	if res.ErrorText != "" {
		return "the agent reported an error: " + res.ErrorText
	}
	return "the agent reported an error (" + res.ErrorKind + ")"
}

// AgentLabel is how an agent is named in the files: "claude (sonnet)".
func AgentLabel(name, model string) string {
	if model == "" {
		return name
	}
	return name + " (" + model + ")"
}

func hasLearning(a *mdstate.Agent, text string) bool {
	for _, l := range a.Learnings {
		if strings.EqualFold(oneLineText(l.Text), oneLineText(text)) {
			return true
		}
	}
	return false
}

// commit records a completed task: the paths that are dirty now and were
// not before it (what its agent changed), plus the state files, which ralph
// itself keeps current. The progress entry that names the commit is
// appended after it, so it goes into the next task's commit.
func (c *Coordinator) commit(ctx context.Context, dirtyBefore []string, msg string) (string, error) {
	repo, err := gitctx.Open(c.opts.Root)
	if err != nil {
		return "", err
	}
	defer repo.Close()
	rel, err := filepath.Rel(repo.Root(), c.opts.Root)
	if err != nil {
		return "", err
	}
	prefix := ""
	if rel != "." {
		prefix = filepath.ToSlash(rel) + "/"
	}
	state := map[string]bool{}
	for _, name := range mdstate.Files {
		state[prefix+name] = true
	}
	var paths []string
	for _, p := range dirtyPaths(ctx, c.opts.Root) {
		if state[p] || !slices.Contains(dirtyBefore, p) {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return "", nil
	}
	return repo.Commit(ctx, paths, msg+"\n", c.opts.Now())
}

// EventResumed is emitted once when a run continues an earlier session.
const EventResumed EventKind = "resumed"

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
	if old == nil || (old.Status != "running" && old.Status != "interrupted" && old.Status != "paused") {
		return false, nil
	}
	if old.Status != "paused" && old.Phase == "ending" {
		return false, c.finishEnded(old)
	}
	interrupted := old.Status != "paused"
	s := *old
	s.Status, s.Phase, s.Reason, s.PID, s.Line = "running", "starting", "", os.Getpid(), 0
	s.Child, s.ChildStart, s.Result = 0, 0, nil
	if !s.WaitUntil.IsZero() {
		c.retry = s.Task // a limit stopped it: it goes first after the wait
	}
	s.Agent, s.Model = c.opts.Agent.Name(), c.opts.Model
	if c.opts.MaxIterations > 0 {
		s.MaxIterations = s.Iteration + c.opts.MaxIterations
	}
	c.session = s
	if interrupted {
		// Recovered even when a new session follows: the agent stopped,
		// the task put back, a lost entry written.
		if err := c.recoverInterrupted(old, tasks); err != nil {
			return false, err
		}
	}
	if c.opts.NewSession {
		c.retry = ""
		return false, c.endReplaced()
	}
	what := fmt.Sprintf("resuming session %s (%s at iteration %d", s.ID, map[bool]string{true: "interrupted", false: "paused"}[interrupted], old.Iteration)
	if old.Task != "" {
		what += ", task " + old.Task
	}
	if interrupted && old.Phase != "" {
		what += ", phase " + old.Phase
	}
	what += ")"
	if !interrupted {
		if err := c.saveSession(nil); err != nil {
			return false, err
		}
	}
	c.emit(Event{Kind: EventResumed, Text: what})
	return true, nil
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
	killed := ""
	if old.Child > 0 {
		if ok, err := proc.KillGroupIfSame(old.Child, old.ChildStart); err != nil {
			return fmt.Errorf("stop the interrupted session's agent (pid %d): %w", old.Child, err)
		} else if ok {
			killed = strconv.Itoa(old.Child)
		}
	}
	when := old.Updated.UTC().Format(time.RFC3339)
	var task *mdstate.Item
	if old.Task != "" {
		if t := tasks.Find(old.Task); t != nil && t.Status == mdstate.InProgress {
			task = t
		}
	}
	// Killed after iterate saved the task's new status but before its
	// progress entry was appended: the entry is written now, before the
	// session moves on (phase "starting").
	if err := c.restoreEntry(old, tasks); err != nil {
		return err
	}
	fields := []mdstate.Field{
		{Key: "outcome", Value: "recovered"},
		{Key: "session", Value: old.ID},
		{Key: "iteration", Value: strconv.Itoa(old.Iteration)},
		{Key: "phase", Value: orNone(old.Phase)},
		{Key: "interrupted", Value: when},
	}
	if old.Task != "" {
		fields = append(fields, mdstate.Field{Key: "task", Value: old.Task})
	}
	if killed != "" {
		fields = append(fields, mdstate.Field{Key: "stopped", Value: "agent process group " + killed + ", still running"})
	}
	// The entry before the session's write: a kill between the two
	// writes it again, rather than not at all.
	if err := c.p.AppendProgress(mdstate.Entry{Time: c.opts.Now(), Title: "session " + old.ID + " recovered", Fields: fields}); err != nil {
		return err
	}
	return c.saveSession(func(e *mdstate.ChecklistEdit) error {
		if task == nil {
			return nil
		}
		attempts := task.Attempts + 1
		status := mdstate.Pending
		note := fmt.Sprintf("interrupted at %s during phase %s (iteration %d); ralph resumed the session", when, orNone(old.Phase), old.Iteration)
		if attempts >= c.opts.MaxAttempts {
			status, note = mdstate.Skipped, note+skippedAfter(attempts)
		}
		if err := e.SetStatus(task.ID, status); err != nil {
			return err
		}
		if err := e.SetMeta(task.ID, "attempts", strconv.Itoa(attempts)); err != nil {
			return err
		}
		return e.AddMeta(task.ID, "note", note)
	})
}

// endReplaced ends the session a --new-session run replaces, with its
// summary entry, as a clean finish would.
func (c *Coordinator) endReplaced() error {
	c.session.Phase, c.session.Reason = "ending", string(StopReplaced)
	if err := c.saveSession(nil); err != nil {
		return err
	}
	if err := c.summarize(Outcome{Reason: StopReplaced, Detail: "a new session (--new-session) replaced it"}); err != nil {
		return err
	}
	c.session.Status, c.session.Phase = "ended", ""
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
	if old.Phase != "writing" || old.Task == "" || old.Iteration == 0 {
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
	title := t.ID + ": " + t.Title
	iteration := strconv.Itoa(old.Iteration)
	since := old.Updated.Truncate(time.Second)
	if since.IsZero() {
		since = old.Started.Truncate(time.Second)
	}
	for i := len(log.Recent) - 1; i >= 0 && !log.Recent[i].Time.Before(since); i-- {
		if e := &log.Recent[i]; strings.HasPrefix(e.Title, t.ID+": ") && e.Get("iteration") == iteration {
			return nil // written before the kill
		}
	}
	fields := []mdstate.Field{
		{Key: "outcome", Value: "done"},
		{Key: "agent", Value: AgentLabel(old.Agent, old.Model)},
		{Key: "iteration", Value: iteration},
	}
	note := "written on recovery: ralph was stopped after saving the task's status and before writing this entry"
	if r := old.Result; r != nil {
		fields[0].Value = r.Outcome
		fields = append(fields,
			mdstate.Field{Key: "duration", Value: r.Duration.Round(time.Second).String()},
			mdstate.Field{Key: "tokens", Value: fmt.Sprintf("%d in, %d out", r.TokensIn, r.TokensOut)},
			mdstate.Field{Key: "cost", Value: fmt.Sprintf("$%.4f", r.CostUSD)})
		if r.Outcome != "done" && len(t.Notes) > 0 {
			note += "; the task's note: " + t.Notes[len(t.Notes)-1]
		}
	} else {
		note += "; its duration, tokens and cost were not recorded"
	}
	fields = append(fields, mdstate.Field{Key: "note", Value: note})
	return c.p.AppendProgress(mdstate.Entry{Time: c.opts.Now(), Title: title, Fields: fields})
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// summarize records a session's end in the progress log: how long it ran,
// how many iterations, tasks done, tokens, cost and commits.
func (c *Coordinator) summarize(out Outcome) error {
	s := c.session
	fields := []mdstate.Field{
		{Key: "outcome", Value: "ended (" + string(out.Reason) + ")"},
		{Key: "session", Value: s.ID},
		{Key: "duration", Value: c.opts.Now().Sub(s.Started).Round(time.Second).String()},
		{Key: "iterations", Value: strconv.Itoa(s.Iteration)},
		{Key: "tasks", Value: strconv.Itoa(s.Done) + " done"},
		{Key: "tokens", Value: fmt.Sprintf("%d in, %d out", s.TokensIn, s.TokensOut)},
		{Key: "cost", Value: fmt.Sprintf("$%.4f", s.CostUSD)},
		{Key: "commits", Value: strconv.Itoa(s.Commits)},
	}
	if out.Detail != "" {
		fields = append(fields, mdstate.Field{Key: "note", Value: out.Detail})
	}
	if err := c.p.AppendProgress(mdstate.Entry{Time: c.opts.Now(), Title: "session " + s.ID + " ended", Fields: fields}); err != nil {
		return err
	}
	c.emit(Event{Kind: EventStateWritten, File: mdstate.ProgressFile})
	return nil
}

// EventWaiting is emitted when the run waits for a usage or rate limit to
// reset; Text says until when.
const EventWaiting EventKind = "waiting"

// limitUntil is when to try again after a rate limit: the reset the agent
// stated, else a backoff that starts at 30 seconds and doubles up to 30
// minutes.
func (c *Coordinator) limitUntil(reset time.Time) time.Time {
	now := c.opts.Now()
	if reset.After(now) {
		c.limitWait = 0
		return reset
	}
	c.limitWait = min(max(2*c.limitWait, 30*time.Second), 30*time.Minute)
	return now.Add(c.limitWait)
}

// waitLimit waits until the limit resets, with the wait recorded in the
// session so that a restart goes on waiting. It reports false when the run
// was stopped or paused during the wait.
func (c *Coordinator) waitLimit(ctx context.Context, until time.Time) bool {
	d := until.Sub(c.opts.Now())
	if d <= 0 {
		return true
	}
	c.session.Phase = "waiting"
	_ = c.saveSession(nil)
	c.emit(Event{Kind: EventWaiting, Text: until.UTC().Format(time.RFC3339)})
	select {
	case <-ctx.Done():
		return false
	case <-c.pausing:
		return false
	case <-time.After(d):
		return true
	}
}

// breaker trips after Breaker iterations in a row without progress. A
// person's edit of RALPH_TASKS.md since ralph's last write starts it afresh
// (here, and in saveSession, which reads the file before each write): they
// have steered, so the next iterations deserve a chance.
func (c *Coordinator) breaker() (StopReason, string) {
	if c.opts.Breaker < 0 {
		return "", ""
	}
	if cur, err := os.ReadFile(c.p.Path(mdstate.TasksFile)); err == nil && c.lastTasks != nil && !bytes.Equal(cur, c.lastTasks) {
		c.stale = 0 // edited since ralph's last write
	}
	if c.stale >= c.opts.Breaker {
		return StopLimit, fmt.Sprintf("circuit breaker: %d iterations in a row completed no task and changed nothing in the work tree; edit RALPH_TASKS.md or run again to retry", c.stale)
	}
	return "", ""
}

// afterIteration updates the breaker: progress is a completed task or any
// change in the work tree. A rate-limited iteration is neither.
func (c *Coordinator) afterIteration(ctx context.Context, done bool) {
	tree := treeFingerprint(ctx, c.opts.Root)
	if c.session.WaitUntil.IsZero() {
		if done || tree != c.tree {
			c.stale = 0
		} else {
			c.stale++
		}
	}
	c.tree = tree
}

// treeFingerprint names the work tree's state: the changed paths with their
// sizes and times, or the top folder's listing without git. The state
// files and .ralph/ are left out: ralph itself writes them every iteration.
func treeFingerprint(ctx context.Context, root string) string {
	paths := dirtyPaths(ctx, root)
	if paths == nil {
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			paths = append(paths, e.Name())
		}
	}
	var b strings.Builder
	for _, p := range paths {
		if slices.Contains(mdstate.Files, filepath.Base(p)) || strings.HasPrefix(p, mdstate.RuntimeDir) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(root, p)); err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
		} else {
			b.WriteString(p + " gone\n")
		}
	}
	return b.String()
}

// finishEnded completes a session that was killed while it ended: its
// summary entry is written if the kill came before it, and the session is
// recorded as ended. The run then starts a new session.
func (c *Coordinator) finishEnded(old *mdstate.Session) error {
	log, err := c.p.ReadProgress(1)
	if err != nil {
		return err
	}
	if n := len(log.Recent); n == 0 || log.Recent[n-1].Title != "session "+old.ID+" ended" {
		reason := old.Reason
		if reason == "" {
			reason = "unknown"
		}
		if err := c.p.AppendProgress(mdstate.Entry{Time: c.opts.Now(), Title: "session " + old.ID + " ended", Fields: []mdstate.Field{
			{Key: "outcome", Value: "ended (" + reason + ")"},
			{Key: "session", Value: old.ID},
			{Key: "iterations", Value: strconv.Itoa(old.Iteration)},
			{Key: "tasks", Value: strconv.Itoa(old.Done) + " done"},
			{Key: "tokens", Value: fmt.Sprintf("%d in, %d out", old.TokensIn, old.TokensOut)},
			{Key: "cost", Value: fmt.Sprintf("$%.4f", old.CostUSD)},
			{Key: "commits", Value: strconv.Itoa(old.Commits)},
			{Key: "note", Value: "written on the next start: ralph was stopped while it ended the session"},
		}}); err != nil {
			return err
		}
	}
	c.session = *old
	c.session.Status, c.session.Phase, c.session.Child, c.session.ChildStart, c.session.Line = "ended", "", 0, 0, 0
	c.session.Result = nil
	return c.saveSession(nil)
}
