//go:build linux

package mdstate

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// spareTest is a project whose tasks file a test saves again and again:
// version k has k tasks done.
type spareTest struct {
	t     *testing.T
	dir   string
	p     *Project
	saves int
}

func newSpareTest(t *testing.T) *spareTest {
	dir := t.TempDir()
	var b []byte
	b = append(b, "# Tasks\n\n"...)
	for i := 1; i <= 9; i++ {
		b = fmt.Appendf(b, "- [ ] T%d: Task %d\n", i, i)
	}
	writeFile(t, filepath.Join(dir, TasksFile), string(b), 0o644)
	return &spareTest{t: t, dir: dir, p: Open(dir)}
}

// newLinkedSpareTest is newSpareTest with the project opened through a
// link to its folder.
func newLinkedSpareTest(t *testing.T) *spareTest {
	s := newSpareTest(t)
	link := filepath.Join(t.TempDir(), "project")
	if err := os.Symlink(s.dir, link); err != nil {
		t.Fatal(err)
	}
	s.p = Open(link)
	return s
}

// save marks the next task done, and returns what the file held before.
func (s *spareTest) save() string {
	s.t.Helper()
	before := readFile(s.t, filepath.Join(s.dir, TasksFile))
	s.saves++
	if _, err := s.p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error {
		return e.SetStatus(fmt.Sprintf("T%d", s.saves), Done)
	}); err != nil {
		s.t.Fatal(err)
	}
	noLeftovers(s.t, s.dir)
	return before
}

func (s *spareTest) spare() string { return filepath.Join(s.dir, RuntimeDir, "spare-"+TasksFile) }

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// A save keeps the file its swap replaced as the spare, and the next save
// writes its version over the spare: the file in place is the spare's
// inode, with the new bytes, and the spare is then the version before.
func TestSaveReusesItsSpare(t *testing.T) {
	t.Run("root", func(t *testing.T) { testSaveReusesItsSpare(t, newSpareTest(t)) })
	t.Run("root through a link", func(t *testing.T) { testSaveReusesItsSpare(t, newLinkedSpareTest(t)) })
}

func testSaveReusesItsSpare(t *testing.T, s *spareTest) {
	first := s.save()
	if got := readFile(t, s.spare()); got != first {
		t.Fatalf("spare after the first save =\n%s\nwant the version it replaced\n%s", got, first)
	}
	spareIno := inode(t, s.spare())
	second := s.save()
	if got := inode(t, filepath.Join(s.dir, TasksFile)); got != spareIno {
		t.Errorf("the second save wrote a new file (inode %d), not over the spare (%d)", got, spareIno)
	}
	if got := readFile(t, s.spare()); got != second {
		t.Errorf("spare after the second save =\n%s\nwant\n%s", got, second)
	}
	tasks, err := s.p.LoadChecklist(TasksKind)
	if err != nil || tasks.Find("T1").Status != Done || tasks.Find("T2").Status != Done || tasks.Find("T3").Status != Pending {
		t.Fatalf("after two saves: %v", err)
	}
}

