//go:build linux

package coordinator

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
	"github.com/ralph-dev/ralph/mdstate"
	"github.com/ralph-dev/ralph/mdstate/mdstatetest"
)

// BenchmarkLoopOverhead is the coordinator's own cost per iteration: a
// 100-task project worked through by an instant in-process agent, so all
// that is measured is picking the task, building the prompt, and the
// writes (session block twice, progress entry), fsyncs included; the
// process's CPU an iteration is beside it, and the difference is what the
// iteration waited for (the flushes, mostly). Count the fsyncs with
// strace -f -c -e trace=fsync,fdatasync on the test binary.
func BenchmarkLoopOverhead(b *testing.B) {
	const tasks = 100
	var total, cpu time.Duration
	runs := 0
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "RALPH_TASKS.md"), []byte(tasksMD(tasks)), 0o644); err != nil {
			b.Fatal(err)
		}
		co := openCoordinator(b, Options{Root: dir, Agent: &fakeAgent{}})
		b.StartTimer()
		start := readIterationClock(b)
		out, _ := runAll(b, b.Context(), co)
		end := readIterationClock(b)
		total += end.wall.Sub(start.wall)
		cpu += end.cpu - start.cpu
		runs++
		if out.Reason != StopAllDone || out.Iterations != tasks {
			b.Fatalf("outcome %+v", out)
		}
		b.StopTimer()
		co.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(runs*tasks), "ms/iteration")
	// The CPU the process spent (its flushes' waits are the rest).
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(runs*tasks), "cpu-ms/iteration")
}

// BenchmarkLoopIteration is the coordinator's cost per iteration and how
// it grows with the task count: a mdstatetest.BigProject of 200 or 10,000
// tasks (and a 1,000-entry log), of which one run of an instant in-process
// agent does 21 iterations. What is measured is the span from the first
// agent call to the 21st, 20 whole iterations without the run's start and
// end: CPU (getrusage, the whole process: the watcher's work on ralph's
// writes counts) and wall time. Each op is one run on a fresh copy;
// the medians over the ops are reported, with min and max. GOGC is 400,
// as a run of cmd/ralph has it on the 10,000-task project (9 MB live; cli's
// collectForAgents). On the 200-task one (1 MB live) such a run collects
// at the default rate, which costs this process, its heap faulted in by
// the runs before, a little more CPU (3.04 against 2.90 ms an iteration,
// 12 runs): the ratio below is the larger of the two.
//
// "10000-vs-200" runs both sizes in each op, in turns, and reports the
// ratio of their CPU an iteration: the goal, side by side in one
// run, where this machine's drift between runs of one size is 20-40 %.
//
//	go test ./coordinator -run '^$' -bench LoopIteration -benchtime 10x
//
// Count the system calls of one size with strace -f -c on the test binary
// (-test.bench 'LoopIteration/tasks=200$').
func BenchmarkLoopIteration(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	for _, tasks := range []int{200, 10000} {
		b.Run(fmt.Sprintf("tasks=%d", tasks), func(b *testing.B) {
			files := bigProjectFiles(b, tasks)
			var cpu, wall []time.Duration
			for b.Loop() {
				c, w := iterationCost(b, files)
				cpu, wall = append(cpu, c), append(wall, w)
			}
			reportSpread(b, "cpu", cpu)
			reportSpread(b, "wall", wall)
		})
	}
	b.Run("tasks=10000-vs-200", func(b *testing.B) {
		small, big := bigProjectFiles(b, 200), bigProjectFiles(b, 10000)
		var ratios []float64
		var smallCPU, bigCPU []time.Duration
		for n := 0; b.Loop(); n++ {
			var s, g time.Duration
			if n%2 == 0 {
				s, _ = iterationCost(b, small)
				g, _ = iterationCost(b, big)
			} else {
				g, _ = iterationCost(b, big)
				s, _ = iterationCost(b, small)
			}
			smallCPU, bigCPU = append(smallCPU, s), append(bigCPU, g)
			ratios = append(ratios, float64(g)/float64(s))
		}
		slices.Sort(ratios)
		b.ReportMetric(ratios[len(ratios)/2], "ratio")
		b.ReportMetric(ratios[0], "ratio-min")
		b.ReportMetric(ratios[len(ratios)-1], "ratio-max")
		reportSpread(b, "cpu-200", smallCPU)
		reportSpread(b, "cpu-10000", bigCPU)
	})
}

