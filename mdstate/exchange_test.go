package mdstate

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// setProbe makes fn the save probe for the rest of the test.
func setProbe(t *testing.T, fn func(probePoint)) {
	t.Helper()
	probe = fn
	t.Cleanup(func() { probe = nil })
}

// noExchange runs the rest of the test with the check-then-rename write
// that replaces the exchange where the file system lacks it.
func noExchange(t testing.TB) {
	useExchange = false
	t.Cleanup(func() { useExchange = true })
}

func appendTo(t *testing.T, f *os.File, text string) {
	t.Helper()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

func openAppend(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// markDone is the edit of most tests here: T1 done, counting its calls.
func markDone(calls *int) func(e *ChecklistEdit) error {
	return func(e *ChecklistEdit) error {
		*calls++
		return e.SetStatus("T1", Done)
	}
}

// An append (`>>`) that opened the file before ralph's swap and writes
// after ralph read the file it replaced lands in that replaced file: the
// save reads it again before the unlink (and after), and makes its edit
// again on that version.
func TestSaveTakesInAnAppendAfterTheSwap(t *testing.T) {
	for _, at := range []probePoint{probeSwapped, probeUnlinked} {
		t.Run(strconv.Itoa(int(at)), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, TasksFile)
			writeFile(t, path, "# Tasks\n\n- [ ] T1: First\n", 0o644)
			p := Open(dir)
			f := openAppend(t, path) // the appender has the old file open
			wrote := false
			setProbe(t, func(pp probePoint) {
				if pp == at && !wrote {
					wrote = true
					appendTo(t, f, "- [ ] Late, by hand\n")
				}
			})
			calls := 0
			if _, err := p.UpdateChecklist(TasksKind, markDone(&calls)); err != nil {
				t.Fatal(err)
			}
			want := "# Tasks\n\n- [x] T1: First\n- [ ] T2: Late, by hand\n"
			if got := readFile(t, path); got != want {
				t.Fatalf("file =\n%s\nwant\n%s", got, want)
			}
			if calls != 2 {
				t.Errorf("edit ran %d times, want 2: made again on their version", calls)
			}
			checkOwn(t, p, TasksFile, false, true)
			noLeftovers(t, dir)
		})
	}
}

// An appender that opened the file before ralph's swap and writes only
// after ralph's last look at the replaced file: ralph waits until it has
// closed the file (nobody has it open for writing), then reads it.
func TestSaveWaitsForAnAppender(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("file leases tell who has a file open for writing on Linux only")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, TasksFile)
	writeFile(t, path, "# Tasks\n\n- [ ] T1: First\n", 0o644)
	p := Open(dir)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	started := false
	setProbe(t, func(pp probePoint) {
		if pp == probeUnlinked && !started {
			started = true
			go func() {
				defer close(done)
				time.Sleep(50 * time.Millisecond)
				_, _ = f.WriteString("- [ ] Slow, by hand\n")
				_ = f.Close()
			}()
		}
	})
	calls := 0
	if _, err := p.UpdateChecklist(TasksKind, markDone(&calls)); err != nil {
		t.Fatal(err)
	}
	<-done
	if got, want := readFile(t, path), "# Tasks\n\n- [x] T1: First\n- [ ] T2: Slow, by hand\n"; got != want {
		t.Fatalf("file =\n%s\nwant\n%s", got, want)
	}
}

// A person's save between ralph's last look at the file and its swap is
// what the exchange exists for: the swap replaces their version, ralph
// reads it there and makes its edit again on it. The check-then-rename
// fallback loses it (which shows that the probe falls in that gap).
func TestExchangeClosesTheGap(t *testing.T) {
	for _, mode := range []string{"exchange", "rename"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "rename" {
				noExchange(t)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, TasksFile)
			writeFile(t, path, "# Tasks\n\n- [ ] T1: First\n", 0o644)
			p := Open(dir)
			looks := 0
			setProbe(t, func(pp probePoint) {
				if pp == probeLooked {
					if looks++; looks == 1 {
						renameSave(t, path, readFile(t, path)+"- [ ] In the gap\n")
					}
				}
			})
			calls := 0
			if _, err := p.UpdateChecklist(TasksKind, markDone(&calls)); err != nil {
				t.Fatal(err)
			}
			got := readFile(t, path)
			if mode == "rename" {
				if got != "# Tasks\n\n- [x] T1: First\n" {
					t.Fatalf("the fallback kept the save in the gap? %q", got)
				}
				return
			}
			if want := "# Tasks\n\n- [x] T1: First\n- [ ] T2: In the gap\n"; got != want {
				t.Fatalf("file =\n%s\nwant\n%s", got, want)
			}
			if calls != 2 {
				t.Errorf("edit ran %d times, want 2", calls)
			}
			noLeftovers(t, dir)
		})
	}
}

