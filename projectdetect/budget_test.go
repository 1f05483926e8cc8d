package projectdetect

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Shape of the generated huge tree: 100 packages of 10 directories of 100
// files, plus a root go.mod and Makefile.
const (
	hugeTop   = 100
	hugeSub   = 10
	hugeFiles = 100
	hugeTotal = hugeTop * hugeSub * hugeFiles
)

// makeHugeTree writes a 100,000-file Go-ish tree into dir. The files are
// empty hard links to one seed file: the walk only lists them, and linking
// is several times faster than creating 100,000 files on a slow disk.
func makeHugeTree(tb testing.TB, dir string) {
	tb.Helper()
	writeTree(tb, dir, "-- go.mod --\nmodule example.com/huge\n-- Makefile --\ntest:\n\tgo test ./...\n")
	seeds := tb.TempDir()
	exts := []string{".go", ".go", ".go", ".ts", ".py", ".md", ".json", ".txt"}
	for i := range hugeTop {
		// One seed per package: ext4 allows 65,000 links to an inode.
		seed := filepath.Join(seeds, fmt.Sprint(i))
		if err := os.WriteFile(seed, nil, 0o644); err != nil {
			tb.Fatal(err)
		}
		for j := range hugeSub {
			d := filepath.Join(dir, fmt.Sprintf("pkg%03d", i), fmt.Sprintf("sub%02d", j))
			if err := os.MkdirAll(d, 0o755); err != nil {
				tb.Fatal(err)
			}
			for k := range hugeFiles {
				name := filepath.Join(d, fmt.Sprintf("f%03d%s", k, exts[k%len(exts)]))
				if err := os.Link(seed, name); err != nil {
					// No hard links here (or across devices): write instead.
					if err := os.WriteFile(name, nil, 0o644); err != nil {
						tb.Fatal(err)
					}
				}
			}
		}
	}
}

// TestBudget runs Detect over a generated 100,000-file tree with budgets
// far too small to finish, and checks that it stops promptly, says why,
// and still reports the root project.
func TestBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100,000 files")
	}
	dir := t.TempDir()
	makeHugeTree(t, dir)
	ctx := context.Background()

	checkRoot := func(t *testing.T, p *Project) {
		t.Helper()
		if len(p.Types) == 0 || p.Types[0].Name != "go" || p.Types[0].Dir != "." {
			t.Errorf("root type missing: %q", typeStrings(p.Types))
		}
		if len(p.Commands.Test) == 0 || p.Commands.Test[0].Run != "make test" {
			t.Errorf("root Makefile test command missing: %q", cmdStrings(p.Commands.Test))
		}
		if !p.Truncated {
			t.Errorf("Truncated = false, want true")
		}
		if p.Summary.Files >= hugeTotal {
			t.Errorf("Summary.Files = %d, want fewer than %d", p.Summary.Files, hugeTotal)
		}
	}

	t.Run("time", func(t *testing.T) {
		const budget = 20 * time.Millisecond
		start := time.Now()
		p, err := Detect(ctx, dir, Options{Budget: budget})
		elapsed := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		checkRoot(t, p)
		if !strings.HasPrefix(p.TruncatedReason, "stopped after 20ms (") || !strings.HasSuffix(p.TruncatedReason, " files seen)") {
			t.Errorf("TruncatedReason = %q", p.TruncatedReason)
		}
		// No bound on elapsed here: a shared machine can stall any process,
		// and the file count below the whole tree's already shows the walk
		// stopped early. BenchmarkDetectHuge measures the time.
		t.Logf("20ms budget: %v, %s", elapsed, p.TruncatedReason)
	})

	t.Run("files", func(t *testing.T) {
		p, err := Detect(ctx, dir, Options{Budget: time.Minute, MaxFiles: 1000})
		if err != nil {
			t.Fatal(err)
		}
		checkRoot(t, p)
		if p.TruncatedReason != "stopped at 1,000 files" || p.Summary.Files != 1000 {
			t.Errorf("TruncatedReason = %q, Files = %d", p.TruncatedReason, p.Summary.Files)
		}
	})

	t.Run("context deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
		defer cancel()
		p, err := Detect(ctx, dir, Options{Budget: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		checkRoot(t, p)
		if !strings.HasPrefix(p.TruncatedReason, "stopped: context deadline exceeded (") {
			t.Errorf("TruncatedReason = %q", p.TruncatedReason)
		}
	})

	t.Run("unbounded", func(t *testing.T) {
		p, err := Detect(ctx, dir, Options{Budget: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if p.Truncated || p.Summary.Files != hugeTotal+2 || p.Summary.Dirs != hugeTop*(hugeSub+1) {
			t.Errorf("Truncated = %v (%s), Files = %d, Dirs = %d", p.Truncated, p.TruncatedReason, p.Summary.Files, p.Summary.Dirs)
		}
	})
}

func TestDetectErrors(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Detect(ctx, dir, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v, want context.Canceled", err)
	}
	if _, err := Detect(context.Background(), filepath.Join(dir, "missing"), Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing root: err = %v, want os.ErrNotExist", err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Detect(context.Background(), file, Options{}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file root: err = %v", err)
	}
}
