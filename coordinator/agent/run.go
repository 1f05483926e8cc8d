package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc"
)

// maxLine caps one stdout line. Agent JSON lines can exceed 64 KiB (a tool
// result holding a whole file), so the cap is far above bufio's default;
// a longer line is skipped (it stays in RawLog) rather than held in memory.
const maxLine = 16 << 20

// lineSink receives a child's stdout, one line at a time, from a single
// goroutine.
type lineSink interface {
	// line gets one complete line without its newline. The slice is reused
	// after the call returns.
	line(b []byte)
	// tooLong reports that a line longer than maxLine was skipped.
	tooLong()
	// settled reports whether the child has already given its final answer
	// (claude's result line); it is called from another goroutine.
	settled() bool
}

// cliStream parses an agent CLI's stdout and makes the run's Result.
type cliStream interface {
	lineSink
	// finish turns what was parsed and how the child ended into the
	// Result; now dates reset times stated without a date.
	finish(end childEnd, now time.Time) Result
}

// runCLI runs the agent CLI named name as c for req, its stdout parsed by
// s, and returns s's Result, now being when the child is gone. The error
// says the CLI could not be started.
func runCLI(ctx context.Context, name string, c proc.Cmd, req Request, s cliStream, now func() time.Time) (Result, error) {
	end, err := runChild(ctx, c, req, s)
	if err != nil {
		return Result{}, fmt.Errorf("start %s: %w", name, err)
	}
	return s.finish(end, now()), nil
}

// streamState is the bookkeeping every stream parser shares: where events
// go, the agent's session, the lines not understood, and whether the run
// has its outcome.
type streamState struct {
	onEvent   func(Event)
	sessionID string
	skipped   int         // stdout lines not understood; they stay in RawLog
	got       atomic.Bool // the final answer (or the failure) has been parsed
}

// newStreamState sends events to onEvent, or nowhere when it is nil.
func newStreamState(onEvent func(Event)) streamState {
	if onEvent == nil {
		onEvent = func(Event) {}
	}
	return streamState{onEvent: onEvent}
}

func (s *streamState) settled() bool { return s.got.Load() }

func (s *streamState) tooLong() { s.skipped++ }

// decode reads a JSON line into v. A blank line is passed over; one that
// is not a JSON object is counted as skipped: a warning printed to stdout,
// or a line broken by another write in its middle
// (anthropics/claude-code#49640).
func (s *streamState) decode(b []byte, v any) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return false
	}
	if b[0] != '{' || json.Unmarshal(b, v) != nil {
		s.skipped++
		return false
	}
	return true
}

// sendText reports assistant text.
func (s *streamState) sendText(text string) {
	s.onEvent(Event{Kind: EventText, Text: text, SessionID: s.sessionID})
}

// sendToolUse reports a call of tool, its input shortened for display.
func (s *streamState) sendToolUse(tool, input string) {
	s.onEvent(Event{Kind: EventToolUse, Tool: tool, Text: shorten(input, maxToolInput), SessionID: s.sessionID})
}

// sendToolResult reports what tool gave back, shortened for display.
func (s *streamState) sendToolResult(tool, output string) {
	s.onEvent(Event{Kind: EventToolResult, Tool: tool, Text: shorten(output, maxToolResult), SessionID: s.sessionID})
}

// sendUsage reports usage spent since the last report, and its cost.
func (s *streamState) sendUsage(u Usage, cost float64) {
	s.onEvent(Event{Kind: EventUsage, Usage: u, CostUSD: cost, SessionID: s.sessionID})
}

// result starts the Result of a run that ended as end: the session, the
// lines skipped and the child's exit.
func (s *streamState) result(end childEnd) Result {
	return Result{
		SessionID:    s.sessionID,
		ExitCode:     end.exitCode,
		Duration:     end.duration,
		PID:          end.pid,
		SkippedLines: s.skipped,
	}
}

// Display limits for event text; the Result is never shortened.
const (
	maxToolInput  = 300
	maxToolResult = 2000
)

