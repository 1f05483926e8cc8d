package ignore

import (
	"fmt"
	"testing"

	"github.com/ralph-dev/ralph/gitctx/gitctxtest"
)

// BenchmarkIgnored matches the 100,000 paths of a tree three deep (100
// packages of 10 directories of 100 files) against gitctxtest.Gitignore, as a
// walk does: each directory, then each file of the directories kept.
func BenchmarkIgnored(b *testing.B) {
	rules := Parse([]byte(gitctxtest.Gitignore), 0)
	exts := []string{".go", ".go", ".go", ".ts", ".py", ".md", ".json", ".txt"}
	var files []string
	for k := range 100 {
		files = append(files, fmt.Sprintf("f%03d%s", k, exts[k%len(exts)]))
	}
	var dirs [][2]string
	for i := range 100 {
		for j := range 10 {
			dirs = append(dirs, [2]string{fmt.Sprintf("pkg%03d", i), fmt.Sprintf("sub%02d", j)})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, d := range dirs {
			p := []string{d[0], d[1], ""}
			if Ignored(rules, p[:2], true) {
				continue
			}
			for _, f := range files {
				p[2] = f
				if !Ignored(rules, p, false) {
					n++
				}
			}
		}
		// pkg*/sub09/ hides 100 directories, *.txt 12 files in 100.
		if want := 900 * 88; n != want {
			b.Fatalf("%d files kept, want %d", n, want)
		}
	}
}
