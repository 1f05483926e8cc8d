package mdstate

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// editStyle is one way an editor saves a file.
type editStyle string

const (
	appendInPlace editStyle = "append" // open with O_APPEND, write the line
	tempRename    editStyle = "rename" // read, write a temp file, rename it over
	vimStyle      editStyle = "vim"    // read, rename to file~, write the file, delete file~
	editorLines             = 750      // lines per file and style: 1,500 per style
)

// editorSave adds line to the file at path as style saves.
func editorSave(path, line string, style editStyle) error {
	switch style {
	case appendInPlace:
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString(line)
		return errors.Join(err, f.Close())
	case tempRename:
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".swp")
		if err := os.WriteFile(tmp, append(data, line...), 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, path)
	case vimStyle:
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.Rename(path, path+"~"); err != nil {
			return err
		}
		if err := os.WriteFile(path, append(data, line...), 0o644); err != nil {
			return err
		}
		return os.Remove(path + "~")
	}
	return fmt.Errorf("no style %q", style)
}

// The race test of the write path: an editor adds 1,500 unique lines to
// RALPH_TASKS.md and RALPH_TODO.md, saving in one of the three ways
// editors save, while ralph edits both files in a loop (a task's status
// and a note; a new to-do) and reads them. Afterwards every line of the
// editor's is there, and no read saw a file missing or empty. An editor
// that saves a buffer it read before ralph's last write drops that write:
// ralph cannot prevent it here (the coordinator writes its edits again),
// so ralph's losses are counted and logged, not asserted.
func TestEditorsLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("an editor saves 4,500 times")
	}
	for _, style := range []editStyle{appendInPlace, tempRename, vimStyle} {
		t.Run(string(style), func(t *testing.T) { raceEditor(t, style, 0) })
		// Past leaseWorth, a save carries what the files hold across its
		// renames with write leases (vouched.go), which the editor's
		// opens refuse or break.
		t.Run(string(style)+", big file", func(t *testing.T) { raceEditor(t, style, 2000) })
	}
}

