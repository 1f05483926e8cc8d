//go:build linux

package main

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ralph-dev/ralph/coordinator/proc"
)

// The side-by-side comparison with ralph-tui 0.11 that issue 14 asks for:
// ralph, built twice (with cgo, as a plain `go build` on a machine with a
// C compiler gives, and with CGO_ENABLED=0), and ralph-tui run by bun, in
// turn in one loop so that all three see the same machine load, each on
// its own copy of the same project, with the same fake `claude`. Times are
// reported, never asserted: the machine is shared. .ci/bench-tui installs
// the pinned bun and ralph-tui and runs BenchmarkVsTUI; the commands and
// the figures are in docs/benchmarks.md.
//
// Both coordinators mark a task done themselves when the agent's output
// carries <promise>COMPLETE</promise>, so the fake agent only reads its
// prompt and prints that marker in claude's stream-json shape: it edits no
// file, which would make ralph take the edit for a person's. After every
// run the task files are read back, so that a run which did not do its
// tasks fails the benchmark instead of being timed as a fast one.

// tuiHint says how to get ralph-tui for BenchmarkVsTUI.
const tuiHint = "ralph-tui not found: run .ci/bench-tui (it installs the pinned bun and ralph-tui 0.11 into .ci/cache/tui), " +
	"or set RALPH_TUI_BIN (ralph-tui's dist/cli.js) and RALPH_BUN_BIN (bun >= 1.3.6)"

// tuiCache is where .ci/bench-tui installs bun and ralph-tui, seen from
// this package's folder (go test runs in it).
const tuiCache = "../../.ci/cache/tui/node_modules"

// vsFakeClaudeSrc is the instant agent both sides run as `claude`: it
// answers --version (ralph-tui checks it before a run), reads its prompt
// to the end (both write it to stdin) and prints one turn: the init line,
// an assistant message and a result carrying the completion marker.
const vsFakeClaudeSrc = `package main

import (
	"io"
	"os"
)

const turn = ` + "`" + `{"type":"system","subtype":"init","session_id":"vs-tui","model":"claude-fake-1"}
{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"Done.\n<promise>COMPLETE</promise>"}],"usage":{"input_tokens":10,"output_tokens":5}},"session_id":"vs-tui"}
{"type":"result","subtype":"success","is_error":false,"result":"Done.\n<promise>COMPLETE</promise>","session_id":"vs-tui","total_cost_usd":0.001,"usage":{"input_tokens":10,"output_tokens":5}}
` + "`" + `

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		os.Stdout.WriteString("2.1.330 (Claude Code)\n")
		return
	}
	io.Copy(io.Discard, os.Stdin)
	os.Stdout.WriteString(turn)
}
`

// vsAgentArgs and vsAgentPrompt are what the fake gets when it is timed
// alone: the flags ralph passes to claude and a prompt of the size both
// coordinators send (about 1 KB).
var (
	vsAgentArgs   = []string{"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--dangerously-skip-permissions", "--max-turns", "200"}
	vsAgentPrompt = strings.Repeat("Work on the current task, then report.\n", 28)
)

const (
	// vsRunTimeout bounds one run: a coordinator that hangs fails the
	// benchmark instead of stalling it until go test's own timeout.
	vsRunTimeout = 3 * time.Minute
	// vsTimeRuns is how many extra runs of each side, under GNU time,
	// give its peak RSS and page faults. They are not timed: GNU time's
	// own fork and exec would add about a millisecond to every figure.
	vsTimeRuns = 3
	// vsAgentRuns is how many times the fake agent runs alone in each
	// iteration of the overhead benchmark.
	vsAgentRuns = 5
	// vsOverheadTasks is the size of the run whose per-task cost is the
	// coordinator's overhead.
	vsOverheadTasks = 50
	// vsSlopeFrom is the size of the shorter run per-iteration compares
	// with a run of vsOverheadTasks.
	vsSlopeFrom = 10
)