// While ralph makes its edit again on a person's version that its swap
// replaced, their version is in place, not ralph's outdated one: their
// editor, reading the file then, must not see it without their change.
func TestSwapBackLeavesTheirsInPlace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TasksFile)
	writeFile(t, path, "# Tasks\n\n- [ ] T1: First\n", 0o644)
	p := Open(dir)
	const theirs = "# Tasks\n\n- [ ] T1: First\n- [ ] In the gap\n"
	looks := 0
	setProbe(t, func(pp probePoint) {
		if pp == probeLooked {
			if looks++; looks == 1 {
				renameSave(t, path, theirs)
			}
		}
	})
	calls := 0
	if _, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error {
		if calls++; calls == 2 {
			if got := readFile(t, path); got != theirs {
				t.Errorf("while the edit is made again, the file holds %q, not their version", got)
			}
		}
		return e.SetStatus("T1", Done)
	}); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, path), "# Tasks\n\n- [x] T1: First\n- [ ] T2: In the gap\n"; got != want {
		t.Fatalf("file =\n%s\nwant\n%s", got, want)
	}
}

// A person who saves in the gap before ralph's swap and again right after
// it, over ralph's version, before the swap back: both saves are kept.
func TestSwapBackKeepsASaveOverRalphs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TasksFile)
	writeFile(t, path, "# Tasks\n\n- [ ] T1: First\n", 0o644)
	p := Open(dir)
	looks, exchanges := 0, 0
	setProbe(t, func(pp probePoint) {
		switch pp {
		case probeLooked:
			if looks++; looks == 1 {
				renameSave(t, path, readFile(t, path)+"- [ ] First save\n")
			}
		case probeExchanged:
			if exchanges++; exchanges == 1 { // over ralph's version
				renameSave(t, path, readFile(t, path)+"- [ ] Second save\n")
			}
		}
	})
	calls := 0
	if _, err := p.UpdateChecklist(TasksKind, markDone(&calls)); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, path)
	for _, line := range []string{"- [x] T1: First\n", "First save\n", "Second save\n"} {
		if strings.Count(got, line) != 1 {
			t.Fatalf("file =\n%s\nwant %q once", got, line)
		}
	}
	noLeftovers(t, dir)
}

// A person saves twice: once in the gap before ralph's swap (the swap
// replaces their version, and ralph's edit is made again on it), and once
// into ralph's first write (an append) before its second swap. Both of
// their lines and ralph's edit are in the file, and the edit was made
// twice, not three times: the append is merged.
func TestSaveTakesInTwoSaves(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TasksFile)
	writeFile(t, path, "# Tasks\n\n- [ ] T1: First\n", 0o644)
	p := Open(dir)
	looks, swaps := 0, 0
	setProbe(t, func(pp probePoint) {
		switch {
		case pp == probeLooked:
			if looks++; looks == 1 {
				renameSave(t, path, readFile(t, path)+"- [ ] First save\n")
			}
		case pp == probeSwapped:
			if swaps++; swaps == 1 {
				appendTo(t, openAppend(t, path), "- [ ] Second save\n")
			}
		}
	})
	calls := 0
	if _, err := p.UpdateChecklist(TasksKind, markDone(&calls)); err != nil {
		t.Fatal(err)
	}
	want := "# Tasks\n\n- [x] T1: First\n- [ ] T2: First save\n- [ ] Second save\n"
	if got := readFile(t, path); got != want {
		t.Fatalf("file =\n%s\nwant\n%s", got, want)
	}
	if calls != 2 {
		t.Errorf("edit ran %d times, want 2", calls)
	}
	noLeftovers(t, dir)
}

// Where the exchange is not available, a save before ralph's look is
// still taken in.
func TestFallbackTakesInASave(t *testing.T) {
	noExchange(t)
	TestUpdateChecklistRedoesAfterHandEdit(t)
}

