package coordinator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/coordinator/registry"
	"github.com/ralph-dev/ralph/mdstate"
	"github.com/ralph-dev/ralph/mdstate/watch"
	"github.com/ralph-dev/ralph/projectdetect"
)

// Agent runs one child agent to completion. coordinator/agent's backends
// satisfy it; tests may too.
type Agent interface {
	Name() string
	Run(ctx context.Context, req agent.Request, onEvent func(agent.Event)) (agent.Result, error)
}

// preparer is an Agent that can get ready for its next run ahead of it,
// as every agent.Backend can (Backend.Prepare).
type preparer interface{ Prepare() }

// Options configure a coordinator. Zero values mean "no limit" or the
// documented default.
type Options struct {
	Root          string
	Agent         Agent
	Model         string
	MaxIterations int
	// MaxCost (USD, the session's), MaxTokens (the session's, in and out)
	// and MaxTime (one run's wall clock) are checked between iterations
	// and against what the agent streams while it works: crossing one
	// stops the agent at once (its task goes back to pending with a note
	// naming the limit) and ends the run with StopLimit. While the agent
	// works its cost is claude's estimate from agent.PriceOf, replaced by
	// the CLI's own figure at the end.
	MaxCost   float64
	MaxTokens int64
	MaxTime   time.Duration
	// MaxTurns caps each iteration's model calls, for agents whose CLI
	// takes a cap (claude --max-turns); zero means none.
	MaxTurns int
	// Permission is what the agent may do without asking; "" is
	// agent.PermissionBypass.
	Permission       agent.Permission
	TaskID           string        // work on this task only
	Env              []string      // the children's environment; nil: ralph's
	Command          string        // who runs it, for the lock: "ralph run"
	NoOutputTimeout  time.Duration // default 10 minutes
	IterationTimeout time.Duration // default 60 minutes
	// Grace is the time from SIGINT to SIGKILL when a run is interrupted
	// (its context cancelled, Stop(false), an urgent message); zero means 3
	// s. Stop(true) always uses proc.HardGrace.
	Grace time.Duration
	// Commit commits each completed task: the files its agent changed
	// (never one that was already dirty before the task) and the state
	// files, as "ralph: ID title".
	Commit bool
	// NewSession starts a new session even when the last one was
	// interrupted or paused; by default ralph continues it.
	NewSession bool
	// OnFailure is what a failed attempt (a crash, a hang, an error, an
	// end without COMPLETE) leads to; "" is RetryOnFailure.
	OnFailure   FailurePolicy
	MaxAttempts int // default 3
	// Breaker stops the run (exit 3) after this many iterations in a row
	// that neither completed a task nor changed the work tree; 0 means 3,
	// a negative value turns it off. It starts afresh with every run and
	// whenever a person edits RALPH_TASKS.md.
	Breaker int
	Backoff time.Duration // first retry's wait; zero: none (ralph run's flag defaults to 2 s)
	Now     func() time.Time
	// Git locates the user's git configuration for the project scan (the
	// entry point reads it from the environment).
	Git projectdetect.GitConfig
	// Secrets are replaced by Redacted in everything ralph writes from an
	// agent (the entry point reads them from the environment with
	// SecretsFromEnv); those of Env are added.
	Secrets []string
	// Resources bounds free disk space and the agents' logs.
	Resources Resources
	// Project, when set, is the front end's view of the state files (its
	// parses are reused); nil opens one at Root.
	Project *mdstate.Project
	// Watch watches the state files for as long as the coordinator lives
	// (mdstate/watch) and acts on what others change (Notify): a front
	// end that shows a live session wants it; a test may call Notify
	// itself.
	Watch bool
	// SingleRun says the coordinator makes one run and is then closed
	// (ralph run): the watcher stops watching as soon as the run's loop
	// ends (watch.Watcher.Unwatch), so that the kernel frees the watch
	// beside the run's last writes. Closing a watch that is still on
	// waits out a kernel grace period (5-20 ms here) that would
	// otherwise end every run.
	SingleRun bool
	// OneProc runs the process's Go code on one processor
	// (runtime.GOMAXPROCS(1)) while the run's loop runs agents, its
	// threads pinned to one CPU (proc.PinToOneCPU; the children it starts
	// are not), and puts back the count and the CPUs it found when the
	// loop ends: the loop's bookkeeping then never holds two cores at
	// once, nor wakes on the one where the next agent comes up, while its
	// agents and their supervisor want them. On two cores, with the loop
	// yielding as it starts the next agent (warm.go), the one processor
	// took 0.85 ms off an iteration of a run of short agents, and the one
	// CPU 0.7-1.3 ms more (docs/benchmarks.md). Both are the process's: a
	// front end sets this only when the coordinator is all it runs (ralph
	// run), not where a person types while agents work (ralph chat).
	OneProc bool
	// Registry, when set, is told when a session starts and ends: the
	// machine's list of projects, for `ralph sessions --all`.
	Registry *registry.Registry
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
		o.OnFailure = RetryOnFailure
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 3
	}
	if o.Breaker == 0 {
		o.Breaker = 3
	}
	return o
}

