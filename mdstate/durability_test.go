package mdstate

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc"
)

func writeFile(t *testing.T, path, data string, mode fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteFileAtomicKeepsModeAndLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.md")
	writeFile(t, target, "old\n", 0o600)
	link := filepath.Join(dir, TasksFile)
	if err := os.Symlink("real.md", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(link, []byte("new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link was replaced by a file: %v %v", fi.Mode(), err)
	}
	if got := readFile(t, target); got != "new\n" {
		t.Fatalf("target = %q", got)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want 0600", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("left files behind: %v", entries)
	}
}

// A person saves the file between ralph's read and its write: ralph must
// start again from their version, and both changes must land.
func TestUpdateChecklistRedoesAfterHandEdit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TasksFile)
	writeFile(t, path, "# Tasks\n\n- [ ] T1: First\n", 0o644)
	p := Open(dir)
	calls := 0
	_, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error {
		calls++
		if calls == 1 { // the person's save lands while ralph edits
			writeFile(t, path, "# Tasks\n\n- [ ] T1: First\n- [ ] Second, typed by hand\n", 0o644)
		}
		return e.SetStatus("T1", Done)
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Fatalf("edit ran %d times, want 2", calls)
	}
	want := "# Tasks\n\n- [x] T1: First\n- [ ] T2: Second, typed by hand\n"
	if got := readFile(t, path); got != want {
		t.Fatalf("file =\n%s\nwant\n%s", got, want)
	}
}

func TestUpdateChecklistRefusesReadOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TasksFile)
	const src = "- [ ] T1: First\n"
	writeFile(t, path, src, 0o444)
	_, err := Open(dir).UpdateChecklist(TasksKind, func(e *ChecklistEdit) error { return e.SetStatus("T1", Done) })
	if err == nil || !strings.Contains(err.Error(), "RALPH_TASKS.md: is read-only; make it writable") {
		t.Fatalf("err = %v", err)
	}
	if got := readFile(t, path); got != src {
		t.Fatalf("file changed: %q", got)
	}
}

const mixedLog = "# Progress\n\n<!--\n## not an entry: comment\n-->\n\n" +
	"## 2026-01-01T00:00:00Z — one\n- outcome: done\n\n" +
	"```\n## not an entry: fenced\n```\n" +
	"## 2026-01-02 — two\nsome text\n  ~~~\n## fenced with tildes\n  ~~~\n" +
	"##\n" +
	"## three, no trailing newline"

// The index must always agree with a fresh scan: after reads, appends by
// ralph, and appends by hand.
func TestProgressIndexAgreesWithScan(t *testing.T) {
	dir := t.TempDir()
	p := Open(dir)
	path := p.Path(ProgressFile)
	writeFile(t, path, mixedLog, 0o644)
	check := func(step string, want int) {
		t.Helper()
		lg, err := p.ReadProgress(3)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := os.Open(path)
		fresh, starts, err := scanLog(f, 3)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if lg.Entries != want || fresh.Entries != want {
			t.Fatalf("%s: %d entries read, %d scanned; want %d", step, lg.Entries, fresh.Entries, want)
		}
		for i, e := range lg.Recent {
			if e.Offset != starts[i].Off || e.Line != starts[i].Line {
				t.Fatalf("%s: recent[%d] at %d line %d, scan says %d line %d", step, i, e.Offset, e.Line, starts[i].Off, starts[i].Line)
			}
		}
		if x := loadIndex(dir); x != nil {
			fi, _ := os.Stat(path)
			if x.matches(fi) && (x.Entries != fresh.Entries || x.Lines != fresh.Lines || x.Fence != fresh.Fence || x.InComment != fresh.InComment) {
				t.Fatalf("%s: index %+v disagrees with scan %+v", step, x, fresh)
			}
		}
	}
	check("first read", 4)
	check("read from the index", 4)
	// Multi-line values are folded: nothing an agent reports can open a
	// fence that would hide the entries after it.
	for i := range 3 {
		if err := p.AppendProgress(Entry{Time: time.Date(2026, 2, 1, 0, 0, i, 0, time.UTC), Title: fmt.Sprintf("appended %d", i),
			Fields: []Field{{Key: "summary", Value: "line one\n## not a heading: indented\n```\nstill indented"}}}); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("append %d", i), 5+i)
		lg, _ := p.ReadProgress(1)
		if got := lg.Recent[0].Get("summary"); got != "line one ## not a heading: indented ``` still indented" {
			t.Fatalf("summary read back as %q", got)
		}
	}
	x := loadIndex(dir)
	fi, _ := os.Stat(path)
	if x == nil || !x.matches(fi) {
		t.Fatal("appends did not keep the index current")
	}
	// A person appends an entry and opens a fence: the index is stale.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("\n## by hand\n```\n## inside a fence\n")
	f.Close()
	check("hand edit", 8)
	if err := p.AppendProgress(Entry{Title: "after the open fence"}); err != nil {
		t.Fatal(err)
	}
	// Inside the person's unclosed fence the new heading is code: the
	// count says so, and the index agrees.
	check("append inside an open fence", 8)
}

