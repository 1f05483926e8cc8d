//go:build linux

package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
	"github.com/ralph-dev/ralph/gitctx/gitctxtest"
	"github.com/ralph-dev/ralph/mdstate/mdstatetest"
)

// The performance figures of `ralph chat` (issue 11), measured on the
// real binary (go build, not the test binary, whose testscript start-up
// would be measured too) on a real pseudo-terminal, through the chat
// tests' harness (startOnPty, chatTerm). Times are reported, never
// asserted: the machine is shared. Each benchmark also reports the load
// average it ran under. The commands are in docs/benchmarks.md.

// useBuiltRalph builds ralph and puts it first on PATH, where startOnPty
// looks for "ralph" (b.Setenv: for this benchmark only), and returns its
// path.
func useBuiltRalph(b *testing.B) string {
	b.Helper()
	bin := buildRalph(b)
	b.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	return bin
}

// stubbornAgent ignores SIGINT, and so does the child it starts (an
// ignored signal stays ignored across exec): only SIGKILL ends them. It
// writes its pid and its child's to "pids" (whole, by a rename) and
// works until it is killed.
const stubbornAgent = `trap '' INT
cat > /dev/null
sh -c "trap '' INT; exec sleep 60" &
echo $$ $! > pids.tmp && mv pids.tmp pids
while :; do sleep 1; done
`

// workingPrompt is the prompt while an agent works; its group is the task.
var workingPrompt = regexp.MustCompile(`ralph \(working on (T\d+), iteration \d+\) › `)

// BenchmarkChatCtrlC is Ctrl-C while an agent works: from writing \x03
// to the pty until the paused prompt is back, the agent, its child and
// the supervisor between ralph and the agent are gone, and
// RALPH_TASKS.md has the task pending and the session paused. One
// interruption per op; run it with -benchtime 50x for the 50.
func BenchmarkChatCtrlC(b *testing.B) {
	useBuiltRalph(b)
	var tasks strings.Builder
	tasks.WriteString("# Tasks\n\n")
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&tasks, "- [ ] T%d: Task number %d\n", i, i)
	}
	d := agentDir{t: b, dir: chatProject(b, tasks.String())}
	d.write("stubborn.sh", stubbornAgent)
	c := startOnPty(b, d.dir, nil, "chat", "--agent", "exec", "--agent-cmd", "sh stubborn.sh")
	c.expect(`ralph \(idle\) › `)
	var took, inside []time.Duration
	for b.Loop() {
		b.StopTimer()
		w := c.startStubborn()
		from := c.seen
		b.StartTimer()
		began := time.Now()
		c.send("\x03")
		c.expect(`ralph \(paused\) › `)
		c.waitStopped(w)
		took = append(took, time.Since(began))
		b.StopTimer()
		c.checkGroupGone(w.pgrp)
		inside = append(inside, c.stopFigure(from))
		b.StartTimer()
	}
	c.send("/quit\r")
	if code := c.wait(); code != 0 {
		b.Fatalf("exit %d after /quit", code)
	}
	reportLatencies(b, took)
	slices.Sort(inside)
	b.ReportMetric(float64(percentile(inside, 0.5).Microseconds())/1000, "chat-own-p50-ms")
}

// stopFigure is the chat's own account of the stop whose output starts
// at from ("work stopped in 112ms", printed next to the paused prompt):
// Stop(true) and the run's last events, without the key's way in and the
// prompt's way out.
func (c *chatTerm) stopFigure(from int) time.Duration {
	c.t.Helper()
	re := regexp.MustCompile(`work stopped in (\S+);`)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if m := re.FindStringSubmatch(c.screen()[from:]); m != nil {
			d, err := time.ParseDuration(m[1])
			if err != nil {
				c.t.Fatalf("work stopped in %q: %v", m[1], err)
			}
			return d
		}
	}
	c.t.Fatalf("the chat did not say how long the stop took:\n%s", c.screen()[from:])
	return 0
}

// stubbornWork is what Ctrl-C must end: the task, the processes (the
// agent, its child, and the agent's parent when that is not the chat:
// the containment supervisor) and the agent's process group.
type stubbornWork struct {
	task string
	tree []int
	pgrp int
}