// BenchmarkVsTUI runs ralph and ralph-tui side by side:
//   - status-json-3: `status --json` on a 3-task project, after a session
//     that did one of the tasks (ralph-tui's status reports only a
//     session, and has none before a run);
//   - run-3: a run through 3 tasks with the instant agent, from start to
//     exit;
//   - overhead-50: a run through 50 tasks, less 50 times the agent's own
//     time (the fake run alone, in the same loop), divided by 50: the
//     run's start and end are in it, shared among the tasks;
//   - per-iteration-10-50: what one more iteration costs, less the
//     agent's own time: a run of 50 tasks and one of 10, one after the
//     other, the difference divided by 40 (the start and end, the same
//     in both, cancel out), the median over the pairs (per-iteration-ms);
//     and the same difference of the coordinator's own CPU, its process
//     alone without the agents' (cpu-per-iteration-ms: a figure that
//     moves less with the machine than wall time does).
//
// Each reports per side the median, min and max wall time (ms-median …),
// the peak RSS, the ratios of ralph-tui's median to ralph's, and the load
// average. Without ralph-tui (see tuiHint) the ralph-tui sub-benchmark is
// skipped and ralph's two builds still run.
//
// With RALPH_VS_BASE set to a git revision (a commit, a tag, main~3),
// that revision of ralph is built too, statically, and runs in the same
// loop as "ralph-base": a change is then measured against what it
// changed on the same machine at the same moment, which two runs of the
// benchmark an hour apart cannot do here.
func BenchmarkVsTUI(b *testing.B) {
	h := newVsHarness(b)
	if h.tuiErr != nil {
		b.Run("ralph-tui", func(b *testing.B) { b.Skip(h.tuiErr) })
	}
	b.Run("status-json-3", h.benchStatus)
	b.Run("run-3", func(b *testing.B) { h.benchRun(b, 3, false) })
	b.Run(fmt.Sprintf("overhead-%d", vsOverheadTasks), func(b *testing.B) { h.benchRun(b, vsOverheadTasks, true) })
	b.Run(fmt.Sprintf("per-iteration-%d-%d", vsSlopeFrom, vsOverheadTasks), h.benchSlope)
}

// vsHarness holds what every sub-benchmark shares: the sides, the fake
// agent and the environment they run in.
type vsHarness struct {
	sides   []contender
	tuiErr  error    // why ralph-tui is not among the sides
	agent   string   // the fake claude
	env     []string // for every side and the agent
	timeBin string   // GNU time; "" when missing (no RSS then)
}

func newVsHarness(b *testing.B) *vsHarness {
	b.Helper()
	h := &vsHarness{}
	// A cgo build needs a C compiler; without one, only the static build.
	if _, err := proc.LookPath(vsCC()); err == nil {
		h.sides = append(h.sides, buildRalphSide(b, true))
	} else {
		b.Logf("no C compiler (%v): ralph is measured as a static build only", err)
	}
	h.sides = append(h.sides, buildRalphSide(b, false))
	if rev := os.Getenv(vsBaseEnv); rev != "" {
		h.sides = append(h.sides, buildBaseSide(b, rev))
	}
	tui, err := findTUI()
	if err != nil {
		h.tuiErr = err
	} else {
		h.sides = append(h.sides, tui)
		b.Logf("ralph-tui %s on bun %s", tui.version(), tui.bunVersion(b))
	}
	h.agent = buildFakeClaude(b)
	h.env = vsEnviron(b.TempDir(), filepath.Dir(h.agent))
	if _, err := os.Stat("/usr/bin/time"); err == nil {
		h.timeBin = "/usr/bin/time"
	} else {
		b.Log("GNU time is not at /usr/bin/time (apt-get install time): no RSS figures")
	}
	return h
}

