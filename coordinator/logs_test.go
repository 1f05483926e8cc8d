//go:build linux

package coordinator

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"
)

// A log over its cap keeps its head whole, a marker saying exactly how
// much was cut, and the output's very end; the file never grows much past
// the cap while it is written. Output under the cap is kept as it is.
func TestCappedLog(t *testing.T) {
	const capSize = 64 << 10
	var out bytes.Buffer
	for i := 0; out.Len() < 2<<20; i++ {
		fmt.Fprintf(&out, "line %07d of the agent's output\n", i)
	}
	data := out.Bytes()
	for _, total := range []int{capSize / 2, len(data)} {
		t.Run(strconv.Itoa(total), func(t *testing.T) {
			dir := t.TempDir()
			l, err := openLog(dir, "a.log", Resources{LogMaxSize: capSize}, newRedactor(nil), nil)
			if err != nil {
				t.Fatal(err)
			}
			var biggest int64
			for at := 0; at < total; at += 4000 {
				if _, err := l.Write(data[at:min(at+4000, total)]); err != nil {
					t.Fatal(err)
				}
				if fi, err := l.f.Stat(); err == nil {
					biggest = max(biggest, fi.Size())
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(logsDir(dir), "a.log"))
			if err != nil {
				t.Fatal(err)
			}
			if total < capSize {
				if !bytes.Equal(got, data[:total]) {
					t.Error("a log under the cap was changed")
				}
				return
			}
			head, tail := int64(capSize*3/4), int64(capSize/4)
			if biggest > head+markerRoom+2*tail+4000 {
				t.Errorf("the file grew to %d bytes, cap %d", biggest, capSize)
			}
			if !bytes.Equal(got[:head], data[:head]) {
				t.Error("the head is not the output's start")
			}
			m := regexp.MustCompile(`\n\[ralph: ([0-9]+) bytes of the agent's output cut here; the log keeps its first 49152 and its last [0-9]+ bytes\] *\n`).FindSubmatch(got[head : head+markerRoom])
			if m == nil {
				t.Fatalf("no marker after the head: %q", got[head:head+markerRoom])
			}
			kept := got[head+markerRoom:]
			if int64(len(kept)) < tail || int64(len(kept)) > 2*tail {
				t.Errorf("tail of %d bytes, want %d to %d", len(kept), tail, 2*tail)
			}
			if !bytes.HasSuffix(data, kept) {
				t.Error("the tail is not the output's end")
			}
			if cut, _ := strconv.Atoi(string(m[1])); cut != total-int(head)-len(kept) {
				t.Errorf("marker says %d bytes cut, %d were", cut, total-int(head)-len(kept))
			}
		})
	}
}

// Logs are created readable by their owner only, also over an older log
// of the same name that was not.
func TestLogMode(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(logsDir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(logsDir(dir), "old.log")
	if err := os.WriteFile(old, []byte("older ralph"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"new.log", "old.log"} {
		l, err := openLog(dir, name, Resources{}, newRedactor(nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		fi, err := os.Stat(filepath.Join(logsDir(dir), name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v", name, fi.Mode().Perm())
		}
	}
}

// Pruning removes logs past the age first, then the oldest until the
// total fits; other files stay.
func TestPruneLogs(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	files := []struct {
		name string
		size int
		age  time.Duration
	}{
		{"a-ancient.log", 10, 40 * 24 * time.Hour},
		{"b-old.log", 1000, 5 * time.Hour},
		{"c-older.log", 1000, 6 * time.Hour},
		{"d-new.log", 1000, time.Hour},
		{"e-newest.log", 1000, time.Minute},
		{"notes.txt", 5000, 50 * 24 * time.Hour},
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, bytes.Repeat([]byte("x"), f.size), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-f.age), now.Add(-f.age)); err != nil {
			t.Fatal(err)
		}
	}
	left := func() []string {
		var names []string
		es, _ := os.ReadDir(dir)
		for _, e := range es {
			names = append(names, e.Name())
		}
		return names
	}
	pruneLogs(dir, 30*24*time.Hour, -1, now)
	if got, want := left(), []string{"b-old.log", "c-older.log", "d-new.log", "e-newest.log", "notes.txt"}; !slices.Equal(got, want) {
		t.Errorf("after pruning by age: %q, want %q", got, want)
	}
	total, oldest := pruneLogs(dir, 30*24*time.Hour, 2500, now)
	if got, want := left(), []string{"d-new.log", "e-newest.log", "notes.txt"}; !slices.Equal(got, want) {
		t.Errorf("after pruning by size: %q, want %q", got, want)
	}
	if total != 2000 || !oldest.Equal(now.Add(-time.Hour)) {
		t.Errorf("pruning says %d bytes left, the oldest at %v; want 2000, %v", total, oldest, now.Add(-time.Hour))
	}
	pruneLogs(dir, -1, -1, now)
	if got := left(); len(got) != 3 {
		t.Errorf("pruning with no bounds removed logs: %q", got)
	}
}

// A run keeps the logs folder within its bounds: the log of the new run
// fits beside what is left.
func TestRunPrunesLogs(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	logs := logsDir(dir)
	if err := os.MkdirAll(logs, 0o700); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		p := filepath.Join(logs, fmt.Sprintf("old-%d.log", i))
		if err := os.WriteFile(p, bytes.Repeat([]byte("x"), 100<<10), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-time.Duration(10-i) * time.Hour)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}, Resources: Resources{LogMaxSize: 100 << 10, LogsMaxTotal: 350 << 10}})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
		t.Fatalf("outcome %+v", out)
	}
	es, _ := os.ReadDir(logs)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	// 350 KB less the new log's 100 KB leaves room for two old ones: the
	// newest.
	if len(names) != 3 || !slices.Contains(names, "old-3.log") || !slices.Contains(names, "old-4.log") {
		t.Errorf("logs left: %q", names)
	}
}