// iterationCost runs the coordinator on a fresh copy of files until its
// 21st agent call, and returns the CPU and the wall time of the 20
// iterations between the first call and the last. Only the run is timed.
func iterationCost(b *testing.B, files map[string][]byte) (cpu, wall time.Duration) {
	b.StopTimer()
	defer b.StartTimer()
	dir := b.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	var at []iterationClock
	ag := &fakeAgent{before: func(int) { at = append(at, readIterationClock(b)) }}
	co := openCoordinator(b, Options{Root: dir, Agent: ag, MaxIterations: loopIterations + 1})
	defer co.Close()
	b.StartTimer()
	out, _ := runAll(b, b.Context(), co)
	b.StopTimer()
	if out.Iterations != loopIterations+1 || len(at) != loopIterations+1 {
		b.Fatalf("outcome %+v after %d agent calls", out, len(at))
	}
	first, last := at[0], at[len(at)-1]
	return (last.cpu - first.cpu) / loopIterations, last.wall.Sub(first.wall) / loopIterations
}

// loopIterations is how many whole iterations BenchmarkLoopIteration
// measures in each run.
const loopIterations = 20

// iterationClock is the process's CPU time and the wall clock at one
// instant.
type iterationClock struct {
	cpu  time.Duration
	wall time.Time
}

func readIterationClock(b *testing.B) iterationClock {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return iterationClock{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), wall: time.Now()}
}

// bigProjectFiles returns the state files of a mdstatetest.BigProject of
// n tasks and 1,000 progress entries, by name.
func bigProjectFiles(b *testing.B, n int) map[string][]byte {
	dir, err := mdstatetest.BigProject(b.TempDir(), n, 1000)
	if err != nil {
		b.Fatal(err)
	}
	files := map[string][]byte{}
	for _, name := range mdstate.Files {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		files[name] = data
	}
	return files
}

// reportSpread reports the median, min and max of ds in ms/iteration.
func reportSpread(b *testing.B, what string, ds []time.Duration) {
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(ds[len(ds)/2]), what+"-ms/iteration")
	b.ReportMetric(ms(ds[0]), what+"-min-ms")
	b.ReportMetric(ms(ds[len(ds)-1]), what+"-max-ms")
}

// BenchmarkStopHard is the time from Stop(true) to the agent's whole tree
// gone and the state saved, with an agent (and a grandchild) that ignore
// SIGINT: one stop per op, median and p99 reported. Run it with
// -benchtime=50x for the 50 stops.
func BenchmarkStopHard(b *testing.B) {
	dir := b.TempDir()
	for name, content := range map[string]string{
		"RALPH_TASKS.md": tasksMD(1),
		"agent.sh":       "trap '' INT\nsh -c \"trap '' INT; sleep 60\" &\necho $$ $! > pids\nwhile :; do sleep 1; done\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	ag, err := agent.Exec("sh agent.sh")
	if err != nil {
		b.Fatal(err)
	}
	co := newCoordinator(b, Options{Root: dir, Agent: ag})
	go func() {
		for range co.Events() {
		}
	}()
	var took []time.Duration
	for b.Loop() {
		b.StopTimer()
		_ = os.Remove(filepath.Join(dir, "pids"))
		if err := co.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		pids := benchPids(b, filepath.Join(dir, "pids"))
		b.StartTimer()
		start := time.Now()
		co.Stop(true)
		took = append(took, time.Since(start))
		b.StopTimer()
		for _, pid := range pids {
			if proctest.Alive(pid) {
				b.Fatalf("pid %d survived Stop(true)", pid)
			}
		}
		if out, err := co.Wait(); err != nil || out.Reason != StopInterrupted {
			b.Fatalf("outcome %+v, %v", out, err)
		}
		b.StartTimer()
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(took[(len(took)*99)/100].Microseconds())/1000, "ms-p99")
	b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "ms-max")
}

func benchPids(b *testing.B, path string) []int {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if f := strings.Fields(readString(path)); len(f) == 2 {
			p1, _ := strconv.Atoi(f[0])
			p2, _ := strconv.Atoi(f[1])
			return []int{p1, p2}
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Fatal("the agent wrote no pids")
	return nil
}

func readString(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

// BenchmarkReconcileTasks is the look, at each write of RALPH_TASKS.md,
// at every task ralph marked in the session (reconcileTasks): late in a
// long session on 10,000 tasks, 5,000 marks, against a version of the
// file that an edit made (its items shared with the version before).
func BenchmarkReconcileTasks(b *testing.B) {
	files := bigProjectFiles(b, 10000)
	c, err := mdstate.ParseChecklist(mdstate.TasksKind, files[mdstate.TasksFile])
	if err != nil {
		b.Fatal(err)
	}
	first := c.Item(c.Len() - 1)
	e := c.Edit()
	if err := e.SetStatus(first.ID, mdstate.Done); err != nil {
		b.Fatal(err)
	}
	if _, c, err = e.Bytes(); err != nil {
		b.Fatal(err)
	}
	var o ownEdits
	for i, it := range c.All() {
		if i%2 == 0 {
			o.marked(it.ID, mdstate.Pending, it.Status)
		}
	}
	for b.Loop() {
		plan, err := o.reconcileTasks(c.Edit(), "")
		if err != nil || len(plan.taken) > 0 || len(plan.restored) > 0 {
			b.Fatalf("plan %+v, %v", plan, err)
		}
	}
}
