package projectdetect

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ralph-dev/ralph/gitctx/gitctxtest"
)

// BenchmarkDetectSmall detects a realistic small Go project
// (testdata/smallgo.txtar).
func BenchmarkDetectSmall(b *testing.B) {
	archive, err := os.ReadFile(filepath.Join("testdata", "smallgo.txtar"))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	writeTree(b, dir, string(archive))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := Detect(ctx, dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Types) != 1 || p.Truncated {
			b.Fatalf("unexpected result: %q truncated=%v", typeStrings(p.Types), p.Truncated)
		}
	}
}

// BenchmarkDetectHuge detects a generated 100,000-file tree with the
// default budget and reports whether the walk was truncated (1) or not
// (0). The tree is generated once and cached under
// os.TempDir()/ralph-detect-huge, because writing it takes seconds.
func BenchmarkDetectHuge(b *testing.B) {
	benchmarkDetectTree(b, hugeTreeCache(b, "ralph-detect-huge", ""))
}

// BenchmarkDetectHugeGitignore is BenchmarkDetectHuge with gitctxtest.Gitignore
// at the root, so that the time the ignore rules add shows (the plain huge
// tree has none). Its tree is cached under
// os.TempDir()/ralph-detect-huge-gitignore.
func BenchmarkDetectHugeGitignore(b *testing.B) {
	benchmarkDetectTree(b, hugeTreeCache(b, "ralph-detect-huge-gitignore", gitctxtest.Gitignore))
}

// benchmarkDetectTree detects dir with the default budget, reporting the
// share of truncated walks and the files seen per walk.
func benchmarkDetectTree(b *testing.B, dir string) {
	ctx := context.Background()
	var truncated, files float64
	b.ReportAllocs()
	for b.Loop() {
		p, err := Detect(ctx, dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if p.Truncated {
			truncated++
		}
		files += float64(p.Summary.Files)
	}
	b.ReportMetric(truncated/float64(b.N), "truncated")
	b.ReportMetric(files/float64(b.N), "files/op")
}

// hugeTreeCache returns the huge tree cached as os.TempDir()/name, with
// a .gitignore holding gitignore at its root if that is not empty,
// generating it first if needed. A "complete" file beside the tree marks a
// finished generation, so an interrupted one is redone rather than
// trusted.
func hugeTreeCache(b *testing.B, name, gitignore string) string {
	b.Helper()
	base := filepath.Join(os.TempDir(), name)
	tree := filepath.Join(base, "tree")
	done := filepath.Join(base, "complete")
	if _, err := os.Stat(done); err == nil {
		return tree
	}
	if err := os.RemoveAll(base); err != nil {
		b.Fatal(err)
	}
	tmp := fmt.Sprintf("%s.tmp%d", base, os.Getpid())
	if err := os.MkdirAll(filepath.Join(tmp, "tree"), 0o755); err != nil {
		b.Fatal(err)
	}
	makeHugeTree(b, filepath.Join(tmp, "tree"))
	if gitignore != "" {
		if err := os.WriteFile(filepath.Join(tmp, "tree", ".gitignore"), []byte(gitignore), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "complete"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, base); err != nil {
		b.Fatal(err)
	}
	return tree
}