// startStubborn starts work with stubbornAgent and waits until the agent
// and its child run.
func (c *chatTerm) startStubborn() stubbornWork {
	c.t.Helper()
	_ = os.Remove(c.path("pids"))
	c.send("/run\r")
	c.waitFile("pids")
	w := stubbornWork{task: workingPrompt.FindStringSubmatch(c.expect(workingPrompt.String()))[1]}
	for _, f := range strings.Fields(c.read("pids")) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			c.t.Fatalf("pids: %v", err)
		}
		w.tree = append(w.tree, pid)
	}
	if len(w.tree) != 2 {
		c.t.Fatalf("pids holds %q, want the agent's pid and its child's", c.read("pids"))
	}
	_, ppid, pgrp, ok := proctest.Stat(w.tree[0])
	if !ok {
		c.t.Fatalf("the agent %d is gone before Ctrl-C", w.tree[0])
	}
	w.pgrp = pgrp
	if ppid != c.cmd.Process.Pid {
		w.tree = append(w.tree, ppid)
	}
	return w
}

// waitStopped waits (at most 10 s) until every process of w is dead and
// RALPH_TASKS.md has w's task pending in a paused session: what Ctrl-C
// promises once the prompt is back. It is timed, so it polls often.
func (c *chatTerm) waitStopped(w stubbornWork) {
	c.t.Helper()
	pending := "\n- [ ] " + w.task + ": "
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Microsecond) {
		data, err := os.ReadFile(c.path("RALPH_TASKS.md"))
		saved := err == nil && strings.Contains(string(data), pending) && strings.Contains(string(data), "\n- status: paused\n")
		if saved && len(proctest.Living(w.tree)) == 0 {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("10 s after Ctrl-C: alive %v, %s pending and the session paused: %v\n%s", proctest.Living(w.tree), w.task, saved, data)
		}
	}
}

// checkGroupGone fails when a live process is left in the agent's
// process group: the transient sleeps of its loop are in no pid file.
func (c *chatTerm) checkGroupGone(pgrp int) {
	c.t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		c.t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, _, g, ok := proctest.Stat(pid); ok && g == pgrp && proctest.Alive(pid) {
			c.t.Fatalf("pid %d is left in the agent's group %d", pid, g)
		}
	}
}

// streamAgent prints streamLines lines of streamLine bytes every
// streamPeriod: 1 MB/s.
const (
	streamLines  = 200
	streamLine   = 100 // bytes, newline included
	streamPeriod = 20 * time.Millisecond
)

// streamAgent prints chunk (streamLines lines) every streamPeriod, paced
// by the clock so that the rate holds whatever the cost of the loop:
// 1 MB/s of lines, until it is killed.
var streamAgent = fmt.Sprintf(`cat > /dev/null
start=$(date +%%s%%N)
n=0
while :; do
	cat chunk
	n=$((n+1))
	d=$(( (start + n*%d - $(date +%%s%%N)) / 1000 ))
	if [ $d -gt 0 ]; then sleep "0.$(printf %%06d $d)"; fi
done
`, streamPeriod.Nanoseconds())

// streamChunk is streamLines lines of digits and spaces: none of the
// keys echoKeys types.
func streamChunk() string {
	var b strings.Builder
	for i := range streamLines {
		line := fmt.Sprintf("%05d ", i) + strings.Repeat("0123456789 ", 10)
		b.WriteString(line[:streamLine-1] + "\n")
	}
	return b.String()
}

// echoKeys are keys found nowhere else on the screen while the agent
// streams: not in its lines (digits), the agent-text prefix, the prompts
// ("ralph (working on T1, iteration 1) ›", paused, idle), RALPH, or the
// escape sequences readline draws with (J, K, A, C, H, m, n).
const echoKeys = "bcfjqvxyzBDEFGIMNOQSUVWXYZ"

