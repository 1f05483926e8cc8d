package registry

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/mdstate"
)

// TestMain lets the test binary stand in for a ralph that records
// sessions, so that the lock is tried by real processes: with
// REGISTRY_TEST_RECORD=DIR,PREFIX,N it records N projects named PREFIX-i
// in the registry in DIR and exits.
func TestMain(m *testing.M) {
	if spec := os.Getenv("REGISTRY_TEST_RECORD"); spec != "" {
		os.Exit(recordMany(spec))
	}
	os.Exit(m.Run())
}

func recordMany(spec string) int {
	parts := strings.Split(spec, ",")
	n, _ := strconv.Atoi(parts[2])
	r := Open(parts[0])
	for i := range n {
		if err := r.Record(fmt.Sprintf("%s-%d", parts[1], i), "s", time.Now()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

var at = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// project makes a folder with a RALPH_TASKS.md, as a project ralph ran in.
func project(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, mdstate.TasksFile), []byte("# Tasks\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRecordAddsThenUpdates(t *testing.T) {
	base := t.TempDir()
	r := Open(filepath.Join(base, "state", "ralph"))
	a := project(t, filepath.Join(base, "a"))
	b := project(t, filepath.Join(base, "b"))
	if err := os.Symlink(a, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		root, session string
		at            time.Time
	}{
		{b, "20261121-090000", at},
		{a, "20261121-100000", at},
		{filepath.Join(base, "link"), "20261121-110000", at.Add(time.Hour)}, // a again, through the link
		{filepath.Join(base, "b", "..", "b"), "", at.Add(2 * time.Hour)},    // b again, unclean
	}
	for _, s := range steps {
		if err := r.Record(s.root, s.session, s.at); err != nil {
			t.Fatalf("Record(%s): %v", s.root, err)
		}
	}
	got, err := r.Entries()
	if err != nil {
		t.Fatal(err)
	}
	ra, _ := filepath.EvalSymlinks(a)
	rb, _ := filepath.EvalSymlinks(b)
	want := []Entry{{Root: ra, Session: "20261121-110000", Seen: at.Add(time.Hour)}, {Root: rb, Seen: at.Add(2 * time.Hour)}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("entries:\n got %v\nwant %v", got, want)
	}
}

func TestFileIsPrivateVersionedJSON(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ralph")
	r := Open(dir)
	if err := r.Record("/nowhere/p", "20261121-100000", at); err != nil {
		t.Fatal(err)
	}
	if r.Path() != filepath.Join(dir, FileName) {
		t.Fatalf("Path() = %s", r.Path())
	}
	fi, err := os.Stat(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600: the list names the user's folders", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(r.Path())
	want := `{
  "version": 1,
  "projects": [
    {
      "root": "/nowhere/p",
      "session": "20261121-100000",
      "seen": "2026-11-21T10:00:00Z"
    }
  ]
}
`
	if string(data) != want {
		t.Fatalf("file:\n%s\nwant:\n%s", data, want)
	}
	// No temporary file is left beside it.
	names, _ := os.ReadDir(dir)
	if len(names) != 2 {
		t.Errorf("folder holds %v, want only %s and %s", names, FileName, lockName)
	}
}

// Two ralphs in two projects may record at the same instant: under the
// lock, neither's entry is lost.
func TestRecordFromManyProcessesLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	const procs, each = 4, 25
	var wg sync.WaitGroup
	errs := make([]error, procs)
	for p := range procs {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("REGISTRY_TEST_RECORD=%s,/p%d,%d", dir, p, each))
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[p] = fmt.Errorf("%v: %s", err, out)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := Open(dir).Entries()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != procs*each {
		t.Fatalf("%d entries, want %d", len(got), procs*each)
	}
}

func TestGoneAndPrune(t *testing.T) {
	base := t.TempDir()
	r := Open(filepath.Join(base, "state"))
	kept := project(t, filepath.Join(base, "kept"))
	removed := project(t, filepath.Join(base, "removed"))
	emptied := project(t, filepath.Join(base, "emptied"))
	replaced := project(t, filepath.Join(base, "replaced"))
	for _, root := range []string{kept, removed, emptied, replaced} {
		if err := r.Record(root, "", at); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(removed); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(emptied, mdstate.TasksFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(replaced); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(replaced, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	es, err := r.Entries()
	if err != nil {
		t.Fatal(err)
	}
	gone := map[string]bool{}
	for _, e := range es {
		gone[filepath.Base(e.Root)] = e.Gone()
	}
	if want := map[string]bool{"kept": false, "removed": true, "emptied": true, "replaced": true}; fmt.Sprint(gone) != fmt.Sprint(want) {
		t.Fatalf("gone: %v, want %v", gone, want)
	}
	// Listing does not prune: a disk that is not mounted comes back.
	if es, _ := r.Entries(); len(es) != 4 {
		t.Fatalf("%d entries before Prune, want 4", len(es))
	}
	pruned, err := r.Prune()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range pruned {
		names = append(names, filepath.Base(e.Root))
	}
	if got := strings.Join(names, " "); got != "emptied removed replaced" {
		t.Fatalf("pruned %q", got)
	}
	es, _ = r.Entries()
	if len(es) != 1 || filepath.Base(es[0].Root) != "kept" {
		t.Fatalf("after Prune: %v", es)
	}
	// Nothing left to prune: the file is not written again.
	before, _ := os.Stat(r.Path())
	time.Sleep(10 * time.Millisecond)
	if pruned, err := r.Prune(); err != nil || len(pruned) != 0 {
		t.Fatalf("second Prune: %v, %v", pruned, err)
	}
	after, _ := os.Stat(r.Path())
	if !os.SameFile(before, after) {
		t.Error("a Prune that removed nothing rewrote the file")
	}
}

// A folder ralph cannot look into may be there: it is not gone.
func TestUnreadableFolderIsNotGone(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any folder")
	}
	base := t.TempDir()
	p := project(t, filepath.Join(base, "locked", "p"))
	if err := os.Chmod(filepath.Join(base, "locked"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(base, "locked"), 0o755) })
	if (Entry{Root: p}).Gone() {
		t.Fatal("a project in a folder ralph cannot read is gone")
	}
}

func TestDamagedFile(t *testing.T) {
	dir := t.TempDir()
	r := Open(dir)
	if err := os.WriteFile(r.Path(), []byte("# my projects\n- ~/src/shop\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := r.Entries()
	if err == nil || !strings.Contains(err.Error(), r.Path()) || !strings.Contains(err.Error(), "delete it") {
		t.Fatalf("Entries() error = %v, want one naming the file and what to do", err)
	}
	// The next session starts it afresh: it holds nothing that cannot be
	// found again.
	if err := r.Record("/nowhere/p", "", at); err != nil {
		t.Fatal(err)
	}
	es, err := r.Entries()
	if err != nil || len(es) != 1 || es[0].Root != "/nowhere/p" {
		t.Fatalf("after Record: %v, %v", es, err)
	}
}

func TestMissingFileIsEmpty(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not-yet")
	es, err := Open(dir).Entries()
	if err != nil || len(es) != 0 {
		t.Fatalf("Entries() = %v, %v; want none", es, err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("Entries created the folder")
	}
}

func TestNilRegistryRecordsNothing(t *testing.T) {
	var r *Registry
	if err := r.Record("/p", "", at); err != nil {
		t.Fatal(err)
	}
	if Open("") != nil {
		t.Fatal(`Open("") is a registry`)
	}
}

func TestDefaultDir(t *testing.T) {
	tests := []struct {
		name, xdg, home, want string
	}{
		{"XDG_STATE_HOME", "/xdg/state", "/home/u", "/xdg/state/ralph"},
		{"relative XDG_STATE_HOME is ignored", "state", "/home/u", "/home/u/.local/state/ralph"},
		{"home", "", "/home/u", "/home/u/.local/state/ralph"},
		{"nowhere", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"XDG_STATE_HOME": tt.xdg}
			got := DefaultDir(func(k string) string { return env[k] }, tt.home)
			if got != filepath.FromSlash(tt.want) {
				t.Errorf("DefaultDir = %q, want %q", got, tt.want)
			}
		})
	}
}

// The lock is held across the whole read-modify-write: a process that
// holds it keeps Record waiting, and Record gives up with an error that
// says what to do rather than hang a session.
func TestRecordWaitsForTheLock(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockFile(filepath.Join(dir, lockName))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Open(dir).Record("/p", "", at) }()
	select {
	case err := <-done:
		t.Fatalf("Record returned %v while the lock was held", err)
	case <-time.After(100 * time.Millisecond):
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, FileName))
	var f file
	if err := json.Unmarshal(data, &f); err != nil || len(f.Projects) != 1 {
		t.Fatalf("file after the wait: %s (%v)", data, err)
	}
}
