package mdstate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// vimSave saves data as vim does, in the background: rename the file to
// a backup, wait gap (the moment the file is missing), write the new file,
// delete the backup. The returned channel closes when it is done.
func vimSave(t *testing.T, path, data string, gap time.Duration) <-chan struct{} {
	t.Helper()
	if err := os.Rename(path, path+"~"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(gap)
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Error(err)
		}
		_ = os.Remove(path + "~")
	}()
	return done
}

// truncateSave saves data as editors that write in place do, in the
// background: truncate, wait gap (the moment the file is empty), write.
func truncateSave(t *testing.T, path, data string, gap time.Duration) <-chan struct{} {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer f.Close()
		time.Sleep(gap)
		if _, err := f.WriteString(data); err != nil {
			t.Error(err)
		}
	}()
	return done
}

// halfSave saves data as vim does, in the background, with a pause in its
// write: rename the file to a backup, write the new file up to cut (mid
// line, as a read can catch a write at a page's end), wait gap, write the
// rest, close, delete the backup. It returns once the first part is
// written; the channel closes when the save is done.
func halfSave(t *testing.T, path, data string, cut int, gap time.Duration) <-chan struct{} {
	t.Helper()
	if err := os.Rename(path, path+"~"); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data[:cut]); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(gap)
		if _, err := f.WriteString(data[cut:]); err != nil {
			t.Error(err)
		}
		if err := f.Close(); err != nil {
			t.Error(err)
		}
		_ = os.Remove(path + "~")
	}()
	return done
}

// A file the Project saw with bytes, read while an editor saves it, reads
// as the editor's new version: never missing, never empty. Every read
// through the Project waits so.
func TestReadWaitsOutASave(t *testing.T) {
	const before = "# Tasks\n\n- [ ] T1: First\n"
	const after = before + "- [ ] T2: Saved\n"
	reads := []struct {
		name string
		file string
		read func(p *Project) (string, error)
	}{
		{"LoadChecklist", TasksFile, func(p *Project) (string, error) {
			c, err := p.LoadChecklist(TasksKind)
			if err != nil {
				return "", err
			}
			return string(c.Source()), nil
		}},
		{"UpdateChecklist", TasksFile, func(p *Project) (string, error) {
			c, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error { return nil })
			if err != nil {
				return "", err
			}
			return string(c.Source()), nil
		}},
		{"Load", TasksFile, func(p *Project) (string, error) {
			st, err := p.Load(0)
			if err != nil {
				return "", err
			}
			if !st.Files[TasksFile].Exists || st.Tasks == nil {
				return "", errors.New("Load says the file is missing")
			}
			return string(st.Tasks.Source()), nil
		}},
		{"LoadAgent", AgentFile, func(p *Project) (string, error) {
			a, err := p.LoadAgent()
			if err != nil {
				return "", err
			}
			return string(a.src.src), nil
		}},
		{"ReadProgress", ProgressFile, func(p *Project) (string, error) {
			lg, err := p.ReadProgress(0)
			if err != nil {
				return "", err
			}
			return strings.Repeat("x", int(lg.Size)), nil
		}},
	}
	for _, style := range []string{"vim", "truncate", "half-written"} {
		for _, r := range reads {
			if style == "half-written" && r.file == ProgressFile {
				// The log is scanned for whole entries, never
				// parsed whole: a read may end where a write has got
				// to, and takes the entries up to there.
				continue
			}
			t.Run(style+"/"+r.name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, r.file)
				writeFile(t, path, before, 0o644)
				p := Open(dir)
				if _, err := r.read(p); err != nil { // the Project sees it
					t.Fatal(err)
				}
				var done <-chan struct{}
				switch style {
				case "vim":
					done = vimSave(t, path, after, 100*time.Millisecond)
				case "truncate":
					done = truncateSave(t, path, after, 100*time.Millisecond)
				default:
					done = halfSave(t, path, after, len(before)/2, 100*time.Millisecond)
				}
				got, err := r.read(p)
				<-done
				if err != nil {
					t.Fatalf("read during the save: %v", err)
				}
				if r.file == ProgressFile {
					if len(got) != len(after) {
						t.Fatalf("read %d bytes of the log, want %d", len(got), len(after))
					}
				} else if got != after {
					t.Fatalf("read %q, want the saved %q", got, after)
				}
			})
		}
	}
}

