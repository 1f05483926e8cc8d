//go:build linux

package mdstate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkSpareWrite is the file-system part of a state file's write,
// the two ways: a new temporary file (create, write, flush, exchange,
// unlink of the replaced file) and the spare written over (its blocks
// rewritten, a data flush, a rename beside the file, the exchange, the
// replaced file renamed to be the next spare). Sizes: a small task file
// and a 10,000-task one.
//
//	go test ./mdstate -run '^$' -bench SpareWrite -benchtime 200x
func BenchmarkSpareWrite(b *testing.B) {
	for _, size := range []int{3 << 10, 875 << 10} {
		data := bytes.Repeat([]byte("- [ ] T1: a task\n"), size/17)
		b.Run(fmt.Sprintf("new-file/%dKB", size>>10), func(b *testing.B) {
			path, _ := spareBenchFiles(b, data)
			for b.Loop() {
				tmp, _, err := writeTemp(path, data, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				if err := exchange(tmp, path); err != nil {
					b.Fatal(err)
				}
				if err := os.Remove(tmp); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("spare/%dKB", size>>10), func(b *testing.B) {
			path, spare := spareBenchFiles(b, data)
			for b.Loop() {
				tmp, _, err := reuseSpare(spare, path, data, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				if err := exchange(tmp, path); err != nil {
					b.Fatal(err)
				}
				if err := os.Rename(tmp, spare); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// spareBenchFiles makes a state file and its spare holding data.
func spareBenchFiles(b *testing.B, data []byte) (path, spare string) {
	dir := b.TempDir()
	if err := os.Mkdir(filepath.Join(dir, RuntimeDir), 0o755); err != nil {
		b.Fatal(err)
	}
	path = filepath.Join(dir, TasksFile)
	spare = filepath.Join(dir, RuntimeDir, "spare-"+TasksFile)
	for _, p := range []string{path, spare} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return path, spare
}
