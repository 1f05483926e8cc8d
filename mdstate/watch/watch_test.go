package watch_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/mdstate"
	"github.com/ralph-dev/ralph/mdstate/watch"
)

// quiet is how long a test waits to be sure no (further) change comes: a
// few debounce times, well past one save.
const quiet = 400 * time.Millisecond

// arrive bounds the wait for a change that should come.
const arrive = 5 * time.Second

const tasks = "# Tasks\n\n- [ ] T1: One\n- [ ] T2: Two\n"

// recorder collects the changes a Watcher reports.
type recorder struct {
	ch chan watch.Change
}

func newRecorder() *recorder { return &recorder{ch: make(chan watch.Change, 1000)} }

func (r *recorder) onChange(c watch.Change) { r.ch <- c }

// next returns the next change, failing the test if none comes.
func (r *recorder) next(t *testing.T) watch.Change {
	t.Helper()
	select {
	case c := <-r.ch:
		return c
	case <-time.After(arrive):
		t.Fatalf("no change reported within %s", arrive)
		return watch.Change{}
	}
}

// none fails the test if a change comes within d.
func (r *recorder) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case c := <-r.ch:
		t.Fatalf("unexpected change: %s (%+v)", c.Summary(), c)
	case <-time.After(d):
	}
}

// project makes a project folder with the given state files.
func project(t *testing.T, files map[string]string) *mdstate.Project {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return mdstate.Open(dir)
}