// vsEnviron is the environment of every run: a fresh HOME for the
// per-user files both keep (ralph's registry of projects, ralph-tui's
// config and session registry), the fake agent first on PATH, and nothing
// of the caller's ralph settings (RALPH_AGENT, a real claude's path), nor
// a GOGC that would override the one ralph sets for itself.
func vsEnviron(home, agentDir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "HOME" || name == "PATH" || name == "GOGC" || strings.HasPrefix(name, "XDG_") || strings.HasPrefix(name, "RALPH_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"PATH="+agentDir+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
}

// benchStatus times `status --json` on each side's 3-task project, after
// a run of one iteration.
func (h *vsHarness) benchStatus(b *testing.B) {
	dirs := make([]string, len(h.sides))
	for i, s := range h.sides {
		dirs[i] = b.TempDir()
		if err := s.writeProject(dirs[i], 3); err != nil {
			b.Fatal(err)
		}
		h.run(b, s, dirs[i], s.runArgs(1)) // its exit code says "limit reached"
		h.checkDone(b, s, dirs[i], 1)
		h.checkStatus(b, s, h.run(b, s, dirs[i], s.statusArgs()))
	}
	walls := make([][]time.Duration, len(h.sides))
	for i := 0; b.Loop(); i++ {
		for _, j := range vsOrder(len(h.sides), i) {
			res := h.run(b, h.sides[j], dirs[j], h.sides[j].statusArgs())
			b.StopTimer()
			h.checkStatus(b, h.sides[j], res)
			walls[j] = append(walls[j], res.Wall)
			b.StartTimer()
		}
	}
	mem := make([]vsMemory, len(h.sides))
	for i, s := range h.sides {
		mem[i] = h.underTime(b, s, dirs[i], nil, s.statusArgs())
	}
	h.report(b, walls, mem)
	reportLoad(b)
}

// benchRun times runs through n tasks; with overhead it also times the
// agent alone and reports each side's time per task less the agent's.
func (h *vsHarness) benchRun(b *testing.B, n int, overhead bool) {
	dirs := make([]string, len(h.sides))
	for i, s := range h.sides {
		dirs[i] = b.TempDir()
		h.runAll(b, s, dirs[i], n) // a first run outside the timing warms the caches
	}
	walls := make([][]time.Duration, len(h.sides))
	var agent []time.Duration
	for i := 0; b.Loop(); i++ {
		for _, j := range vsOrder(len(h.sides), i) {
			walls[j] = append(walls[j], h.runAll(b, h.sides[j], dirs[j], n))
		}
		if overhead {
			b.StopTimer()
			for range vsAgentRuns {
				agent = append(agent, h.agentAlone(b))
			}
			b.StartTimer()
		}
	}
	mem := make([]vsMemory, len(h.sides))
	for i, s := range h.sides {
		mem[i] = h.underTime(b, s, dirs[i], func() {
			if err := s.writeProject(dirs[i], n); err != nil {
				b.Fatal(err)
			}
		}, s.runArgs(n))
		h.checkDone(b, s, dirs[i], n)
	}
	h.report(b, walls, mem)
	if overhead {
		h.reportOverhead(b, walls, agent, n)
	}
	reportLoad(b)
}

// benchSlope times, for each side in turn, a run of vsSlopeFrom tasks and
// one of vsOverheadTasks, and reports the median of what the longer one
// took more per extra task, less the agent's own time; and the median of
// what it took more of the coordinator's own CPU per extra task (its
// process alone, not the agents': ownCPU).
func (h *vsHarness) benchSlope(b *testing.B) {
	short, long := vsSlopeFrom, vsOverheadTasks
	dirs := make([]string, len(h.sides))
	for i, s := range h.sides {
		dirs[i] = b.TempDir()
		h.runAll(b, s, dirs[i], short)
	}
	slopes := make([][]time.Duration, len(h.sides))
	cpuSlopes := make([][]time.Duration, len(h.sides))
	var agent []time.Duration
	for i := 0; b.Loop(); i++ {
		for _, j := range vsOrder(len(h.sides), i) {
			a, aCPU := h.runAllCPU(b, h.sides[j], dirs[j], short)
			z, zCPU := h.runAllCPU(b, h.sides[j], dirs[j], long)
			slopes[j] = append(slopes[j], (z-a)/time.Duration(long-short))
			cpuSlopes[j] = append(cpuSlopes[j], (zCPU-aCPU)/time.Duration(long-short))
		}
		b.StopTimer()
		for range vsAgentRuns {
			agent = append(agent, h.agentAlone(b))
		}
		b.StartTimer()
	}
	own := reportAgent(b, agent)
	per := make([]time.Duration, len(h.sides))
	for i, sl := range slopes {
		slices.Sort(sl)
		per[i] = sl[len(sl)/2] - own
		b.ReportMetric(vsMS(per[i]), h.sides[i].name()+"-per-iteration-ms")
		b.ReportMetric(vsMS(sl[0]-own), h.sides[i].name()+"-per-iteration-min-ms")
		b.ReportMetric(vsMS(sl[len(sl)-1]-own), h.sides[i].name()+"-per-iteration-max-ms")
		cpu := cpuSlopes[i]
		slices.Sort(cpu)
		b.ReportMetric(vsMS(cpu[len(cpu)/2]), h.sides[i].name()+"-cpu-per-iteration-ms")
	}
	if tui := len(h.sides) - 1; h.tuiErr == nil {
		for i := range tui {
			b.ReportMetric(float64(per[tui])/float64(per[i]), "tui-vs-"+h.sides[i].name()+"-x")
		}
	}
	reportLoad(b)
}

// runAll writes a fresh project of n tasks for side s, runs it through
// them (timed) and checks that all n are done, exit 0. It returns the
// run's wall time.
func (h *vsHarness) runAll(b *testing.B, s contender, dir string, n int) time.Duration {
	wall, _ := h.runAllWith(b, s, dir, n, func(b *testing.B, s contender, dir string, args []string) (proc.Result, time.Duration) {
		return h.run(b, s, dir, args), 0
	})
	return wall
}

// runAllCPU is runAll that also returns the CPU time of the side's own
// process (ownCPU).
func (h *vsHarness) runAllCPU(b *testing.B, s contender, dir string, n int) (wall, cpu time.Duration) {
	return h.runAllWith(b, s, dir, n, h.ownCPU)
}

// runAllWith is runAll with run as the way to run the side; it returns
// the run's wall time and what run says of its CPU.
func (h *vsHarness) runAllWith(b *testing.B, s contender, dir string, n int, run func(*testing.B, contender, string, []string) (proc.Result, time.Duration)) (time.Duration, time.Duration) {
	b.StopTimer()
	if err := s.writeProject(dir, n); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	res, cpu := run(b, s, dir, s.runArgs(n))
	b.StopTimer()
	defer b.StartTimer()
	if res.ExitCode != 0 {
		b.Fatalf("%s run: exit %d\n%s\n%s", s.name(), res.ExitCode, vsTail(res.Stdout), vsTail(res.Stderr))
	}
	h.checkDone(b, s, dir, n)
	return res.Wall, cpu
}

// ownCPU runs side s with args in dir as run does, and also returns the
// CPU time (user and system) of its own process, every thread of it,
// without its children's: read from /proc/<pid>/stat once it has exited
// and before it is reaped (waitid with WNOWAIT). The kernel counts it in
// clock ticks (10 ms), so a figure per iteration is a difference of two
// runs over many iterations.
func (h *vsHarness) ownCPU(b *testing.B, s contender, dir string, args []string) (proc.Result, time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), vsRunTimeout)
	defer cancel()
	name, argv := s.command(args)
	cmd := exec.CommandContext(ctx, name, argv...)
	cmd.Dir, cmd.Env = dir, h.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatalf("%s %s: %v", s.name(), strings.Join(args, " "), err)
	}
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EINTR) {
			b.Fatalf("%s: waitid: %v", s.name(), err)
		}
	}
	wall := time.Since(start)
	// Clock ticks are hundredths of a second on Linux.
	cpu := time.Duration(cpuTicks(b, cmd.Process.Pid)) * 10 * time.Millisecond
	_ = cmd.Wait() // the exit code is the caller's to judge
	res := proc.Result{ExitCode: cmd.ProcessState.ExitCode(), Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Wall: wall}
	return res, cpu
}

