package mdstate

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// ReplaceFile replaces a runtime file whole, a shorter version too; in a
// loop it makes no new file: the same two inodes hold the file and its
// spare, in turns.
func TestReplaceFileReusesItsSpare(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.json")
	inodes := map[uint64]bool{}
	for i, content := range []string{"first, and long\n", "second\n", "third\n", ""} {
		if err := ReplaceFile(path, []byte(content), 0o644); err != nil {
			t.Fatalf("replace %d: %v", i, err)
		}
		if got := readFile(t, path); got != content {
			t.Fatalf("replace %d: the file holds %q, want %q", i, got, content)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("replace %d: mode %v", i, fi.Mode().Perm())
		}
		inodes[fi.Sys().(*syscall.Stat_t).Ino] = true
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("the folder holds %v, want the file and its spare", entries)
	}
	if len(inodes) != 2 {
		t.Errorf("the file had %d inodes over 4 replaces, want 2 (its first and its spare's)", len(inodes))
	}
}