// Errors the control methods return.
var (
	ErrRunning    = errors.New("the coordinator is already running")
	ErrNotStarted = errors.New("the coordinator has not run")
	ErrClosed     = errors.New("the coordinator is closed")
)

// Causes of a cancelled iteration, read back with context.Cause.
var (
	errStopped = errors.New("stopped")
	errUrgent  = errors.New("stopped for an urgent message")
)

// Coordinator is ralph's engine for one project; see the package doc for
// its API and delivery rules.
type Coordinator struct {
	opts   Options
	p      *mdstate.Project
	lock   *Lock
	holder LockInfo // what the lock says of this coordinator
	events *stream

	// ctl guards the control state below, shared by the run goroutine and
	// the front end's calls.
	ctl      sync.Mutex
	closed   bool
	running  bool
	talking  bool          // a conversation turn runs (Talk)
	done     chan struct{} // closed when the current (or last) run returned
	last     runEnd
	stopRun  context.CancelCauseFunc // cancels the current run
	stopIter context.CancelCauseFunc // cancels the current iteration only
	pausing  chan struct{}           // closed by Pause: cuts a wait short
	paused   bool
	snap     Snapshot

	watcher *watch.Watcher // with Options.Watch

	// edited is set by Notify when a person changed RALPH_TASKS.md: the
	// circuit breaker starts afresh.
	edited atomic.Bool

	// The run goroutine's own state.
	session mdstate.Session
	// runIterations caps this run's iterations (StartFor); 0: the
	// options' MaxIterations.
	runIterations int
	// doneAtStart is the session's count of done tasks when this run
	// started: "task k of n" counts from it.
	doneAtStart int
	// skippedBefore are the tasks ralph had given up on when this run
	// started: reported at its end, not counted as its failures.
	skippedBefore []string
	started       time.Time
	// scanned is the project scan, made once a session: what kind of
	// project it is does not change from one task to the next.
	scanned *projectdetect.Project
	// history keeps the prompt's git facts while no ref changes.
	history HistoryCache
	// logs is what the iterations know of the logs folder (logbook.go).
	logs logBook
	pace pacing
	brk  breakerState
	// delivered is the guidance the last iteration received and answered:
	// the session's next write takes it off the queue.
	delivered []string
	// ahead is the next iteration, when the last one's write began it
	// (ahead.go).
	ahead *beganAhead
	// entry is the done iteration's progress entry while it waits to be
	// appended beside the next agent's start (ahead.go).
	entry *entryAhead
	// warm is the next iteration's agent, started and held while ralph
	// writes the last one's outcome (warm.go).
	warm *warmAgent
	// early is the next iteration's agent when it was started at the
	// running one's answer, from the agent's reader (warmEarly); the loop
	// takes it once that agent has ended (warmNext).
	early atomic.Pointer[warmAgent]
	// runnable is how many tasks a run could still do when this
	// iteration began, its own included (startedEvent).
	runnable int
	// own is what ralph wrote in the state files this session (owned.go).
	own ownEdits
	// plan is what the last write of RALPH_TASKS.md found about them.
	plan taskPlan
}

