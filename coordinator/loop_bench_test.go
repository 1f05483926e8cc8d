package coordinator

import (
	"os"
	"path/filepath"
	"testing"
	"time"
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