// Only a file that stays missing is missing, and only one that stays
// empty is empty: after the grace, and then without waiting again. A file
// the Project never saw with bytes is not waited for.
func TestMissingAfterTheGrace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TasksFile)
	p := Open(dir)
	p.SaveGrace = 200 * time.Millisecond
	timed := func(step string, wantWait bool, wantErr error) {
		t.Helper()
		start := time.Now()
		_, err := p.LoadChecklist(TasksKind)
		took := time.Since(start)
		if !errors.Is(err, wantErr) {
			t.Fatalf("%s: err = %v, want %v", step, err, wantErr)
		}
		if waited := took >= p.SaveGrace; waited != wantWait {
			t.Fatalf("%s: took %v; want a wait of the grace (%v): %v", step, took, p.SaveGrace, wantWait)
		}
	}
	timed("never seen", false, fs.ErrNotExist)
	writeFile(t, path, "# Tasks\n", 0o644)
	timed("seen", false, nil)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	timed("deleted", true, fs.ErrNotExist)
	timed("deleted, known", false, fs.ErrNotExist)
	writeFile(t, path, "# Tasks\n", 0o644)
	timed("back", false, nil)
	writeFile(t, path, "", 0o644)
	timed("emptied", true, nil)
	timed("emptied, known", false, nil)
	if _, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error { _, err := e.Add("x"); return err }); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error { return nil })
	var missing *MissingError
	if !errors.As(err, &missing) || time.Since(start) < p.SaveGrace {
		t.Fatalf("UpdateChecklist of a file deleted after ralph wrote it: %v after %v; want MissingError after the grace", err, time.Since(start))
	}
}

// ralph's save of a file a person's editor is still writing takes in
// their whole version: the part not yet written when the save looked is
// not taken for lines they deleted. Before the save waited for writers,
// it read the first half, made its edit on that, and merged the rest of
// their save in as an append to it: the lines between the cut and the old
// end left the file, for a backup (TestEditorsLoseNothing/vim saw it
// under load).
func TestSaveWaitsOutAWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TasksFile)
	var b strings.Builder
	b.WriteString("# Tasks\n\n- [ ] T1: Toggled by ralph\n")
	for i := 2; i <= 40; i++ {
		fmt.Fprintf(&b, "- [ ] T%d: Written by hand, line %d\n", i, i)
	}
	before := b.String()
	after := before + "- [ ] T41: Added by hand\n"
	writeFile(t, path, before, 0o644)
	p := Open(dir)
	if _, err := p.LoadChecklist(TasksKind); err != nil {
		t.Fatal(err)
	}
	var done <-chan struct{}
	_, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error {
		if done == nil {
			// ralph has read the file: their save begins before its
			// look.
			done = halfSave(t, path, after, len(before)/2+3, 150*time.Millisecond)
		}
		return e.SetStatus("T1", Done)
	})
	<-done
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(after, "- [ ] T1:", "- [x] T1:", 1)
	if got := readFile(t, path); got != want {
		t.Fatalf("the file holds\n%s\nwant their whole version with T1 done:\n%s", got, want)
	}
	noLeftovers(t, dir)
}

// Nothing writes a template over a file that is only in the middle of a
// save: Learn and AppendProgress, which create their file when it is
// missing, wait for it, and add to the person's version.
func TestNoTemplateOverASave(t *testing.T) {
	t.Run("Learn", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, AgentFile)
		writeFile(t, path, "# Agent\n\n## Learnings\n\n- One.\n", 0o644)
		p := Open(dir)
		if _, err := p.LoadAgent(); err != nil {
			t.Fatal(err)
		}
		done := vimSave(t, path, "# Agent, mine\n\n## Learnings\n\n- One.\n- Mine.\n", 100*time.Millisecond)
		err := p.Learn("Two.")
		<-done
		if err != nil {
			t.Fatal(err)
		}
		if got, want := readFile(t, path), "# Agent, mine\n\n## Learnings\n\n- One.\n- Mine.\n- Two.\n"; got != want {
			t.Fatalf("AGENT.md =\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("AppendProgress", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, ProgressFile)
		p := Open(dir)
		if err := p.AppendProgress(Entry{Title: "T1: First"}); err != nil { // from the template
			t.Fatal(err)
		}
		mine := readFile(t, path) + "\n## By hand\n"
		done := vimSave(t, path, mine, 100*time.Millisecond)
		err := p.AppendProgress(Entry{Title: "T2: Second"})
		<-done
		if err != nil {
			t.Fatal(err)
		}
		got := readFile(t, path)
		if !strings.HasPrefix(got, mine) || strings.Count(got, "T2: Second") != 1 || strings.Count(got, "# Progress") != 1 {
			t.Fatalf("log =\n%s\nwant the person's version and one new entry", got)
		}
	})
}

