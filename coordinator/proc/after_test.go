//go:build linux

package proc

import (
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
)

// firstChild starts a contained child that prints its supervisor's pid,
// then waits for a line on its stdin (the returned writer) and exits.
func firstChild(t *testing.T, ctx context.Context) (*Process, *io.PipeWriter, int) {
	t.Helper()
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	var out proctest.SyncBuffer
	p, err := Start(ctx, Cmd{Name: "sh", Args: []string{"-c", `echo $PPID; read line`}, Stdin: pr, Contain: true}, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill() })
	return p, pw, readPID(t, &out)
}

// nextChild is the child started after another: it prints its
// supervisor's pid and whether that other one still ran when it began.
func nextChild(after *Process) Cmd {
	return Cmd{Name: "sh", Args: []string{"-c", `echo $PPID; if kill -0 "$FIRST" 2>/dev/null; then echo before; else echo after; fi`},
		Env: append(os.Environ(), "FIRST="+strconv.Itoa(after.Pid())), Contain: true, After: after}
}

// started is a Start run from a goroutine.
type started struct {
	p   *Process
	err error
}

// startAsync starts c from a goroutine, its output going to out.
func startAsync(c Cmd, out io.Writer) <-chan started {
	ch := make(chan started, 1)
	go func() {
		p, err := Start(context.Background(), c, out, out)
		ch <- started{p, err}
	}()
	return ch
}

// waitStarted waits for a Start run by startAsync and for the child's
// end, and returns its output's lines: its supervisor's pid, then
// whether the first child had ended when it began.
func waitStarted(t *testing.T, ch <-chan started, out *proctest.SyncBuffer) (sup int, when string) {
	t.Helper()
	var s started
	select {
	case s = <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("Start of the next child did not return")
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	if err := s.p.Wait(10 * time.Second); err != nil {
		t.Fatalf("the next child: %v; output %q", err, out.String())
	}
	sup = readPID(t, out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	return sup, lines[len(lines)-1]
}

// A child started after a running one (Cmd.After) is started by that
// one's supervisor once it has ended, whether it exits or is stopped: its
// Start returns then, not before. Without After, a start while the first
// child runs takes a supervisor of its own at once
// (TestConcurrentContainedChildren).
func TestStartAfterWaitsForTheEnd(t *testing.T) {
	for _, how := range []string{"exits", "stopped"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			first, stdin, sup := firstChild(t, ctx)
			var out proctest.SyncBuffer
			ch := startAsync(nextChild(first), &out)
			select {
			case s := <-ch:
				t.Fatalf("Start of the next child returned (%v) while the first ran", s.err)
			case <-time.After(300 * time.Millisecond):
			}
			if how == "exits" {
				if _, err := stdin.Write([]byte("go\n")); err != nil {
					t.Fatal(err)
				}
			} else {
				cancel()
			}
			nextSup, when := waitStarted(t, ch, &out)
			if nextSup != sup {
				t.Errorf("the next child ran under supervisor %d, the first under %d", nextSup, sup)
			}
			if when != "after" {
				t.Errorf("the next child began %s the first one ended", when)
			}
			select {
			case <-first.Done():
			default:
				t.Error("the next child runs, and the first one's Done is not closed")
			}
		})
	}
}

// Where After cannot take the child, it starts as it would without After:
// after a child whose end is heard already (on the idle supervisor), and
// after one whose supervisor was killed while the next start waited on it
// (on a new supervisor).
func TestStartAfterFallsBack(t *testing.T) {
	t.Run("ended", func(t *testing.T) {
		first, stdin, sup := firstChild(t, t.Context())
		if _, err := stdin.Write([]byte("go\n")); err != nil {
			t.Fatal(err)
		}
		if err := first.Wait(10 * time.Second); err != nil {
			t.Fatal(err)
		}
		var out proctest.SyncBuffer
		nextSup, when := waitStarted(t, startAsync(nextChild(first), &out), &out)
		if nextSup != sup || when != "after" {
			t.Errorf("the next child ran under %d (the idle one is %d), %s the first one's end", nextSup, sup, when)
		}
	})
	t.Run("supervisor killed", func(t *testing.T) {
		first, _, sup := firstChild(t, t.Context())
		var out proctest.SyncBuffer
		ch := startAsync(nextChild(first), &out)
		time.Sleep(100 * time.Millisecond) // the start order is on its way, or in
		if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		nextSup, _ := waitStarted(t, ch, &out)
		if nextSup == sup {
			t.Errorf("the next child ran under the killed supervisor %d", sup)
		}
		select {
		case <-first.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the first child's Done not closed after its supervisor was killed")
		}
		waitGone(t, first.Pid(), 2*time.Second)
	})
}
