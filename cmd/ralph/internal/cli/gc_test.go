package cli

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// gcPercent reads the collector's rate without changing it.
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// liveHeap reads the live heap back from the collector's goal, off by no
// more than the stacks' and globals' share of it, at the rate in effect
// (another test may have left collectForAgents' rule armed, which sets it
// after each collection).
func TestLiveHeap(t *testing.T) {
	hold = make([]byte, 2*smallHeap)
	t.Cleanup(func() { hold = nil })
	for range 10 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // an armed rule's finalizer runs
		percent := gcPercent()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		live, got := s[0].Value.Uint64(), liveHeap(percent)
		if gcPercent() != percent {
			continue
		}
		if got < live || got > live+1<<20 {
			t.Errorf("liveHeap(%d) = %d, the runtime's live heap %d", percent, got, live)
		}
		return
	}
	t.Fatal("the rate kept changing")
}

func TestGCPercentFor(t *testing.T) {
	for live, want := range map[uint64]int{0: agentGCPercent, smallHeap - 1: agentGCPercent, smallHeap: GCPercent, 9 << 20: GCPercent} {
		if got := gcPercentFor(live); got != want {
			t.Errorf("gcPercentFor(%d) = %d, want %d", live, got, want)
		}
	}
}

// hold keeps a live heap of its size while a test needs one.
var hold []byte

// The commands that run agents collect garbage at the default rate while
// their live heap is small and at main's above smallHeap, as each
// collection finds it; the others at main's; GOGC decides for all when it
// is set. The last case leaves its watch of the collections armed, as a
// command's is for the rest of its life.
func TestCollectForAgents(t *testing.T) {
	old := debug.SetGCPercent(GCPercent)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	collect := func(agents bool, environ ...string) {
		cmd := &cobra.Command{Use: "x"}
		if agents {
			stopOnSignalsFor(cmd)
		}
		(&Factory{Env: Env{Environ: environ}}).collectForAgents(cmd)
	}
	collect(false, "HOME=/h")
	if got := gcPercent(); got != GCPercent {
		t.Errorf("a command that runs no agent: GC percent %d", got)
	}
	collect(true, "GOGC=50")
	if got := gcPercent(); got != GCPercent {
		t.Errorf("GOGC set: GC percent %d", got)
	}
	collect(true, "HOME=/h")
	if got := gcPercent(); got != agentGCPercent {
		t.Fatalf("a command that runs agents: GC percent %d", got)
	}
	hold = make([]byte, 2*smallHeap)
	for i := range hold {
		hold[i] = 1
	}
	untilRate(t, GCPercent, "with a large live heap")
	hold = nil
	untilRate(t, agentGCPercent, "once the heap is small again")
}

// untilRate collects garbage until the rate is want, for at most 10 s.
func untilRate(t *testing.T, want int, when string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the finalizer runs on its own goroutine
		if gcPercent() == want {
			return
		}
	}
	t.Errorf("%s: GC percent %d, want %d", when, gcPercent(), want)
}
