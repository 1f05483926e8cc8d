//go:build linux

package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
)

// waitGone waits a bounded time for pid to be gone.
func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for proctest.Alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d still alive after %s", pid, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readPID waits for the child to print a PID on its first line.
func readPID(t *testing.T, out *proctest.SyncBuffer) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if line, _, ok := strings.Cut(out.String(), "\n"); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatalf("child printed %q, not a PID", line)
			}
			return pid
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("child printed no PID; output: %q", out.String())
	return 0
}

func TestOutput(t *testing.T) {
	ctx := t.Context()
	out, err := Output(ctx, Cmd{Name: "sh", Args: []string{"-c", "echo hello; echo oops >&2"}})
	if err != nil || string(out) != "hello\n" {
		t.Fatalf("Output = %q, %v", out, err)
	}
	_, err = Output(ctx, Cmd{Name: "sh", Args: []string{"-c", "echo bad input >&2; exit 3"}})
	if err == nil || !strings.Contains(err.Error(), "exit status 3: bad input") {
		t.Fatalf("a failure should carry the exit status and stderr: %v", err)
	}
	_, err = Output(ctx, Cmd{Name: "no-such-program-ralph"})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	// stdin is /dev/null unless given: a program that reads it must not
	// wait for a terminal.
	out, err = Output(ctx, Cmd{Name: "cat"})
	if err != nil || len(out) != 0 {
		t.Fatalf("cat with no stdin = %q, %v", out, err)
	}
}

func TestRunReportsExitCode(t *testing.T) {
	res, err := Run(t.Context(), Cmd{Name: "sh", Args: []string{"-c", "exit 7"}})
	if err != nil || res.ExitCode != 7 || res.Wall <= 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
}

// Cancelling a child stops its whole process group: a grandchild that
// ignores SIGINT is killed after the grace period, and nothing is left.
func TestCancelStopsTheWholeGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var out proctest.SyncBuffer
	p, err := Start(ctx, Cmd{
		Name:  "sh",
		Args:  []string{"-c", `sh -c 'trap "" INT; sleep 60' & echo $!; wait`},
		Grace: 200 * time.Millisecond,
	}, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	grandchild := readPID(t, &out)
	cancel()
	_ = p.Wait(10 * time.Second)
	waitGone(t, grandchild, 5*time.Second)
	waitGone(t, p.Pid(), 5*time.Second)
}

// stopTimes are how long a shell that ignores SIGINT (and its background
// grandchild, which ignores it too) takes to be gone after its context is
// cancelled with a cause: Cmd.Grace normally, HardGrace for a hard stop,
// however the cause is wrapped and through a derived context.
var stopTimes = []struct {
	name     string
	cause    error
	grace    time.Duration
	min, max time.Duration
}{
	{"plain cancel waits the grace", errors.New("user pressed stop"), 1500 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second},
	{"hard stop", ErrStopNow, 30 * time.Second, HardGrace, 800 * time.Millisecond},
	{"wrapped hard stop", fmt.Errorf("urgent guidance: %w", ErrStopNow), 30 * time.Second, HardGrace, 800 * time.Millisecond},
}

func TestStopUsesTheCausesGrace(t *testing.T) {
	for _, tt := range stopTimes {
		t.Run(tt.name, func(t *testing.T) {
			parent, cancel := context.WithCancelCause(t.Context())
			// coordinator/agent starts children under a context derived
			// from the one the engine cancels.
			ctx, stop := context.WithCancel(parent)
			defer stop()
			var out proctest.SyncBuffer
			p, err := Start(ctx, Cmd{
				Name:  "sh",
				Args:  []string{"-c", `trap "" INT; sleep 60 & echo $!; wait`},
				Grace: tt.grace,
			}, &out, &out)
			if err != nil {
				t.Fatal(err)
			}
			grandchild := readPID(t, &out)
			start := time.Now()
			cancel(tt.cause)
			select {
			case <-p.Done():
			case <-time.After(tt.max):
				_ = p.Wait(10 * time.Second)
				t.Fatalf("child still running %s after the stop (grace %s)", tt.max, tt.grace)
			}
			elapsed := time.Since(start)
			if elapsed < tt.min {
				t.Errorf("child gone after %s; it ignores SIGINT, so SIGKILL came before the %s grace", elapsed, tt.min)
			}
			// Done needs the grandchild's end too: it holds the pipe.
			waitGone(t, grandchild, 100*time.Millisecond)
			waitGone(t, p.Pid(), 100*time.Millisecond)
			if err := p.Wait(time.Second); err == nil {
				t.Error("Wait = nil for a killed child")
			}
		})
	}
}

