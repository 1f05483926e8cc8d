//go:build linux

package coordinator

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/gitctx/gitctxtest"
)

// holdLockEnv makes the test binary a stand-in coordinator: it takes the
// lock of the folder the variable names, says "locked" on stdout and
// sleeps until it is killed.
const holdLockEnv = "RALPH_TEST_HOLD_LOCK"

func TestMain(m *testing.M) {
	// The agents' supervisor first, like ralph's main (proc.Supervise).
	proc.Supervise()
	// With RALPH_FAKE_CLAUDE=1 the test binary is a fake claude, for the
	// loop's tests through the real claude backend (claude_loop_test.go).
	if os.Getenv("RALPH_FAKE_CLAUDE") == "1" {
		os.Exit(agenttest.FakeClaudeMain())
	}
	if dir := os.Getenv(holdLockEnv); dir != "" {
		os.Exit(holdLock(dir))
	}
	if dir := os.Getenv(engineChildEnv); dir != "" {
		os.Exit(engineChild(dir))
	}
	// The machine's git configuration stays out of the tests (a global
	// excludes file would change the project scan in every prompt).
	os.Exit(gitctxtest.RunWithoutGitConfig(m))
}

func holdLock(dir string) int {
	l, err := AcquireLock(dir, LockInfo{PID: os.Getpid(), Host: "test", Command: "ralph run", Since: time.Now()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer l.Release()
	fmt.Println("locked")
	time.Sleep(time.Minute) // the test kills it long before
	return 3
}

// startHolder starts a child process that holds dir's coordinator lock,
// and returns once it does.
func startHolder(t *testing.T, dir string) *proc.Process {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	var stderr strings.Builder
	p, err := proc.Start(context.Background(), proc.Cmd{
		Name: exe,
		Args: []string{"-test.run=^$"},
		Env:  append(os.Environ(), holdLockEnv+"="+dir),
	}, pw, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Signal(syscall.SIGKILL); _ = p.Wait(5 * time.Second); pw.Close() })
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(pr).ReadString('\n')
		ready <- line
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case line := <-ready:
		if line != "locked\n" {
			t.Fatalf("holder said %q, not locked; stderr: %s", line, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("holder did not take the lock within 10s; stderr: %s", stderr.String())
	}
	return p
}

const runningSession = `# Tasks

- [x] T1: Model the cart
- [/] T2: Price the cart
  - after: T1

## Session

- id: 20261120-093000
- status: running
- phase: agent
- iteration: 3 of 20
- task: T2
`

// TestInterruptedByAnotherProcess: a session recorded as running is
// running while another process holds the lock, and interrupted once that
// process is SIGKILLed; the kernel frees the lock with the process, so
// nothing stale is left to clean up and the next coordinator gets in.
func TestInterruptedByAnotherProcess(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": runningSession})
	holder := startHolder(t, dir)

	info, held := LockHolder(dir)
	if !held || info.PID != holder.Pid() || info.Command != "ralph run" {
		t.Fatalf("LockHolder = %+v, %v; want held by pid %d", info, held, holder.Pid())
	}
	r := buildReport(t, dir)
	if r.Session == nil || r.Session.Status != "running" || r.Interrupted() {
		t.Fatalf("with the lock held: session %+v, interrupted %v; want running", r.Session, r.Interrupted())
	}
	if r.Holder == nil || r.Holder.PID != holder.Pid() {
		t.Errorf("Holder = %+v, want pid %d", r.Holder, holder.Pid())
	}
	var locked *ErrLocked
	if l, err := AcquireLock(dir, LockInfo{PID: os.Getpid()}); !errors.As(err, &locked) {
		l.Release()
		t.Fatalf("AcquireLock while held: %v, want *ErrLocked", err)
	}
	if locked.Holder.PID != holder.Pid() || !strings.Contains(locked.Error(), fmt.Sprintf("pid %d", holder.Pid())) {
		t.Errorf("ErrLocked = %q (holder %+v), want pid %d", locked, locked.Holder, holder.Pid())
	}

	if err := holder.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := holder.Wait(5 * time.Second); err == nil {
		t.Fatal("the holder exited cleanly; want killed")
	}
	// The lock file still holds the dead coordinator's words…
	if data, _ := os.ReadFile(filepath.Join(dir, ".ralph", LockFile)); !strings.Contains(string(data), `"ralph run"`) {
		t.Errorf("lock file after SIGKILL = %q; the test expects the dead holder's info in it", data)
	}
	// …but no lock.
	if info, held := LockHolder(dir); held {
		t.Fatalf("after SIGKILL LockHolder = %+v, held; want free", info)
	}
	r = buildReport(t, dir)
	if !r.Interrupted() || r.RecordedStatus != "running" || r.Holder != nil {
		t.Fatalf("after SIGKILL: session %+v, recorded %q, holder %+v; want interrupted", r.Session, r.RecordedStatus, r.Holder)
	}
	if s := r.Session; s.Task != "T2" || s.Phase != "agent" || s.Iteration != 3 || s.MaxIterations != 20 {
		t.Errorf("interrupted session = %+v; want task T2, phase agent, iteration 3 of 20", s)
	}
	l, err := AcquireLock(dir, LockInfo{PID: os.Getpid(), Command: "ralph resume"})
	if err != nil {
		t.Fatalf("AcquireLock after the holder died: %v", err)
	}
	if info, held := LockHolder(dir); !held || info.Command != "ralph resume" {
		t.Errorf("LockHolder after re-taking = %+v, %v", info, held)
	}
	l.Release()
	if _, held := LockHolder(dir); held {
		t.Error("LockHolder after Release: still held")
	}
}

// TestAcquireLockWhileLooking: ralph status and ralph context look at the
// lock by taking a shared lock for an instant. A coordinator starting at
// that instant must not be refused.
func TestAcquireLockWhileLooking(t *testing.T) {
	dir := t.TempDir()
	l, err := AcquireLock(dir, LockInfo{})
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	var stop atomic.Bool
	var looks atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				LockHolder(dir)
				looks.Add(1)
			}
		})
	}
	defer func() { stop.Store(true); wg.Wait() }()
	for i := range 300 {
		l, err := AcquireLock(dir, LockInfo{PID: i})
		if err != nil {
			t.Fatalf("attempt %d (after %d looks): %v", i, looks.Load(), err)
		}
		l.Release()
	}
}

// TestLockHolderNoLockFile: no runtime folder at all is "not held".
func TestLockHolderNoLockFile(t *testing.T) {
	if info, held := LockHolder(t.TempDir()); held || info != (LockInfo{}) {
		t.Fatalf("LockHolder = %+v, %v", info, held)
	}
}

// A lock whose named holder is gone is nobody's, though the flock is
// still held: a coordinator killed while it started a child leaves the
// lock's descriptor to that child until its exec closes it. (Here this
// test process stands for the child; the holder is a process that has
// exited.)
func TestLockHolderGone(t *testing.T) {
	dir := t.TempDir()
	host, _ := os.Hostname()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pid  int
		held bool
	}{{cmd.Process.Pid, false}, {os.Getpid(), true}} {
		l, err := AcquireLock(dir, LockInfo{PID: c.pid, Host: host, Command: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if _, held := LockHolder(dir); held != c.held {
			t.Errorf("holder pid %d: held %v, want %v", c.pid, held, c.held)
		}
		l.Release()
	}
}