// childEnd is how a child process ended, as the shared runner saw it.
type childEnd struct {
	pid      int
	exitCode int
	duration time.Duration
	// stopped is the ErrorKind of ralph stopping the child (timeout,
	// no_output, interrupted), or "" when it exited on its own.
	stopped ErrorKind
	// stoppedSettled: the child had already given its final answer when it
	// was stopped (it hung after its result line).
	stoppedSettled bool
	stderrTail     string
}

// stoppedFirst says ralph stopped the child before it gave its final
// answer: that is the outcome, whatever the child printed on its way out.
// A child that hung after its answer has still answered.
func (e childEnd) stoppedFirst() bool { return e.stopped != "" && !e.stoppedSettled }

// markStopped makes r the outcome of a run ralph stopped for kind.
func markStopped(r *Result, kind ErrorKind) {
	r.IsError, r.ErrorKind, r.ErrorText = true, kind, stoppedText(kind)
}

func stoppedText(kind ErrorKind) string {
	switch kind {
	case KindTimeout:
		return "stopped: the run passed its deadline"
	case KindNoOutput:
		return "stopped: no output for too long"
	default:
		return "stopped: interrupted"
	}
}

// noResult makes r (SkippedLines set) the outcome of a child of the CLI
// named cli that ended without its result line: exit code 0 alone is not
// success (subsy/ralph-tui#259).
func noResult(r *Result, end childEnd, cli string) {
	r.IsError = true
	if end.exitCode == 0 {
		r.ErrorKind = KindBadOutput
		r.ErrorText = fmt.Sprintf("%s exited 0 without a result line (%d unreadable lines)", cli, r.SkippedLines)
		return
	}
	r.ErrorKind = KindCrashed
	r.ErrorText = cli + " ended without a result (" + exitText(end.exitCode) + ")"
	if tail := lastLines(end.stderrTail, 5, 500); tail != "" {
		r.ErrorText += ": " + tail
	}
}

func exitText(code int) string {
	if code < 0 {
		return "killed by a signal"
	}
	return fmt.Sprintf("exit code %d", code)
}

// contained gives every backend its Prepare: each one's child runs
// contained (runChild).
type contained struct{}

func (contained) Prepare() { proc.Prepare() }

