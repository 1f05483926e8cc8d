//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
	"github.com/ralph-dev/ralph/mdstate"
)

// containAgent is the agent of the containment test (`--agent exec
// --agent-cmd "sh agent.sh"`): it starts one process of every kind an
// agent leaves behind, each writing its pid to tree.pids, and waits on the
// last one, in the foreground, for a minute. A background job in its
// group, a new session (setsid, as Claude Code's Bash tool does), a double
// fork (orphaned at once) and a double fork into a new session (a daemon).
const containAgent = `cat > /dev/null
echo $$ >> tree.pids
sleep 60 &
echo $! >> tree.pids
setsid sh -c 'echo $$ >> tree.pids; exec sleep 60' &
sh -c 'sh -c "echo \$\$ >> tree.pids; exec sleep 60" &'
sh -c 'setsid sh -c "echo \$\$ >> tree.pids; exec sleep 60" &'
sh -c 'echo $$ >> tree.pids; exec sleep 60'
`

// containTree is how many pids a whole tree of containAgent records.
const containTree = 6

const containTasks = "# Tasks\n\n- [ ] T1: Start a tree of processes\n"

// Rounds of the containment test: kills of `ralph run`, of a one-shot, of
// ralph and its agent's supervisor together, and stops by each signal.
const (
	containKills        = 50
	containOneShotKills = 50
	containBothKills    = 10
	containSignals      = 20
	containOneShotSigs  = 5
)

// containRoundVar marks every process of one round (ralph, the agent's
// supervisor, the agent and all it starts inherit it), so that the test
// finds the iteration's processes even before they wrote their pid.
const containRoundVar = "RALPH_CONTAIN_ROUND"

// containStats are the figures the test reports.
type containStats struct {
	kills, alive int             // kills inflicted; processes alive a second later
	gone         []time.Duration // kill to the last process gone, per kill
	both         int             // kills of ralph and the supervisor together
	survivors    int             // processes those left, for recovery to stop
	signals      map[string]int  // stops by signal
	stopped      []time.Duration // signal to ralph's exit
}

// TestContainment kills `ralph run` and one-shots with SIGKILL at random
// moments while their agent starts foreground, background, setsid-ed and
// double-forked children, and checks after each kill that within a second
// no process of the iteration is alive (zombies excepted); then kills
// ralph together with its agent's supervisor and checks that the next
// `ralph run` stops the survivors; then stops runs with SIGHUP and SIGTERM
// and checks the exit code (129, 143), the task (pending, with a note), the
// session (paused) and that nothing survived. RALPH_CONTAIN_SEED fixes the
// random moments.
func TestContainment(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: -short; the containment test kills ralph 110 times and stops it 50 times")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RALPH_CONTAIN_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RALPH_CONTAIN_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (rerun with RALPH_CONTAIN_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	bin := buildRalph(t)
	env := append(os.Environ(), "HOME="+t.TempDir())
	st := &containStats{signals: map[string]int{}}

	runArgs := []string{"run", "--agent", "exec", "--agent-cmd", "sh agent.sh", "--max-attempts", "1000", "--backoff", "0s"}
	oneShot := []string{"--agent", "exec", "--agent-cmd", "sh agent.sh", "start a tree of processes"}
	t.Run("kill -9 of ralph run", func(t *testing.T) {
		// One project: every run recovers the session the last kill
		// interrupted, and is killed in turn.
		dir := containProject(t)
		for i := range containKills {
			containKill(t, bin, env, dir, runArgs, fmt.Sprintf("run-%d", i), rng, st)
		}
	})
	t.Run("kill -9 of a one-shot", func(t *testing.T) {
		dir := containProject(t)
		for i := range containOneShotKills {
			containKill(t, bin, env, dir, oneShot, fmt.Sprintf("oneshot-%d", i), rng, st)
		}
	})
	t.Run("kill -9 of ralph and the supervisor", func(t *testing.T) {
		for i := range containBothKills {
			containKillBoth(t, bin, env, runArgs, fmt.Sprintf("both-%d", i), st)
		}
	})
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := containProject(t)
			for i := range containSignals {
				containSignal(t, bin, env, dir, runArgs, fmt.Sprintf("%s-%d", sig, i), sig, true, st)
			}
			for i := range containOneShotSigs {
				containSignal(t, bin, env, dir, oneShot, fmt.Sprintf("%s-oneshot-%d", sig, i), sig, false, st)
			}
		})
	}

	t.Run("nohup", func(t *testing.T) {
		containNohup(t, bin, env, runArgs, st)
	})

	slices.Sort(st.gone)
	slices.Sort(st.stopped)
	report := fmt.Sprintf("seed %d: kills inflicted %d, processes alive a second later %d; kill to last process gone: median %s, max %s; "+
		"kills of ralph and the supervisor %d, survivors %d, all stopped by the next run; stops by SIGHUP %d, SIGTERM %d: signal to exit median %s, max %s",
		seed, st.kills, st.alive, median(st.gone), last(st.gone), st.both, st.survivors,
		st.signals["hangup"], st.signals["terminated"], median(st.stopped), last(st.stopped))
	t.Log(report)
	fmt.Println("containment: " + report)
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[len(d)/2].Round(time.Microsecond)
}

