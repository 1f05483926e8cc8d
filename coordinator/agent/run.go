package agent

import (
	"bytes"
	"context"
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
	c.Stdin = strings.NewReader(req.Prompt)
	c.Grace = req.Grace
	// A process group is not a container: Claude Code's Bash tool runs
	// each command in a session of its own, which a SIGKILLed claude (or
	// ralph) left running. The supervisor reaches those too.
	c.Contain = true
	c.Mark = req.Mark

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
	lr := &lineReader{raw: req.RawLog, sink: sink, a: out}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		lr.read(pr)
	}()

	start := time.Now()
	p, err := proc.Start(runCtx, c, stdout, stderr)
	if err != nil {
		pw.Close()
		<-readDone
		if ctx.Err() != nil {
			// Stopped while it started (a supervisor takes a few
			// milliseconds): an interruption, not a child that cannot run.
			return childEnd{exitCode: -1, stopped: KindInterrupted}, nil
		}
		return childEnd{}, err
	}
	end := childEnd{pid: p.Pid()}
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
	buf := make([]byte, 64<<10)
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
