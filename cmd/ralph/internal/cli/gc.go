package cli

import (
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// GCPercent is the garbage collector's rate ralph's main sets for every
// command, a fifth of the runtime's default (GOGC=400): most commands live
// for milliseconds and allocate a few megabytes (parsing a 1,000-task file
// is about 3 MB), and collecting that often costs more than it saves.
const GCPercent = 400

// agentGCPercent is the rate of a command that runs agents while its live
// heap is small (under smallHeap): the runtime's default. Such a command
// lives for as many iterations as there are tasks, and an iteration
// allocates about 300 KB. At GCPercent the heap would not reach its first
// goal (16 MB, four times the runtime's 4 MB floor) in a 50-task run, so
// every iteration's allocations would land on pages never touched before,
// and each first touch is a page fault (about 55 an iteration, some 25 µs
// each on a virtual machine). At the default rate the heap is collected
// every 4 MB or so and goes round the pages it has: 50-task runs of the
// instant agent, 16 pairs in turns, 10.79 -> 9.85 ms an iteration, 19.2 ->
// 16.8 ms of CPU (every process) an iteration (docs/benchmarks.md).
const agentGCPercent = 100

// smallHeap is the live heap under which agentGCPercent holds. Above it
// the default rate's goal is no longer the 4 MB floor but twice the live
// heap, and a collection marks all of it: a 10,000-task project (9 MB
// live) would be collected every other iteration, 5.6 ms of CPU an
// iteration against 3.9 at GCPercent, whose goal it reaches once.
const smallHeap = 4 << 20

// collectForAgents sets agentGCPercent for a command that runs agents,
// and has the rate follow the live heap after every collection. GOGC,
// when set, decides instead.
func (f *Factory) collectForAgents(cmd *cobra.Command) {
	if !runsAgents(cmd) || f.Env.sets("GOGC") {
		return
	}
	percent := agentGCPercent
	debug.SetGCPercent(percent)
	afterEachGC(func() {
		percent = gcPercentFor(liveHeap(percent))
		debug.SetGCPercent(percent)
	})
}

// gcPercentFor is the rate of a command that runs agents, whose live heap
// is live bytes.
func gcPercentFor(live uint64) int {
	if live < smallHeap {
		return agentGCPercent
	}
	return GCPercent
}

// liveHeap is about the heap the last collection found live, read back
// from the goal it set at percent (MemStats.NextGC: the live heap, plus
// percent % of it and of the stacks and globals, which this counts as
// heap; at least the runtime's 4 MB floor, scaled by percent). Not from
// package runtime/metrics, whose init costs 0.3-0.9 ms of every ralph
// start on the machines of issue 14 (GODEBUG=inittrace=1).
func liveHeap(percent int) uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.NextGC * 100 / uint64(100+percent)
}

// afterEachGC calls f after every garbage collection, on the finalizer
// goroutine: a sentinel object, garbage as soon as it is made, whose
// finalizer calls f and makes the next one.
func afterEachGC(f func()) {
	s := new(gcSentinel)
	runtime.SetFinalizer(s, func(*gcSentinel) {
		f()
		afterEachGC(f)
	})
}

// gcSentinel holds a pointer so that the runtime never packs it with other
// small objects (whose finalizers then wait for all of them).
type gcSentinel struct{ _ *byte }
