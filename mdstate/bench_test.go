package mdstate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/mdstate"
	"github.com/ralph-dev/ralph/mdstate/mdstatetest"
)

// bigDir caches generated projects across benchmarks in one run.
var (
	bigMu   sync.Mutex
	bigDirs = map[[2]int]string{}
)

func bigProject(b *testing.B, tasks, entries int) string {
	b.Helper()
	bigMu.Lock()
	defer bigMu.Unlock()
	key := [2]int{tasks, entries}
	if d, ok := bigDirs[key]; ok {
		return d
	}
	d, err := os.MkdirTemp("", "ralph-bench-")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := mdstatetest.BigProject(d, tasks, entries); err != nil {
		b.Fatal(err)
	}
	bigDirs[key] = d
	return d
}

// runWriter is the writer process of TestKilledWriterLeavesWholeFiles: it
// toggles a task and appends entries as fast as it can until killed.
func runWriter(dir string) {
	p := mdstate.Open(dir)
	for i := 0; ; i++ {
		_, err := p.UpdateChecklist(mdstate.TasksKind, func(e *mdstate.ChecklistEdit) error {
			st := mdstate.Done
			if e.Checklist().Find("T1").Status == mdstate.Done {
				st = mdstate.Pending
			}
			return e.SetStatus("T1", st)
		})
		if err == nil {
			err = p.AppendProgress(mdstate.Entry{Title: fmt.Sprintf("T1: write %d", i), Fields: []mdstate.Field{
				{Key: "outcome", Value: "done"}, {Key: "summary", Value: "a whole entry"}}})
		}
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
	}
}

