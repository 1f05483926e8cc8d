package projectdetect

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// dirent is one linux_dirent64 record, padded to 8 bytes as the kernel
// pads them.
func dirent(ino uint64, typ byte, name string) []byte {
	n := (direntName + len(name) + 1 + 7) &^ 7
	rec := make([]byte, n)
	binary.NativeEndian.PutUint64(rec, ino)
	binary.NativeEndian.PutUint16(rec[direntReclen:], uint16(n))
	rec[direntType] = typ
	copy(rec[direntName:], name)
	return rec
}

// Records without a type (DT_UNKNOWN, from file systems that do not
// store it) are typed by lstat, as os.ReadDir does; records without a
// file (inode 0), "." and ".." are skipped.
func TestListerParse(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("d", filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	var reads [2][]byte // as two getdents calls would give them
	for i, r := range [][]byte{
		dirent(1, syscall.DT_DIR, "."),
		dirent(2, syscall.DT_DIR, ".."),
		dirent(3, syscall.DT_UNKNOWN, "d"),
		dirent(4, syscall.DT_UNKNOWN, "f"),
		dirent(5, syscall.DT_UNKNOWN, "l"),
		dirent(6, syscall.DT_UNKNOWN, "vanished"),
		dirent(0, syscall.DT_DIR, "deleted"),
		dirent(7, syscall.DT_DIR, "typed"),
	} {
		reads[i/4] = append(reads[i/4], r...)
	}
	var l lister
	l.parse(reads[0])
	l.parse(reads[1])
	l.finish(dir)
	want := []dirEntry{{"d", true}, {"f", false}, {"l", false}, {"vanished", false}, {"typed", true}}
	if len(l.ents) != len(want) {
		t.Fatalf("entries %+v, want %+v", l.ents, want)
	}
	for i := range want {
		if l.ents[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, l.ents[i], want[i])
		}
	}
}