// With a logBook, the logs folder keeps the bounds it keeps when it is
// read before every run: whatever the book skips, the logs but the newest
// never hold more than LogsMaxTotal less one log's room, and a log past
// LogsMaxAge goes at the next run.
func TestLogBookKeepsTheBounds(t *testing.T) {
	dir := t.TempDir()
	res := Resources{LogMaxSize: 4000, LogsMaxTotal: 40000, LogsMaxAge: Age(time.Hour)}
	var book logBook
	folder := func() (total int64, names []string) {
		es, _ := os.ReadDir(logsDir(dir))
		for _, e := range es {
			fi, _ := e.Info()
			total += fi.Size()
			names = append(names, e.Name())
		}
		return total, names
	}
	reads := 0
	for i := range 30 {
		due := book.due(36000, time.Hour, time.Now())
		if due {
			reads++
		}
		before, _ := folder()
		l, err := openLog(dir, fmt.Sprintf("%02d.log", i), res, newRedactor(nil), &book)
		if err != nil {
			t.Fatal(err)
		}
		if after, names := folder(); after > 36000 {
			t.Fatalf("log %d: %d bytes in %v before the new log (%d before pruning, due %v), over the bound", i, after, names, before, due)
		}
		if _, err := l.Write(bytes.Repeat([]byte("y"), 1500+i*37)); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if reads < 2 || reads > 20 {
		t.Errorf("the folder was read %d times in 30 runs: the book does not skip, or never looks", reads)
	}
	// A log past the age bound: the book looks again and it goes.
	_, names := folder()
	old := filepath.Join(logsDir(dir), names[len(names)-1])
	past := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	book.add(0, past)
	l, err := openLog(dir, "last.log", res, newRedactor(nil), &book)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the log past the age bound is still there: %v", err)
	}
}

// A log opened ahead is the agent run's once taken; one that is not (the
// agent never started) is removed.
func TestLogAhead(t *testing.T) {
	dir := t.TempDir()
	var book logBook
	kept := openLogAhead(dir, "kept.log", Resources{}, newRedactor(nil), &book)
	l, err := kept.take()
	if err != nil {
		t.Fatal(err)
	}
	kept.discard() // taken: left alone
	if _, err := l.Write([]byte("output\n")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	dropped := openLogAhead(dir, "dropped.log", Resources{}, newRedactor(nil), &book)
	dropped.discard()
	var names []string
	es, _ := os.ReadDir(logsDir(dir))
	for _, e := range es {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"kept.log"}) {
		t.Errorf("logs left: %q, want only the one taken", names)
	}
	if got := readFileString(t, filepath.Join(logsDir(dir), "kept.log")); got != "output\n" {
		t.Errorf("kept.log = %q", got)
	}
}

func readFileString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