// TestMain doubles as the writer of the crash test (RALPH_TEST_WRITER_DIR).
func TestMain(m *testing.M) {
	if dir := os.Getenv("RALPH_TEST_WRITER_DIR"); dir != "" {
		runWriter(dir)
	}
	// Progress times without a zone are local: pin the zone so that the
	// golden files do not depend on the machine's.
	time.Local = time.UTC
	// Benchmark with the collector set as ralph's main sets it (400):
	// goldmark allocates about 3 MB per parse of 1,000 tasks, and at the
	// default setting collection is half the cost.
	debug.SetGCPercent(400)
	code := m.Run()
	for _, d := range bigDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// BenchmarkLoadBig is what `ralph status` reads: 1,000 tasks and a
// 100,000-entry log, the last entry parsed.
func BenchmarkLoadBig(b *testing.B) {
	dir := bigProject(b, 1000, 100_000)
	b.ReportAllocs()
	for b.Loop() {
		// A new Project each time, as each `ralph status` process has: no
		// parse is reused. The progress index in .ralph/ is, as it is
		// between processes.
		st, err := mdstate.Open(dir).Load(1)
		if err != nil {
			b.Fatal(err)
		}
		if st.Progress.Entries != 100_000 || len(st.Tasks.Items()) != 1000 {
			b.Fatalf("read %d entries, %d tasks", st.Progress.Entries, len(st.Tasks.Items()))
		}
	}
}

// BenchmarkAppendProgress appends entries to logs of 100 and 100,000
// entries: the cost must not grow with the log.
func BenchmarkAppendProgress(b *testing.B) {
	for _, n := range []int{100, 100_000} {
		b.Run("entries="+itoa(n), func(b *testing.B) {
			src := bigProject(b, 10, n)
			dir := b.TempDir()
			for _, name := range mdstate.Files {
				data, err := os.ReadFile(filepath.Join(src, name))
				if err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
			p := mdstate.Open(dir)
			t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
			i := 0
			for b.Loop() {
				if err := p.AppendProgress(mdstatetest.Entry(t0.Add(time.Duration(i)*time.Second), i)); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkStatusEdit changes one task's status in a 1,000-task file:
// "compute" is parse, splice, re-parse and check; "write" adds the durable
// write (fsync of file and folder) and the lock.
func BenchmarkStatusEdit(b *testing.B) {
	src := bigProject(b, 1000, 0)
	data, err := os.ReadFile(filepath.Join(src, mdstate.TasksFile))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("compute", func(b *testing.B) {
		b.ReportAllocs()
		st := []mdstate.Status{mdstate.Done, mdstate.Pending}
		i := 0
		for b.Loop() {
			c, err := mdstate.ParseChecklist(mdstate.TasksKind, data)
			if err != nil {
				b.Fatal(err)
			}
			e := c.Edit()
			if err := e.SetStatus("T999", st[i%2]); err != nil {
				b.Fatal(err)
			}
			if _, _, err := e.Bytes(); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("cached-compute", func(b *testing.B) {
		// What a coordinator pays: the file is unchanged since its last
		// write, so only the check of the new bytes parses.
		dir := b.TempDir()
		if err := os.WriteFile(filepath.Join(dir, mdstate.TasksFile), data, 0o644); err != nil {
			b.Fatal(err)
		}
		p := mdstate.Open(dir)
		c, err := p.LoadChecklist(mdstate.TasksKind)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			c2, err := p.LoadChecklist(mdstate.TasksKind) // served from the cache
			if err != nil || c2 != c {
				b.Fatal("cache miss", err)
			}
			e := c2.Edit()
			if err := e.SetStatus("T999", mdstate.Done); err != nil {
				b.Fatal(err)
			}
			if _, _, err := e.Bytes(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fsyncs-only", func(b *testing.B) {
		// The durable write alone, to subtract from "write".
		dir := b.TempDir()
		path := filepath.Join(dir, mdstate.TasksFile)
		for b.Loop() {
			if err := mdstate.WriteFileAtomic(path, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("write", func(b *testing.B) {
		dir := b.TempDir()
		if err := os.WriteFile(filepath.Join(dir, mdstate.TasksFile), data, 0o644); err != nil {
			b.Fatal(err)
		}
		p := mdstate.Open(dir)
		st := []mdstate.Status{mdstate.Done, mdstate.Pending}
		i := 0
		for b.Loop() {
			if _, err := p.UpdateChecklist(mdstate.TasksKind, func(e *mdstate.ChecklistEdit) error {
				return e.SetStatus("T999", st[i%2])
			}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

func itoa(n int) string {
	switch n {
	case 100:
		return "100"
	case 100_000:
		return "100000"
	}
	return "n"
}

// BenchmarkCoordinatorEdit is a coordinator's two writes of an iteration
// (a task in progress with the session block; then done, its failure
// notes and attempts dropped, with the session block) on projects of 200
// and 10,000 tasks: "compute" is the edit and its check on the parse of
// the last write (as the coordinator's Project reuses it); "write" the
// whole UpdateChecklist. The cost per op must not grow with the tasks.
func BenchmarkCoordinatorEdit(b *testing.B) {
	for _, n := range []int{200, 10_000} {
		src := bigProject(b, n, 0)
		data, err := os.ReadFile(filepath.Join(src, mdstate.TasksFile))
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
		step := func(i int, ready []string, edit func(func(e *mdstate.ChecklistEdit) error) error) {
			id := ready[(i/2)%len(ready)]
			st := mdstate.InProgress
			if i%2 == 1 {
				st = mdstate.Done
			}
			if err := edit(func(e *mdstate.ChecklistEdit) error {
				if err := e.SetStatus(id, st); err != nil {
					return err
				}
				if st == mdstate.Done {
					if err := e.DropMeta(id, "attempts"); err != nil {
						return err
					}
				}
				s := mdstate.Session{ID: "20260601-000000", Status: mdstate.SessionRunning, Phase: mdstate.PhaseAgent,
					Iteration: i/2 + 1, Task: id, Started: t0, Updated: t0.Add(time.Duration(i) * time.Second)}
				return e.SetSession(&s)
			}); err != nil {
				b.Fatal(err)
			}
		}
		readyIDs := func(c *mdstate.Checklist) []string {
			var ids []string
			for _, it := range c.Items() {
				if it.Status == mdstate.Pending {
					ids = append(ids, it.ID)
				}
			}
			return ids
		}
		b.Run(fmt.Sprintf("tasks=%d/compute", n), func(b *testing.B) {
			c, err := mdstate.ParseChecklist(mdstate.TasksKind, data)
			if err != nil {
				b.Fatal(err)
			}
			ready := readyIDs(c)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				step(i, ready, func(fn func(e *mdstate.ChecklistEdit) error) error {
					e := c.Edit()
					if err := fn(e); err != nil {
						return err
					}
					_, after, err := e.Bytes()
					c = after
					return err
				})
				i++
			}
		})
		b.Run(fmt.Sprintf("tasks=%d/write", n), func(b *testing.B) {
			dir := b.TempDir()
			if err := os.WriteFile(filepath.Join(dir, mdstate.TasksFile), data, 0o644); err != nil {
				b.Fatal(err)
			}
			p := mdstate.Open(dir)
			c, err := p.LoadChecklist(mdstate.TasksKind)
			if err != nil {
				b.Fatal(err)
			}
			ready := readyIDs(c)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				step(i, ready, func(fn func(e *mdstate.ChecklistEdit) error) error {
					_, err := p.UpdateChecklist(mdstate.TasksKind, fn)
					return err
				})
				i++
			}
		})
	}
}
