//go:build linux

package coordinator

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/mdstate"
)

// The loop through the real claude backend, with this test binary as a
// fake claude (TestMain, RALPH_FAKE_CLAUDE=1): what `ralph run` has no
// flag for (the no-output watchdog) or cannot measure from outside (the
// heap under a 100 MB line).

// fakeClaudeOptions are options for a one-task project run by the fake
// claude in mode; pids is the fake's FAKE_CLAUDE_PIDFILE.
func fakeClaudeOptions(t *testing.T, mode string) (opts Options, pids string) {
	t.Helper()
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	pids = filepath.Join(t.TempDir(), "pids")
	env := append(os.Environ(), "RALPH_FAKE_CLAUDE=1", "FAKE_CLAUDE_MODE="+mode, "FAKE_CLAUDE_PIDFILE="+pids,
		// A race-enabled fake would sleep a second at exit.
		"GORACE=atexit_sleep_ms=0")
	return Options{Root: dir, Agent: agent.Claude(os.Args[0]), Env: env, MaxIterations: 1,
		NoOutputTimeout: 10 * time.Second, IterationTimeout: 30 * time.Second, Grace: 200 * time.Millisecond}, pids
}

// checkPidsGone checks that every pid in the pid file is dead.
func checkPidsGone(t *testing.T, pidfile string) {
	t.Helper()
	data, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatalf("the fake wrote no pids: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		pid, _ := strconv.Atoi(f)
		pids = append(pids, pid)
	}
	checkGone(t, pids)
}

// checkGone checks that none of pids is alive, and kills any that is.
func checkGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		// A zombie (state Z, after the closing paren) is dead.
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("process %d outlived the run", pid)
	}
}

// TestClaudeLoopNoOutputWatchdog: a claude that prints nothing is stopped
// by the watchdog; the task is a failed attempt with a note saying so.
// `ralph run` has no flag for the watchdog, hence this test here.
func TestClaudeLoopNoOutputWatchdog(t *testing.T) {
	opts, pids := fakeClaudeOptions(t, "hang")
	// Long enough for the fake (this race-enabled test binary, started
	// again) to write its pids first on a loaded machine: at 300 ms, CI's
	// once stopped it before it had.
	opts.NoOutputTimeout = 2 * time.Second
	co := newCoordinator(t, opts)
	start := time.Now()
	out, evs := runAll(t, t.Context(), co)
	took := time.Since(start)
	if out.Reason != StopLimit || out.Iterations != 1 {
		t.Fatalf("outcome %+v", out)
	}
	if took > 5*time.Second {
		t.Errorf("the run took %s with a 2s watchdog", took)
	}
	checkPidsGone(t, pids)
	tasks, s, log := loadState(t, opts.Root)
	it := tasks.Find("T1")
	const note = "the agent printed nothing for too long and was stopped"
	if it.Status != mdstate.Pending || it.Attempts != 1 || len(it.Notes) != 1 || it.Notes[0] != note {
		t.Errorf("T1: %v, %d attempts, notes %q", it.Status, it.Attempts, it.Notes)
	}
	if s.Agent != "claude" || s.Status != "ended" {
		t.Errorf("session %+v", s)
	}
	if log.Entries != 1 || log.Recent[0].Get("outcome") != "failed" || log.Recent[0].Get("note") != note {
		t.Errorf("progress %+v", log.Recent)
	}
	for _, e := range evs {
		if e.Kind == EventIterationDone && (e.Outcome != "failed" || e.Reason != note) {
			t.Errorf("iteration_done %+v", e)
		}
	}
}

// TestClaudeLoopInterruptIgnoringChild: a claude (and its grandchild) that
// ignore SIGINT are killed after the grace period when the run is
// cancelled; the task goes back to pending and the session is paused.
func TestClaudeLoopInterruptIgnoringChild(t *testing.T) {
	opts, pids := fakeClaudeOptions(t, "ignore_sigint")
	co := newCoordinator(t, opts)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		// Cancel once the fake and its grandchild are both running and
		// ignoring SIGINT.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if data, _ := os.ReadFile(pids); strings.Count(string(data), "\n") >= 2 {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	out, _ := runAll(t, ctx, co)
	if out.Reason != StopInterrupted {
		t.Fatalf("outcome %+v", out)
	}
	checkPidsGone(t, pids)
	tasks, s, log := loadState(t, opts.Root)
	if it := tasks.Find("T1"); it.Status != mdstate.Pending || it.Attempts != 0 || len(it.Notes) != 1 ||
		!strings.HasPrefix(it.Notes[0], "interrupted at ") {
		t.Errorf("T1: %v, %d attempts, notes %q", it.Status, it.Attempts, it.Notes)
	}
	if s.Status != "paused" || s.Reason != "interrupted" {
		t.Errorf("session %+v", s)
	}
	if log.Entries != 1 || log.Recent[0].Get("outcome") != "interrupted" {
		t.Errorf("progress %+v", log.Recent)
	}
}

// TestClaudeLoopHugeOutput: a 100 MB stream-json line goes to the raw log
// without being held: the heap stays far below the line's size, and the
// result line after it still completes the task.
func TestClaudeLoopHugeOutput(t *testing.T) {
	opts, _ := fakeClaudeOptions(t, "huge")
	opts.Resources.LogMaxSize = Off // the whole line in the log, not the cap's head and tail
	co := newCoordinator(t, opts)
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	stop := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		var top uint64
		var m runtime.MemStats
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				peak <- top
				return
			case <-tick.C:
				runtime.ReadMemStats(&m)
				top = max(top, m.HeapInuse)
			}
		}
	}()
	out, _ := runAll(t, t.Context(), co)
	close(stop)
	peakHeap := <-peak
	if out.Reason != StopAllDone || out.TasksDone != 1 {
		t.Fatalf("outcome %+v", out)
	}
	grew := int64(peakHeap) - int64(base.HeapInuse)
	t.Logf("heap in use: %d MB before, %d MB at the peak (+%d MB) for a 100 MB line", base.HeapInuse>>20, peakHeap>>20, grew>>20)
	// The line reader keeps at most maxLine (16 MiB) of a line, grown by
	// doubling: about 32 MiB allocated in all.
	if grew > 64<<20 {
		t.Errorf("the heap grew by %d MB for a 100 MB line: output is being held", grew>>20)
	}
	logs, _ := filepath.Glob(filepath.Join(opts.Root, mdstate.RuntimeDir, "logs", "*-001-T1.log"))
	if len(logs) != 1 {
		t.Fatalf("raw logs %v", logs)
	}
	if fi, err := os.Stat(logs[0]); err != nil || fi.Size() < 100<<20 {
		t.Errorf("the raw log does not hold the whole output: %v, %v", fi.Size(), err)
	}
	tasks, s, _ := loadState(t, opts.Root)
	if status(t, tasks, "T1") != mdstate.Done || s.TokensIn != 300 || s.TokensOut != 40 {
		t.Errorf("T1 %v, session %+v", status(t, tasks, "T1"), s)
	}
}
