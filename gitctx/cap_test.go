package gitctx_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/ralph-dev/ralph/gitctx"
	gt "github.com/ralph-dev/ralph/gitctx/gitctxtest"
)

// TestFilesCapped: a commit that changed more than MaxFiles paths lists
// MaxFiles of them and says there are more; StateCommits always lists the
// state files it was asked about; Changed lists them all.
func TestFilesCapped(t *testing.T) {
	dir := newRepo(t)
	for i := range 250 {
		gt.WriteFile(t, dir, fmt.Sprintf("src/f%03d.txt", i), "x\n")
	}
	gt.WriteFile(t, dir, "zz-state.md", "state\n") // last in tree order
	root := gt.Commit(t, dir, "import", 1)
	gt.WriteFile(t, dir, "src/f007.txt", "y\n")
	gt.WriteFile(t, dir, "zz-state.md", "state 2\n")
	gt.Commit(t, dir, "small", 2)
	ctx := context.Background()
	r := open(t, dir)
	all := gitLines(t, dir, "show", "--name-only", "--format=", root)

	log, err := r.Log(ctx, 2)
	if err != nil || len(log) != 2 {
		t.Fatalf("log: %d, %v", len(log), err)
	}
	equal(t, "small commit", log[0].Files, []string{"src/f007.txt", "zz-state.md"})
	if log[0].FilesMore {
		t.Error("a two-file commit says it has more")
	}
	big := log[1]
	if len(big.Files) != gitctx.MaxFiles || !big.FilesMore || !slices.IsSorted(big.Files) {
		t.Fatalf("root commit: %d files (sorted %v), more %v", len(big.Files), slices.IsSorted(big.Files), big.FilesMore)
	}
	for _, f := range big.Files {
		if !slices.Contains(all, f) {
			t.Errorf("listed %q, which the commit did not change", f)
		}
	}

	state, err := r.StateCommits(ctx, []string{"zz-state.md"}, 5)
	if err != nil || len(state) != 2 {
		t.Fatalf("state commits: %d, %v", len(state), err)
	}
	if c := state[1]; c.Hash != root || len(c.Files) != gitctx.MaxFiles || !c.FilesMore || !slices.Contains(c.Files, "zz-state.md") {
		t.Errorf("state commit %s: %d files, more %v, has the state file %v", c.Hash[:7], len(c.Files), c.FilesMore, slices.Contains(c.Files, "zz-state.md"))
	}

	got, err := r.Changed(ctx, "", root)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "Changed by the root commit", got, all)
	got, err = r.Changed(ctx, root, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "Changed since the root commit", got, gitLines(t, dir, "diff", "--name-only", "--no-renames", root, "HEAD"))
	if _, err := r.Changed(ctx, "nope", "HEAD"); err == nil {
		t.Error("Changed from an unknown revision succeeded")
	}
}
