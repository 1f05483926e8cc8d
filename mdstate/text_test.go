package mdstate

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCleanText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text, tabs\tand\r\nlines\n", "plain text, tabs\tand\r\nlines\n"},
		{"bad \xff byte", "bad \uFFFD byte"},
		{"two \xc3\x28 bytes", "two \uFFFD( bytes"},
		{"nul\x00 esc\x1b[2J bell\x07 del\x7f", "nul\uFFFD esc\uFFFD[2J bell\uFFFD del\uFFFD"},
		{"c1 \u0085 next line", "c1 \uFFFD next line"},
		{"kept: é ✓ \uFFFD 😀", "kept: é ✓ \uFFFD 😀"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := CleanText(tt.in); got != tt.want {
			t.Errorf("CleanText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Whatever text ralph is handed, what it writes is a file it reads again:
// a learning, a to-do, a note and a progress entry with invalid UTF-8 and
// control characters.
func TestWritesAreClean(t *testing.T) {
	dir := t.TempDir()
	p := Open(dir)
	writeFile(t, filepath.Join(dir, AgentFile), Templates[AgentFile], 0o644)
	bad := "a \xff b \x00 c \x1b[31m d"
	want := "a \uFFFD b \uFFFD c \uFFFD[31m d"
	if err := p.Learn(bad); err != nil {
		t.Fatalf("Learn: %v", err)
	}
	a, err := p.LoadAgent()
	if err != nil || a.Learnings[len(a.Learnings)-1].Text != want {
		t.Fatalf("AGENT.md: %+v, %v", a, err)
	}
	writeFile(t, filepath.Join(dir, TodoFile), "# To-do\n", 0o644)
	if _, err := p.UpdateChecklist(TodoKind, func(e *ChecklistEdit) error {
		_, err := e.Add(bad)
		return err
	}); err != nil {
		t.Fatalf("Add: %v", err)
	}
	if _, err := p.UpdateChecklist(TodoKind, func(e *ChecklistEdit) error { return e.AddMeta("D1", "note", bad) }); err != nil {
		t.Fatalf("AddMeta: %v", err)
	}
	c, err := p.LoadChecklist(TodoKind)
	if err != nil || c.Items()[0].Title != want || c.Items()[0].Notes[0] != want {
		t.Fatalf("RALPH_TODO.md: %+v, %v", c.Items(), err)
	}
	if err := p.AppendProgress(Entry{Time: time.Now(), Title: bad, Fields: []Field{{Key: "note", Value: bad}, {Key: "decisions", List: []string{bad}}}}); err != nil {
		t.Fatalf("AppendProgress: %v", err)
	}
	log, err := p.ReadProgress(1)
	if err != nil || log.Recent[0].Title != want || log.Recent[0].Get("note") != want {
		t.Fatalf("RALPH_PROGRESS.md: %+v, %v", log, err)
	}
}

func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	p := Open(dir)
	writeFile(t, filepath.Join(dir, TasksFile), "# Tasks\n\n- [ ] T1: One\n", 0o644)
	writeFile(t, filepath.Join(dir, AgentFile), "# Agent\n", 0o444)
	writeFile(t, filepath.Join(dir, GoalsFile), "# Goals\n\nbad \xff\n", 0o644)
	writeFile(t, filepath.Join(dir, ProgressFile), "# Progress\n\nnot parsed \xff\n", 0o644)
	if err := os.Mkdir(filepath.Join(dir, TodoFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckWritable(TasksFile, ProgressFile); err != nil {
		t.Errorf("writable files: %v", err)
	}
	err := p.CheckWritable(Files...)
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Fatalf("CheckWritable: %v", err)
	}
	for _, want := range []string{
		"AGENT.md: is read-only; make it writable (chmod u+w AGENT.md) if ralph may change it",
		"RALPH_GOALS.md:3: is not valid UTF-8 (byte 0xff)",
		"RALPH_TODO.md: is a directory, not a file; ralph writes to it: move the folder out of the way, then `ralph init` creates the file",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\ndoes not say %q", err, want)
		}
	}
	if strings.Count(err.Error(), "\n") != 2 {
		t.Errorf("want three problems, one a line: %q", err)
	}
	os.Remove(filepath.Join(dir, TodoFile))
	if err := p.CheckWritable(TodoFile); err != nil {
		t.Errorf("a missing file is created: %v", err)
	}
	if err := p.CheckWritable("../x"); err == nil {
		t.Error("a path out of the project was accepted")
	}
}

// A full disk is reported as such, not as a permission problem.
func TestDiskFullMessage(t *testing.T) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root on Linux")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	p := Open(dir)
	writeFile(t, filepath.Join(dir, TasksFile), "# Tasks\n\n- [ ] T1: One\n", 0o644)
	writeFile(t, filepath.Join(dir, AgentFile), Templates[AgentFile], 0o644)
	if err := p.Recover(); err != nil { // .ralph and its lock, while there is room
		t.Fatal(err)
	}
	// Fill the disk.
	f, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	for {
		if _, err := f.Write(chunk[:1]); err != nil {
			break
		}
	}
	f.Close()
	checks := map[string]error{
		"UpdateChecklist": func() error {
			_, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error { return e.SetStatus("T1", Done) })
			return err
		}(),
		"Learn":          p.Learn("something worth knowing"),
		"AppendProgress": p.AppendProgress(Entry{Time: time.Now(), Title: "an entry"}),
		"CreateFile":     func() error { _, err := p.CreateFile(GoalsFile, []byte("# Goals\n")); return err }(),
	}
	for name, err := range checks {
		var fe *FileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "the disk is full; free some space on it") ||
			strings.Contains(err.Error(), "permission") || !errors.Is(err, syscall.ENOSPC) || !DiskFull(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