func last(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[len(d)-1].Round(time.Microsecond)
}

// containProject is a project with one task and the agent.
func containProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{mdstate.TasksFile: containTasks, "agent.sh": containAgent,
		"fast.sh": "cat > /dev/null\necho '<promise>COMPLETE</promise>'\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// containStart starts ralph with args in dir, its processes marked with
// round, after removing the last round's tree.pids.
func containStart(t *testing.T, bin string, env []string, dir string, args []string, round string) (*proc.Process, *proctest.SyncBuffer) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, "tree.pids")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out proctest.SyncBuffer
	p, err := proc.Start(context.Background(), proc.Cmd{Name: bin, Args: args, Dir: dir, Env: append(env, containRoundVar+"="+round)}, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	return p, &out
}

// containKill runs ralph and SIGKILLs it at a random moment: half the time
// after 0-150 ms (ralph starting, the agent spawning its tree), half the
// time 0-20 ms after the whole tree runs. Then every process of the round
// must be gone within a second.
func containKill(t *testing.T, bin string, env []string, dir string, args []string, round string, rng *rand.Rand, st *containStats) {
	t.Helper()
	p, out := containStart(t, bin, env, dir, args, round)
	if rng.IntN(2) == 0 {
		time.Sleep(time.Duration(rng.IntN(151)) * time.Millisecond)
	} else {
		containWaitTree(t, dir, p, out)
		time.Sleep(time.Duration(rng.IntN(21)) * time.Millisecond)
	}
	select {
	case <-p.Done():
		t.Fatalf("%s: ralph ended before the kill (exit %d):\n%s", round, p.ExitCode(), out.String())
	default:
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st.kills++
	took, left := containGone(dir, round, time.Second)
	if len(left) > 0 {
		st.alive += len(left)
		t.Errorf("%s: a second after ralph's SIGKILL, processes of the iteration are alive: %s", round, containDescribe(left))
		containKillAll(left)
	} else {
		st.gone = append(st.gone, took)
	}
	_ = p.Wait(5 * time.Second)
}

// containKillBoth SIGKILLs the agent's supervisor and ralph at once (as
// `kill -9` of every ralph process would) once the tree runs: the
// processes that left the agent's group survive both, and the next
// `ralph run` stops them before it goes on.
func containKillBoth(t *testing.T, bin string, env []string, args []string, round string, st *containStats) {
	t.Helper()
	dir := containProject(t)
	p, out := containStart(t, bin, env, dir, args, round)
	tree := containWaitTree(t, dir, p, out)
	sup := parentOf(tree[0])
	if sup <= 1 || sup == p.Pid() || parentOf(sup) != p.Pid() {
		t.Fatalf("%s: the agent's parent is %d, want a supervisor between it and ralph (%d)", round, sup, p.Pid())
	}
	// The supervisor first: killed second, it would start killing the
	// tree the moment ralph died.
	if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.Wait(5 * time.Second)
	st.both++
	// The agent dies with its supervisor (parent-death signal); the rest
	// live on. Let the kills land before counting.
	time.Sleep(50 * time.Millisecond)
	survivors := containMarked(round)
	if len(survivors) == 0 {
		t.Fatalf("%s: nothing survived ralph and its supervisor: the test proves nothing", round)
	}
	st.survivors += len(survivors)

	// The next run recovers the session: it stops the survivors, then
	// does the task with another agent. Its own processes carry another
	// round's mark.
	res, err := proc.Run(context.Background(), proc.Cmd{Name: bin, Args: []string{"run", "--agent", "exec", "--agent-cmd", "sh fast.sh"}, Dir: dir,
		Env: append(env, containRoundVar+"="+round+"-recovery")})
	if err != nil || res.ExitCode != 0 {
		containKillAll(survivors)
		t.Fatalf("%s: ralph run after the kill: exit %d, %v\n%s", round, res.ExitCode, err, res.Stderr)
	}
	if left := proctest.Living(survivors); len(left) > 0 {
		st.alive += len(left)
		t.Errorf("%s: the next ralph run left survivors of the killed session alive: %s", round, containDescribe(left))
		containKillAll(left)
	}
	if want := fmt.Sprintf("stopped %d processes the interrupted session's agent left running", len(survivors)); !bytes.Contains(res.Stderr, []byte("processes the interrupted session's agent left running")) {
		t.Errorf("%s: the recovering run does not say it stopped survivors (want something like %q):\n%s", round, want, res.Stderr)
	}
}

// containSignal stops ralph with sig once the agent's tree runs: ralph
// exits with 128 + the signal's number, nothing of the iteration is left,
// and a run's task is pending with a note, its session paused.
func containSignal(t *testing.T, bin string, env []string, dir string, args []string, round string, sig syscall.Signal, run bool, st *containStats) {
	t.Helper()
	p, out := containStart(t, bin, env, dir, args, round)
	containWaitTree(t, dir, p, out)
	containStop(t, p, out, dir, round, sig, run, st)
}

// containStop sends sig to a running ralph and checks how it stopped (see
// containSignal).
func containStop(t *testing.T, p *proc.Process, out *proctest.SyncBuffer, dir, round string, sig syscall.Signal, run bool, st *containStats) {
	t.Helper()
	sent := time.Now()
	if err := p.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		_ = p.Signal(syscall.SIGKILL)
		t.Fatalf("%s: ralph still runs 10 s after %s", round, sig)
	}
	st.stopped = append(st.stopped, time.Since(sent))
	st.signals[sig.String()]++
	_ = p.Wait(time.Second)
	if want := 128 + int(sig); p.ExitCode() != want {
		t.Errorf("%s: exit %d after %s, want %d:\n%s", round, p.ExitCode(), sig, want, out.String())
	}
	// ralph waited for the supervisor, which killed everything first.
	if left := containMarked(round); len(left) > 0 {
		st.alive += len(left)
		t.Errorf("%s: processes of the iteration alive after ralph exited: %s", round, containDescribe(left))
		containKillAll(left)
	}
	if !run {
		return
	}
	data, err := os.ReadFile(filepath.Join(dir, mdstate.TasksFile))
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := mdstate.ParseChecklist(mdstate.TasksKind, data)
	if err != nil {
		t.Fatal(err)
	}
	t1, sess := tasks.Find("T1"), func() *mdstate.Session { s, _ := tasks.Session(); return s }()
	switch {
	case t1 == nil || t1.Status != mdstate.Pending || len(t1.Notes) == 0 || !strings.HasPrefix(t1.Notes[len(t1.Notes)-1], "interrupted at "):
		t.Errorf("%s: after %s, T1 is %+v; want pending with an \"interrupted at\" note\n%s", round, sig, t1, data)
	case sess == nil || sess.Status != mdstate.SessionPaused:
		t.Errorf("%s: after %s, the session is %+v; want paused\n%s", round, sig, sess, data)
	}
}

