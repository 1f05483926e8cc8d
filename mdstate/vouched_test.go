//go:build linux

package mdstate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// vouchedFile is a file of size bytes, open for reading, and its bytes.
func vouchedTestFile(t *testing.T, size int) (path string, f *os.File, data []byte) {
	t.Helper()
	path = filepath.Join(t.TempDir(), TasksFile)
	data = bytes.Repeat([]byte("- [ ] T1: a task\n"), size/17)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return path, f, data
}

// rewriteKeepingTimes writes data over the file at path, in place and at
// once, then puts its mtime back: a write that size and mtime do not show.
func rewriteKeepingTimes(t *testing.T, path string, data []byte) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.WriteAt(data, 0)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, time.Time{}, fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// TestVouchedVersionSeesEveryWrite has a compare vouch for a file, then
// changes one byte of it at once, same size, mtime put back: the next
// look must see the change, every time (the ctime moves, even within one
// clock tick), and vouch for the new bytes.
func TestVouchedVersionSeesEveryWrite(t *testing.T) {
	path, f, a := vouchedTestFile(t, 8<<10)
	b := bytes.Clone(a)
	b[len(b)/2+3] = 'x'
	for i := range 300 {
		if same, err := sameContent(f, a); err != nil || !same {
			t.Fatalf("round %d: the file holds its bytes, sameContent says %v (%v)", i, same, err)
		}
		rewriteKeepingTimes(t, path, b)
		if same, err := sameContent(f, a); err != nil || same {
			t.Fatalf("round %d: a same-size write with its mtime put back went unseen (%v)", i, err)
		}
		if same, err := sameContent(f, b); err != nil || !same {
			t.Fatalf("round %d: the new bytes are not seen (%v)", i, err)
		}
		rewriteKeepingTimes(t, path, a)
	}
}

// TestVouchedVersionReadsNothing: where the file system's ctime shows
// every write (fineGrained), a second look at a file a compare vouched for
// reads none of it; elsewhere each look reads it all. The bytes the
// process read come from /proc/self/io.
func TestVouchedVersionReadsNothing(t *testing.T) {
	const size = 875 << 10
	_, f, data := vouchedTestFile(t, size)
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	_, fine := versionOf(f, fi)
	if want := expectFineGrained(t, f); fine != want {
		t.Fatalf("fine-grained ctimes: %v on this kernel and file system, want %v", fine, want)
	}
	if same, err := sameContent(f, data); err != nil || !same {
		t.Fatalf("first look: %v, %v", same, err)
	}
	before := bytesRead(t)
	if same, err := sameContent(f, data); err != nil || !same {
		t.Fatalf("second look: %v, %v", same, err)
	}
	read := bytesRead(t) - before
	switch {
	case fine && read > size/4:
		t.Fatalf("a vouched file was read again: %d bytes", read)
	case !fine && read < size:
		t.Fatalf("without fine-grained ctimes the file must be compared: %d bytes read", read)
	}
	t.Logf("fine-grained ctimes: %v; the second look read %d bytes", fine, read)
}

// expectFineGrained is whether this machine has multigrain timestamps
// for f, as its kernel release and file system tell: Linux 6.13 or later
// on ext4, xfs, btrfs or tmpfs.
func expectFineGrained(t *testing.T, f *os.File) bool {
	t.Helper()
	rel, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Fatal(err)
	}
	var major, minor int
	fmt.Sscanf(string(rel), "%d.%d", &major, &minor)
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	switch st.Type {
	case 0xef53, 0x58465342, 0x9123683e, 0x01021994: // ext4, xfs, btrfs, tmpfs
		return major > 6 || major == 6 && minor >= 13
	}
	return false
}

// bytesRead is the bytes this process has read (rchar in /proc/self/io).
func bytesRead(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no rchar in /proc/self/io")
	return 0
}

// TestWriteChangedTrustsOnlyAVouchedVersion: a spare whose vouched bytes
// were changed since (same size, mtime put back) is read, not taken for
// what it held: the file ends up holding the new version.
func TestWriteChangedTrustsOnlyAVouchedVersion(t *testing.T) {
	for _, changed := range []bool{false, true} {
		path, f, k := vouchedTestFile(t, 64<<10)
		if same, err := sameContent(f, k); err != nil || !same {
			t.Fatalf("vouch: %v, %v", same, err)
		}
		// The new version changes page 0; someone changed page 9 since
		// the vouch, which the new version has as the vouch saw it.
		want := bytes.Clone(k)
		want[100] = 'x'
		if changed {
			other := bytes.Clone(k)
			other[9*sparePage+5] = 'y'
			rewriteKeepingTimes(t, path, other)
		}
		w, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = writeChanged(w, want)
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
			t.Fatalf("changed since the vouch: %v: the file differs from what was written", changed)
		}
	}
}

func TestReleaseAtLeast(t *testing.T) {
	for _, c := range []struct {
		release string
		want    bool
	}{
		{"6.13.0", true}, {"6.18.44-fc-v657", true}, {"7.0", true}, {"6.12.9-arch1", false},
		{"5.15.0-91-generic", false}, {"6.13-rc1", true}, {"6", false}, {"", false}, {"x.y", false},
	} {
		if got := releaseAtLeast(c.release, 6, 13); got != c.want {
			t.Errorf("releaseAtLeast(%q, 6, 13) = %v, want %v", c.release, got, c.want)
		}
	}
}

// TestSaveKeepsASameSizeEditWithItsMtimePutBack: ralph reads the task
// file (a compare vouches for it), a person ticks a box in place, same
// size, and puts the mtime back; ralph's next save must build on their
// version, every time, not on the one it vouched for.
func TestSaveKeepsASameSizeEditWithItsMtimePutBack(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TasksFile)
	var b []byte
	b = append(b, "# Tasks\n\n"...)
	for i := 1; i <= 600; i++ { // past shareItemsFrom: versions share items
		b = fmt.Appendf(b, "- [ ] T%d: Task %d\n", i, i)
	}
	writeFile(t, path, string(b), 0o644)
	p := Open(dir)
	for round := 1; round <= 40; round++ {
		if _, err := p.LoadChecklist(TasksKind); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		theirs := fmt.Sprintf("- [ ] T%d: Task %d\n", 300+round, 300+round)
		i := bytes.Index(data, []byte(theirs))
		if i < 0 {
			t.Fatalf("round %d: no line %q", round, theirs)
		}
		data[i+3] = 'x'
		rewriteKeepingTimes(t, path, data)
		ours := fmt.Sprintf("T%d", round)
		if _, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error { return e.SetStatus(ours, Done) }); err != nil {
			t.Fatal(err)
		}
		got := readFile(t, path)
		if !strings.Contains(got, fmt.Sprintf("- [x] T%d: Task %d\n", 300+round, 300+round)) {
			t.Fatalf("round %d: the person's tick on T%d is lost", round, 300+round)
		}
		if !strings.Contains(got, fmt.Sprintf("- [x] T%d: Task %d\n", round, round)) {
			t.Fatalf("round %d: ralph's tick on %s is missing", round, ours)
		}
	}
}
