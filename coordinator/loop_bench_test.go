//go:build linux

package coordinator

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
)

// BenchmarkLoopOverhead is the coordinator's own cost per iteration: a
// 100-task project worked through by an instant in-process agent, so all
// that is measured is picking the task, building the prompt, and the
// writes (session block twice, progress entry), fsyncs included. Count the
// fsyncs with strace -f -c -e trace=fsync,fdatasync on the test binary.
func BenchmarkLoopOverhead(b *testing.B) {
	const tasks = 100
	var total time.Duration
	runs := 0
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "RALPH_TASKS.md"), []byte(tasksMD(tasks)), 0o644); err != nil {
			b.Fatal(err)
		}
		co := newCoordinator(b, Options{Root: dir, Agent: &fakeAgent{}})
		b.StartTimer()
		start := time.Now()
		out, _ := runAll(b, b.Context(), co)
		total += time.Since(start)
		runs++
		if out.Reason != StopAllDone || out.Iterations != tasks {
			b.Fatalf("outcome %+v", out)
		}
		b.StopTimer()
		co.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(runs*tasks), "ms/iteration")
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