// raceEditor races an editor saving in style against ralph's saves, on a
// tasks file that starts with pad done tasks before ralph's two.
func raceEditor(t *testing.T, style editStyle, pad int) {
	dir := t.TempDir()
	tasks, todo := filepath.Join(dir, TasksFile), filepath.Join(dir, TodoFile)
	var filler strings.Builder
	for i := 1; i <= pad; i++ {
		fmt.Fprintf(&filler, "- [x] F%d: Filler task number %d, done long ago\n", i, i)
	}
	writeFile(t, tasks, "# Tasks\n\n"+filler.String()+"- [ ] T1: Toggled by ralph\n- [ ] T2: Noted by ralph\n", 0o644)
	if fi, err := os.Stat(tasks); err != nil {
		t.Fatal(err)
	} else if pad > 0 && fi.Size() < leaseWorth {
		t.Fatalf("the tasks file is %d bytes, too small for leases (%d)", fi.Size(), leaseWorth)
	}
	writeFile(t, todo, "# To-do\n\n- [ ] D1: First\n", 0o644)
	p := Open(dir)
	// ralph has read the files before the editor starts, as a coordinator
	// has: only a file ralph saw can be missing for a moment.
	for _, kind := range []Kind{TasksKind, TodoKind} {
		if _, err := p.LoadChecklist(kind); err != nil {
			t.Fatal(err)
		}
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	editorErr := make(chan error, 1)
	wg.Add(1)
	go func() { // the editor
		defer wg.Done()
		defer stop.Store(true)
		for n := range editorLines {
			for _, path := range []string{tasks, todo} {
				if err := editorSave(path, handLine(style, n), style); err != nil {
					editorErr <- fmt.Errorf("save %d: %w", n, err)
					return
				}
			}
			// A pause of 0 to 6 ms: faster than a person, and
			// mostly shorter than ralph's durable write (an fsync is
			// about 3 ms here), whose save needs a moment without one.
			time.Sleep(time.Duration(rand.IntN(6000)) * time.Microsecond)
		}
	}()
	var badReads atomic.Int64
	var readErr atomic.Value
	wg.Add(1)
	go func() { // a reader: the status, a watcher
		defer wg.Done()
		for ; !stop.Load(); time.Sleep(time.Millisecond) {
			for _, kind := range []Kind{TasksKind, TodoKind} {
				c, err := p.LoadChecklist(kind)
				if err == nil && len(c.Source()) == 0 {
					err = errors.New("empty")
				}
				if err != nil {
					badReads.Add(1)
					readErr.Store(kind.File + ": " + err.Error())
				}
			}
		}
	}()
	// ralph, in this goroutine.
	var notes, todos []string
	updates, redone, churned := 0, 0, 0
	// A ChurnError is a save that gave up while the file held the
	// editor's version: nothing lost, ralph's edit not made.
	var churn *ChurnError
	for i := 0; !stop.Load(); i++ {
		note := fmt.Sprintf("ralph note %04d", i)
		calls := 0
		_, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error {
			calls++
			st := Done
			if i%2 == 1 {
				st = Pending
			}
			if err := e.SetStatus("T1", st); err != nil {
				return err
			}
			return e.AddMeta("T2", "note", note)
		})
		switch {
		case errors.As(err, &churn):
			churned++
		case err != nil:
			t.Fatalf("update %d: %v", i, err)
		default:
			notes = append(notes, note)
		}
		td := fmt.Sprintf("ralph to-do %04d", i)
		_, err = p.UpdateChecklist(TodoKind, func(e *ChecklistEdit) error {
			calls++
			_, err := e.Add(td)
			return err
		})
		switch {
		case errors.As(err, &churn):
			churned++
		case err != nil:
			t.Fatalf("to-do %d: %v", i, err)
		default:
			todos = append(todos, td)
		}
		updates += 2
		redone += calls - 2
	}
	wg.Wait()
	select {
	case err := <-editorErr:
		t.Fatal(err)
	default:
	}

	for _, path := range []string{tasks, todo} {
		data := readFile(t, path)
		lost := 0
		for n := range editorLines {
			if line := strings.TrimPrefix(handLine(style, n), "- [ ] "); !strings.Contains(data, line) {
				lost++
				t.Logf("lost %q; in backups: %v", line, inBackups(t, dir, line))
			}
		}
		t.Logf("%s, %s: editor lines %d made, %d found", style, filepath.Base(path), editorLines, editorLines-lost)
		if lost > 0 {
			t.Errorf("%s: %d of the editor's %d lines lost", filepath.Base(path), lost, editorLines)
		}
		if _, err := ParseChecklist(TasksKind, []byte(data)); err != nil {
			t.Errorf("%s does not parse: %v", filepath.Base(path), err)
		}
	}
	found := func(path string, items []string) int {
		data, n := readFile(t, path), 0
		for _, it := range items {
			if strings.Contains(data, it+"\n") {
				n++
			}
		}
		return n
	}
	t.Logf("%s: ralph's updates %d (%d made again on a person's save, %d gave up); notes %d made, %d found; to-dos %d made, %d found",
		style, updates, redone, churned, len(notes), found(tasks, notes), len(todos), found(todo, todos))
	if n := badReads.Load(); n > 0 {
		t.Errorf("%d reads saw a file missing or empty during a save, e.g. %v", n, readErr.Load())
	}
	if d := strings.Count(readFile(t, todo), "ralph to-do "); d > len(todos) {
		t.Errorf("%d of ralph's to-dos in the file, %d added: an edit was made twice", d, len(todos))
	}
	noLeftovers(t, dir)
}

// handLine is the editor's line n: a new item, unique, with a fixed-width
// number so that no line's text is a prefix of another's.
func handLine(style editStyle, n int) string {
	return fmt.Sprintf("- [ ] hand %s %04d\n", style, n)
}

// inBackups lists the backups in dir that hold text.
func inBackups(t *testing.T, dir, text string) []string {
	var out []string
	entries, _ := os.ReadDir(filepath.Join(dir, BackupDir))
	for _, e := range entries {
		if strings.Contains(readFile(t, filepath.Join(dir, BackupDir, e.Name())), text) {
			out = append(out, e.Name())
		}
	}
	return out
}
