package gitctx_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/gitctx"
	gt "github.com/ralph-dev/ralph/gitctx/gitctxtest"
)

// sameStatus checks that the status without git equals git's own, list by
// list, in the repository at dir.
func sameStatus(t *testing.T, dir string) gitctx.Status {
	t.Helper()
	ctx := context.Background()
	r := open(t, dir)
	cli := r.Status(ctx, time.Minute)
	if !cli.Available || cli.Source != gitctx.SourceCLI {
		t.Fatalf("git status: %+v", cli)
	}
	plain, err := gitctx.Open(dir, nil) // no runner: the fallback
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	fb := plain.Status(ctx, time.Minute)
	if !fb.Available || fb.Source != gitctx.SourceFallback {
		t.Fatalf("fallback status: %+v", fb)
	}
	equal(t, "modified", fb.Modified, cli.Modified)
	equal(t, "added", fb.Added, cli.Added)
	equal(t, "deleted", fb.Deleted, cli.Deleted)
	equal(t, "untracked", fb.Untracked, cli.Untracked)
	equal(t, "unmerged", fb.Unmerged, cli.Unmerged)
	return cli
}

// TestFallbackMatchesGit builds a work tree with every kind of change git
// status reports and checks that the fallback reports each path as git
// does: staged, unstaged and both; added, deleted (from the index, from
// the work tree, from the index but kept), renamed with and without git;
// ignored by .gitignore files at several depths, negated, by info/exclude,
// and whole ignored directories holding tracked files; executable bits,
// symbolic links, a file replaced by a directory, intent-to-add, a nested
// repository, and files rewritten within the index's own second.
func TestFallbackMatchesGit(t *testing.T) {
	dir := newRepo(t)
	files := []string{
		"a.txt", "staged.txt", "both.txt", "gone.txt", "rm.txt", "rm-cached.txt",
		"mv-src.txt", "plain-mv-src.txt", "exec.sh", "to-dir", "dir/one.txt",
		"dir/sub/two.txt", "deep/a/b/c.txt", "build/tracked.log", "keep/x.tmp",
		"racy.txt", "same.txt",
	}
	for _, f := range files {
		gt.WriteFile(t, dir, f, f+"\n")
	}
	gt.WriteFile(t, dir, ".gitignore", "*.tmp\nbuild/\n!keep/*.tmp\n")
	gt.WriteFile(t, dir, "dir/.gitignore", "*.out\n/sub/local\n")
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	gt.Git(t, dir, "add", "-f", ".") // build/tracked.log despite build/
	gt.Commit(t, dir, "base", 1)
	if st := sameStatus(t, dir); !st.Clean() {
		t.Fatalf("fresh commit is not clean: %+v", st)
	}

	gt.WriteFile(t, dir, "a.txt", "changed\n")
	gt.WriteFile(t, dir, "staged.txt", "staged\n")
	gt.Git(t, dir, "add", "staged.txt")
	gt.WriteFile(t, dir, "both.txt", "staged\n")
	gt.Git(t, dir, "add", "both.txt")
	gt.WriteFile(t, dir, "both.txt", "and then changed\n")
	must(t, os.Remove(filepath.Join(dir, "gone.txt")))
	gt.Git(t, dir, "rm", "-q", "rm.txt")
	gt.Git(t, dir, "rm", "-q", "--cached", "rm-cached.txt")
	gt.Git(t, dir, "mv", "mv-src.txt", "mv-dst.txt")
	must(t, os.Rename(filepath.Join(dir, "plain-mv-src.txt"), filepath.Join(dir, "plain-mv-dst.txt")))
	must(t, os.Chmod(filepath.Join(dir, "exec.sh"), 0o755))
	must(t, os.Remove(filepath.Join(dir, "link")))
	must(t, os.Symlink("dir/one.txt", filepath.Join(dir, "link")))
	must(t, os.Remove(filepath.Join(dir, "to-dir")))
	gt.WriteFile(t, dir, "to-dir/inside.txt", "now a directory\n")
	gt.WriteFile(t, dir, "dir/sub/two.txt", "changed deep\n")
	gt.WriteFile(t, dir, "build/tracked.log", "tracked in an ignored directory\n")
	gt.WriteFile(t, dir, "build/new.log", "ignored\n")
	gt.WriteFile(t, dir, "new.tmp", "ignored\n")
	gt.WriteFile(t, dir, "keep/y.tmp", "negated: shown\n")
	gt.WriteFile(t, dir, "dir/x.out", "ignored below dir\n")
	gt.WriteFile(t, dir, "x.out", "not ignored at the root\n")
	gt.WriteFile(t, dir, "dir/sub/local", "anchored ignore\n")
	gt.WriteFile(t, dir, ".git/info/exclude", "*.bak\n")
	gt.WriteFile(t, dir, "notes.bak", "excluded\n")
	gt.WriteFile(t, dir, "new dir/deeper/n.txt", "untracked\n")
	gt.WriteFile(t, dir, "new\nline.txt", "odd name\n")
	gt.WriteFile(t, dir, "ita.txt", "intent to add\n")
	gt.Git(t, dir, "add", "-N", "ita.txt")
	gt.WriteFile(t, dir, "staged-new.txt", "new\n")
	gt.Git(t, dir, "add", "staged-new.txt")
	gt.WriteFile(t, dir, "staged-new.txt", "new, then changed\n")
	nested := filepath.Join(dir, "vendor", "other")
	gt.Git(t, dir, "init", "-q", nested)
	gt.WriteFile(t, nested, "file.txt", "x\n")
	// Same size, rewritten after the index: only the content tells.
	gt.WriteFile(t, dir, "racy.txt", "RACY.TXT\n")
	st := sameStatus(t, dir)
	if len(st.Modified) < 5 || len(st.Added) < 2 || len(st.Deleted) < 5 || len(st.Untracked) < 5 {
		t.Errorf("the repository lacks some kinds of change: %+v", st)
	}

	// The same after the index is rewritten (git add refreshes stat data
	// and rebuilds part of the cached trees), and after a commit.
	gt.Git(t, dir, "add", "dir")
	sameStatus(t, dir)
	must(t, os.RemoveAll(nested))
	sameStatus(t, dir)
	gt.Git(t, dir, "add", "-A", ".")
	gt.Commit(t, dir, "everything", 2)
	sameStatus(t, dir)
}