// If ralph's edit cannot be made on a person's version (they deleted the
// task), their version stays, the error says why, and the file is not
// ralph's write.
func TestSaveKeepsTheirsWhenTheEditFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TasksFile)
	writeFile(t, path, "# Tasks\n\n- [ ] T1: First\n- [ ] T2: Second\n", 0o644)
	p := Open(dir)
	var hooked []string
	defer p.OnWrite(func(name string, _ []byte) { hooked = append(hooked, name) })()
	calls := 0
	const theirs = "# Tasks\n\n- [ ] T1: First\n"
	_, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error {
		if calls++; calls == 1 {
			renameSave(t, path, theirs)
		}
		return e.SetStatus("T2", Done)
	})
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("err = %v, want NotFoundError", err)
	}
	if got := readFile(t, path); got != theirs {
		t.Fatalf("file = %q, want theirs", got)
	}
	if len(hooked) != 0 {
		t.Errorf("hooks called for %v: putting a person's version back is not ralph's write", hooked)
	}
	checkOwn(t, p, TasksFile, false, false) // ralph never wrote it
	noLeftovers(t, dir)
}

// A file an editor has renamed away (vim's first step) when ralph swaps
// is waited for, and ralph's edit is made on the new version.
func TestSaveWaitsForAFileMidSave(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TasksFile)
	writeFile(t, path, "# Tasks\n\n- [ ] T1: First\n", 0o644)
	p := Open(dir)
	calls := 0
	done := make(chan struct{})
	_, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error {
		if calls++; calls == 1 {
			old := readFile(t, path)
			if err := os.Rename(path, path+"~"); err != nil {
				t.Fatal(err)
			}
			go func() {
				defer close(done)
				time.Sleep(50 * time.Millisecond)
				_ = os.WriteFile(path, []byte(old+"- [ ] Saved by vim\n"), 0o644)
				_ = os.Remove(path + "~")
			}()
		}
		return e.SetStatus("T1", Done)
	})
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, path), "# Tasks\n\n- [x] T1: First\n- [ ] T2: Saved by vim\n"; got != want {
		t.Fatalf("file =\n%s\nwant\n%s", got, want)
	}
}

// An editor that truncates the file and then writes it: ralph's swap can
// take out the file while it is empty, and the editor's write lands in
// the replaced file. The save waits for the bytes and makes its edit on
// them.
func TestSaveWaitsForATruncatedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TasksFile)
	writeFile(t, path, "# Tasks\n\n- [ ] T1: First\n", 0o644)
	p := Open(dir)
	calls := 0
	done := make(chan struct{})
	_, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error {
		if calls++; calls == 1 {
			old := readFile(t, path)
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				defer close(done)
				defer f.Close()
				time.Sleep(50 * time.Millisecond)
				_, _ = f.WriteString(old + "- [ ] Saved in place\n")
			}()
		}
		return e.SetStatus("T1", Done)
	})
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, path), "# Tasks\n\n- [x] T1: First\n- [ ] T2: Saved in place\n"; got != want {
		t.Fatalf("file =\n%s\nwant\n%s", got, want)
	}
}

// A file saved again and again, in the gap before each swap and after
// each swap that places ralph's version: the save gives up after maxSaveTries with a ChurnError, at a
// moment when the file holds the person's version (never ralph's outdated
// one), and every line the person added is in the file or in a backup.
func TestSaveGivesUpOnChurn(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TasksFile)
	writeFile(t, path, "# Tasks\n\n- [ ] T1: First\n", 0o644)
	p := Open(dir)
	saves := 0
	var last string
	setProbe(t, func(pp probePoint) {
		if pp == probeLooked || pp == probeSwapped {
			saves++
			last = readFile(t, path) + "- [ ] Version " + strconv.Itoa(saves) + "\n"
			renameSave(t, path, last)
		}
	})
	_, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error { return e.SetStatus("T1", Done) })
	var churn *ChurnError
	if !errors.As(err, &churn) || churn.Tries < maxSaveTries || churn.Tries > hardSaveTries || churn.File != TasksFile {
		t.Fatalf("err = %v, want a ChurnError after %d tries or a few more", err, maxSaveTries)
	}
	if want := fmt.Sprintf("RALPH_TASKS.md kept changing while ralph saved its update (%d tries)", churn.Tries); !strings.Contains(err.Error(), want) {
		t.Errorf("message: %v", err)
	}
	if got := readFile(t, path); got != last {
		t.Fatalf("the file is not the person's last version:\n%s", got)
	}
	kept := readFile(t, path)
	for _, r := range p.Rescued() {
		kept += readFile(t, r.Backup)
	}
	for i := 1; i <= saves; i++ {
		if line := "Version " + strconv.Itoa(i) + "\n"; !strings.Contains(kept, line) {
			t.Fatalf("the person's line %q is lost (of %d)", line, saves)
		}
	}
	t.Logf("%d saves, gave up after %d tries", saves, churn.Tries)
	noLeftovers(t, dir)
}