// BenchmarkChatEchoUnderOutput is the time from writing one key to the
// pty to seeing it echoed there, while the agent streams 1 MB/s of lines
// that the chat prints above the prompt. One key per op, typed about
// every 20 ms; every len(echoKeys) keys the line is cleared (Ctrl-U), so
// a key's first appearance after it is written is its echo. Run it with
// -benchtime 500x. Also reports what reached the terminal: MB/s and agent
// lines per second (the engine may drop streaming text the chat cannot
// keep up with).
func BenchmarkChatEchoUnderOutput(b *testing.B) {
	useBuiltRalph(b)
	dir := chatProject(b, "# Tasks\n\n- [ ] T1: Print lines\n")
	c := startOnPty(b, dir, nil, "chat", "--agent", "exec", "--agent-cmd", "sh stream.sh")
	c.write("stream.sh", streamAgent)
	c.write("chunk", streamChunk())
	c.expect(`ralph \(idle\) › `)
	c.send("/run\r")
	c.expect(`  │ 00199 `)
	r := &ptyFollower{c: c, off: len(c.out.String())}
	// A second of the steady stream, without a key: none may show yet.
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if s := r.drain(); strings.ContainsAny(s, echoKeys) {
			b.Fatalf("a key shows before any was typed:\n%q", s)
		}
	}
	r.bytes, r.lines = 0, 0
	began := time.Now()
	var took []time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		if i > 0 && i%len(echoKeys) == 0 {
			c.send("\x15")
			time.Sleep(200 * time.Millisecond)
		}
		r.drain()
		key := echoKeys[i%len(echoKeys)]
		i++
		b.StartTimer()
		start := time.Now()
		c.send(string(key))
		r.waitFor(key)
		took = append(took, time.Since(start))
		b.StopTimer()
		time.Sleep(20 * time.Millisecond)
		b.StartTimer()
	}
	b.StopTimer()
	r.drain()
	elapsed := time.Since(began).Seconds()
	c.send("\x15\x03")
	c.expect(`ralph \(paused\) › `)
	c.send("/quit\r")
	if code := c.wait(); code != 0 {
		b.Fatalf("exit %d after /quit", code)
	}
	reportLatencies(b, took)
	b.ReportMetric(float64(r.bytes)/elapsed/1e6, "terminal-MB/s")
	b.ReportMetric(float64(r.lines)/elapsed, "agent-lines-shown/s")
	b.ReportMetric(float64(time.Second/streamPeriod*streamLines), "agent-lines-printed/s")
}

// ptyFollower reads what the chat prints past off, counting the bytes
// and the agent lines ("│") it has seen.
type ptyFollower struct {
	c     *chatTerm
	off   int
	bytes int
	lines int
}

// drain consumes what the chat printed so far, and returns it.
func (r *ptyFollower) drain() string {
	s := r.c.out.From(r.off)
	r.off += len(s)
	r.bytes += len(s)
	r.lines += strings.Count(s, "│")
	return s
}

// waitFor polls (every 0.2 ms, at most 10 s) until key shows in what
// the chat prints.
func (r *ptyFollower) waitFor(key byte) {
	r.c.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Microsecond) {
		if strings.IndexByte(r.drain(), key) >= 0 {
			return
		}
	}
	r.c.t.Fatalf("%q not echoed within 10 s", key)
}

// BenchmarkChatIdleCPU is the CPU time an idle chat uses: its utime and
// stime (/proc/PID/stat, in clock ticks of 10 ms) over a 10 s op at the
// idle prompt, with the work done before ("after-work": three tasks run
// and finished). Also reported: the CPU time of all its threads in
// microseconds (/proc/PID/task/*/schedstat), finer than a tick.
func BenchmarkChatIdleCPU(b *testing.B) {
	useBuiltRalph(b)
	for _, afterWork := range []bool{false, true} {
		name := "fresh"
		if afterWork {
			name = "after-work"
		}
		b.Run(name, func(b *testing.B) {
			c := startChat(b, chatProject(b, chatTasks))
			c.expect(`ralph \(idle\) › `)
			if afterWork {
				c.send("/run\r")
				c.expect(`■ Done: every task is done`)
				c.expect(`ralph \(idle\) › `)
			}
			time.Sleep(2 * time.Second) // past the watcher's debounce and the first ticks
			pid := c.cmd.Process.Pid
			var ticks int64
			var cpu, wall time.Duration
			for b.Loop() {
				t0, c0, w0 := cpuTicks(b, pid), cpuTime(b, pid), time.Now()
				time.Sleep(10 * time.Second)
				ticks += cpuTicks(b, pid) - t0
				cpu += cpuTime(b, pid) - c0
				wall += time.Since(w0)
			}
			c.send("/quit\r")
			if code := c.wait(); code != 0 {
				b.Fatalf("exit %d after /quit", code)
			}
			b.ReportMetric(float64(ticks)/wall.Seconds(), "ticks/s")
			b.ReportMetric(float64(cpu.Microseconds())/wall.Seconds(), "cpu-µs/s")
			reportLoad(b)
		})
	}
}

