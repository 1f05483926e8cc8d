//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc"
)

// runProject writes a project of n independent pending tasks and an agent
// script into dir (afresh: earlier runs' state is removed).
func runProject(b *testing.B, dir string, n int, agent string) {
	b.Helper()
	for _, name := range []string{"RALPH_TASKS.md", "RALPH_PROGRESS.md", ".ralph"} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			b.Fatal(err)
		}
	}
	var tasks strings.Builder
	tasks.WriteString("# Tasks\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&tasks, "- [ ] T%d: Task number %d\n", i, i)
	}
	for name, content := range map[string]string{"RALPH_TASKS.md": tasks.String(), "agent.sh": agent} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRun100Process runs `ralph run --agent exec` as a process over
// 100 tasks, each done at once by a shell script, and reports the median
// wall time per run and per iteration, and the peak RSS over all runs (from
// GNU time: see benchProcess for why not from wait4).
func BenchmarkRun100Process(b *testing.B) {
	bin := buildRalph(b)
	timeBin := "/usr/bin/time"
	if _, err := os.Stat(timeBin); err != nil {
		b.Skip("GNU time is not at /usr/bin/time: no honest RSS figure")
	}
	dir := b.TempDir()
	env := append(os.Environ(), "HOME="+b.TempDir())
	var walls []time.Duration
	var peakKB int64
	for b.Loop() {
		b.StopTimer()
		runProject(b, dir, 100, "cat > /dev/null\necho '<promise>COMPLETE</promise>'\n")
		b.StartTimer()
		res, err := proc.Run(b.Context(), proc.Cmd{Name: timeBin, Args: []string{"-f", "ralph-bench-rss %M", bin, "run", "--agent", "exec", "--agent-cmd", "sh agent.sh"}, Dir: dir, Env: env})
		if err != nil || res.ExitCode != 0 || !bytes.Contains(res.Stdout, []byte("100 iterations, 100 tasks done")) {
			b.Fatalf("ralph run: exit %d, %v\n%s\n%s", res.ExitCode, err, res.Stdout, res.Stderr)
		}
		walls = append(walls, res.Wall)
		i := bytes.LastIndex(res.Stderr, []byte("ralph-bench-rss "))
		if i < 0 {
			b.Fatalf("time printed no RSS:\n%s", res.Stderr)
		}
		var kb int64
		fmt.Sscanf(string(res.Stderr[i:]), "ralph-bench-rss %d", &kb)
		peakKB = max(peakKB, kb)
	}
	slices.Sort(walls)
	med := walls[len(walls)/2]
	b.ReportMetric(float64(med.Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(med.Microseconds())/1000/100, "ms/iteration")
	b.ReportMetric(float64(peakKB)/1024, "peak-RSS-MB")
}

// BenchmarkStopLatency measures Ctrl-C: from SIGINT to `ralph run` having
// exited, its agent's process group gone and the task back to pending in
// RALPH_TASKS.md. The agent is a shell that execs sleep (which SIGINT
// ends). Reports the median.
func BenchmarkStopLatency(b *testing.B) {
	bin := buildRalph(b)
	dir := b.TempDir()
	env := append(os.Environ(), "HOME="+b.TempDir())
	var lats []time.Duration
	for b.Loop() {
		b.StopTimer()
		runProject(b, dir, 1, "cat > /dev/null\necho $$ > agent.pid\nexec sleep 30\n")
		_ = os.Remove(filepath.Join(dir, "agent.pid"))
		cmd := exec.Command(bin, "run", "--agent", "exec", "--agent-cmd", "sh agent.sh")
		cmd.Dir, cmd.Env = dir, env
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		var pid int
		for deadline := time.Now().Add(10 * time.Second); pid == 0; time.Sleep(time.Millisecond) {
			if data, err := os.ReadFile(filepath.Join(dir, "agent.pid")); err == nil && bytes.HasSuffix(data, []byte("\n")) {
				pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
			}
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				b.Fatal("the agent did not start")
			}
		}
		// Let the agent's shell exec sleep.
		time.Sleep(20 * time.Millisecond)
		b.StartTimer()
		start := time.Now()
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			b.Fatal(err)
		}
		err := cmd.Wait()
		lat := time.Since(start)
		b.StopTimer()
		if code := cmd.ProcessState.ExitCode(); code != 130 {
			b.Fatalf("ralph run exited %d (%v), want 130", code, err)
		}
		// The agent's pid is its group: the group must be empty now.
		if err := syscall.Kill(-pid, 0); err == nil {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			b.Fatalf("the agent's group %d outlived ralph", pid)
		}
		tasks, _ := os.ReadFile(filepath.Join(dir, "RALPH_TASKS.md"))
		if !bytes.Contains(tasks, []byte("- [ ] T1: Task number 1\n")) || !bytes.Contains(tasks, []byte("- status: paused\n")) {
			b.Fatalf("state not saved:\n%s", tasks)
		}
		lats = append(lats, lat)
		b.StartTimer()
	}
	slices.Sort(lats)
	b.ReportMetric(float64(lats[len(lats)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(lats[len(lats)-1].Microseconds())/1000, "max-ms")
}

// BenchmarkSupervisorStart times how long a supervisor takes to come up,
// which the first agent of every run waits for: ralph started as proc
// starts its supervisors (their argument, GOMAXPROCS=1), and ended as
// soon as it finds no socket from ralph, so from exec to the supervisor's
// first step. `ralph --version`, a command's start through cobra, runs
// beside it in turns. Reports the median of each.
func BenchmarkSupervisorStart(b *testing.B) {
	bin := buildRalph(b)
	env := append(os.Environ(), "GOMAXPROCS=1")
	var sup, version []time.Duration
	// timed runs ralph with args, which must exit with code want.
	timed := func(want int, args ...string) time.Duration {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		start := time.Now()
		err := cmd.Run()
		took := time.Since(start)
		if code := cmd.ProcessState.ExitCode(); code != want {
			b.Fatalf("ralph %s: exit %d (%v), want %d", strings.Join(args, " "), code, err, want)
		}
		return took
	}
	for b.Loop() {
		// Without ralph's socket a supervisor refuses to serve: exit 2.
		sup = append(sup, timed(2, proc.SuperviseArg))
		version = append(version, timed(0, "--version"))
	}
	slices.Sort(sup)
	slices.Sort(version)
	b.ReportMetric(float64(sup[len(sup)/2].Microseconds())/1000, "supervisor-ms")
	b.ReportMetric(float64(version[len(version)/2].Microseconds())/1000, "version-ms")
}