// containNohup runs ralph under nohup: SIGHUP, ignored from the start,
// stays ignored (ralph and its agent go on working); SIGTERM still stops
// it.
func containNohup(t *testing.T, bin string, env, args []string, st *containStats) {
	t.Helper()
	if _, err := proc.LookPath("nohup"); err != nil {
		t.Skip("no nohup on PATH")
	}
	dir := containProject(t)
	p, out := containStart(t, "nohup", env, dir, append([]string{bin}, args...), "nohup")
	tree := containWaitTree(t, dir, p, out)
	if err := p.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if left := proctest.Living(tree); len(left) != len(tree) {
		t.Errorf("under nohup, a SIGHUP stopped ralph's agent: %d of its %d processes left:\n%s", len(left), len(tree), out.String())
	}
	containStop(t, p, out, dir, "nohup", syscall.SIGTERM, true, st)
}

// containWaitTree waits for the agent's whole tree to run and returns its
// pids, the agent's first.
func containWaitTree(t *testing.T, dir string, p *proc.Process, out *proctest.SyncBuffer) []int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if pids := containPids(dir); len(pids) >= containTree {
			return pids
		}
		select {
		case <-p.Done():
			t.Fatalf("ralph ended (exit %d) before the agent's tree ran:\n%s", p.ExitCode(), out.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = p.Signal(syscall.SIGKILL)
			t.Fatalf("the agent's tree did not start in 20 s:\n%s", out.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// containPids reads the pids the tree wrote so far.
func containPids(dir string) []int {
	data, _ := os.ReadFile(filepath.Join(dir, "tree.pids"))
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// containGone waits up to limit for every process of the round to be
// gone: those the tree recorded, and any carrying the round's mark (ralph
// is a zombie by then, so it does not count). It returns how long that
// took, or what was still alive at the limit.
func containGone(dir, round string, limit time.Duration) (time.Duration, []int) {
	start := time.Now()
	for {
		left := proctest.Living(containPids(dir))
		for _, pid := range containMarked(round) {
			if !slices.Contains(left, pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return time.Since(start), nil
		}
		if time.Since(start) > limit {
			return 0, left
		}
		time.Sleep(time.Millisecond)
	}
}

// containMarked lists the live processes whose environment carries the
// round's mark.
func containMarked(round string) []int {
	want := []byte(containRoundVar + "=" + round)
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		if slices.ContainsFunc(bytes.Split(env, []byte{0}), func(kv []byte) bool { return bytes.Equal(kv, want) }) && proctest.Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// parentOf is pid's parent, 0 once pid is gone.
func parentOf(pid int) int {
	_, ppid, _, _ := proctest.Stat(pid)
	return ppid
}

// containDescribe names processes for a failure message.
func containDescribe(pids []int) string {
	var parts []string
	for _, pid := range pids {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		parts = append(parts, fmt.Sprintf("%d (%s)", pid, bytes.ReplaceAll(bytes.TrimRight(cmdline, "\x00"), []byte{0}, []byte{' '})))
	}
	return strings.Join(parts, ", ")
}

// containKillAll cleans up after a failure.
func containKillAll(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// TestRealClaudeContainment kills ralph with SIGKILL while the real Claude
// Code CLI waits for the model, after its Bash tool started two long
// commands: one in the background, one in a new session (setsid). The CLI
// runs each Bash command in a session and process group of its own, so
// stopping the CLI's group never reached them, and a SIGKILLed CLI left
// them running (Claude Code 2.1.330: a `python3 … sleep` of its Bash tool
// was alive 16 s after the next run had recovered the session). Now the
// CLI and both commands are gone within a second.
func TestRealClaudeContainment(t *testing.T) {
	// Claude Code's Bash tool refuses a bare `sleep N`: the commands sleep
	// in python3, as in the incident, or in tail. They run in the project
	// folder, the CLI's.
	sleeper := "tail -f /dev/null"
	if _, err := proc.LookPath("python3"); err == nil {
		sleeper = `python3 -c "import time; time.sleep(120)"`
	}
	command := fmt.Sprintf("sh -c 'echo $$ > bg.pid; exec %s' > /dev/null 2>&1 & setsid sh -c 'echo $$ > session.pid; exec %s' > /dev/null 2>&1 &", sleeper, sleeper)
	api := &agenttest.FakeAPI{
		Bash: func(string) (string, bool) { return command, true },
		// The answer to the Bash tool's result never comes: ralph is
		// killed while the CLI waits for it.
		Stall: func(c agenttest.APICall) bool { return c.ToolResultFor != "" },
	}
	project, env := realClaudeProject(t, api)
	bg, sess := filepath.Join(project, "bg.pid"), filepath.Join(project, "session.pid")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	ralph := buildRalph(t)
	var out proctest.SyncBuffer
	p, err := proc.Start(ctx, proc.Cmd{Name: ralph, Args: []string{"run", "--agent", "claude", "--model", "claude-sonnet-4-5"}, Dir: project, Env: env}, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for deadline := time.Now().Add(90 * time.Second); len(pids) < 2; time.Sleep(20 * time.Millisecond) {
		pids = pids[:0]
		for _, f := range []string{bg, sess} {
			if data, err := os.ReadFile(f); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
					pids = append(pids, pid)
				}
			}
		}
		if time.Now().After(deadline) {
			_ = p.Signal(syscall.SIGKILL)
			_ = p.Wait(5 * time.Second)
			t.Fatalf("the CLI's Bash tool did not start both commands (pids %v); API calls %d; ralph:\n%s", pids, len(api.Posts()), out.String())
		}
	}
	rec, ok := coordinator.RunningAgent(project)
	if !ok {
		t.Fatal("no agent recorded in .ralph/")
	}
	claude := rec.PID
	for _, pid := range pids {
		if parentOf(pid) == claude {
			t.Errorf("command %d is still the CLI's child: the test proves nothing about what left it", pid)
		}
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	all := append([]int{claude}, pids...)
	for left := proctest.Living(all); len(left) > 0; left = proctest.Living(all) {
		if time.Since(killed) > time.Second {
			containKillAll(left)
			t.Fatalf("a second after ralph's SIGKILL, still alive: %s", containDescribe(left))
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("the claude CLI and its Bash tool's two commands (%s) were gone %s after ralph's SIGKILL", sleeper, time.Since(killed).Round(time.Microsecond))
	_ = p.Wait(5 * time.Second)
}