// A line appended to the file ralph's swap took out, after ralph unlinked
// it, is taken in, and the save does not give up on churn before it has
// placed it: that file is out of the folder, and the line is only in
// ralph's copy of it. Where the churn goes on to the hard bound, the
// line is kept in a backup.
func TestSaveKeepsALateAppendThroughChurn(t *testing.T) {
	for _, churn := range []int{maxSaveTries + 5, hardSaveTries + 5} {
		t.Run(strconv.Itoa(churn), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, TasksFile)
			writeFile(t, path, "# Tasks\n\n- [ ] T1: First\n", 0o644)
			p := Open(dir)
			f := openAppend(t, path) // the appender has the old file open
			looks := 0
			setProbe(t, func(pp probePoint) {
				switch {
				case pp == probeUnlinked && f != nil:
					appendTo(t, f, "- [ ] Late, by hand\n")
					if err := f.Close(); err != nil {
						t.Fatal(err)
					}
					f = nil
				case pp == probeLooked:
					// From the second swap on, a person saves in the
					// gap, churn times.
					if looks++; looks > 1 && looks <= churn+1 {
						renameSave(t, path, readFile(t, path)+"- [ ] Version "+strconv.Itoa(looks)+"\n")
					}
				}
			})
			_, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error { return e.SetStatus("T1", Done) })
			if churn < hardSaveTries {
				if err != nil {
					t.Fatalf("gave up with the late line not placed: %v", err)
				}
				if got := readFile(t, path); !strings.Contains(got, "Late, by hand\n") || !strings.Contains(got, "- [x] T1") {
					t.Fatalf("file =\n%s\nwant the late line and T1 done", got)
				}
				noLeftovers(t, dir)
				return
			}
			var ce *ChurnError
			if !errors.As(err, &ce) || ce.Tries != hardSaveTries {
				t.Fatalf("err = %v, want a ChurnError after %d tries", err, hardSaveTries)
			}
			kept := readFile(t, path)
			for _, r := range p.Rescued() {
				kept += readFile(t, r.Backup)
			}
			if !strings.Contains(kept, "Late, by hand\n") || len(ce.Backups) == 0 {
				t.Fatalf("the late line is neither in the file nor in a backup the error names (%d backups):\n%s", len(ce.Backups), kept)
			}
			noLeftovers(t, dir)
		})
	}
}

// noLeftovers fails if a save left a temporary file beside the files.
func noLeftovers(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".ralph-") {
			t.Fatalf("left a temporary file: %s", e.Name())
		}
	}
}

