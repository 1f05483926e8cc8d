package proc

import (
	"bytes"
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
)

// allowedCPUs is the Cpus_allowed_list of a status file under /proc.
func allowedCPUs(t *testing.T, status string) string {
	t.Helper()
	cpus, err := proctest.CPUsOf(status)
	if err != nil {
		t.Fatal(err)
	}
	return cpus
}

// threadCPUs is the Cpus_allowed_list of each thread of this process.
func threadCPUs(t *testing.T) []string {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil || len(tasks) == 0 {
		t.Fatalf("threads: %v", err)
	}
	var out []string
	for _, status := range tasks {
		out = append(out, allowedCPUs(t, status))
	}
	return out
}

// childCPUs is the Cpus_allowed_list a child reports, contained or not.
func childCPUs(t *testing.T, contain bool) string {
	t.Helper()
	var out bytes.Buffer
	p, err := Start(context.Background(), Cmd{Name: "sh", Args: []string{"-c", "grep Cpus_allowed_list /proc/self/status"}, Contain: contain}, &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	got := proctest.AllowedCPUs(out.String())
	if len(got) != 1 {
		t.Fatalf("the child (contained: %t) printed %q", contain, out.String())
	}
	return got[0]
}

// TestChildrenStartUnpinned pins the test's thread to one CPU, as
// PinToOneCPU pins every thread, and checks that the children started from
// it have the CPUs the process had: one started directly, and one started
// by a supervisor started then. (A test binary is built with cgo, where
// PinToOneCPU pins nothing: TestRunPinsOnlyItself in cmd/ralph runs the
// static build.)
func TestChildrenStartUnpinned(t *testing.T) {
	was := allowedCPUs(t, "/proc/self/status")
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	cpu, ok := currentCPU()
	if !ok {
		t.Fatal("getcpu failed")
	}
	pin.mu.Lock()
	pin.pinned, pin.was = true, orig
	pin.one.Zero()
	pin.one.Set(cpu)
	pin.mu.Unlock()
	if err := unix.SchedSetaffinity(0, &pin.one); err != nil {
		t.Fatal(err)
	}
	defer func() {
		pin.mu.Lock()
		pin.pinned = false
		pin.mu.Unlock()
		if err := unix.SchedSetaffinity(0, &orig); err != nil {
			t.Error(err)
		}
	}()
	if got := allowedCPUs(t, "/proc/thread-self/status"); got != strconv.Itoa(cpu) {
		t.Fatalf("the test's thread has CPUs %s, want %d", got, cpu)
	}
	LetIdleGo() // the contained child's supervisor starts while pinned
	for _, contain := range []bool{false, true} {
		if got := childCPUs(t, contain); got != was {
			t.Errorf("pinned, a child (contained: %t) has CPUs %s, want %s", contain, got, was)
		}
	}
	if got := allowedCPUs(t, "/proc/thread-self/status"); got != strconv.Itoa(cpu) {
		t.Errorf("after the starts, the test's thread has CPUs %s, want %d still", got, cpu)
	}
}

// TestPinToOneCPUAllOrNothing pins the test process: every thread then
// runs on one CPU, the same, or (one CPU, or a binary with cgo, as a test
// binary is) none was pinned; unpin gives them the CPUs they had.
func TestPinToOneCPUAllOrNothing(t *testing.T) {
	was := threadCPUs(t)
	unpin := PinToOneCPU()
	pinned := threadCPUs(t)
	if !slices.Equal(pinned, was) {
		for _, got := range pinned {
			if strings.ContainsAny(got, ",-") || got != pinned[0] {
				t.Errorf("pinned: the threads have %v, want one CPU, the same for all (were %v)", pinned, was)
				break
			}
		}
	}
	unpin()
	for _, got := range threadCPUs(t) {
		if got != was[0] {
			t.Errorf("unpinned: a thread has CPUs %s, want %s", got, was[0])
		}
	}
}