// run runs side s with args in dir and returns how it went; only failing
// to start is fatal here, exit codes are the caller's to judge.
func (h *vsHarness) run(b *testing.B, s contender, dir string, args []string) proc.Result {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), vsRunTimeout)
	defer cancel()
	name, argv := s.command(args)
	res, err := proc.Run(ctx, proc.Cmd{Name: name, Args: argv, Dir: dir, Env: h.env})
	if err != nil {
		b.Fatalf("%s %s: %v\n%s", s.name(), strings.Join(args, " "), err, vsTail(res.Stderr))
	}
	return res
}

// agentAlone runs the fake agent as the coordinators do, with a prompt on
// stdin, and returns its wall time.
func (h *vsHarness) agentAlone(b *testing.B) time.Duration {
	b.Helper()
	res, err := proc.Run(b.Context(), proc.Cmd{Name: h.agent, Args: vsAgentArgs, Env: h.env, Stdin: strings.NewReader(vsAgentPrompt)})
	if err != nil || res.ExitCode != 0 || !bytes.Contains(res.Stdout, []byte("<promise>COMPLETE</promise>")) {
		b.Fatalf("fake claude alone: exit %d, %v\n%s", res.ExitCode, err, res.Stderr)
	}
	return res.Wall
}

// vsMemory is what GNU time tells of a side's command over vsTimeRuns
// runs: the peak resident set in KB, and the median count of minor page
// faults, the command's and those of every child it waited for (a
// figure that, unlike time, does not drift with the machine: a fault
// costs 11-12 µs on the PVM guest of docs/benchmarks.md).
type vsMemory struct{ peakKB, faults int64 }