// A leftover temporary file is a crash's: one that holds what the file
// holds (or nothing) is removed; any other may be a person's version that
// a swap replaced, and is kept as a backup, listed once by Rescued.
func TestRecoverKeepsLeftovers(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "docs")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, TasksFile), "# Tasks\n", 0o644)
	writeFile(t, filepath.Join(real, "todo.md"), "# To-do\n", 0o644)
	if err := os.Symlink(filepath.Join("docs", "todo.md"), filepath.Join(dir, TodoFile)); err != nil {
		t.Fatal(err)
	}
	left := map[string]string{
		filepath.Join(dir, ".RALPH_TASKS.md.ralph-1"):  "# Tasks\n",               // same: removed
		filepath.Join(dir, ".RALPH_TASKS.md.ralph-2"):  "",                        // empty: removed
		filepath.Join(dir, ".RALPH_TASKS.md.ralph-3"):  "# Tasks\n\n- [ ] Mine\n", // kept
		filepath.Join(real, ".todo.md.ralph-4"):        "# To-do, mine\n",         // beside the link's target: kept
		filepath.Join(dir, ".RALPH_GOALS.md.ralph-5"):  "# Goals\n",               // no file: kept
		filepath.Join(dir, ".unrelated.md.ralph-6"):    "not ralph's\n",           // not a state file's: left alone
		filepath.Join(dir, ".RALPH_TASKS.md.ralph-x~"): "# Tasks\n",               // a state file's, whatever the suffix
	}
	stamp := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for path, data := range left {
		writeFile(t, path, data, 0o644)
		if err := os.Chtimes(path, stamp, stamp); err != nil {
			t.Fatal(err)
		}
	}
	p := Open(dir)
	if err := p.Recover(); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range p.Rescued() {
		if !strings.HasPrefix(filepath.Base(r.Backup), r.File+".20261122T100000Z") {
			t.Errorf("backup %s is not named after %s and the leftover's time", r.Backup, r.File)
		}
		got[r.File] = readFile(t, r.Backup)
		if !strings.Contains(r.String(), r.Backup) {
			t.Errorf("notice %q does not say where", r)
		}
	}
	want := map[string]string{TasksFile: "# Tasks\n\n- [ ] Mine\n", TodoFile: "# To-do, mine\n", GoalsFile: "# Goals\n"}
	if len(got) != len(want) {
		t.Fatalf("rescued %v, want %v", got, want)
	}
	for name, data := range want {
		if got[name] != data {
			t.Errorf("%s kept %q, want %q", name, got[name], data)
		}
	}
	if r := p.Rescued(); len(r) != 0 {
		t.Errorf("Rescued lists them again: %v", r)
	}
	for path := range left {
		_, err := os.Stat(path)
		if strings.Contains(path, "unrelated") != (err == nil) {
			t.Errorf("%s: stat after recovery = %v", filepath.Base(path), err)
		}
	}
}

// OnWrite is called after every write ralph makes, with the new bytes
// (nil for the progress log), and not after its removal.
func TestOnWrite(t *testing.T) {
	dir := t.TempDir()
	p := Open(dir)
	type call struct {
		name string
		data string
		nil_ bool
	}
	var calls []call
	remove := p.OnWrite(func(name string, data []byte) {
		calls = append(calls, call{name, string(data), data == nil})
	})
	var bases []string
	defer p.OnWriteFrom(func(name string, base, _ []byte) { bases = append(bases, name+":"+string(base)) })()
	expect := func(step, name string, data func() string) {
		t.Helper()
		if len(calls) != 1 || calls[0].name != name {
			t.Fatalf("%s: calls %v, want one for %s", step, calls, name)
		}
		if data == nil {
			if !calls[0].nil_ {
				t.Fatalf("%s: data %q, want nil", step, calls[0].data)
			}
		} else if want := data(); calls[0].data != want {
			t.Fatalf("%s: data %q, want the file's %q", step, calls[0].data, want)
		}
		calls = nil
	}
	onDisk := func(name string) func() string {
		return func() string { return readFile(t, filepath.Join(dir, name)) }
	}
	if _, err := p.CreateFile(TasksFile, []byte("# Tasks\n\n- [ ] T1: First\n")); err != nil {
		t.Fatal(err)
	}
	expect("CreateFile", TasksFile, onDisk(TasksFile))
	if _, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error { return e.SetStatus("T1", Done) }); err != nil {
		t.Fatal(err)
	}
	expect("UpdateChecklist", TasksFile, onDisk(TasksFile))
	if _, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error { return e.SetStatus("T1", Done) }); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 0 {
		t.Fatalf("an edit that changed nothing called %v", calls)
	}
	if _, err := p.CreateFile(AgentFile, []byte(Templates[AgentFile])); err != nil {
		t.Fatal(err)
	}
	expect("CreateFile", AgentFile, onDisk(AgentFile))
	if err := p.Learn("Run the tests."); err != nil {
		t.Fatal(err)
	}
	expect("Learn", AgentFile, onDisk(AgentFile))
	if err := p.Learn("Again."); err != nil {
		t.Fatal(err)
	}
	expect("Learn", AgentFile, onDisk(AgentFile))
	if err := p.ReplaceFile(GoalsFile, []byte("# Goals\n")); err != nil {
		t.Fatal(err)
	}
	expect("ReplaceFile (create)", GoalsFile, onDisk(GoalsFile))
	if _, err := p.RestoreFile(GoalsFile, []byte("# Goals, restored\n"), time.Now()); err != nil {
		t.Fatal(err)
	}
	expect("RestoreFile", GoalsFile, onDisk(GoalsFile))
	writeFile(t, filepath.Join(dir, ProgressFile), "# Progress\n", 0o644)
	if err := p.AppendProgress(Entry{Title: "T1: First"}); err != nil {
		t.Fatal(err)
	}
	expect("AppendProgress", ProgressFile, nil)

	// A person's save that ralph's write took in is in the base.
	path := filepath.Join(dir, TasksFile)
	bases = nil
	first := true
	if _, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error {
		if first {
			first = false
			renameSave(t, path, readFile(t, path)+"- [ ] T2: By hand\n")
		}
		return e.SetStatus("T1", Pending)
	}); err != nil {
		t.Fatal(err)
	}
	if want := TasksFile + ":# Tasks\n\n- [x] T1: First\n- [ ] T2: By hand\n"; len(bases) != 1 || bases[0] != want {
		t.Fatalf("bases %q, want [%q]", bases, want)
	}
	calls = nil
	remove()
	if err := p.AppendProgress(Entry{Title: "T1: Again"}); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 0 {
		t.Fatalf("a removed hook was called: %v", calls)
	}
}