// runChild runs c with the request's prompt on stdin, feeds its stdout to
// sink line by line (and every raw byte to req.RawLog), and enforces the
// no-output watchdog, the deadline and ctx. It returns once the child has
// exited and everything it started has been killed; the error is non-nil
// only when the child could not be started.
func runChild(ctx context.Context, c proc.Cmd, req Request, sink lineSink) (childEnd, error) {
	if ctx.Err() != nil {
		// Cancelled before it began: nothing to start or stop.
		return childEnd{exitCode: -1, stopped: KindInterrupted}, nil
	}
	c.Dir = req.Dir
	var held *heldInput
	if req.Hold != nil {
		held = newHeldInput()
		c.Stdin = held
	} else {
		c.Stdin = strings.NewReader(req.Prompt)
	}
	c.Grace = req.Grace
	// A process group is not a container: Claude Code's Bash tool runs
	// each command in a session of its own, which a SIGKILLed claude (or
	// ralph) left running. The supervisor reaches those too.
	c.Contain = true
	c.Mark = req.Mark
	c.After = req.After

	// stop passes ctx's cause on (a hard stop's proc.ErrStopNow): when
	// the select below sees ctx done before the context package has
	// propagated the cancel to runCtx, a plain cancel would win the race
	// and turn a hard stop into one with the full grace.
	runCtx, stopCause := context.WithCancelCause(ctx)
	stop := func() { stopCause(context.Cause(ctx)) }
	defer stop()

	// exec copies the child's stdout into pw from its own goroutine; the
	// reader below is the only goroutine that parses and calls back.
	pr, pw := io.Pipe()
	out := &activity{base: time.Now()}
	stdout := &activityWriter{w: pw, a: out}
	stderr := &tailBuffer{max: 8 << 10}

	start := time.Now()
	p, err := proc.Start(runCtx, c, stdout, stderr)
	if err != nil {
		if ctx.Err() != nil {
			// Stopped while it started (a supervisor takes a few
			// milliseconds): an interruption, not a child that cannot run.
			return childEnd{exitCode: -1, stopped: KindInterrupted}, nil
		}
		return childEnd{}, err
	}
	end := childEnd{pid: p.Pid()}
	if req.OnProcess != nil {
		req.OnProcess(p)
	}
	if held != nil {
		g, ok := req.Hold.await(ctx)
		if !ok {
			return letGo(p, held, pr, end), nil
		}
		req.Prompt, req.RawLog, req.OnStart = g.Prompt, g.RawLog, g.OnStart
		held.give(g.Prompt)
		// The child's time, and the watchdog's, run from its prompt.
		start = time.Now()
		out.touch()
	}
	lr := &lineReader{raw: req.RawLog, sink: sink, a: out}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		lr.read(pr)
	}()
	if req.OnStart != nil {
		req.OnStart(p.Pid())
	}

	end.stopped, end.stoppedSettled = waitChild(ctx, p, req, out, lr, sink, stop)
	// Done is closed: the supervisor has killed what the agent left
	// behind; without one, Wait kills what is left of its group.
	_ = p.Wait(time.Second)
	end.exitCode = p.ExitCode()
	end.duration = time.Since(start)
	end.stderrTail = stderr.String()
	// exec has finished copying: no more writes to pw.
	pw.Close()
	<-readDone
	return end, nil
}

// letGo kills a held child that its caller let go before giving it its
// prompt: at once, since it has done nothing yet. Its output, which no
// one reads, is cut off first so that the copy of it ends; its stdin ends
// only once it runs no more, so that it never reads an end of file as an
// empty prompt.
func letGo(p *proc.Process, held *heldInput, pr *io.PipeReader, end childEnd) childEnd {
	pr.CloseWithError(errNotGiven)
	p.Kill()
	held.drop()
	_ = p.Wait(time.Second)
	end.exitCode, end.stopped = -1, KindInterrupted
	return end
}

// waitChild waits for p to exit, and stops it (through stop) when ctx is
// done, the deadline passes or the no-output watchdog fires. It says why
// ralph stopped it, if it did, and whether the child had already given its
// final answer then (it hung after its result line).
func waitChild(ctx context.Context, p *proc.Process, req Request, out *activity, lr *lineReader, sink lineSink, stop func()) (stopped ErrorKind, settled bool) {
	var deadline, watch <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		deadline = t.C
	}
	var watchdog *time.Timer
	if req.NoOutputTimeout > 0 {
		watchdog = time.NewTimer(req.NoOutputTimeout)
		defer watchdog.Stop()
		watch = watchdog.C
	}
	interrupt := ctx.Done()
	stopWith := func(kind ErrorKind) {
		stopped, settled = kind, sink.settled()
		// Cancelling runCtx makes proc interrupt the group and escalate to
		// SIGKILL after the grace period; Done follows.
		stop()
		deadline, watch, interrupt = nil, nil, nil
	}
	for {
		select {
		case <-p.Done():
			return stopped, settled
		case <-interrupt:
			stopWith(KindInterrupted)
		case <-deadline:
			stopWith(KindTimeout)
		case <-watch:
			// Output ralph is still digesting (a slow log, a 16 MiB line
			// to decode) is not the child's silence.
			idle := out.idle()
			if lr.busy.Load() {
				idle = 0
			}
			if idle >= req.NoOutputTimeout {
				stopWith(KindNoOutput)
			} else {
				watchdog.Reset(req.NoOutputTimeout - idle)
			}
		}
	}
}

