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
// rewritten where they differ from the version it holds, a data flush, a
// rename beside the file, the exchange, the replaced file renamed to be
// the next spare). Sizes: a small task file and a 10,000-task one.
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
			versions := spareBenchVersions(data)
			for n := 0; b.Loop(); n++ {
				tmp, _, err := reuseSpare(spare, path, versions[n%len(versions)], 0o644)
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

// spareBenchVersions are three versions of data, as three saves of a
// task file leave it: each has a box ticked at its own place and its own
// session line at the end. The spare a save writes over holds the version
// before last, so it differs from the new one in two places.
func spareBenchVersions(data []byte) [][]byte {
	var vs [][]byte
	for k := range 3 {
		v := bytes.Clone(data)
		at := len(v) * (k + 1) / 4
		at -= at % 17 // the start of a "- [ ] T1: a task" line
		v[at+3] = 'x'
		vs = append(vs, fmt.Appendf(v, "- updated: 2026-11-24T10:00:0%dZ\n", k))
	}
	return vs
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