// underTime runs side s vsTimeRuns times under GNU time (prepare, when not
// nil, before each) and returns what time said, or the zero vsMemory
// without GNU time. It is read from time, not from this process's wait4:
// see benchProcess.
func (h *vsHarness) underTime(b *testing.B, s contender, dir string, prepare func(), args []string) vsMemory {
	b.Helper()
	if h.timeBin == "" {
		return vsMemory{}
	}
	name, argv := s.command(args)
	var m vsMemory
	var faults []int64
	for range vsTimeRuns {
		if prepare != nil {
			prepare()
		}
		res, err := proc.Run(b.Context(), proc.Cmd{Name: h.timeBin, Args: append([]string{"-f", "vs-tui-time %M %R", name}, argv...), Dir: dir, Env: h.env})
		if err != nil {
			b.Fatalf("%s under time: %v", s.name(), err)
		}
		i := bytes.LastIndex(res.Stderr, []byte("vs-tui-time "))
		if i < 0 {
			b.Fatalf("time printed no figures for %s:\n%s", s.name(), vsTail(res.Stderr))
		}
		var kb, minor int64
		if _, err := fmt.Sscan(string(res.Stderr[i+len("vs-tui-time "):]), &kb, &minor); err != nil {
			b.Fatalf("time's figures for %s: %v", s.name(), err)
		}
		m.peakKB = max(m.peakKB, kb)
		faults = append(faults, minor)
	}
	slices.Sort(faults)
	m.faults = faults[len(faults)/2]
	return m
}

// checkDone fails the benchmark unless side s's task file in dir says
// exactly n tasks are done.
func (h *vsHarness) checkDone(b *testing.B, s contender, dir string, n int) {
	b.Helper()
	done, err := s.done(dir)
	if err != nil {
		b.Fatalf("%s: %v", s.name(), err)
	}
	if done != n {
		b.Fatalf("%s: %d tasks done after the run, want %d", s.name(), done, n)
	}
}

// checkStatus fails the benchmark unless res is side s's status of a
// 3-task project with one task done.
func (h *vsHarness) checkStatus(b *testing.B, s contender, res proc.Result) {
	b.Helper()
	if err := s.checkStatus(res); err != nil {
		b.Fatalf("%s status --json: %v\n%s\n%s", s.name(), err, vsTail(res.Stdout), vsTail(res.Stderr))
	}
}

// report reports, for each side, the median, min and max of its wall
// times, its peak RSS and page faults, and ralph-tui's median over each
// ralph's.
func (h *vsHarness) report(b *testing.B, walls [][]time.Duration, mem []vsMemory) {
	b.Helper()
	meds := make([]time.Duration, len(walls))
	for i, w := range walls {
		slices.Sort(w)
		meds[i] = w[len(w)/2]
		name := h.sides[i].name()
		b.ReportMetric(vsMS(meds[i]), name+"-ms-median")
		b.ReportMetric(vsMS(w[0]), name+"-ms-min")
		b.ReportMetric(vsMS(w[len(w)-1]), name+"-ms-max")
		if mem[i].peakKB > 0 {
			b.ReportMetric(float64(mem[i].peakKB)/1024, name+"-RSS-MB")
			b.ReportMetric(float64(mem[i].faults), name+"-faults")
		}
	}
	if h.tuiErr != nil {
		return
	}
	tui := meds[len(meds)-1]
	for i, s := range h.sides[:len(h.sides)-1] {
		b.ReportMetric(float64(tui)/float64(meds[i]), "tui-vs-"+s.name()+"-x")
	}
}