type runEnd struct {
	out Outcome
	err error
}

// New takes the project's coordinator lock (failing at once with
// *ErrLocked when another coordinator holds it) and holds it until Close.
func New(opts Options) (*Coordinator, error) {
	if opts.Agent == nil {
		return nil, errors.New("no agent configured")
	}
	opts = opts.withDefaults()
	host, _ := os.Hostname()
	holder := LockInfo{PID: os.Getpid(), Host: host, Command: opts.Command, Since: opts.Now()}
	lock, err := AcquireLock(opts.Root, holder)
	if err != nil {
		return nil, err
	}
	p := opts.Project
	if p == nil || p.Root != opts.Root {
		p = mdstate.Open(opts.Root)
	}
	// Its appends return once their journal record is durable, its saves
	// once swapped in: an agent's start, the end of each run and Close
	// wait for the flushes (mdstate.Project.Sync).
	p.FlushLater = true
	c := &Coordinator{opts: opts, p: p, lock: lock, holder: holder, events: newStream()}
	c.snap.Agent, c.snap.Model = opts.Agent.Name(), opts.Model
	if opts.Watch {
		if c.watcher, err = watch.New(c.p, c.changed, watch.Options{}); err != nil {
			lock.Release()
			return nil, fmt.Errorf("watch the state files: %w", err)
		}
	}
	return c, nil
}

// Events returns the event stream, which lives until Close. Each run ends
// with exactly one EventStopped. Streaming detail may be dropped when the
// reader falls behind; every other event is delivered, in order.
func (c *Coordinator) Events() <-chan Event { return c.events.out }

// Run works through the tasks until none is ready, a limit is reached, the
// run is paused or stopped, or ctx is cancelled (which stops the agent's
// group with the normal grace and puts its task back to pending). It may
// be called again after it returned: the same session continues.
func (c *Coordinator) Run(ctx context.Context) (Outcome, error) {
	if err := c.Start(ctx); err != nil {
		return Outcome{}, err
	}
	return c.Wait()
}

// Start starts a run in the background; Wait returns its outcome.
func (c *Coordinator) Start(ctx context.Context) error {
	return c.StartFor(ctx, 0)
}

// StartFor starts a run that stops after at most iterations iterations
// (StopLimit), whatever Options.MaxIterations says; 0 means
// Options.MaxIterations. Chat's /run N.
func (c *Coordinator) StartFor(ctx context.Context, iterations int) error {
	c.ctl.Lock()
	defer c.ctl.Unlock()
	if err := c.busyErr(); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	c.running, c.done, c.stopRun = true, done, cancel
	c.paused, c.pausing = false, make(chan struct{})
	c.runIterations = iterations
	go func() {
		out, err := c.run(runCtx)
		cancel(nil)
		c.ended(out, err)
		close(done)
	}()
	return nil
}

// ended records a run's end and sends its stopped event, under the same
// lock: a front end that sees EventStopped can Start again at once, and no
// event of a new run comes before it.
func (c *Coordinator) ended(out Outcome, err error) {
	e := Event{Kind: EventStopped, Time: c.opts.Now(), Stop: out.Reason, Reason: string(out.Reason), Text: out.Detail}
	if err != nil {
		e.Stop, e.Reason, e.Text = StopError, string(StopError), err.Error()
	}
	c.ctl.Lock()
	defer c.ctl.Unlock()
	c.last = runEnd{out, err}
	c.running, c.stopRun, c.stopIter = false, nil, nil
	c.snap.WaitUntil = time.Time{}
	c.snap.Task, c.snap.Title, c.snap.Tool = "", "", ""
	c.snap.Last = e
	c.events.send(e)
}