// TestFallbackUnbornAndUnmerged covers a repository without commits and
// one in the middle of a conflicted merge.
func TestFallbackUnbornAndUnmerged(t *testing.T) {
	t.Run("unborn", func(t *testing.T) {
		dir := newRepo(t)
		gt.WriteFile(t, dir, "a.txt", "a\n")
		gt.WriteFile(t, dir, "b.txt", "b\n")
		gt.Git(t, dir, "add", "a.txt")
		st := sameStatus(t, dir)
		equal(t, "added", st.Added, []string{"a.txt"})
	})
	t.Run("unmerged", func(t *testing.T) {
		dir := newRepo(t)
		gt.WriteFile(t, dir, "c.txt", "base\n")
		gt.WriteFile(t, dir, "d.txt", "base\n")
		gt.Commit(t, dir, "base", 1)
		gt.Git(t, dir, "checkout", "-q", "-b", "side")
		gt.WriteFile(t, dir, "c.txt", "side\n")
		gt.WriteFile(t, dir, "d.txt", "side\n")
		gt.Commit(t, dir, "side", 2)
		gt.Git(t, dir, "checkout", "-q", "main")
		gt.WriteFile(t, dir, "c.txt", "main\n")
		gt.Commit(t, dir, "main", 3)
		if _, err := gt.GitEnv(dir, nil, "merge", "-q", "side"); err == nil {
			t.Fatal("merge did not conflict")
		}
		st := sameStatus(t, dir)
		equal(t, "unmerged", st.Unmerged, []string{"c.txt"})
	})
}

// TestFallbackSubmodule: the parent sees a submodule with changes inside
// as modified, without git as with it.
func TestFallbackSubmodule(t *testing.T) {
	lib := newRepo(t)
	gt.WriteFile(t, lib, "x.go", "package x\n")
	gt.Commit(t, lib, "lib", 1)
	parent := t.TempDir()
	gt.Git(t, parent, "init", "-q", "-b", "main")
	gt.WriteFile(t, parent, "main.go", "package main\n")
	gt.Git(t, parent, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "lib")
	gt.Commit(t, parent, "add lib", 2)
	if st := sameStatus(t, parent); !st.Clean() {
		t.Fatalf("fresh submodule: %+v", st)
	}
	gt.WriteFile(t, filepath.Join(parent, "lib"), "x.go", "package x // changed\n")
	st := sameStatus(t, parent)
	equal(t, "modified", st.Modified, []string{"lib"})
}

// TestFallbackManyFiles runs the fallback's parallel comparison over
// enough files to use all its workers, with changes spread among them.
func TestFallbackManyFiles(t *testing.T) {
	dir := newRepo(t)
	for i := range 3000 {
		gt.WriteFile(t, dir, "d"+strconv.Itoa(i%40)+"/f"+strconv.Itoa(i)+".txt", strconv.Itoa(i)+"\n")
	}
	gt.Commit(t, dir, "many files", 1)
	for i := 0; i < 3000; i += 97 {
		gt.WriteFile(t, dir, "d"+strconv.Itoa(i%40)+"/f"+strconv.Itoa(i)+".txt", "changed\n")
	}
	st := sameStatus(t, dir)
	if len(st.Modified) != 31 {
		t.Errorf("modified: %d, want 31", len(st.Modified))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