// reportOverhead reports the agent's own median and, for each side, its
// median run less n times that, per task.
func (h *vsHarness) reportOverhead(b *testing.B, walls [][]time.Duration, agent []time.Duration, n int) {
	b.Helper()
	own := reportAgent(b, agent)
	for i, w := range walls {
		per := (w[len(w)/2] - time.Duration(n)*own) / time.Duration(n)
		b.ReportMetric(vsMS(per), h.sides[i].name()+"-overhead-ms/task")
	}
}

// reportAgent reports the median of the agent's own times, and returns it.
func reportAgent(b *testing.B, agent []time.Duration) time.Duration {
	slices.Sort(agent)
	own := agent[len(agent)/2]
	b.ReportMetric(vsMS(own), "agent-ms-median")
	return own
}

// vsOrder is the order of k sides in iteration i: rotated by one each
// time, so that no side always runs first (on a cold cache) or last.
func vsOrder(k, i int) []int {
	order := make([]int, k)
	for j := range order {
		order[j] = (i + j) % k
	}
	return order
}

func vsMS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// vsTail is the end of a process's output, for failure messages.
func vsTail(out []byte) []byte {
	const keep = 2000
	if len(out) > keep {
		return out[len(out)-keep:]
	}
	return out
}

// buildFakeClaude builds vsFakeClaudeSrc as `claude` in a folder of its
// own, statically (it must start as fast as a program can).
func buildFakeClaude(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	files := map[string]string{"go.mod": "module fakeclaude\n\ngo 1.26\n", "main.go": vsFakeClaudeSrc}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "bin", "claude")
	env := append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=")
	res, err := proc.Run(b.Context(), proc.Cmd{Name: "go", Args: []string{"build", "-o", bin, "."}, Dir: dir, Env: env})
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("go build the fake claude: %v\n%s", err, res.Stderr)
	}
	return bin
}

// contender is one side of the comparison: how it lays out a project,
// the command lines it is run with, and how its files and status are
// read back.
type contender interface {
	name() string
	// command is the program and arguments that run the side with args.
	command(args []string) (string, []string)
	// writeProject makes dir a project of n pending tasks, afresh.
	writeProject(dir string, n int) error
	// runArgs runs the claude agent over the tasks, for at most n
	// iterations.
	runArgs(n int) []string
	statusArgs() []string
	// done is how many tasks the side's task file says are done.
	done(dir string) (int, error)
	// checkStatus says what is wrong with a status of 3 tasks, 1 done.
	checkStatus(res proc.Result) error
}

// ralphSide is ralph, as built by go build.
type ralphSide struct {
	label string
	bin   string
}

// buildRalphSide builds ralph with or without cgo into a folder of its
// own and logs how the binary is linked.
func buildRalphSide(b *testing.B, cgo bool) ralphSide {
	b.Helper()
	label, flag := "ralph-static", "CGO_ENABLED=0"
	if cgo {
		label, flag = "ralph-cgo", "CGO_ENABLED=1"
	}
	bin := filepath.Join(b.TempDir(), "ralph")
	res, err := proc.Run(b.Context(), proc.Cmd{Name: "go", Args: []string{"build", "-o", bin, "."}, Env: append(os.Environ(), flag)})
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("%s go build: exit %d, %v\n%s", flag, res.ExitCode, err, res.Stderr)
	}
	linked, err := vsLinkage(bin)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s (%s go build): %s", label, flag, linked)
	return ralphSide{label: label, bin: bin}
}

// vsBaseEnv names the git revision BenchmarkVsTUI also measures, as
// "ralph-base".
const vsBaseEnv = "RALPH_VS_BASE"

