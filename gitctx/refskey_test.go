//go:build linux

package gitctx_test

import (
	"testing"

	"github.com/ralph-dev/ralph/gitctx"
	gt "github.com/ralph-dev/ralph/gitctx/gitctxtest"
)

// RefsKey changes with every change of what history reads (a commit, a
// branch switch, a remote-tracking ref, packed refs, the config) and not
// with work in the work tree.
func TestRefsKey(t *testing.T) {
	gt.Isolate(t)
	dir := t.TempDir()
	gt.Git(t, dir, "init", "-q", "-b", "main")
	gt.WriteFile(t, dir, "a.txt", "a\n")
	gt.Git(t, dir, "add", "-A")
	gt.Git(t, dir, "commit", "-q", "-m", "one")
	key := func() string {
		t.Helper()
		k, ok := gitctx.RefsKey(dir)
		if !ok {
			t.Fatal("no key for a plain repository")
		}
		return k
	}
	last := key()
	step := func(what string, changes bool, fn func()) {
		t.Helper()
		fn()
		k := key()
		if (k != last) != changes {
			t.Errorf("%s: key changed = %v, want %v", what, k != last, changes)
		}
		last = k
	}
	step("edit in the work tree", false, func() { gt.WriteFile(t, dir, "a.txt", "b\n"); gt.WriteFile(t, dir, "new.txt", "n\n") })
	step("git add", false, func() { gt.Git(t, dir, "add", "-A") })
	step("commit", true, func() { gt.Git(t, dir, "commit", "-q", "-m", "two") })
	step("new branch", true, func() { gt.Git(t, dir, "checkout", "-q", "-b", "topic") })
	step("a remote-tracking ref", true, func() { gt.Git(t, dir, "update-ref", "refs/remotes/origin/topic", "HEAD~1") })
	step("an upstream", true, func() { gt.Git(t, dir, "config", "branch.topic.remote", "origin") })
	step("pack-refs", true, func() { gt.Git(t, dir, "pack-refs", "--all") })
	step("nothing", false, func() {})
}
