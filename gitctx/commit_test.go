//go:build unix

package gitctx_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	gt "github.com/ralph-dev/ralph/gitctx/gitctxtest"
)

// Commit takes exactly the given paths as they are in the work tree, and
// leaves everything else, staged or not, where it was.
func TestCommitOnlyThePaths(t *testing.T) {
	dir := newRepo(t)
	gt.WriteFile(t, dir, "a.txt", "a\n")
	gt.WriteFile(t, dir, "dir/b.txt", "b\n")
	gt.WriteFile(t, dir, "dir/keep.txt", "keep\n")
	gt.WriteFile(t, dir, "c.txt", "c\n")
	gt.WriteFile(t, dir, "d.txt", "d\n")
	gt.WriteFile(t, dir, "z-last.txt", "z\n")
	gt.Commit(t, dir, "base", 1)

	// The person's own work in progress: one change staged, one not.
	gt.WriteFile(t, dir, "c.txt", "c staged by the person\n")
	gt.Git(t, dir, "add", "c.txt")
	gt.WriteFile(t, dir, "d.txt", "d edited, not staged\n")

	// The agent's work: a change, a new file, a deletion, a new
	// executable in new folders, and a file whose name sorts between a
	// folder and its siblings (git's tree order puts "dir" as "dir/").
	gt.WriteFile(t, dir, "a.txt", "a changed\n")
	gt.WriteFile(t, dir, "dir/new.txt", "new\n")
	if err := os.Remove(filepath.Join(dir, "dir/b.txt")); err != nil {
		t.Fatal(err)
	}
	gt.WriteFile(t, dir, "sub/deep/run.sh", "#!/bin/sh\necho hi\n")
	if err := os.Chmod(filepath.Join(dir, "sub/deep/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	gt.WriteFile(t, dir, "dir.txt", "sorts after dir/\n")

	r := open(t, dir)
	hash, err := r.Commit(t.Context(), []string{"a.txt", "dir/new.txt", "dir/b.txt", "sub/deep/run.sh", "dir.txt"}, "ralph: T1 Do the thing\n", time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "HEAD", gitLines(t, dir, "rev-parse", "HEAD"), []string{hash})
	equal(t, "committed", gitLines(t, dir, "show", "--name-status", "--format=", "HEAD"),
		[]string{"M\ta.txt", "A\tdir.txt", "D\tdir/b.txt", "A\tdir/new.txt", "A\tsub/deep/run.sh"})
	equal(t, "subject", gitLines(t, dir, "log", "-1", "--format=%s"), []string{"ralph: T1 Do the thing"})
	equal(t, "mode", gitLines(t, dir, "ls-tree", "HEAD", "sub/deep/run.sh"), []string{"100755 blob " + strings.Fields(gt.Git(t, dir, "hash-object", "sub/deep/run.sh"))[0] + "\tsub/deep/run.sh"})
	// The person's work is untouched: still staged, still unstaged.
	equal(t, "status", gitLines(t, dir, "status", "--porcelain"), []string{"M  c.txt", " M d.txt"})
	// The objects are well formed, trees in git's order included.
	gt.Git(t, dir, "fsck", "--strict", "--no-progress")
}

func TestCommitFirstCommit(t *testing.T) {
	dir := newRepo(t)
	gt.WriteFile(t, dir, "RALPH_TASKS.md", "- [x] T1: First\n")
	gt.WriteFile(t, dir, "untouched.txt", "not mine\n")
	r := open(t, dir)
	if _, err := r.Commit(t.Context(), []string{"RALPH_TASKS.md"}, "ralph: T1 First", time.Now()); err != nil {
		t.Fatal(err)
	}
	equal(t, "files", gitLines(t, dir, "ls-tree", "-r", "--name-only", "HEAD"), []string{"RALPH_TASKS.md"})
	equal(t, "status", gitLines(t, dir, "status", "--porcelain"), []string{"?? untouched.txt"})
	gt.Git(t, dir, "fsck", "--strict", "--no-progress")
}

// inode returns the inode number of path.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// Commit replaces the index and the branch the way git does, through
// NAME.lock renamed over NAME, so that a kill mid-write never leaves a
// torn index or an empty branch; no lock file is left behind.
func TestCommitWritesThroughLockFiles(t *testing.T) {
	dir := newRepo(t)
	gt.WriteFile(t, dir, "a.txt", "a\n")
	gt.Commit(t, dir, "base", 1)
	branch := strings.TrimSpace(gt.Git(t, dir, "symbolic-ref", "HEAD"))
	refPath := filepath.Join(dir, ".git", filepath.FromSlash(branch))
	idxBefore, refBefore := inode(t, filepath.Join(dir, ".git", "index")), inode(t, refPath)

	gt.WriteFile(t, dir, "a.txt", "a changed\n")
	r := open(t, dir)
	hash, err := r.Commit(t.Context(), []string{"a.txt"}, "ralph: T1 change a\n", time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if inode(t, filepath.Join(dir, ".git", "index")) == idxBefore || inode(t, refPath) == refBefore {
		t.Errorf("the index or %s was rewritten in place, not replaced", branch)
	}
	equal(t, "HEAD", gitLines(t, dir, "rev-parse", "HEAD"), []string{hash})
	equal(t, "status", gitLines(t, dir, "status", "--porcelain"), nil)
	locks, _ := filepath.Glob(filepath.Join(dir, ".git", "*.lock"))
	refLocks, _ := filepath.Glob(refPath + ".lock")
	if len(locks)+len(refLocks) > 0 {
		t.Errorf("lock files left: %v %v", locks, refLocks)
	}
	gt.Git(t, dir, "fsck", "--strict", "--no-progress")
}

// While a git command holds the index (index.lock exists), ralph's commit
// fails with a message that says so, commits nothing, and leaves the
// other process's lock alone.
func TestCommitIndexLocked(t *testing.T) {
	dir := newRepo(t)
	gt.WriteFile(t, dir, "a.txt", "a\n")
	gt.Commit(t, dir, "base", 1)
	before := gitLines(t, dir, "rev-parse", "HEAD")
	lock := filepath.Join(dir, ".git", "index.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	gt.WriteFile(t, dir, "a.txt", "a changed\n")
	r := open(t, dir)
	_, err := r.Commit(t.Context(), []string{"a.txt"}, "ralph: T1\n", time.Now())
	if err == nil || !strings.Contains(err.Error(), "index.lock exists") {
		t.Fatalf("Commit with index.lock held: %v", err)
	}
	equal(t, "HEAD", gitLines(t, dir, "rev-parse", "HEAD"), before)
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("the other process's index.lock is gone: %v", err)
	}
}