// buildBaseSide builds revision rev of ralph statically and logs which
// commit it is.
func buildBaseSide(b *testing.B, rev string) ralphSide {
	b.Helper()
	src, commit := exportRevision(b, rev)
	bin := filepath.Join(b.TempDir(), "ralph")
	build := proc.Cmd{Name: "go", Args: []string{"build", "-o", bin, "./cmd/ralph"}, Dir: src, Env: append(os.Environ(), "CGO_ENABLED=0")}
	if res, err := proc.Run(b.Context(), build); err != nil || res.ExitCode != 0 {
		b.Fatalf("build %s: exit %d, %v\n%s", rev, res.ExitCode, err, res.Stderr)
	}
	b.Logf("ralph-base: %s (%s), CGO_ENABLED=0", commit, rev)
	return ralphSide{label: "ralph-base", bin: bin}
}

// exportRevision writes the files git has for revision rev into a folder
// of its own (git archive: no work tree is touched) and returns it, with
// the commit's short hash.
func exportRevision(b *testing.B, rev string) (dir, commit string) {
	b.Helper()
	git := func(args ...string) string {
		out, err := proc.Output(b.Context(), proc.Cmd{Name: "git", Args: args})
		if err != nil {
			b.Fatalf("%s=%s: git %s: %v", vsBaseEnv, rev, args[0], err)
		}
		return strings.TrimSpace(string(out))
	}
	commit = git("rev-parse", "--short", rev+"^{commit}")
	top := git("rev-parse", "--show-toplevel")
	dir = b.TempDir()
	tarball := filepath.Join(b.TempDir(), "base.tar")
	for _, c := range []proc.Cmd{
		// From the top: run in a subfolder, git archive takes only that.
		{Name: "git", Args: []string{"archive", "--format=tar", "-o", tarball, commit}, Dir: top},
		{Name: "tar", Args: []string{"-xf", tarball, "-C", dir}},
	} {
		if res, err := proc.Run(b.Context(), c); err != nil || res.ExitCode != 0 {
			b.Fatalf("%s %s: exit %d, %v\n%s", c.Name, c.Args[0], res.ExitCode, err, res.Stderr)
		}
	}
	return dir, commit
}

// vsCC is the C compiler a cgo build would use: $CC, or go's default.
func vsCC() string {
	if cc := strings.Fields(os.Getenv("CC")); len(cc) > 0 {
		return cc[0]
	}
	return "gcc"
}

// vsLinkage says whether an ELF binary asks for a dynamic loader.
func vsLinkage(bin string) (string, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", bin, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "dynamically linked", nil
		}
	}
	return "statically linked", nil
}

func (r ralphSide) name() string { return r.label }

func (r ralphSide) command(args []string) (string, []string) { return r.bin, args }

func (r ralphSide) writeProject(dir string, n int) error {
	if err := vsFreshDir(dir); err != nil {
		return err
	}
	var tasks strings.Builder
	tasks.WriteString("# Tasks\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&tasks, "- [ ] T%d: Task number %d\n", i, i)
	}
	return os.WriteFile(filepath.Join(dir, "RALPH_TASKS.md"), []byte(tasks.String()), 0o644)
}

func (r ralphSide) runArgs(n int) []string {
	return []string{"run", "--agent", "claude", "--max-iterations", strconv.Itoa(n)}
}

func (r ralphSide) statusArgs() []string { return []string{"status", "--json"} }

func (r ralphSide) done(dir string) (int, error) {
	data, err := os.ReadFile(filepath.Join(dir, "RALPH_TASKS.md"))
	if err != nil {
		return 0, err
	}
	return bytes.Count(data, []byte("\n- [x] T")), nil
}

func (r ralphSide) checkStatus(res proc.Result) error {
	if res.ExitCode != 0 {
		return fmt.Errorf("exit %d", res.ExitCode)
	}
	var st struct {
		Tasks struct{ Total, Done int }
	}
	if err := json.Unmarshal(res.Stdout, &st); err != nil {
		return err
	}
	if st.Tasks.Total != 3 || st.Tasks.Done != 1 {
		return fmt.Errorf("%d of %d tasks done, want 1 of 3", st.Tasks.Done, st.Tasks.Total)
	}
	return nil
}

// tuiSide is ralph-tui's cli.js run by bun, on a prd.json project (its
// json tracker), headless, with no pause between iterations (its default
// is 1 s, which ralph does not have) and no desktop notification.
type tuiSide struct {
	bun, cli string
}

