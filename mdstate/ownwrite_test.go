package mdstate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// checkOwn asserts what ChangedSinceOwnWrite says about name.
func checkOwn(t *testing.T, p *Project, name string, wantChanged, wantOK bool) {
	t.Helper()
	changed, ok, err := p.ChangedSinceOwnWrite(name)
	if err != nil {
		t.Fatal(err)
	}
	if changed != wantChanged || ok != wantOK {
		t.Fatalf("ChangedSinceOwnWrite(%s) = changed %v, ok %v; want %v, %v", name, changed, ok, wantChanged, wantOK)
	}
}

// renameSave saves data as vim and most editors do: a new file renamed
// over the old one.
func renameSave(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".swp"
	writeFile(t, tmp, data, 0o644)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestOwnWriteChecklist(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TasksFile)
	writeFile(t, path, "# Tasks\n\n- [ ] T1: First\n", 0o644)
	p := Open(dir)
	checkOwn(t, p, TasksFile, false, false) // not written yet
	update := func() {
		t.Helper()
		if _, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error {
			_, err := e.Add("Another")
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	update()
	checkOwn(t, p, TasksFile, false, true)
	checkOwn(t, Open(dir), TasksFile, false, false) // another Project wrote nothing

	// A person's edit in place, of the same size: only the bytes tell.
	mine := readFile(t, path)
	writeFile(t, path, strings.Replace(mine, "[ ] T1", "[x] T1", 1), 0o644)
	checkOwn(t, p, TasksFile, true, true)

	update()
	checkOwn(t, p, TasksFile, false, true)
	// A rename-save, even of the very same bytes, is a person's write.
	renameSave(t, path, readFile(t, path))
	checkOwn(t, p, TasksFile, true, true)

	update()
	renameSave(t, path, readFile(t, path)+"- [ ] Typed by hand\n")
	checkOwn(t, p, TasksFile, true, true)

	update()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	checkOwn(t, p, TasksFile, true, true)
}

func TestOwnWriteLearn(t *testing.T) {
	dir := t.TempDir()
	p := Open(dir)
	writeFile(t, filepath.Join(dir, AgentFile), Templates[AgentFile], 0o644)
	if err := p.Learn("Run the tests with -race."); err != nil {
		t.Fatal(err)
	}
	checkOwn(t, p, AgentFile, false, true)
	if err := p.Learn("Second learning."); err != nil {
		t.Fatal(err)
	}
	checkOwn(t, p, AgentFile, false, true)
	path := filepath.Join(dir, AgentFile)
	writeFile(t, path, readFile(t, path)+"- By hand.\n", 0o644)
	checkOwn(t, p, AgentFile, true, true)
}

func TestOwnWriteProgress(t *testing.T) {
	dir := t.TempDir()
	p := Open(dir)
	path := filepath.Join(dir, ProgressFile)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	appendEntry := func(title string) {
		t.Helper()
		if err := p.AppendProgress(Entry{Time: t0, Title: title, Fields: []Field{{Key: "outcome", Value: "done"}}}); err != nil {
			t.Fatal(err)
		}
	}
	appendEntry("T1: First") // creates the log from its template
	checkOwn(t, p, ProgressFile, false, true)
	appendEntry("T2: Second")
	checkOwn(t, p, ProgressFile, false, true)

	// A person's append.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\n## 2026-11-23 — By hand\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	checkOwn(t, p, ProgressFile, true, true)

	// An edit of the last entry that keeps the size, with the mtime set
	// back: the hash of the tail tells.
	appendEntry("T3: Third")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data := readFile(t, path)
	writeFile(t, path, strings.Replace(data, "T3: Third", "T3: THIRD", 1), 0o644)
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	checkOwn(t, p, ProgressFile, true, true)

	appendEntry("T4: Fourth")
	renameSave(t, path, readFile(t, path))
	checkOwn(t, p, ProgressFile, true, true)
}

// An append a crash cut short is finished by the next write: that is
// ralph's write too.
func TestOwnWriteJournalRecovery(t *testing.T) {
	dir := t.TempDir()
	p := Open(dir)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	if err := p.AppendProgress(Entry{Time: t0, Title: "T1: First"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ProgressFile)
	before := readFile(t, path)
	text := "\n" + string((&Entry{Time: t0, Title: "T2: Torn"}).Render("\n"))
	if err := p.writeJournal(int64(len(before)), []byte(text)); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, before+text[:10], 0o644) // the torn append
	q := Open(dir)
	if err := q.Recover(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != before+text {
		t.Fatalf("log after recovery:\n%s", got)
	}
	checkOwn(t, q, ProgressFile, false, true)
}

func TestCreateFile(t *testing.T) {
	dir := t.TempDir()
	p := Open(dir)
	created, err := p.CreateFile(GoalsFile, []byte("# Goals\n"))
	if err != nil || !created {
		t.Fatalf("CreateFile = %v, %v", created, err)
	}
	checkOwn(t, p, GoalsFile, false, true)
	path := filepath.Join(dir, GoalsFile)
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
	writeFile(t, path, "# Goals, mine\n", 0o644)
	created, err = p.CreateFile(GoalsFile, []byte("# Goals\n"))
	if err != nil || created {
		t.Fatalf("second CreateFile = %v, %v", created, err)
	}
	if got := readFile(t, path); got != "# Goals, mine\n" {
		t.Fatalf("an existing file was replaced: %q", got)
	}
	checkOwn(t, p, GoalsFile, true, true) // the person's file, not ralph's

	if _, err := p.CreateFile("../escape.md", nil); err == nil {
		t.Fatal("a name outside the root was accepted")
	}
	if err := os.Mkdir(filepath.Join(dir, TodoFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if created, err := p.EnsureFile(TodoFile); err != nil || created {
		t.Fatalf("EnsureFile over a directory = %v, %v", created, err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".ralph-") {
			t.Fatalf("left a temporary file: %s", e.Name())
		}
	}
}

func TestEnsureFile(t *testing.T) {
	dir := t.TempDir()
	p := Open(dir)
	for range 2 {
		if _, err := p.EnsureFile(TasksFile); err != nil {
			t.Fatal(err)
		}
	}
	if got := readFile(t, filepath.Join(dir, TasksFile)); got != Templates[TasksFile] {
		t.Fatalf("got %q", got)
	}
	checkOwn(t, p, TasksFile, false, true)
	if _, err := p.EnsureFile("NOTES.md"); err == nil {
		t.Fatal("a file without a template was created")
	}
}

func TestReplaceFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TasksFile)
	writeFile(t, path, "# Tasks\n\n- [ ] T1: Mine\n", 0o600)
	p := Open(dir)
	if err := p.ReplaceFile(TasksFile, []byte("# Tasks\n\n- [x] T1: Restored\n")); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "# Tasks\n\n- [x] T1: Restored\n" {
		t.Fatalf("got %q", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600 kept", fi.Mode().Perm())
	}
	checkOwn(t, p, TasksFile, false, true)

	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	var fe *FileError
	if err := p.ReplaceFile(TasksFile, []byte("x\n")); !errors.As(err, &fe) {
		t.Fatalf("a read-only file was replaced: %v", err)
	}
	if err := p.ReplaceFile(GoalsFile, []byte("# Goals\n")); err != nil { // missing: created
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, GoalsFile)); err != nil || fi.Mode().Perm() != fs.FileMode(0o644) {
		t.Fatalf("created %v, %v", fi, err)
	}
}

// BenchmarkOwnWrite measures what remembering a write costs, apart from
// the write: after an append to a log of 100,000 entries (a stat and a
// read of its last 4 KiB), after a rewrite of a 1,000-task file (a hash of
// its bytes), and the checks a watcher makes of each.
func BenchmarkOwnWrite(b *testing.B) {
	dir := b.TempDir()
	p := Open(dir)
	var log, tasks strings.Builder
	log.WriteString(Templates[ProgressFile])
	e := Entry{Time: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), Fields: []Field{{Key: "outcome", Value: "done"}, {Key: "summary", Value: "Did the part of the feature it was asked to do."}}}
	for i := range 100_000 {
		e.Title = "T" + strconv.Itoa(i) + ": Implement part of the feature"
		log.WriteString("\n")
		log.Write(e.Render("\n"))
	}
	tasks.WriteString(Templates[TasksFile])
	for i := range 1000 {
		tasks.WriteString("- [ ] T" + strconv.Itoa(i+1) + ": Implement part " + strconv.Itoa(i) + " of the feature, with tests and docs\n  - note: the first attempt timed out\n")
	}
	for name, data := range map[string]string{ProgressFile: log.String(), TasksFile: tasks.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	f, err := os.Open(filepath.Join(dir, ProgressFile))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	data := []byte(tasks.String())
	tfi, err := os.Stat(filepath.Join(dir, TasksFile))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("record-append", func(b *testing.B) {
		for b.Loop() {
			p.noteAppend(f, fi.Size())
		}
	})
	b.Run("check-progress", func(b *testing.B) {
		for b.Loop() {
			if changed, ok, err := p.ChangedSinceOwnWrite(ProgressFile); changed || !ok || err != nil {
				b.Fatal(changed, ok, err)
			}
		}
	})
	b.Run("record-tasks", func(b *testing.B) {
		for b.Loop() {
			p.noteWrite(TasksFile, data, tfi)
		}
	})
	b.Run("check-tasks", func(b *testing.B) {
		for b.Loop() {
			if changed, ok, err := p.ChangedSinceOwnWrite(TasksFile); changed || !ok || err != nil {
				b.Fatal(changed, ok, err)
			}
		}
	})
	b.Logf("log %d bytes, tasks %d bytes", fi.Size(), len(data))
}