// A crash between the journal and the end of the append: the next writer
// finishes it, exactly once.
func TestJournalRollsForward(t *testing.T) {
	entry := Entry{Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Title: "T1: rolled forward", Fields: []Field{{Key: "outcome", Value: "done"}}}
	text := append([]byte("\n"), entry.Render("\n")...)
	const base = "# Progress\n"
	for _, tc := range []struct {
		name    string
		written int // bytes of text that reached the file before the crash
	}{
		{"nothing appended", 0},
		{"torn mid-entry", len(text) / 2},
		{"all appended, journal left", len(text)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := Open(dir)
			writeFile(t, p.Path(ProgressFile), base+string(text[:tc.written]), 0o644)
			if err := p.writeJournal(int64(len(base)), text); err != nil {
				t.Fatal(err)
			}
			if err := p.Recover(); err != nil {
				t.Fatal(err)
			}
			if got, want := readFile(t, p.Path(ProgressFile)), base+string(text); got != want {
				t.Fatalf("log =\n%q\nwant\n%q", got, want)
			}
			if journalPending(t, p) {
				t.Fatal("the journal still holds its record")
			}
		})
	}
}

// The crash test: a writer process toggles a task and appends entries as
// fast as it can, and is SIGKILLed at random instants. After every kill the
// task file is exactly one of its two versions, and after recovery the log
// holds only whole entries.
func TestKilledWriterLeavesWholeFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("kills 30 writer processes")
	}
	dir := t.TempDir()
	const done = "# Tasks\n\nKept prose.\n\n- [x] T1: Toggle me\n- [ ] T2: Leave me\n"
	const pending = "# Tasks\n\nKept prose.\n\n- [ ] T1: Toggle me\n- [ ] T2: Leave me\n"
	writeFile(t, filepath.Join(dir, TasksFile), pending, 0o644)
	writeFile(t, filepath.Join(dir, ProgressFile), Templates[ProgressFile], 0o644)
	p := Open(dir)
	rng := rand.New(rand.NewPCG(1, 2))
	kills, rescued := 0, 0
	for round := range 30 {
		var out bytes.Buffer
		child, err := proc.Start(context.Background(), proc.Cmd{
			Name: os.Args[0],
			Args: []string{"-test.run=^$"},
			Env:  append(os.Environ(), "RALPH_TEST_WRITER_DIR="+dir),
		}, &out, &out)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(5+rng.IntN(40)) * time.Millisecond)
		if err := child.Signal(syscall.SIGKILL); err == nil {
			kills++
		}
		_ = child.Wait(10 * time.Second)
		got := readFile(t, filepath.Join(dir, TasksFile))
		if got != done && got != pending {
			t.Fatalf("round %d: task file is neither version:\n%q\nwriter said: %s", round, got, out.String())
		}
		if err := p.Recover(); err != nil {
			t.Fatalf("round %d: recover: %v", round, err)
		}
		lg, err := p.ReadProgress(1 << 20)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range lg.Recent {
			if e.Get("outcome") != "done" || e.Get("summary") != "a whole entry" {
				t.Fatalf("round %d: torn entry at line %d: %+v", round, e.Line, e)
			}
		}
		if left, _ := filepath.Glob(filepath.Join(dir, ".*.ralph-*")); len(left) > 0 {
			t.Fatalf("round %d: temporary files left after recovery: %v", round, left)
		}
		// A kill between a swap and the unlink leaves the replaced
		// version, which recovery keeps: it is one of the two, whole.
		for _, r := range p.Rescued() {
			if got := readFile(t, r.Backup); got != done && got != pending {
				t.Fatalf("round %d: rescued %s is neither version:\n%q", round, r.Backup, got)
			}
			rescued++
		}
	}
	lg, _ := p.ReadProgress(0)
	t.Logf("%d writers killed; log holds %d whole entries; %d leftovers kept", kills, lg.Entries, rescued)
}