// Wait waits for the current run, or returns the last one's outcome.
func (c *Coordinator) Wait() (Outcome, error) {
	c.ctl.Lock()
	done := c.done
	c.ctl.Unlock()
	if done == nil {
		return Outcome{}, ErrNotStarted
	}
	<-done
	c.ctl.Lock()
	defer c.ctl.Unlock()
	return c.last.out, c.last.err
}

// Pause stops the run after the current iteration, or at once when it
// waits for a usage limit to reset or backs off before a retry. The
// session is then paused; Run (or Resume) continues it.
func (c *Coordinator) Pause() {
	c.ctl.Lock()
	defer c.ctl.Unlock()
	if !c.running || c.paused {
		return
	}
	c.paused = true
	close(c.pausing)
}

// Resume takes back a Pause that has not taken effect yet, or, when no run
// is going on, starts one with ctx.
func (c *Coordinator) Resume(ctx context.Context) error {
	c.ctl.Lock()
	if c.running {
		defer c.ctl.Unlock()
		if c.paused {
			c.paused = false
			c.pausing = make(chan struct{})
		}
		return nil
	}
	c.ctl.Unlock()
	return c.Start(ctx)
}

// pauseRequested reports whether Pause was called during this run, and
// the channel it closes.
func (c *Coordinator) pauseRequested() (bool, <-chan struct{}) {
	c.ctl.Lock()
	defer c.ctl.Unlock()
	return c.paused, c.pausing
}

// Stop ends the current run now and returns once it has ended: the
// agent's whole process tree is stopped (hard: SIGINT, then SIGKILL after
// proc.HardGrace; otherwise after Options.Grace), its task goes back to
// pending with a note, the session is paused and saved. Without a run it
// does nothing.
func (c *Coordinator) Stop(hard bool) {
	c.ctl.Lock()
	stop, done := c.stopRun, c.done
	c.ctl.Unlock()
	if stop == nil {
		return
	}
	cause := errStopped
	if hard {
		cause = proc.ErrStopNow
	}
	stop(cause)
	<-done
}

// Close stops a run that is still going (hard), closes the event stream
// and gives the lock up. No run starts once Close has begun. Called from
// the goroutine that reads Events while events are still queued, it waits
// up to a second for them to be read.
func (c *Coordinator) Close() {
	c.ctl.Lock()
	already := c.closed
	c.closed = true
	c.ctl.Unlock()
	if already {
		return
	}
	c.Stop(true)
	_ = c.p.Sync() // a failure was told by the run that appended
	if c.watcher != nil {
		_ = c.watcher.Close() // bounded; a stuck one is left to the exit
	}
	c.events.close()
	c.lock.Release()
}

// unwatch stops the watcher's watch, if any; Close closes it.
func (c *Coordinator) unwatch() {
	if c.watcher != nil {
		c.watcher.Unwatch()
	}
}

// SetAgent changes the agent, model and permission mode of the turns and
// runs that start after it; it refuses while one is under way.
func (c *Coordinator) SetAgent(a Agent, model string, perm agent.Permission) error {
	c.ctl.Lock()
	defer c.ctl.Unlock()
	if err := c.busyErr(); err != nil {
		return err
	}
	c.opts.Agent, c.opts.Model, c.opts.Permission = a, model, perm
	c.snap.Agent, c.snap.Model = a.Name(), model
	return nil
}

// busyErr says why nothing new may start: the coordinator is closed, or
// a run or a conversation turn is under way. The caller holds ctl.
func (c *Coordinator) busyErr() error {
	switch {
	case c.closed:
		return ErrClosed
	case c.running:
		return ErrRunning
	case c.talking:
		return ErrTalking
	}
	return nil
}

// Project is the coordinator's view of the state files. A front end that
// writes them itself (chat's task add, say) should do so through it, so
// that Notify tells its writes from a person's.
func (c *Coordinator) Project() *mdstate.Project { return c.p }

// emit stamps e and hands it to the stream.
func (c *Coordinator) emit(e Event) {
	e.Time = c.opts.Now()
	c.observe(e)
	c.events.send(e)
}