// A spare that someone still has open (a reader of the version it was, an
// appender that opened the file before the swap), that has another link,
// or that is a symlink, is never written over: each keeps its bytes, and
// the save writes a new file.
func TestSaveLeavesASpareInUse(t *testing.T) {
	cases := []struct {
		name string
		// hold does something to the spare and returns a check that its
		// bytes (or the file it leads to) are what they were.
		hold func(t *testing.T, spare string) func() string
	}{
		{"open for reading", func(t *testing.T, spare string) func() string {
			f, err := os.Open(spare)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return func() string { return readAllString(t, f) }
		}},
		{"open for appending", func(t *testing.T, spare string) func() string {
			f := openAppend(t, spare)
			r, err := os.Open("/proc/self/fd/" + fmt.Sprint(f.Fd()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return func() string { return readAllString(t, r) }
		}},
		{"hard link", func(t *testing.T, spare string) func() string {
			link := filepath.Join(filepath.Dir(spare), "a-link")
			if err := os.Link(spare, link); err != nil {
				t.Fatal(err)
			}
			return func() string { return readFile(t, link) }
		}},
		{"symlink", func(t *testing.T, spare string) func() string {
			outside := filepath.Join(t.TempDir(), "mine.md")
			writeFile(t, outside, readFile(t, spare), 0o644)
			if err := os.Remove(spare); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, spare); err != nil {
				t.Fatal(err)
			}
			return func() string { return readFile(t, outside) }
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSpareTest(t)
			s.save()
			was := readFile(t, s.spare())
			check := tc.hold(t, s.spare())
			s.save()
			if got := check(); got != was {
				t.Errorf("the spare in use was written over: it holds\n%s\nwant\n%s", got, was)
			}
			tasks, err := s.p.LoadChecklist(TasksKind)
			if err != nil || tasks.Find("T2").Status != Done {
				t.Fatalf("the save did not land: %v", err)
			}
			// A new spare is kept; it is reused by the save after.
			ino := inode(t, s.spare())
			s.save()
			if got := inode(t, filepath.Join(s.dir, TasksFile)); got != ino {
				t.Errorf("the save after did not reuse the new spare")
			}
		})
	}
}

func readAllString(t *testing.T, f *os.File) string {
	t.Helper()
	b, err := readAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// With FlushLater a save returns once its version is swapped in and its
// folder's flush goes on; Sync (or the next write) waits for it.
func TestFlushLaterSave(t *testing.T) {
	s := newSpareTest(t)
	s.p.FlushLater = true
	s.save()
	pending := func() bool {
		s.p.mu.Lock()
		defer s.p.mu.Unlock()
		return s.p.dirSync != nil
	}
	if !pending() {
		t.Fatal("no folder flush left to Sync")
	}
	if err := s.p.Sync(); err != nil || pending() {
		t.Fatalf("Sync: %v, still pending %v", err, pending())
	}
	s.save()
	s.save() // the second save's write waited for the first's flush
	if err := s.p.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestWriteChanged writes one version over another, of every size around
// the page and the compare chunk, with changes at their edges: the file
// ends up holding the new version, however little of it was written.
func TestWriteChanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, sparePage - 1, sparePage, sparePage + 1, 3 * sparePage, compareChunk - 1, compareChunk, compareChunk + 1, 2*compareChunk + 5000}
	path := filepath.Join(t.TempDir(), "spare")
	for _, oldSize := range sizes {
		for _, newSize := range sizes {
			for _, at := range []int{0, sparePage - 1, sparePage, compareChunk - 1, compareChunk, newSize - 1} {
				old := randomBytes(rng, oldSize)
				want := append([]byte(nil), old[:min(oldSize, newSize)]...)
				want = append(want, randomBytes(rng, newSize-len(want))...)
				if at >= 0 && at < newSize {
					want[at]++
				}
				if err := os.WriteFile(path, old, 0o600); err != nil {
					t.Fatal(err)
				}
				f, err := os.OpenFile(path, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				err = writeChanged(f, want)
				if err == nil {
					err = f.Truncate(int64(newSize))
				}
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%d bytes over %d, changed at %d: the file differs from what was written", newSize, oldSize, at)
				}
			}
		}
	}
}

// TestWriteChangedPastTheEnd writes a version longer than the file,
// whose part past the file's end repeats bytes read before: what is past
// the end is written, whatever the compare buffer last held.
func TestWriteChangedPastTheEnd(t *testing.T) {
	c := randomBytes(rand.New(rand.NewPCG(3, 4)), compareChunk)
	old := append(append([]byte(nil), c...), c[:compareChunk/2]...)
	want := append(append([]byte(nil), c...), c...)
	path := filepath.Join(t.TempDir(), "spare")
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := writeChanged(f, want); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Fatalf("the file holds %d bytes, %d were written", len(got), len(want))
	}
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}