// A hard stop bounds the wait for the child's pipes too: a grandchild that
// left the group (setsid) and holds stdout open does not hold Done past
// HardGrace plus its slack, however long Cmd.Grace is.
func TestHardStopBoundsTheWaitForPipes(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	var out proctest.SyncBuffer
	// The grandchild prints its PID only once it has left the group, so
	// the stop cannot catch it still inside.
	p, err := Start(ctx, Cmd{
		Name:  "sh",
		Args:  []string{"-c", `setsid sh -c 'echo $$; exec sleep 60' & wait`},
		Grace: 30 * time.Second,
	}, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	escaped := readPID(t, &out)
	t.Cleanup(func() { _ = syscall.Kill(escaped, syscall.SIGKILL) })
	start := time.Now()
	cancel(ErrStopNow)
	select {
	case <-p.Done():
	case <-time.After(time.Second):
		t.Fatal("Done not closed a second after a hard stop")
	}
	if elapsed := time.Since(start); elapsed < HardGrace+hardWaitSlack {
		t.Errorf("Done after %s: the escaped grandchild still holds the pipe, so only WaitDelay (%s) can close it", elapsed, HardGrace+hardWaitSlack)
	}
	if !proctest.Alive(escaped) {
		t.Fatal("the escaped grandchild died: the test proves nothing about WaitDelay")
	}
}

// StopGroup interrupts a group and kills it after the grace: a group that
// stops on SIGINT is gone at once, one that ignores it after the grace.
func TestStopGroup(t *testing.T) {
	var out proctest.SyncBuffer
	p, err := Start(t.Context(), Cmd{
		Name: "sh",
		Args: []string{"-c", `trap "" INT; echo $$; sleep 60 & wait`},
	}, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	readPID(t, &out)
	start := time.Now()
	StopGroup(p.Pid(), 300*time.Millisecond)
	<-p.Done()
	if elapsed := time.Since(start); elapsed < 300*time.Millisecond || elapsed > 2*time.Second {
		t.Errorf("a group that ignores SIGINT gone after %s, want the 300ms grace", elapsed)
	}

	// sleep itself, not a shell that runs it: sh -c catches SIGINT until
	// it execs its last command, and one that lands in between is lost.
	// Start returns once sleep runs.
	p, err = Start(t.Context(), Cmd{Name: "sleep", Args: []string{"60"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	StopGroup(p.Pid(), 30*time.Second)
	<-p.Done()
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("a group that stops on SIGINT gone after %s", elapsed)
	}
}

// The children ralph starts hear SIGINT, StopGroup's signal, even when
// ralph was started with SIGINT ignored (a script's `ralph "task" &`):
// contained or not, each has it at its default.
func TestChildrenHearInterruptThoughRalphIgnoresIt(t *testing.T) {
	var out proctest.SyncBuffer
	p, err := Start(t.Context(), Cmd{
		Name: "sh",
		Args: []string{"-c", `trap "" INT; exec "$0" -test.run=^$`, os.Args[0]},
		Env:  append(os.Environ(), "RALPH_PROC_HELPER=ignoring"),
	}, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(30 * time.Second); err != nil {
		t.Fatalf("the helper: %v\n%s", err, out.String())
	}
	want := "ralph: SIGINT ignored: true\nplain: SIGINT ignored: false\ncontained: SIGINT ignored: false\n"
	if got := out.String(); got != want {
		t.Errorf("the helper printed\n%s\nwant\n%s", got, want)
	}
}

// ignoringParent is that test's helper, started with SIGINT ignored: it
// says so, then starts the test binary twice, plainly and contained, each
// to print its own disposition of SIGINT.
func ignoringParent() {
	fmt.Printf("ralph: SIGINT ignored: %t\n", signal.Ignored(syscall.SIGINT))
	env := append(os.Environ(), "RALPH_PROC_HELPER=disposition")
	for _, child := range []struct {
		name    string
		contain bool
	}{{"plain", false}, {"contained", true}} {
		var out proctest.SyncBuffer
		p, err := Start(context.Background(), Cmd{Name: os.Args[0], Args: []string{"-test.run=^$"}, Env: env, Contain: child.contain}, &out, &out)
		if err == nil {
			err = p.Wait(10 * time.Second)
		}
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Print(child.name + ": " + out.String())
	}
	Shutdown()
	os.Exit(0)
}

// A child whose parent dies by SIGKILL (no chance to clean up) is killed by
// the kernel: the parent-death signal.
func TestChildDiesWithKilledParent(t *testing.T) {
	var out proctest.SyncBuffer
	parent, err := Start(t.Context(), Cmd{
		Name: os.Args[0],
		Args: []string{"-test.run=^$"},
		Env:  append(os.Environ(), "RALPH_PROC_HELPER=parent"),
	}, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	child := readPID(t, &out)
	if !proctest.Alive(child) {
		t.Fatal("the helper's child is not running")
	}
	if err := parent.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait(10 * time.Second)
	waitGone(t, child, time.Second)
}

func TestWaitIsBounded(t *testing.T) {
	p, err := Start(t.Context(), Cmd{Name: "sleep", Args: []string{"60"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(100 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("Wait = %v, want a timeout error", err)
	}
	waitGone(t, p.Pid(), 5*time.Second)
}

// Done closes once the child has exited and its output is copied, so a
// caller can select on it beside its own timers; ExitCode is then final.
func TestDoneAndExitCode(t *testing.T) {
	var out proctest.SyncBuffer
	p, err := Start(t.Context(), Cmd{Name: "sh", Args: []string{"-c", "echo hi; exit 5"}}, &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after the child exited")
	}
	if got := p.ExitCode(); got != 5 {
		t.Fatalf("ExitCode = %d, want 5", got)
	}
	if out.String() != "hi\n" {
		t.Fatalf("output not copied before Done: %q", out.String())
	}

	p, err = Start(t.Context(), Cmd{Name: "sleep", Args: []string{"60"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.ExitCode(); got != -1 {
		t.Fatalf("ExitCode of a running child = %d, want -1", got)
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if got := p.ExitCode(); got != -1 {
		t.Fatalf("ExitCode of a killed child = %d, want -1", got)
	}
}

// TestMain doubles as the helper of TestChildDiesWithKilledParent: with
// RALPH_PROC_HELPER=parent the test binary starts a long-running child
// through proc, prints its PID and waits to be killed; with
// RALPH_PROC_HELPER=contained, the helper of
// TestContainedTreeDiesWithKilledParent; with ignoring and disposition,
// the two sides of TestChildrenHearInterruptThoughRalphIgnoresIt. It is a
// supervisor first, like ralph's main.
func TestMain(m *testing.M) {
	Supervise()
	if os.Getenv("RALPH_PROC_HELPER") == "contained" {
		containedParent()
	}
	switch os.Getenv("RALPH_PROC_HELPER") {
	case "ignoring":
		ignoringParent()
	case "disposition":
		fmt.Printf("SIGINT ignored: %t\n", signal.Ignored(syscall.SIGINT))
		os.Exit(0)
	}
	if os.Getenv("RALPH_PROC_HELPER") == "parent" {
		p, err := Start(context.Background(), Cmd{Name: "sleep", Args: []string{"60"}}, nil, nil)
		if err != nil {
			os.Stdout.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString(strconv.Itoa(p.Pid()) + "\n")
		time.Sleep(60 * time.Second)
		os.Exit(0)
	}
	os.Exit(m.Run())
}