// readLog returns a Project whose progress log, "# Progress", it has
// read, and the log's path.
func readLog(t *testing.T) (*Project, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, ProgressFile)
	writeFile(t, path, "# Progress\n", 0o644)
	p := Open(dir)
	if _, err := p.ReadProgress(0); err != nil {
		t.Fatal(err)
	}
	return p, path
}

// ralph's append that lands in the log an editor is about to replace (it
// renamed it to its backup a moment before) is added to the new log.
func TestAppendProgressFollowsASave(t *testing.T) {
	p, path := readLog(t)
	mine := "# Progress\n\n## By hand\n"
	var done <-chan struct{}
	// The editor moves the log away and writes its own version (read
	// before ralph's append) just after ralph's append went into the old.
	setProbe(t, func(pp probePoint) {
		if pp == probeAppended {
			done = vimSave(t, path, mine, 50*time.Millisecond)
		}
	})
	if err := p.AppendProgress(Entry{Title: "T1: First"}); err != nil {
		t.Fatal(err)
	}
	<-done
	got := readFile(t, path)
	if !strings.HasPrefix(got, mine) || strings.Count(got, "T1: First") != 1 {
		t.Fatalf("log =\n%s\nwant the person's version and ralph's entry", got)
	}
}

// An append to the log while a person's editor is still writing its
// version into it waits for the write to end: appended at the end the
// write had got to, ralph's entry was written over by the rest of theirs.
func TestAppendProgressWaitsOutAWrite(t *testing.T) {
	p, path := readLog(t)
	mine := "# Progress\n\n## By hand\n\nA note of the person's, long enough to be cut in two.\n"
	done := halfSave(t, path, mine, len(mine)/2, 150*time.Millisecond)
	if err := p.AppendProgress(Entry{Title: "T1: First"}); err != nil {
		t.Fatal(err)
	}
	<-done
	got := readFile(t, path)
	if !strings.HasPrefix(got, mine) || !strings.HasSuffix(got, "T1: First\n") {
		t.Fatalf("log =\n%s\nwant the person's version, then ralph's entry", got)
	}
}

// The log removed between the append's look and its open (an agent putting
// back an older copy of the project that had none): the append creates it
// and goes in, as for a log that was missing all along.
func TestAppendProgressAfterTheLogWent(t *testing.T) {
	for _, removals := range []int{1, 2} {
		dir := t.TempDir()
		path := filepath.Join(dir, ProgressFile)
		writeFile(t, path, "# Progress\n\n## 2026-11-01T09:00:00Z — T0: by an older ralph\n", 0o644)
		p := Open(dir)
		p.SaveGrace = 10 * time.Millisecond // no editor brings it back
		left := removals
		setProbe(t, func(pp probePoint) {
			if pp == probeLogLooked && left > 0 {
				left--
				if err := os.Remove(path); err != nil {
					t.Error(err)
				}
			}
		})
		if err := p.AppendProgress(Entry{Title: "T1: First"}); err != nil {
			t.Fatalf("%d removals: %v", removals, err)
		}
		got := readFile(t, path)
		if !strings.HasPrefix(got, Templates[ProgressFile]) || strings.Count(got, "T1: First") != 1 || strings.Contains(got, "T0") {
			t.Fatalf("%d removals: log =\n%s\nwant the template and ralph's entry", removals, got)
		}
	}
}
