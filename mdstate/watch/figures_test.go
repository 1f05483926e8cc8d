//go:build unix

package watch_test

import (
	"flag"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/mdstate"
	"github.com/ralph-dev/ralph/mdstate/watch"
)

var figures = flag.Bool("figures", false, "measure the watcher's latency and idle CPU (TestFigures, about 25 s)")

// TestFigures measures, on demand, the time from a person's save (a
// temporary file renamed over RALPH_TASKS.md) to onChange, over 200
// saves, and the CPU time an idle Watcher uses in 10 s. It logs them and
// asserts nothing about times:
//
//	go test ./mdstate/watch -run TestFigures -figures -v
func TestFigures(t *testing.T) {
	if !*figures {
		t.Skip("run with -figures")
	}
	p := project(t, map[string]string{mdstate.TasksFile: tasks})
	changes := make(chan time.Time, 1)
	w, err := watch.New(p, func(watch.Change) { changes <- time.Now() }, watch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	const saves = 200
	var lat []time.Duration
	data := []byte(tasks)
	for i := range saves {
		data = fmt.Appendf(data, "- [ ] T%d: Task %d\n", i+10, i)
		start := time.Now()
		tempRename.save(t, p.Path(mdstate.TasksFile), data)
		select {
		case at := <-changes:
			lat = append(lat, at.Sub(start))
		case <-time.After(arrive):
			t.Fatalf("save %d: no change reported", i)
		}
	}
	slices.Sort(lat)
	t.Logf("save to onChange over %d saves (debounce %s): median %s, p99 %s, max %s",
		saves, watch.DefaultDebounce, lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])

	const idle = 10 * time.Second
	before := cpuTime(t)
	time.Sleep(idle)
	used := cpuTime(t) - before
	t.Logf("CPU time of the whole test process while the watcher idled %s: %s", idle, used)
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
