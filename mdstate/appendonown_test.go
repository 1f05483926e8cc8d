package mdstate

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// AppendProgressOnOwn appends onto the log as the Project's last write
// left it, and onto a log it never wrote; it leaves alone, appending
// nothing, a log someone changed since: an older copy put back, a
// person's edit, a log removed or replaced by an editor's save of the
// same bytes.
func TestAppendProgressOnOwn(t *testing.T) {
	first := Entry{Time: time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC), Title: "T1: First", Fields: []Field{{Key: "outcome", Value: "done"}}}
	second := Entry{Time: time.Date(2026, 11, 29, 9, 1, 0, 0, time.UTC), Title: "T2: Second", Fields: []Field{{Key: "outcome", Value: "done"}}}
	const older = "# Progress\n"
	for name, c := range map[string]struct {
		change  func(t *testing.T, path string) // after the first append
		appends bool
	}{
		"as ralph left it": {change: func(*testing.T, string) {}, appends: true},
		"an older copy put back": {change: func(t *testing.T, path string) {
			writeFile(t, path, older, 0o644)
		}, appends: false},
		"a person's entry added": {change: func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("\n## By hand\n"); err != nil {
				t.Fatal(err)
			}
		}, appends: false},
		"removed": {change: func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, appends: false},
		"saved again, same bytes": {change: func(t *testing.T, path string) {
			data := readFile(t, path)
			tmp := path + ".tmp"
			writeFile(t, tmp, data, 0o644)
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}, appends: false},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			p := Open(dir)
			p.SaveGrace = 10 * time.Millisecond // a removed log is not coming back
			path := p.Path(ProgressFile)
			writeFile(t, path, older, 0o644)
			if err := p.AppendProgress(first); err != nil {
				t.Fatal(err)
			}
			c.change(t, path)
			before, _ := os.ReadFile(path)
			err := p.AppendProgressOnOwn(second)
			after, _ := os.ReadFile(path)
			if c.appends {
				if err != nil || strings.Count(string(after), "T2: Second") != 1 {
					t.Fatalf("err %v, log:\n%s", err, after)
				}
				return
			}
			if !errors.Is(err, ErrChangedSinceOwnWrite) {
				t.Fatalf("err %v, want ErrChangedSinceOwnWrite", err)
			}
			if string(after) != string(before) {
				t.Fatalf("the log changed:\n%s\nwas:\n%s", after, before)
			}
			// Once the Project has looked (an append of its own, as the
			// coordinator's restore makes), the next goes on.
			if err := p.AppendProgress(first); err != nil {
				t.Fatal(err)
			}
			if err := p.AppendProgressOnOwn(second); err != nil {
				t.Fatalf("after ralph's own write: %v", err)
			}
		})
	}

	// A log this Project never wrote has nothing of its own to lose.
	dir := t.TempDir()
	writeFile(t, Open(dir).Path(ProgressFile), older, 0o644)
	if err := Open(dir).AppendProgressOnOwn(first); err != nil {
		t.Fatalf("a log never written: %v", err)
	}
}
