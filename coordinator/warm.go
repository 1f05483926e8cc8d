package coordinator

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/proc"
)

// The next agent starts while ralph writes down the last one's outcome.
// When an agent has completed its task and the run looks set to go on (the
// checks mayBeginAhead makes, on what ralph knows without reading a file,
// and a task left), the next agent's process is started at once, held
// (agent.Hold): it gets its prompt on stdin only once its iteration's
// begin is on disk and the prompt is built, exactly when a cold start
// would have started it. An agent CLI takes longer to start (milliseconds
// for a test's instant agent, a second or more for the real ones) than
// ralph's bookkeeping between two agents, which is then off the path from
// one agent's end to the next one's work (docs/benchmarks.md).
//
// Only a PromptFirst agent is started so: one whose child reads its whole
// prompt before it does anything, so that an agent held, then let go, has
// done nothing. An exec agent runs a person's program, which may act
// before it reads its stdin: it always starts cold.
//
// The next agent starts earlier still when the running one has answered
// complete (its result, which a CLI prints just before it exits), and the
// run looked set to go on as this iteration began: from the agent's
// reader, with the running agent's supervisor told to start it as soon
// as the running one has ended (proc.Cmd.After), not once ralph has heard
// of that end and sent the order (warmEarly). The loop takes it once the
// running agent has ended, if the outcome is still done (warmNext).
//
// A warm agent the run does not need (the outcome's write began no
// iteration, a stop or a pause came first, an error ended the run) is
// killed at once, before it had a prompt. One held longer than warmLimit
// (a disk that took seconds to flush) is let go too, and the agent started
// anew: Claude Code gives up on a stdin that brings nothing for 3 s. A
// warm agent dies with ralph like any other: its supervisor kills it.

// warmLimit is how long a warm agent may wait for its prompt.
const warmLimit = time.Second

// errNotNeeded lets a warm agent go.
var errNotNeeded = errors.New("the next agent was not needed")

// warmAgent is the next iteration's agent, started before its iteration
// began and held until its prompt is given.
type warmAgent struct {
	// iterCtx is the context of the iteration the agent is for, which it
	// runs under (iterationContext takes it); iterCancel cancels it.
	iterCtx    context.Context
	iterCancel context.CancelCauseFunc
	letGoCause context.CancelCauseFunc // lets the agent go, not the iteration
	hold       *agent.Hold
	proc       procSlot                          // its process, once it runs
	sink       atomic.Pointer[func(agent.Event)] // where its events go, once its prompt is given
	ended      chan agentEnd
}

// agentEnd is what a warm agent's Run returned.
type agentEnd struct {
	res agent.Result
	err error
}

// procSlot holds an agent's process once it runs, and when it began to:
// the agent after it starts right after it (agent.Request.After).
type procSlot struct {
	p  atomic.Pointer[proc.Process]
	at atomic.Int64 // Unix nanoseconds
}

func (s *procSlot) set(p *proc.Process) {
	s.at.Store(time.Now().UnixNano())
	s.p.Store(p)
}

// heldTooLong reports whether the agent in the slot has run, held, for
// longer than warmLimit: not one still starting.
func (s *procSlot) heldTooLong() bool {
	at := s.at.Load()
	return at != 0 && time.Since(time.Unix(0, at)) > warmLimit
}

// warmNext starts the next agent, held, when the outcome a looks set to
// begin the next iteration in its write; one started already at a's
// answer (warmEarly) is kept then, and let go otherwise.
func (c *Coordinator) warmNext(ctx context.Context, a attempt) {
	goesOn := c.warmable() && c.goesOn(ctx, a)
	switch w := c.early.Swap(nil); {
	case w != nil && goesOn:
		c.warm = w
	case w != nil:
		w.letGo()
		return
	case goesOn:
		c.warm = c.startWarm(ctx, c.session.ID, nil)
		// The agent's start order is the run's critical path, and the
		// loop has a millisecond or two of writing to do. A new goroutine
		// waits in this P's next slot, where another P takes it only
		// after a pause (3 µs in the runtime, up to the timer slack of a
		// command that runs agents: a millisecond), and under OneProc
		// there is no other P: the loop yields, the start order goes out
		// at once, and the loop goes on as soon as the goroutine waits
		// for the supervisor's answer (the order went out 0.26 ms after
		// the supervisor's report of the last agent's end reached ralph,
		// instead of 0.77 ms; docs/benchmarks.md).
		runtime.Gosched()
	default:
		return
	}
	if warmProbe != nil {
		warmProbe()
	}
}

