//go:build linux

package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
)

// treeScript starts, from a shell whose pid it records first, one process
// of every kind an agent leaves behind, each recording its pid in $PIDS: a
// background job in the shell's group, a new session (setsid), a double
// fork (orphaned at once), and a double fork into a new session (a
// daemon). It returns once all five pids are written.
const treeScript = `echo $$ >> "$PIDS"
sleep 60 &
echo $! >> "$PIDS"
setsid sh -c 'echo $$ >> "$PIDS"; exec sleep 60' &
sh -c 'sh -c "echo \$\$ >> \"\$PIDS\"; exec sleep 60" &'
sh -c 'setsid sh -c "echo \$\$ >> \"\$PIDS\"; exec sleep 60" &'
while [ "$(wc -l < "$PIDS")" -lt 5 ]; do sleep 0.01; done
`

// treeSize is how many pids treeScript records.
const treeSize = 5

// readTree waits for treeScript's five pids.
func readTree(t testing.TB, path string) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		if f := strings.Fields(string(data)); len(f) >= treeSize {
			var pids []int
			for _, s := range f {
				pid, err := strconv.Atoi(s)
				if err != nil {
					t.Fatalf("%s: %q is not a pid", path, s)
				}
				pids = append(pids, pid)
			}
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tree recorded %q, want %d pids", data, treeSize)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killTree cleans up after a failed test.
func killTree(t *testing.T, pids []int) {
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// requireGone fails for every pid of the tree still alive (not a zombie).
func requireGone(t *testing.T, what string, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if proctest.Alive(pid) {
			t.Errorf("%s: process %d still alive", what, pid)
		}
	}
}

func treeCmd(pidFile, end string) Cmd {
	return Cmd{Name: "sh", Args: []string{"-c", treeScript + end}, Env: append(os.Environ(), "PIDS="+pidFile), Contain: true}
}

// When a contained child exits, everything it started is gone by the time
// Done closes, whatever left its process group; the exit code is the
// child's and Pid is the child's own.
func TestContainedChildEndLeavesNothing(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pids")
	var out proctest.SyncBuffer
	p, err := Start(t.Context(), treeCmd(pidFile, "exit 3"), &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after the child exited")
	}
	tree := readTree(t, pidFile)
	killTree(t, tree)
	requireGone(t, "after the child's exit", tree)
	if got := p.ExitCode(); got != 3 {
		t.Errorf("ExitCode = %d, want the child's 3", got)
	}
	if p.Pid() != tree[0] {
		t.Errorf("Pid = %d, the child is %d (the supervisor's pid leaked)", p.Pid(), tree[0])
	}
}

// Stopping a contained child (its context cancelled) interrupts its group,
// then, after the grace (HardGrace for a hard stop), kills everything it
// started, in or out of its group.
func TestContainedChildStopLeavesNothing(t *testing.T) {
	for _, tt := range []struct {
		name     string
		cause    error
		grace    time.Duration
		min, max time.Duration
	}{
		{"plain stop", errors.New("user pressed stop"), 300 * time.Millisecond, 300 * time.Millisecond, 2 * time.Second},
		// Within a second of the stop, the bound the spec sets; the
		// supervisor's start is before it. How fast it is in fact is
		// BenchmarkHardStop's.
		{"hard stop", ErrStopNow, 30 * time.Second, HardGrace, time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pids")
			ctx, cancel := context.WithCancelCause(t.Context())
			c := treeCmd(pidFile, `while :; do sleep 1; done`)
			// Ignored from the start: the stop may come while the
			// script still waits for its tree.
			c.Args[1] = `trap "" INT` + "\n" + c.Args[1]
			c.Grace = tt.grace
			p, err := Start(ctx, c, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			tree := readTree(t, pidFile)
			killTree(t, tree)
			start := time.Now()
			cancel(tt.cause)
			select {
			case <-p.Done():
			case <-time.After(tt.max):
				t.Fatalf("Done not closed %s after the stop", tt.max)
			}
			if elapsed := time.Since(start); elapsed < tt.min {
				t.Errorf("done after %s: the child ignores SIGINT, so nothing should have killed it before the %s grace", elapsed, tt.min)
			}
			requireGone(t, "after the stop", tree)
			if got := p.ExitCode(); got != -1 {
				t.Errorf("ExitCode = %d, want -1 (killed)", got)
			}
		})
	}
}

// containedParent is the helper of TestContainedTreeDiesWithKilledParent:
// it starts treeScript contained and waits to be killed.
func containedParent() {
	_, err := Start(context.Background(), Cmd{Name: "sh", Args: []string{"-c", treeScript + "while :; do sleep 1; done"}, Contain: true}, nil, nil)
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	time.Sleep(60 * time.Second)
	os.Exit(0)
}

// When ralph dies by SIGKILL, the supervisor of its contained child kills
// the whole tree within a second, and exits.
func TestContainedTreeDiesWithKilledParent(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pids")
	var out proctest.SyncBuffer
	parent, err := Start(t.Context(), Cmd{
		Name: os.Args[0],
		Args: []string{"-test.run=^$"},
		Env:  append(os.Environ(), "RALPH_PROC_HELPER=contained", "PIDS="+pidFile),
	}, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	tree := readTree(t, pidFile)
	killTree(t, tree)
	st, err := readStat(tree[0])
	if err != nil {
		t.Fatal(err)
	}
	sup := st.ppid
	if sup == parent.Pid() || sup <= 1 {
		t.Fatalf("the child's parent is %d, want a supervisor between it and the helper %d", sup, parent.Pid())
	}
	start := time.Now()
	if err := parent.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(tree), sup)
	for _, pid := range all {
		waitGone(t, pid, time.Second)
	}
	t.Logf("helper SIGKILLed: its child's tree and supervisor gone %s later", time.Since(start).Round(time.Microsecond))
	_ = parent.Wait(10 * time.Second)
	if out.String() != "" {
		t.Errorf("helper said %q", out.String())
	}
}

// KillMarked finds the processes of a marked child that left its group,
// long after the child itself ended, and no process of another mark.
func TestKillMarked(t *testing.T) {
	mark := "test-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	dir := t.TempDir()
	start := func(mark, pidFile string) []int {
		// Not contained: the group's members die with the child (Wait
		// kills the group), the rest survive, as after a killed
		// supervisor.
		c := Cmd{Name: "sh", Args: []string{"-c", treeScript}, Env: append(os.Environ(), "PIDS="+pidFile), Mark: mark}
		p, err := Start(t.Context(), c, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		tree := readTree(t, pidFile)
		killTree(t, tree)
		groups := map[int]int{}
		for _, pid := range tree {
			groups[pid] = pgrp(t, pid)
		}
		_ = p.Wait(10 * time.Second)
		// Wait killed the group: the members are dying.
		for _, pid := range tree {
			if groups[pid] == tree[0] {
				waitGone(t, pid, 2*time.Second)
			}
		}
		return tree
	}
	tree := start(mark, filepath.Join(dir, "pids"))
	other := start(mark+"-other", filepath.Join(dir, "other"))
	survivors := 0
	for _, pid := range tree {
		if proctest.Alive(pid) {
			survivors++
		}
	}
	var others []int
	for _, pid := range other {
		if proctest.Alive(pid) {
			others = append(others, pid)
		}
	}
	// The two in new sessions; the double-forked one stayed in the
	// child's group, which Wait killed.
	if survivors < 2 || len(others) < 2 {
		t.Fatalf("%d and %d of the trees survived their child; the two setsid-ed ones should have: the test proves nothing", survivors, len(others))
	}
	n, err := KillMarked(mark)
	if err != nil {
		t.Fatal(err)
	}
	if n != survivors {
		t.Errorf("KillMarked = %d, want the %d survivors", n, survivors)
	}
	requireGone(t, "after KillMarked", tree)
	for _, pid := range others {
		if !proctest.Alive(pid) {
			t.Errorf("process %d of another mark was killed", pid)
		}
	}
	if n, err := KillMarked(""); n != 0 || err != nil {
		t.Errorf("KillMarked(\"\") = %d, %v; an empty mark marks nothing", n, err)
	}
}

// TestMarkOfReadsWholeEnvironments checks the sweep's reader on an
// environment four times its first buffer, the mark after the bulk, then
// on a small one with the same reader (its buffer reused), and on a
// process that is gone.
func TestMarkOfReadsWholeEnvironments(t *testing.T) {
	start := func(mark string, extra ...string) int {
		p, err := Start(t.Context(), Cmd{Name: "sleep", Args: []string{"30"}, Env: append(append(os.Environ(), extra...), "AFTER=1"), Mark: mark}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = syscall.Kill(p.Pid(), syscall.SIGKILL)
			_ = p.Wait(10 * time.Second)
		})
		awaitEnviron(t, p.Pid())
		return p.Pid()
	}
	big := start("big-mark", "BIG="+strings.Repeat("x", 4*environBuf))
	small := start("small-mark")
	var r environReader
	for _, tt := range []struct {
		pid  int
		want string
	}{{big, "big-mark"}, {small, "small-mark"}, {big, "big-mark"}} {
		if got, ok := r.markOf(tt.pid); !ok || got != tt.want {
			t.Errorf("markOf(%d) = %q, %v; want %q", tt.pid, got, ok, tt.want)
		}
	}
	if len(r.buf) < 4*environBuf {
		t.Errorf("reader's buffer %d bytes after a %d-byte environment", len(r.buf), 4*environBuf)
	}
	if got, ok := r.markOf(1 << 30); ok {
		t.Errorf("markOf of no process = %q, true", got)
	}
}

// awaitEnviron waits until pid's environment can be read. Start returns
// once the child's exec has begun its new image (the close-on-exec pipe
// that tells so is closed), but the kernel sets where the environment
// lies a moment later: read at once, it can come back empty (1 run in
// 10 of TestMarkOfReadsWholeEnvironments read the second child's so).
func awaitEnviron(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Microsecond) {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err == nil && len(data) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d's environment: %d bytes, %v", pid, len(data), err)
		}
	}
}

