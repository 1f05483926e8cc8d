package mdstate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A journal record cut short at any byte reads as none: the append it
// announced had not started, and the log stays as it is. A whole one is
// finished, old format or new.
func TestJournalCutShort(t *testing.T) {
	entry := Entry{Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Title: "T1: cut short", Fields: []Field{{Key: "outcome", Value: "done"}}}
	text := append([]byte("\n"), entry.Render("\n")...)
	const base = "# Progress\n"
	rec := journalHeader(int64(len(base)), text) + string(text)
	for cut := 0; cut < len(rec); cut += 7 {
		dir := t.TempDir()
		p := Open(dir)
		writeFile(t, p.Path(ProgressFile), base, 0o644)
		if err := os.MkdirAll(filepath.Join(dir, RuntimeDir), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p.journalPath(), rec[:cut], 0o644)
		if err := p.Recover(); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, p.Path(ProgressFile)); got != base {
			t.Fatalf("cut at %d of %d: log =\n%q", cut, len(rec), got)
		}
		if _, err := os.Stat(p.journalPath()); !os.IsNotExist(err) {
			t.Fatalf("cut at %d: journal left behind", cut)
		}
	}
	for name, whole := range map[string]string{"v2": rec, "older ralph": "11\n" + string(text)} {
		dir := t.TempDir()
		p := Open(dir)
		writeFile(t, p.Path(ProgressFile), base, 0o644)
		if err := os.MkdirAll(filepath.Join(dir, RuntimeDir), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p.journalPath(), whole, 0o644)
		if err := p.Recover(); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, p.Path(ProgressFile)); got != base+string(text) {
			t.Fatalf("%s: log =\n%q", name, got)
		}
	}
}

// A record goes in place with the checklist's write, and by itself when
// the edit changes nothing; one that cannot be written leaves the
// checklist as it was.
func TestUpdateChecklistAfter(t *testing.T) {
	dir := t.TempDir()
	p := Open(dir)
	const tasks = "# Tasks\n\n- [ ] T1: One\n"
	writeFile(t, p.Path(TasksFile), tasks, 0o644)
	rec := Record{Path: filepath.Join(dir, RuntimeDir, "report.json"), Data: []byte("{}\n"), Perm: 0o600}
	if _, err := p.UpdateChecklistAfter(TasksKind, rec, func(e *ChecklistEdit) error { return e.SetStatus("T1", Done) }); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, rec.Path); got != "{}\n" {
		t.Fatalf("record %q", got)
	}
	if got := readFile(t, p.Path(TasksFile)); !strings.Contains(got, "- [x] T1") {
		t.Fatalf("tasks %q", got)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, RuntimeDir, ".report.json.ralph-*"))
	if len(leftovers) > 0 {
		t.Fatalf("left %v", leftovers)
	}

	rec.Data = []byte("{\"again\": true}\n")
	if _, err := p.UpdateChecklistAfter(TasksKind, rec, func(e *ChecklistEdit) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, rec.Path); got != string(rec.Data) {
		t.Fatalf("record of an edit that changed nothing: %q", got)
	}

	// A folder where the record goes.
	rec.Path = filepath.Join(dir, RuntimeDir, "sub", "report.json")
	writeFile(t, filepath.Join(dir, RuntimeDir, "sub"), "a file", 0o644)
	before := readFile(t, p.Path(TasksFile))
	_, err := p.UpdateChecklistAfter(TasksKind, rec, func(e *ChecklistEdit) error { return e.SetStatus("T1", Pending) })
	var re *RecordError
	if !errors.As(err, &re) {
		t.Fatalf("error %v, want a RecordError", err)
	}
	if got := readFile(t, p.Path(TasksFile)); got != before {
		t.Fatalf("tasks written without their record:\n%s", got)
	}
}

// The progress index, rewritten in place at every append, is never
// written through a symlink: a cloned project could aim it at any file.
func TestIndexNotThroughLink(t *testing.T) {
	dir := t.TempDir()
	p := Open(dir)
	writeFile(t, p.Path(ProgressFile), Templates[ProgressFile], 0o644)
	outside := filepath.Join(t.TempDir(), "precious")
	writeFile(t, outside, "keep me\n", 0o644)
	if err := os.MkdirAll(filepath.Join(dir, RuntimeDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, indexPath(dir)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		e := Entry{Time: time.Date(2026, 3, 1, 12, i, 0, 0, time.UTC), Title: "T1: entry", Fields: []Field{{Key: "outcome", Value: "done"}}}
		if err := p.AppendProgress(e); err != nil {
			t.Fatal(err)
		}
		if _, err := p.ReadProgress(1); err != nil {
			t.Fatal(err)
		}
	}
	if got := readFile(t, outside); got != "keep me\n" {
		t.Fatalf("written through the link: %q", got)
	}
	if fi, err := os.Lstat(indexPath(dir)); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		t.Fatal("the index is still a link")
	}
}