// findTUI finds bun and ralph-tui from RALPH_BUN_BIN and RALPH_TUI_BIN,
// or else in .ci/bench-tui's cache folder.
func findTUI() (tuiSide, error) {
	t := tuiSide{bun: os.Getenv("RALPH_BUN_BIN"), cli: os.Getenv("RALPH_TUI_BIN")}
	if t.bun == "" {
		t.bun = filepath.Join(tuiCache, ".bin", "bun")
	}
	if t.cli == "" {
		t.cli = filepath.Join(tuiCache, "ralph-tui", "dist", "cli.js")
	}
	for _, p := range []*string{&t.bun, &t.cli} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return tuiSide{}, err
		}
		if _, err := os.Stat(abs); err != nil {
			return tuiSide{}, errors.New(tuiHint)
		}
		*p = abs
	}
	return t, nil
}

// version is ralph-tui's version, from the package.json beside dist/.
func (t tuiSide) version() string {
	data, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(t.cli)), "package.json"))
	var pkg struct{ Version string }
	if err != nil || json.Unmarshal(data, &pkg) != nil {
		return "(version unknown)"
	}
	return pkg.Version
}

func (t tuiSide) bunVersion(b *testing.B) string {
	out, err := proc.Output(b.Context(), proc.Cmd{Name: t.bun, Args: []string{"--version"}})
	if err != nil {
		b.Fatalf("bun --version: %v", err)
	}
	return string(bytes.TrimSpace(out))
}

func (t tuiSide) name() string { return "tui" }

func (t tuiSide) command(args []string) (string, []string) {
	return t.bun, append([]string{t.cli}, args...)
}

// prdStory is the part of a prd.json story that the benchmark writes and
// reads.
type prdStory struct {
	ID                 string   `json:"id"`
	Title              string   `json:"title"`
	Description        string   `json:"description"`
	AcceptanceCriteria []string `json:"acceptanceCriteria"`
	Priority           int      `json:"priority"`
	Passes             bool     `json:"passes"`
	DependsOn          []string `json:"dependsOn"`
}

type prdFile struct {
	Name        string     `json:"name"`
	UserStories []prdStory `json:"userStories"`
}

func (t tuiSide) writeProject(dir string, n int) error {
	if err := vsFreshDir(dir); err != nil {
		return err
	}
	prd := prdFile{Name: "Bench"}
	for i := 1; i <= n; i++ {
		prd.UserStories = append(prd.UserStories, prdStory{
			ID: fmt.Sprintf("T%d", i), Title: fmt.Sprintf("Task number %d", i),
			AcceptanceCriteria: []string{}, Priority: 1, DependsOn: []string{},
		})
	}
	data, err := json.MarshalIndent(prd, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "prd.json"), data, 0o644)
}

func (t tuiSide) runArgs(n int) []string {
	return []string{"run", "--prd", "prd.json", "--headless", "--no-setup", "--no-notify", "--agent", "claude", "--delay", "0", "--iterations", strconv.Itoa(n)}
}

func (t tuiSide) statusArgs() []string { return []string{"status", "--json"} }

func (t tuiSide) done(dir string) (int, error) {
	data, err := os.ReadFile(filepath.Join(dir, "prd.json"))
	if err != nil {
		return 0, err
	}
	var prd prdFile
	if err := json.Unmarshal(data, &prd); err != nil {
		return 0, fmt.Errorf("prd.json: %w", err)
	}
	done := 0
	for _, s := range prd.UserStories {
		if s.Passes {
			done++
		}
	}
	return done, nil
}

// checkStatus accepts exit 1, ralph-tui's "running or paused": a session
// stopped at its iteration limit stays "running" in its session file.
func (t tuiSide) checkStatus(res proc.Result) error {
	if res.ExitCode != 1 {
		return fmt.Errorf("exit %d, want 1 (a session in progress)", res.ExitCode)
	}
	var st struct {
		Session struct {
			Progress struct{ Completed, Total int }
		}
	}
	if err := json.Unmarshal(res.Stdout, &st); err != nil {
		return err
	}
	if p := st.Session.Progress; p.Total != 3 || p.Completed != 1 {
		return fmt.Errorf("%d of %d tasks done, want 1 of 3", p.Completed, p.Total)
	}
	return nil
}

// vsFreshDir empties dir: the previous run's state must not be resumed.
func vsFreshDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o755)
}