// BenchmarkSweep is a sweep that finds nothing, as at every run's start:
// every process's environment read once (the machine's process count is
// reported beside it).
func BenchmarkSweep(b *testing.B) {
	for b.Loop() {
		if _, err := KillMarkedIf(func(string) bool { return false }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(pids())), "processes")
}

// pgrp reads the process group of pid from /proc/<pid>/stat (field 5, the
// 3rd after the command name); 0 once pid is gone.
func pgrp(t *testing.T, pid int) int {
	t.Helper()
	_, _, g, _ := proctest.Stat(pid)
	return g
}

// A contained child that a signal ends is reported as such (-1); one that
// cannot be executed is an error from Start, as without containment.
func TestContainedExitAndStartErrors(t *testing.T) {
	p, err := Start(t.Context(), Cmd{Name: "sh", Args: []string{"-c", "kill -KILL $$"}, Contain: true}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if got := p.ExitCode(); got != -1 {
		t.Errorf("ExitCode of a child killed by a signal = %d, want -1", got)
	}

	bad := filepath.Join(t.TempDir(), "not-a-program")
	if err := os.WriteFile(bad, []byte("\x7fELF but not really\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Start(t.Context(), Cmd{Name: bad, Contain: true}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "exec format error") {
		t.Errorf("Start of a file that is no program = %v, want exec format error", err)
	}
}

// The mark reaches the child's environment once, replacing one inherited
// from another ralph's agent.
func TestMarkInEnvironment(t *testing.T) {
	env := append(os.Environ(), MarkVar+"=outer")
	out, err := Output(t.Context(), Cmd{Name: "sh", Args: []string{"-c", "env | grep '^" + MarkVar + "='"}, Env: env, Mark: "inner"})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); got != MarkVar+"=inner\n" {
		t.Errorf("the child's environment has %q, want only %s=inner", got, MarkVar)
	}
}

// Of a variable given twice in Cmd.Env the last counts, contained or not
// (os/exec's rule): a caller's override of an inherited value holds.
func TestEnvLastWins(t *testing.T) {
	env := append(os.Environ(), "RALPH_TWICE=first", "RALPH_TWICE=last")
	for _, contain := range []bool{false, true} {
		var out proctest.SyncBuffer
		p, err := Start(t.Context(), Cmd{Name: "sh", Args: []string{"-c", "env | grep '^RALPH_TWICE='"}, Env: env, Contain: contain}, &out, &out)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(10 * time.Second); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != "RALPH_TWICE=last\n" {
			t.Errorf("contain=%t: the child's environment has %q, want only RALPH_TWICE=last", contain, got)
		}
	}
}

// BenchmarkStart measures what containment adds to a child's start and
// end: a shell that exits at once, with and without a supervisor.
func BenchmarkStart(b *testing.B) {
	for _, contain := range []bool{false, true} {
		b.Run("contain="+strconv.FormatBool(contain), func(b *testing.B) {
			for b.Loop() {
				p, err := Start(b.Context(), Cmd{Name: "sh", Args: []string{"-c", "exit 0"}, Contain: contain}, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Wait(10 * time.Second); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHardStop measures a hard stop of a contained child with a
// tree: from the stop to Done, everything it started killed.
func BenchmarkHardStop(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		pidFile := filepath.Join(b.TempDir(), "pids")
		ctx, cancel := context.WithCancelCause(b.Context())
		c := treeCmd(pidFile, `while :; do sleep 1; done`)
		c.Grace = 30 * time.Second
		p, err := Start(ctx, c, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		readTree(b, pidFile)
		b.StartTimer()
		cancel(ErrStopNow)
		<-p.Done()
	}
}

// A sweep looks again soon after its first kills, then less and less
// often: 200 µs doubling to 20 ms, never more, so that a process stuck in
// the kernel is not looked for thousands of times a second.
func TestSweepBacksOff(t *testing.T) {
	var b backoff
	var got []time.Duration
	for range 12 {
		got = append(got, b.pause())
	}
	want := []time.Duration{200 * time.Microsecond, 400 * time.Microsecond, 800 * time.Microsecond, 1600 * time.Microsecond,
		3200 * time.Microsecond, 6400 * time.Microsecond, 12800 * time.Microsecond, 20 * time.Millisecond,
		20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}
	if !slices.Equal(got, want) {
		t.Errorf("pauses %v, want %v", got, want)
	}
}

// supervisorOf starts a contained shell that prints its parent's pid (its
// supervisor's) and exits with code, and returns that pid once it ended.
func supervisorOf(t *testing.T, code int) int {
	t.Helper()
	var out proctest.SyncBuffer
	p, err := Start(t.Context(), Cmd{Name: "sh", Args: []string{"-c", "echo $PPID; exit " + strconv.Itoa(code)}, Contain: true}, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(10 * time.Second); (err == nil) != (code == 0) {
		t.Errorf("Wait = %v for a child that exits with %d", err, code)
	}
	if got := p.ExitCode(); got != code {
		t.Errorf("ExitCode = %d, want %d", got, code)
	}
	sup := readPID(t, &out)
	if sup == os.Getpid() || sup <= 1 {
		t.Fatalf("the child's parent is %d: no supervisor between it and ralph (%d)", sup, os.Getpid())
	}
	return sup
}

// A supervisor serves contained children in turn: the second child runs
// under the first one's supervisor, which started no new program for it.
// One killed while it waited (from outside) is replaced: the next child
// still starts.
func TestSupervisorServesInTurn(t *testing.T) {
	first := supervisorOf(t, 0)
	if second := supervisorOf(t, 4); second != first {
		t.Errorf("the second child ran under supervisor %d, the first under %d: the idle one was not reused", second, first)
	}
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, first, 5*time.Second)
	if third := supervisorOf(t, 0); third == first {
		t.Errorf("the third child ran under the killed supervisor %d", first)
	}
}

// Children that run at once each have a supervisor of their own, and a
// stop reaches each one's tree only.
func TestConcurrentContainedChildren(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	files := []string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}
	var procs []*Process
	var trees [][]int
	for i, f := range files {
		c := treeCmd(f, `while :; do sleep 1; done`)
		pctx := t.Context()
		if i == 0 {
			pctx = ctx // only the first is stopped
		}
		p, err := Start(pctx, c, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		tree := readTree(t, f)
		killTree(t, tree)
		procs, trees = append(procs, p), append(trees, tree)
	}
	sups := make([]int, 2)
	for i, tree := range trees {
		st, err := readStat(tree[0])
		if err != nil {
			t.Fatal(err)
		}
		sups[i] = st.ppid
	}
	if sups[0] == sups[1] {
		t.Fatalf("both children run under supervisor %d", sups[0])
	}
	cancel(ErrStopNow)
	select {
	case <-procs[0].Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the stopped child's Done not closed")
	}
	requireGone(t, "after the first child's stop", trees[0])
	for _, pid := range trees[1] {
		if !proctest.Alive(pid) {
			t.Errorf("process %d of the other child died with the first's stop", pid)
		}
	}
	if err := procs[1].Wait(100 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Errorf("Wait of the running child = %v, want a timeout", err)
	}
	requireGone(t, "after the second child's Wait ran out", trees[1])
}

// A supervisor killed from outside while its child runs takes the child
// with it: Done closes, the exit code is a signal's, and Wait says why.
func TestSupervisorKilledUnderChild(t *testing.T) {
	var out proctest.SyncBuffer
	p, err := Start(t.Context(), Cmd{Name: "sh", Args: []string{"-c", "echo $PPID; exec sleep 60"}, Contain: true}, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	sup := readPID(t, &out)
	if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after the supervisor was killed")
	}
	if got := p.ExitCode(); got != -1 {
		t.Errorf("ExitCode = %d, want -1", got)
	}
	if err := p.Wait(time.Second); err == nil || !strings.Contains(err.Error(), "supervisor") {
		t.Errorf("Wait = %v, want the supervisor's end", err)
	}
	waitGone(t, p.Pid(), 2*time.Second)
}

// Prepare starts a supervisor ahead of the next start, which waits for it
// rather than starting a second one, even when it comes at once; a second
// Prepare while one is on its way, or while one waits, starts none.
func TestPrepareStartsTheNextSupervisor(t *testing.T) {
	letIdleGo(t)
	Prepare()
	Prepare()
	sup := supervisorOf(t, 0)
	if n := liveSupervisors(); n != 1 {
		t.Errorf("%d supervisors run after two Prepares and a start: want the prepared one alone", n)
	}
	Prepare()
	awaitPrepared()
	if n := liveSupervisors(); n != 1 {
		t.Errorf("%d supervisors run after a Prepare while one waited, want 1", n)
	}
	if again := supervisorOf(t, 0); again != sup {
		t.Errorf("the next child ran under supervisor %d, the prepared one is %d", again, sup)
	}
}

// letIdleGo lets every idle supervisor go and waits until each has exited.
func letIdleGo(t *testing.T) {
	t.Helper()
	for _, s := range releaseIdle() {
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
			t.Fatal("an idle supervisor let go did not exit")
		}
	}
}

// liveSupervisors counts the supervisors started and not yet reaped.
func liveSupervisors() int {
	pool.Lock()
	defer pool.Unlock()
	return len(pool.live)
}

// LetIdleGo lets the idle supervisors go at once: each exits without
// Shutdown, and the next start gets a new one.
func TestLetIdleGo(t *testing.T) {
	letIdleGo(t)
	sup := supervisorOf(t, 0)
	LetIdleGo()
	waitGone(t, sup, 5*time.Second)
	pool.Lock()
	idle := len(pool.idle)
	pool.Unlock()
	if idle != 0 {
		t.Errorf("%d supervisors idle after LetIdleGo", idle)
	}
	if next := supervisorOf(t, 0); next == sup {
		t.Errorf("the next child ran under the supervisor let go (%d)", sup)
	}
}