// watching starts a Watcher on p, closed when the test ends.
func watching(t *testing.T, p *mdstate.Project) *recorder {
	t.Helper()
	r := newRecorder()
	w, err := watch.New(p, r.onChange, watch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wantItems(t *testing.T, c watch.Change, file string, want ...mdstate.ItemChange) {
	t.Helper()
	if c.File != file || c.Missing || c.Err != nil || !reflect.DeepEqual(c.Diff.Items, want) {
		t.Fatalf("change = %s\n%+v\nwant %s with items\n%+v", c.Summary(), c, file, want)
	}
}

func TestEditorSaves(t *testing.T) {
	for _, ed := range editors {
		t.Run(ed.name, func(t *testing.T) {
			t.Parallel()
			p := project(t, map[string]string{mdstate.TasksFile: tasks})
			r := watching(t, p)
			path := p.Path(mdstate.TasksFile)

			start := time.Now()
			ed.save(t, path, []byte(tasks+"- [ ] T3: Three\n"))
			c := r.next(t)
			wantItems(t, c, mdstate.TasksFile, mdstate.ItemChange{Kind: mdstate.ItemAdded, ID: "T3", Title: "Three"})
			if c.Seen.Before(start) || c.Seen.After(time.Now()) {
				t.Errorf("Seen = %s, not between the save at %s and now", c.Seen, start)
			}
			r.none(t, quiet)

			// A second save is diffed against the first.
			ed.save(t, path, []byte(tasks+"- [ ] T3: Three\n- [ ] T4: Four\n"))
			wantItems(t, r.next(t), mdstate.TasksFile, mdstate.ItemChange{Kind: mdstate.ItemAdded, ID: "T4", Title: "Four"})
			r.none(t, quiet)
		})
	}
}

// TestSlowSaves: a save whose steps are further apart than the debounce
// leaves the file missing or empty for a moment; that is one change, not
// a missing or emptied file.
func TestSlowSaves(t *testing.T) {
	for _, ed := range []editor{slowVim, slowTruncate} {
		t.Run(ed.name, func(t *testing.T) {
			t.Parallel()
			p := project(t, map[string]string{mdstate.TasksFile: tasks})
			r := watching(t, p)
			ed.save(t, p.Path(mdstate.TasksFile), []byte(strings.Replace(tasks, "[ ] T1", "[x] T1", 1)))
			wantItems(t, r.next(t), mdstate.TasksFile,
				mdstate.ItemChange{Kind: mdstate.ItemStatusChanged, ID: "T1", Title: "One", From: mdstate.Pending, To: mdstate.Done})
			r.none(t, quiet)
		})
	}
}

func TestMissingOnlyWhenItStaysGone(t *testing.T) {
	t.Parallel()
	p := project(t, map[string]string{mdstate.TodoFile: "- [ ] D1: Later\n"})
	p.SaveGrace = time.Second
	r := watching(t, p)
	path := p.Path(mdstate.TodoFile)
	start := time.Now()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	// Not within the save grace...
	r.none(t, p.SaveGrace/2)
	// ... but then.
	c := r.next(t)
	if c.File != mdstate.TodoFile || !c.Missing || c.Summary() != "RALPH_TODO.md: missing" {
		t.Fatalf("change = %+v; want RALPH_TODO.md missing", c)
	}
	if d := time.Since(start); d < p.SaveGrace {
		t.Errorf("missing reported after %s, within the save grace %s", d, p.SaveGrace)
	}
	r.none(t, quiet)
	if err := os.WriteFile(path, []byte("- [ ] D1: Later\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c = r.next(t)
	if !c.Diff.Created || c.Summary() != `RALPH_TODO.md: created, D1 added ("Later")` {
		t.Fatalf("change = %s (%+v); want the file created", c.Summary(), c)
	}
}

func TestEmptiedOnlyWhenItStaysEmpty(t *testing.T) {
	t.Parallel()
	p := project(t, map[string]string{mdstate.GoalsFile: "- [ ] G1: Ship\n"})
	p.SaveGrace = time.Second
	r := watching(t, p)
	if err := os.WriteFile(p.Path(mdstate.GoalsFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.none(t, p.SaveGrace/2)
	wantItems(t, r.next(t), mdstate.GoalsFile, mdstate.ItemChange{Kind: mdstate.ItemRemoved, ID: "G1", Title: "Ship"})
}

// TestOwnWritesAreNotReported: ralph's writes through the Project are not
// changes, and a person's save just after one is diffed against it.
func TestOwnWritesAreNotReported(t *testing.T) {
	t.Parallel()
	p := project(t, map[string]string{
		mdstate.TasksFile:    tasks,
		mdstate.AgentFile:    "# Agent\n\n## Learnings\n\n- one\n",
		mdstate.ProgressFile: "# Progress\n",
	})
	r := watching(t, p)
	if _, err := p.UpdateChecklist(mdstate.TasksKind, func(e *mdstate.ChecklistEdit) error {
		if err := e.SetStatus("T1", mdstate.InProgress); err != nil {
			return err
		}
		_, err := e.Add("Three")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := p.Learn("Run make first."); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendProgress(mdstate.Entry{Time: time.Now(), Title: "T1: One", Fields: []mdstate.Field{{Key: "outcome", Value: "done"}}}); err != nil {
		t.Fatal(err)
	}
	r.none(t, quiet)

	// A person's save right after ralph's write, from ralph's bytes.
	if _, err := p.UpdateChecklist(mdstate.TasksKind, func(e *mdstate.ChecklistEdit) error {
		return e.SetStatus("T1", mdstate.Done)
	}); err != nil {
		t.Fatal(err)
	}
	path := p.Path(mdstate.TasksFile)
	tempRename.save(t, path, bytes.Replace(readFile(t, path), []byte("[ ] T2"), []byte("[-] T2"), 1))
	wantItems(t, r.next(t), mdstate.TasksFile,
		mdstate.ItemChange{Kind: mdstate.ItemStatusChanged, ID: "T2", Title: "Two", From: mdstate.Pending, To: mdstate.Skipped})
	r.none(t, quiet)
}

// TestStaleBufferIsReported: a person's editor that saves a version ralph
// wrote earlier (its buffer was loaded then) undoes ralph's later edit;
// that is a change, though ralph once wrote those bytes.
func TestStaleBufferIsReported(t *testing.T) {
	t.Parallel()
	p := project(t, map[string]string{mdstate.TasksFile: tasks})
	r := watching(t, p)
	setT1 := func(st mdstate.Status) {
		t.Helper()
		if _, err := p.UpdateChecklist(mdstate.TasksKind, func(e *mdstate.ChecklistEdit) error {
			return e.SetStatus("T1", st)
		}); err != nil {
			t.Fatal(err)
		}
	}
	path := p.Path(mdstate.TasksFile)
	setT1(mdstate.InProgress)
	buffer := readFile(t, path)
	setT1(mdstate.Done)
	r.none(t, quiet)
	vim.save(t, path, buffer)
	wantItems(t, r.next(t), mdstate.TasksFile,
		mdstate.ItemChange{Kind: mdstate.ItemStatusChanged, ID: "T1", Title: "One", From: mdstate.Done, To: mdstate.InProgress})
	r.none(t, quiet)
}

// TestOwnWriteTakesInAPersonsSave: a person's save that ralph's write
// takes in before the watcher reads it is reported as the person's
// change, once, and ralph's own edit is not.
func TestOwnWriteTakesInAPersonsSave(t *testing.T) {
	t.Parallel()
	p := project(t, map[string]string{mdstate.TasksFile: tasks})
	r := newRecorder()
	// A debounce so long that only ralph's write can bring the change.
	w, err := watch.New(p, r.onChange, watch.Options{Debounce: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	path := p.Path(mdstate.TasksFile)
	start := time.Now()
	tempRename.save(t, path, bytes.Replace(readFile(t, path), []byte("[ ] T2"), []byte("[x] T2"), 1))
	if _, err := p.UpdateChecklist(mdstate.TasksKind, func(e *mdstate.ChecklistEdit) error {
		return e.SetStatus("T1", mdstate.InProgress)
	}); err != nil {
		t.Fatal(err)
	}
	c := r.next(t)
	wantItems(t, c, mdstate.TasksFile,
		mdstate.ItemChange{Kind: mdstate.ItemStatusChanged, ID: "T2", Title: "Two", From: mdstate.Pending, To: mdstate.Done})
	if c.Seen.Before(start) {
		t.Errorf("Seen = %s, before the save at %s", c.Seen, start)
	}
	r.none(t, quiet)
}

// TestOwnWritesUnderLoad: ralph writes RALPH_TASKS.md in a loop while a
// person appends tasks to it. No change reports one of ralph's edits, and
// each of the person's tasks is reported once: by the watcher's read, or,
// when ralph's write took the person's save in first, by the write hook.
func TestOwnWritesUnderLoad(t *testing.T) {
	// Writes faster than the debounce (the person's saves then reach the
	// watcher through ralph's writes), and slower (mostly its own reads).
	for _, pace := range []struct {
		name          string
		ralph, person time.Duration
		writes, saves int
	}{
		{"fast", 7 * time.Millisecond, 23 * time.Millisecond, 60, 20},
		{"slow", 70 * time.Millisecond, 45 * time.Millisecond, 30, 40},
	} {
		t.Run(pace.name, func(t *testing.T) {
			t.Parallel()
			ownWritesUnderLoad(t, pace.ralph, pace.person, pace.writes, pace.saves)
		})
	}
}

func ownWritesUnderLoad(t *testing.T, ralphPause, personPause time.Duration, writes, saves int) {
	p := project(t, map[string]string{mdstate.TasksFile: tasks})
	r := watching(t, p)
	path := p.Path(mdstate.TasksFile)
	var wg sync.WaitGroup
	defer wg.Wait() // also when the test fails: ralph's writes go to its folder
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range writes {
			st := mdstate.InProgress
			if i%2 == 1 {
				st = mdstate.Pending
			}
			if _, err := p.UpdateChecklist(mdstate.TasksKind, func(e *mdstate.ChecklistEdit) error {
				return e.SetStatus("T1", st)
			}); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(ralphPause)
		}
	}()
	for i := range saves {
		appendBytes(t, path, fmt.Appendf(nil, "- [ ] Person %d\n", i))
		time.Sleep(personPause)
	}
	wg.Wait()
	reported := map[string]int{}
	for {
		select {
		case c := <-r.ch:
			for _, it := range c.Diff.Items {
				if it.ID == "T1" || it.Kind != mdstate.ItemAdded || !strings.HasPrefix(it.Title, "Person ") {
					t.Errorf("reported %+v in %s: not the person's", it, c.Summary())
				}
				reported[it.Title]++
			}
			continue
		case <-time.After(quiet):
		}
		break
	}
	data := string(readFile(t, path))
	for i := range saves {
		title := fmt.Sprintf("Person %d", i)
		if !strings.Contains(data, title+"\n") {
			t.Errorf("the person's task %d was lost", i)
		}
		if n := reported[title]; n != 1 {
			t.Errorf("%q reported %d times; want once", title, n)
		}
	}
}

func TestProgressLog(t *testing.T) {
	t.Parallel()
	p := project(t, map[string]string{mdstate.ProgressFile: "# Progress\n\n## 2026-11-20 — One\n"})
	r := watching(t, p)
	path := p.Path(mdstate.ProgressFile)
	appendInPlace.save(t, path, append(readFile(t, path), "\n## 2026-11-21 — Two\n\n## 2026-11-21 — Three\n"...))
	c := r.next(t)
	if c.File != mdstate.ProgressFile || c.Diff.Entries != 2 || c.Summary() != "RALPH_PROGRESS.md: 2 entries added" {
		t.Fatalf("change = %s (%+v); want 2 entries added", c.Summary(), c)
	}
	if err := p.AppendProgress(mdstate.Entry{Time: time.Now(), Title: "ralph's"}); err != nil {
		t.Fatal(err)
	}
	r.none(t, quiet)
	// A person's append just after ralph's counts from ralph's.
	if err := p.AppendProgress(mdstate.Entry{Time: time.Now(), Title: "ralph's again"}); err != nil {
		t.Fatal(err)
	}
	appendInPlace.save(t, path, append(readFile(t, path), "\n## 2026-11-22 — Four\n"...))
	if c := r.next(t); c.Diff.Entries != 1 {
		t.Fatalf("change = %s (%+v); want 1 entry added", c.Summary(), c)
	}
	r.none(t, quiet)
}

func TestAgentAndOtherFiles(t *testing.T) {
	t.Parallel()
	p := project(t, map[string]string{mdstate.AgentFile: "# Agent\n\n- one\n- two\n"})
	r := watching(t, p)
	// Files that are not state files are not watched.
	if err := os.WriteFile(filepath.Join(p.Root, "notes.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(p.Root, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.none(t, quiet)
	vim.save(t, p.Path(mdstate.AgentFile), []byte("# Agent\n\n- one, better\n- two\n"))
	c := r.next(t)
	if c.Diff.LearningsEdited != 1 || c.Diff.Learnings != 0 || c.Summary() != "AGENT.md: 1 learning edited" {
		t.Fatalf("change = %s (%+v); want one learning edited", c.Summary(), c)
	}
	// Not UTF-8: an error, and the next version is diffed against the
	// last one that could be read.
	tempRename.save(t, p.Path(mdstate.AgentFile), []byte("- one\xff\n"))
	if c := r.next(t); c.Err == nil || !strings.HasPrefix(c.Summary(), "AGENT.md: cannot be read (") {
		t.Fatalf("change = %s (%+v); want an error", c.Summary(), c)
	}
	tempRename.save(t, p.Path(mdstate.AgentFile), []byte("# Agent\n\n- one, better\n- two\n- three\n"))
	if c := r.next(t); c.Err != nil || c.Summary() != "AGENT.md: 1 learning added" {
		t.Fatalf("change = %s (%+v); want one learning added", c.Summary(), c)
	}
}

// TestClose: Close returns promptly, leaves no goroutine behind, and no
// change is reported after it.
func TestClose(t *testing.T) {
	p := project(t, map[string]string{mdstate.TasksFile: tasks})
	before := runtime.NumGoroutine()
	r := newRecorder()
	w, err := watch.New(p, r.onChange, watch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tempRename.save(t, p.Path(mdstate.TasksFile), []byte(tasks+"- [ ] T3: Three\n"))
	r.next(t)
	start := time.Now()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %s", d)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
	tempRename.save(t, p.Path(mdstate.TasksFile), []byte(tasks))
	r.none(t, quiet)
}

// TestCloseDuringSave: Close while a change is being debounced drops it.
func TestCloseDuringSave(t *testing.T) {
	t.Parallel()
	p := project(t, map[string]string{mdstate.TasksFile: tasks})
	r := newRecorder()
	w, err := watch.New(p, r.onChange, watch.Options{Debounce: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tempRename.save(t, p.Path(mdstate.TasksFile), []byte(tasks+"- [ ] T3: Three\n"))
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("Close took %s", d)
	}
	r.none(t, 1500*time.Millisecond)
}

func TestNewOnMissingFolder(t *testing.T) {
	p := mdstate.Open(filepath.Join(t.TempDir(), "nope"))
	if _, err := watch.New(p, func(watch.Change) {}, watch.Options{}); err == nil {
		t.Fatal("New on a missing folder: no error")
	}
}

// TestUnwatch: a change seen before Unwatch is reported, one made after
// it is not, and Close still ends the Watcher.
func TestUnwatch(t *testing.T) {
	t.Parallel()
	p := project(t, map[string]string{mdstate.TasksFile: tasks})
	r := newRecorder()
	w, err := watch.New(p, r.onChange, watch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tempRename.save(t, p.Path(mdstate.TasksFile), []byte(tasks+"- [ ] T3: Three\n"))
	r.next(t)
	w.Unwatch()
	w.Unwatch() // twice is harmless
	tempRename.save(t, p.Path(mdstate.TasksFile), []byte(tasks))
	r.none(t, quiet)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkClose measures Close after a change, with and without Unwatch
// a little before it (a run's last writes take about 3 ms).
func BenchmarkClose(b *testing.B) {
	for _, unwatch := range []bool{false, true} {
		b.Run(fmt.Sprintf("unwatch=%v", unwatch), func(b *testing.B) {
			p := mdstate.Open(b.TempDir())
			if err := os.WriteFile(p.Path(mdstate.TasksFile), []byte(tasks), 0o644); err != nil {
				b.Fatal(err)
			}
			var closing time.Duration
			for b.Loop() {
				w, err := watch.New(p, func(watch.Change) {}, watch.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if unwatch {
					w.Unwatch()
				}
				time.Sleep(3 * time.Millisecond)
				start := time.Now()
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				closing += time.Since(start)
			}
			b.ReportMetric(float64(closing.Microseconds())/float64(b.N)/1000, "close-ms")
		})
	}
}
