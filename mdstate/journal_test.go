package mdstate

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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
		if journalPending(t, p) {
			t.Fatalf("cut at %d: the journal still holds a record", cut)
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
		// Retired once finished: recovering again adds nothing, even after
		// a person removed the entry.
		writeFile(t, p.Path(ProgressFile), base, 0o644)
		if err := p.Recover(); err != nil {
			t.Fatal(err)
		}
		if journalPending(t, p) || readFile(t, p.Path(ProgressFile)) != base {
			t.Fatalf("%s: the finished record was not retired", name)
		}
	}
}

// journalPending reports whether the progress journal holds a record that
// recovery would act on.
func journalPending(t *testing.T, p *Project) bool {
	t.Helper()
	j, err := os.ReadFile(p.journalPath())
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	_, _, ok := readJournal(j)
	return ok
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

// With FlushLater an append returns once its journal record is durable:
// the record stays until the log's flush is over (Sync), so an append the
// disk lost before that (a power cut) is written again from it; and one
// Project's Sync never retires the record of another's append.
func TestFlushLater(t *testing.T) {
	dir := t.TempDir()
	const base = "# Progress\n"
	writeFile(t, filepath.Join(dir, ProgressFile), base, 0o644)
	entry := func(title string) Entry {
		return Entry{Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Title: title, Fields: []Field{{Key: "outcome", Value: "done"}}}
	}
	p := Open(dir)
	p.FlushLater = true
	if err := p.AppendProgress(entry("T1: first")); err != nil {
		t.Fatal(err)
	}
	withFirst := readFile(t, p.Path(ProgressFile))
	if !journalPending(t, p) {
		t.Fatal("the journal record is retired before Sync")
	}
	// The disk lost the append (the log's flush never came): the next
	// writer finishes it from the record.
	writeFile(t, p.Path(ProgressFile), base, 0o644)
	if err := Open(dir).Recover(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, p.Path(ProgressFile)); got != withFirst {
		t.Fatalf("after the lost append and recovery, log =\n%q\nwant\n%q", got, withFirst)
	}

	// Two writers: q's record is not p's to retire.
	if err := p.AppendProgress(entry("T2: second")); err != nil {
		t.Fatal(err)
	}
	q := Open(dir)
	q.FlushLater = true
	if err := q.AppendProgress(entry("T3: third")); err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
	if !journalPending(t, q) {
		t.Fatal("p's Sync retired q's record")
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if journalPending(t, q) {
		t.Fatal("the record is still pending after its writer's Sync")
	}
	log, err := p.ReadProgress(10)
	if err != nil || len(log.Recent) != 3 || log.Recent[2].Title != "T3: third" {
		t.Fatalf("log after both: %+v, %v", log, err)
	}
}

// The progress index is written over its own bytes under a length and a
// checksum: a reader that meets two versions mixed (one written over a
// longer one, or cut short), or an older ralph's plain JSON, uses none of
// them and scans the log.
func TestIndexWrittenInPlace(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, RuntimeDir), 0o755); err != nil {
		t.Fatal(err)
	}
	long := &logIndex{V: 1, Size: 123456, Lines: 900}
	for i := range 40 {
		long.add(entryStart{Off: int64(i * 3000), Line: i * 20})
	}
	short := &logIndex{V: 1, Size: 77, Entries: 1, Lines: 3, Tail: []entryStart{{Off: 0, Line: 1}}}
	saveIndex(dir, long)
	if x := loadIndex(dir); x == nil || x.Entries != 40 || len(x.Tail) != 40 {
		t.Fatalf("long index read back as %+v", x)
	}
	before, _ := os.Stat(indexPath(dir))
	saveIndex(dir, short)
	if x := loadIndex(dir); x == nil || x.Entries != 1 || x.Size != 77 {
		t.Fatalf("short index read back as %+v", x)
	}
	after, _ := os.Stat(indexPath(dir))
	if !os.SameFile(before, after) {
		t.Error("the index was replaced by a new file, not written over")
	}
	// Mixed: the short one's bytes over the long one's, not cut.
	longData, _ := json.Marshal(long)
	shortData, _ := json.Marshal(short)
	mixed := []byte(recordHeader(longData) + string(longData))
	copy(mixed, recordHeader(shortData)+string(shortData))
	cut := []byte(recordHeader(longData) + string(longData[:len(longData)/2]))
	for name, data := range map[string][]byte{"mixed": mixed, "cut short": cut, "an older ralph's JSON": longData} {
		writeFile(t, indexPath(dir), string(data), 0o600)
		if x := loadIndex(dir); x != nil {
			t.Errorf("%s: read as %+v", name, x)
		}
	}
}