// warmable reports whether the agent may be started before its prompt.
func (c *Coordinator) warmable() bool {
	_, ok := c.opts.Agent.(agent.PromptFirst)
	return ok
}

// startWarm starts the next agent, held, for session id, right after the
// process after when it is set.
func (c *Coordinator) startWarm(ctx context.Context, id string, after *proc.Process) *warmAgent {
	iterCtx, iterCancel := context.WithCancelCause(ctx)
	runCtx, letGo := context.WithCancelCause(iterCtx)
	w := &warmAgent{iterCtx: iterCtx, iterCancel: iterCancel, letGoCause: letGo,
		hold: agent.NewHold(), ended: make(chan agentEnd, 1)}
	req := agentRequest(c.opts, request{Mark: sessionMark(c.opts.Root, id), OnProcess: w.proc.set})
	req.Hold, req.After = w.hold, after
	go func() {
		res, err := c.opts.Agent.Run(runCtx, req, w.event)
		w.ended <- agentEnd{res, err}
	}()
	return w
}

// warmEarly returns what the iteration's agent's reader calls on each
// event: at its complete answer, the next agent is started right after
// it (proc.Cmd.After), held, for warmNext to take. That is when the run
// looked set to go on as the iteration began (goesOn, on the loop's
// goroutine: the reader reads nothing of the loop's) and nothing has
// stopped the iteration or the run, or asked for a pause, since. running
// is the iteration's agent's process.
func (c *Coordinator) warmEarly(ctx, iterCtx context.Context, running *procSlot) func(agent.Event) {
	if !c.warmable() || !c.goesOn(ctx, attempt{Outcome: OutcomeDone}) {
		return func(agent.Event) {}
	}
	id := c.session.ID
	return func(ev agent.Event) {
		p := running.p.Load()
		if ev.Kind != agent.EventResult || p == nil || c.early.Load() != nil || iterCtx.Err() != nil {
			return
		}
		if paused, _ := c.pauseRequested(); paused || ParseReport(ev.Text).Verdict != VerdictComplete {
			return
		}
		c.early.Store(c.startWarm(ctx, id, p))
		if earlyProbe != nil {
			earlyProbe(p)
		}
	}
}

// earlyProbe, set by a test, is called with the running agent's process
// once warmEarly has started the next agent after it.
var earlyProbe func(running *proc.Process)

// warmProbe, set by a test, is called once a warm agent is started,
// before anything of the done iteration's outcome is written.
var warmProbe func()

// goesOn reports whether the run looks set to begin the next iteration in
// the write of the outcome a: mayBeginAhead's checks that need no file
// read (nothingDue), no limit reached, and a task left besides this one
// when it began. A wrong guess costs a process started and killed.
func (c *Coordinator) goesOn(ctx context.Context, a attempt) bool {
	if a.Outcome != OutcomeDone || c.runnable < 2 || !c.nothingDue(ctx) {
		return false
	}
	r, _ := c.limitReached()
	return r == ""
}

// event passes an event of the agent on, once its prompt is given.
func (w *warmAgent) event(ev agent.Event) {
	if f := w.sink.Load(); f != nil {
		(*f)(ev)
	}
}

// run gives the warm agent req's prompt and waits for its end: runAgent
// for an agent already started.
func (w *warmAgent) run(o Options, req request) (attempt, error) {
	red := o.redactor()
	raw, err := req.rawLog(o, red)
	if err != nil {
		w.letGo()
		return attempt{}, err
	}
	defer raw.Close() // a failure is told through onFail
	events := req.events(red)
	w.sink.Store(&events)
	start := o.Now()
	w.hold.Give(agent.Given{Prompt: req.Prompt, RawLog: raw, OnStart: req.OnStart})
	e := <-w.ended
	return ended(w.iterCtx, o, red, e.res, e.err, start), nil
}

// letGo kills the agent, which had no prompt, and waits for its end.
func (w *warmAgent) letGo() {
	w.letGoCause(errNotNeeded)
	<-w.ended
}

// takeWarm hands the warm agent to the iteration about to start its
// agent: nil when there is none, or it waited past warmLimit (let go).
func (c *Coordinator) takeWarm() *warmAgent {
	w := c.warm
	c.warm = nil
	if w != nil && w.proc.heldTooLong() {
		w.letGo()
		return nil
	}
	return w
}

// dropWarm lets the warm agent go, if there is one: no iteration will
// give it its prompt.
func (c *Coordinator) dropWarm() {
	if w := c.early.Swap(nil); w != nil {
		w.letGo()
	}
	if w := c.warm; w != nil {
		c.warm = nil
		w.letGo()
	}
}