// lineReader splits a child's stdout into lines for sink, copying every
// byte to raw first. A line over maxLine is skipped without being held:
// memory stays bounded however much a child prints.
type lineReader struct {
	raw  io.Writer
	sink lineSink
	a    *activity   // when output was last seen, for the watchdog
	busy atomic.Bool // a chunk is being logged and parsed
}

func (lr *lineReader) read(r io.Reader) {
	raw, sink := lr.raw, lr.sink
	bufp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bufp)
	buf := *bufp
	var line []byte
	skipping := false
	for {
		n, err := r.Read(buf)
		chunk := buf[:n]
		lr.busy.Store(true)
		if raw != nil && n > 0 {
			if _, werr := raw.Write(chunk); werr != nil {
				// A failing log must not stall or stop the child.
				raw = nil
			}
		}
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			part := chunk
			if i >= 0 {
				part = chunk[:i]
			}
			if !skipping {
				if len(line)+len(part) > maxLine {
					skipping = true
					line = nil // release the big buffer
					sink.tooLong()
				} else {
					line = appendDoubling(line, part)
				}
			}
			if i < 0 {
				break
			}
			if !skipping {
				sink.line(line)
			}
			skipping = false
			if cap(line) > 1<<20 {
				line = nil
			} else {
				line = line[:0]
			}
			chunk = chunk[i+1:]
		}
		lr.a.touch()
		lr.busy.Store(false)
		if err != nil {
			break
		}
	}
	if !skipping && len(line) > 0 {
		sink.line(line)
	}
}

// readBufs holds the buffers lineReader reads a child's output into: one
// allocated for every agent was a sixth of what ralph allocated an
// iteration of a run of short agents (issue 14).
var readBufs = sync.Pool{New: func() any {
	b := make([]byte, 64<<10)
	return &b
}}

// appendDoubling appends like append, but grows by doubling (up to
// maxLine) where append grows big slices by a quarter: for a line near the
// cap that is 32 MiB allocated in all instead of about 80.
func appendDoubling(line, part []byte) []byte {
	if need := len(line) + len(part); need > cap(line) {
		c := max(2*cap(line), need, 4<<10)
		c = min(c, max(need, maxLine))
		grown := make([]byte, len(line), c)
		copy(grown, line)
		line = grown
	}
	return append(line, part...)
}

// activity is the watchdog's clock: when output was last seen, on the
// monotonic clock (a wall-clock jump must not fire the watchdog).
type activity struct {
	base time.Time
	last atomic.Int64 // nanoseconds since base
}

func (a *activity) touch() { a.last.Store(int64(time.Since(a.base))) }

func (a *activity) idle() time.Duration {
	return time.Since(a.base) - time.Duration(a.last.Load())
}

// activityWriter records when the child last wrote to stdout.
type activityWriter struct {
	w io.Writer
	a *activity
}

func (w *activityWriter) Write(p []byte) (int, error) {
	w.a.touch()
	return w.w.Write(p)
}

// tailBuffer keeps the last max bytes written to it: a crashed child's
// last words on stderr, without holding all of them.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= t.max {
		p = p[len(p)-t.max:]
		t.b = t.b[:0]
	}
	if over := len(t.b) + len(p) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	t.b = append(t.b, p...)
	return n, nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// lastLines returns the last n non-empty lines of s, at most max bytes
// (keeping the end): a short reason from a crashed child's stderr.
func lastLines(s string, n, max int) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			keep = append(keep, l)
		}
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	out := strings.Join(keep, "\n")
	if len(out) > max {
		cut := len(out) - max
		for cut < len(out) && !utf8RuneStart(out[cut]) {
			cut++
		}
		out = "…" + out[cut:]
	}
	return out
}

// shorten cuts s to at most max bytes for display, marking the cut.
func shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// envValue is the value of name in env, "" when unset. The last setting
// wins, as for exec.
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// withEnv is env with each NAME=value of set replacing the variable's
// other values.
func withEnv(env []string, set ...string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, s := range set {
			if name, _, _ := strings.Cut(s, "="); name == k {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}