// cpuTicks is a process's utime + stime from /proc/PID/stat.
func cpuTicks(b *testing.B, pid int) int64 {
	b.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	// After "pid (comm) ": state is field 3, utime 14, stime 15.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, data)
	}
	return utime + stime
}

// cpuTime is the time all of a process's threads have spent on a CPU,
// from the first field of each /proc/PID/task/TID/schedstat.
func cpuTime(b *testing.B, pid int) time.Duration {
	b.Helper()
	paths, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	if err != nil || len(paths) == 0 {
		b.Fatalf("no schedstat for pid %d: %v", pid, err)
	}
	var sum time.Duration
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue // a thread that has just exited
		}
		ns, err := strconv.ParseInt(strings.Fields(string(data))[0], 10, 64)
		if err != nil {
			b.Fatalf("%s: %q", p, data)
		}
		sum += time.Duration(ns)
	}
	return sum
}

// BenchmarkChatStartToWelcome is the time from starting `ralph chat` on
// a project of 1,000 tasks (mdstatetest.BigProject: a quarter done, some
// in progress, blocked, with dependencies and notes, and a progress log
// of 1,000 entries) to its idle prompt on the pty, after the welcome;
// plain, and in a git repository (the welcome names the branch and the
// state files' last commit). One start per op; the first start, which
// creates .ralph/ and the log's index, is not counted. Run it with
// -benchtime 20x. The last sub-benchmark is a yardstick measured in the
// same minutes: `ralph status --json` on the same project, a process
// (benchProcess), whose figure on an idle machine is in
// docs/benchmarks.md.
func BenchmarkChatStartToWelcome(b *testing.B) {
	bin := useBuiltRalph(b)
	project := func(b *testing.B, git bool) string {
		dir := b.TempDir()
		if _, err := mdstatetest.BigProject(dir, 1000, 1000); err != nil {
			b.Fatal(err)
		}
		if git {
			gitctxtest.Isolate(b)
			gitctxtest.Git(b, dir, "init", "-q")
			gitctxtest.Commit(b, dir, "The project", 0)
		}
		return dir
	}
	for _, git := range []bool{false, true} {
		name := "1000-tasks"
		if git {
			name = "1000-tasks-git"
		}
		b.Run(name, func(b *testing.B) {
			dir := project(b, git)
			chatOnce(b, dir)
			var took, cpu []time.Duration
			for b.Loop() {
				wall, used := chatOnce(b, dir)
				took, cpu = append(took, wall), append(cpu, used)
			}
			reportLatencies(b, took)
			slices.Sort(cpu)
			b.ReportMetric(float64(percentile(cpu, 0.5).Microseconds())/1000, "cpu-p50-ms")
		})
	}
	b.Run("yardstick-status-json", func(b *testing.B) {
		benchProcess(b, project(b, false), append(os.Environ(), "HOME="+b.TempDir()), bin, "status", "--json")
		reportLoad(b)
	})
}

// chatOnce starts a chat in dir, returns the time from its start to the
// idle prompt and the CPU time its threads used until then (less
// sensitive to a busy machine than the wall time; its git child's is not
// counted), and quits it (not timed).
func chatOnce(b *testing.B, dir string) (wall, cpu time.Duration) {
	b.Helper()
	began := time.Now()
	c := startChat(b, dir)
	c.expect(`tasks      1000: `)
	c.expect(`ralph \(idle\) › `)
	wall = time.Since(began)
	b.StopTimer()
	cpu = cpuTime(b, c.cmd.Process.Pid)
	c.send("/quit\r")
	if code := c.wait(); code != 0 {
		b.Fatalf("exit %d after /quit", code)
	}
	b.StartTimer()
	return wall, cpu
}

// reportLatencies reports the median, the 99th percentile and the
// maximum of durations in milliseconds, and the load they were measured
// under.
func reportLatencies(b *testing.B, took []time.Duration) {
	b.Helper()
	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(percentile(took, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(took, 0.99)), "p99-ms")
	b.ReportMetric(ms(took[len(took)-1]), "max-ms")
	reportLoad(b)
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// reportLoad reports the one-minute load average (/proc/loadavg): the
// machine is shared, and a figure means little without it.
func reportLoad(b *testing.B) {
	b.Helper()
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Fatal(err)
	}
	load, err := strconv.ParseFloat(strings.Fields(string(data))[0], 64)
	if err != nil {
		b.Fatalf("/proc/loadavg: %q", data)
	}
	b.ReportMetric(load, "load-1m")
}