func TestMerge3(t *testing.T) {
	const base = "# Tasks\n\n- [ ] T1: First\n- [ ] T2: Second\n"
	for _, tc := range []struct {
		name         string
		ours, theirs string
		want         string // "" for a conflict
	}{
		{"append to ours", "# Tasks\n\n- [x] T1: First\n- [ ] T2: Second\n", base + "- [ ] Hand\n",
			"# Tasks\n\n- [x] T1: First\n- [ ] T2: Second\n- [ ] Hand\n"},
		{"both append: ours first", base + "- [ ] T3: Ralph's\n", base + "- [ ] Hand\n",
			base + "- [ ] T3: Ralph's\n- [ ] Hand\n"},
		{"theirs above ours", "# Tasks\n\n- [ ] T1: First\n- [x] T2: Second\n", "# Tasks, mine\n\n- [ ] T1: First\n- [ ] T2: Second\n",
			"# Tasks, mine\n\n- [ ] T1: First\n- [x] T2: Second\n"},
		{"adjacent lines", "# Tasks\n\n- [x] T1: First\n- [ ] T2: Second\n", "# Tasks\n\n- [ ] T1: First\n- [-] T2: Second\n",
			"# Tasks\n\n- [x] T1: First\n- [-] T2: Second\n"},
		{"same line", "# Tasks\n\n- [x] T1: First\n- [ ] T2: Second\n", "# Tasks\n\n- [ ] T1: First, renamed\n- [ ] T2: Second\n", ""},
		{"inside a line", "# Tasks\n\n- [ ] T1: First\n- [ ] T2: Second, longer\n", "# Tasks\n\n- [ ] T1: First\n- [ ] T2: Sec\n", ""},
		{"no newline at the end", "# Tasks\n\n- [x] T1: First\n- [ ] T2: Second", base[:len(base)-1] + " and more",
			"# Tasks\n\n- [x] T1: First\n- [ ] T2: Second and more"},
		{"unchanged theirs", base + "x\n", base, base + "x\n"},
		{"unchanged ours", base, base + "y\n", base + "y\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := base
			if tc.name == "no newline at the end" {
				b = base[:len(base)-1]
			}
			got, ok := merge3([]byte(b), []byte(tc.ours), []byte(tc.theirs))
			if tc.want == "" {
				if ok {
					t.Fatalf("merged %q, want a conflict", got)
				}
				return
			}
			if !ok || string(got) != tc.want {
				t.Fatalf("merge3 = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}

func TestHasEdit(t *testing.T) {
	pre := "# Tasks\n\n- [ ] T1: First\n  - note: one\n- [ ] T2: Second\n"
	post := "# Tasks\n\n- [ ] T1: First\n  - note: one\n  - note: two\n- [ ] T2: Second\n"
	for _, tc := range []struct {
		x    string
		want bool
	}{
		{post, true},
		{post + "- [ ] Hand\n", true},
		{"# Mine\n" + post[len("# Tasks\n"):], true},
		{pre, false},
		{pre + "- [ ] Hand\n", false},
		{"# Tasks\n\n- [ ] T1: First\n  - note: two\n- [ ] T2: Second\n", false},
		{"# Tasks\n\n- [ ] T2: Second\n", false},
	} {
		if got := hasEdit([]byte(pre), []byte(post), []byte(tc.x)); got != tc.want {
			t.Errorf("hasEdit(%q) = %v, want %v", tc.x, got, tc.want)
		}
	}
}

// Learn, like UpdateChecklist, takes in a person's save and never adds
// its learning twice.
func TestLearnTakesInASave(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, AgentFile)
	writeFile(t, path, "# Agent\n\n## Learnings\n\n- One.\n", 0o644)
	p := Open(dir)
	f := openAppend(t, path)
	swaps := 0
	setProbe(t, func(pp probePoint) {
		if pp == probeSwapped {
			if swaps++; swaps == 1 {
				appendTo(t, f, "\nWritten by hand.\n")
			}
		}
	})
	if err := p.Learn("Two."); err != nil {
		t.Fatal(err)
	}
	want := "# Agent\n\n## Learnings\n\n- One.\n- Two.\n\nWritten by hand.\n"
	if got := readFile(t, path); got != want {
		t.Fatalf("AGENT.md =\n%s\nwant\n%s", got, want)
	}
}

// A symlinked state file stays a link; the save replaces its target.
func TestSaveThroughALink(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "docs", "tasks.md")
	writeFile(t, target, "# Tasks\n\n- [ ] T1: First\n", 0o600)
	link := filepath.Join(dir, TasksFile)
	if err := os.Symlink(filepath.Join("docs", "tasks.md"), link); err != nil {
		t.Fatal(err)
	}
	p := Open(dir)
	calls := 0
	if _, err := p.UpdateChecklist(TasksKind, markDone(&calls)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
	if got := readFile(t, target); got != "# Tasks\n\n- [x] T1: First\n" {
		t.Fatalf("target = %q", got)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600 kept", fi.Mode().Perm())
	}
	checkOwn(t, p, TasksFile, false, true)
	noLeftovers(t, filepath.Join(dir, "docs"))
}

// BenchmarkUpdateChecklist changes one task's status in a 1,000-task file,
// through the exchange and through the check-then-rename it replaces.
func BenchmarkUpdateChecklist(b *testing.B) {
	var tasks bytes.Buffer
	tasks.WriteString(Templates[TasksFile])
	for i := range 1000 {
		tasks.WriteString("- [ ] T" + strconv.Itoa(i+1) + ": Implement part " + strconv.Itoa(i) + " of the feature, with tests and docs\n  - note: the first attempt timed out\n")
	}
	for _, mode := range []string{"exchange", "rename"} {
		b.Run(mode, func(b *testing.B) {
			if mode == "rename" {
				noExchange(b)
			}
			dir := b.TempDir()
			if err := os.WriteFile(filepath.Join(dir, TasksFile), tasks.Bytes(), 0o644); err != nil {
				b.Fatal(err)
			}
			p := Open(dir)
			st := []Status{Done, Pending}
			i := 0
			for b.Loop() {
				if _, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error {
					return e.SetStatus("T999", st[i%2])
				}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// A Project's writes look for a crash's leftovers at most once every
// leftoverScanEvery, and every Recover looks: a leftover that appears
// after a write is kept as a backup by the next Recover, or by the first
// write once that time has passed.
func TestWritesLookForLeftoversInTime(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, TasksFile), "# Tasks\n\n- [ ] T1: First\n", 0o644)
	p := Open(dir)
	calls := 0
	if _, err := p.UpdateChecklist(TasksKind, markDone(&calls)); err != nil {
		t.Fatal(err)
	}
	plant := func(n int) string {
		path := filepath.Join(dir, fmt.Sprintf(".RALPH_TASKS.md.ralph-%d", n))
		writeFile(t, path, fmt.Sprintf("# Tasks\n\n- [ ] Mine %d\n", n), 0o644)
		return path
	}
	rescued := func(path string) {
		t.Helper()
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("%s still there: %v", filepath.Base(path), err)
		}
		if r := p.Rescued(); len(r) != 1 || !strings.Contains(readFile(t, r[0].Backup), "Mine") {
			t.Fatalf("rescued %v", r)
		}
	}
	first := plant(1)
	if err := p.Recover(); err != nil {
		t.Fatal(err)
	}
	rescued(first)
	second := plant(2)
	time.Sleep(leftoverScanEvery)
	if _, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error { return e.SetStatus("T1", Pending) }); err != nil {
		t.Fatal(err)
	}
	rescued(second)
}
