package gitctx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	gt "github.com/ralph-dev/ralph/gitctx/gitctxtest"
)

// storeOf opens dir's repository's store.
func storeOf(t *testing.T, dir string) *store {
	t.Helper()
	st, db, err := openStorage(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.close() })
	return st
}

// TestStoreReferences reads refs as git wrote them: loose, packed (git
// pack-refs), a loose one beside its packed copy, symbolic ones in a
// chain, and the names git itself would refuse or that leave the git
// directory.
func TestStoreReferences(t *testing.T) {
	dir := t.TempDir()
	gt.Git(t, dir, "init", "-q", "-b", "main")
	gt.WriteFile(t, dir, "a.txt", "a\n")
	first := gt.Commit(t, dir, "first", 1)
	gt.Git(t, dir, "branch", "packed")
	gt.GitAt(t, dir, 1, "tag", "-a", "-m", "tag", "v1")
	gt.Git(t, dir, "pack-refs", "--all")
	gt.WriteFile(t, dir, "b.txt", "b\n")
	second := gt.Commit(t, dir, "second", 2) // main loose again, packed copy stale
	gt.Git(t, dir, "symbolic-ref", "refs/heads/alias", "refs/heads/main")
	gt.Git(t, dir, "symbolic-ref", "refs/heads/alias2", "refs/heads/alias")
	st := storeOf(t, dir)

	for _, tt := range []struct {
		name, want string
	}{
		{"refs/heads/main", second},
		{"refs/heads/packed", first},
		{"refs/tags/v1", gt.Git(t, dir, "rev-parse", "v1")},
		{"refs/heads/alias2", second},
		{"HEAD", second},
	} {
		r, err := st.resolve(plumbing.ReferenceName(tt.name))
		if err != nil || r.Hash().String() != tt.want {
			t.Errorf("resolve(%s) = %v, %v; want %s", tt.name, r, err, tt.want)
		}
	}
	if r, err := st.reference(plumbing.HEAD); err != nil || r.Type() != plumbing.SymbolicReference || r.Target() != "refs/heads/main" {
		t.Errorf("reference(HEAD) = %v, %v; want a symbolic ref to refs/heads/main", r, err)
	}
	if _, err := st.resolve("refs/heads/none"); !errors.Is(err, plumbing.ErrReferenceNotFound) {
		t.Errorf("resolve of a missing ref: %v, want ErrReferenceNotFound", err)
	}
	for _, bad := range []string{"", "/etc/passwd", "refs/../../config", "refs//heads", "refs/heads/./main", `refs\heads`} {
		if _, err := st.reference(plumbing.ReferenceName(bad)); err == nil || errors.Is(err, plumbing.ErrReferenceNotFound) {
			t.Errorf("reference(%q): %v, want an invalid name", bad, err)
		}
	}
	// An empty loose file gives way to packed-refs, as in go-git.
	if err := os.WriteFile(filepath.Join(dir, ".git", "refs", "heads", "packed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := st.resolve("refs/heads/packed"); err != nil || r.Hash().String() != first {
		t.Errorf("resolve with an empty loose file = %v, %v; want the packed %s", r, err, first)
	}
	// A chain longer than git's limit is an error, not a loop.
	gt.Git(t, dir, "symbolic-ref", "refs/heads/loop1", "refs/heads/loop2")
	gt.Git(t, dir, "symbolic-ref", "refs/heads/loop2", "refs/heads/loop1")
	if _, err := st.resolve("refs/heads/loop1"); err == nil || !strings.Contains(err.Error(), "nest") {
		t.Errorf("resolve of a loop: %v, want a nesting error", err)
	}
}

// TestStoreWorktreePaths checks where a linked worktree's files are: its
// HEAD, index and per-worktree refs in its own git directory, branches,
// objects and config in the shared one; and that each reads as git says.
func TestStoreWorktreePaths(t *testing.T) {
	dir := t.TempDir()
	gt.Git(t, dir, "init", "-q", "-b", "main")
	gt.WriteFile(t, dir, "a.txt", "a\n")
	base := gt.Commit(t, dir, "base", 1)
	wt := filepath.Join(t.TempDir(), "wt")
	gt.Git(t, dir, "worktree", "add", "-q", "-b", "feature", wt)
	gt.Git(t, wt, "update-ref", "refs/bisect/bad", base)
	st := storeOf(t, wt)
	own := filepath.Join(dir, ".git", "worktrees", "wt")
	shared := filepath.Join(dir, ".git")
	for name, want := range map[string]string{
		"HEAD": own, "index": own, "logs/HEAD": own, "refs/bisect/bad": own, "refs/worktree/x": own,
		"refs/heads/main": shared, "objects": shared, "config": shared, "packed-refs": shared, "shallow": shared, "info/exclude": shared,
	} {
		if got := st.path(name); got != filepath.Join(want, filepath.FromSlash(name)) {
			t.Errorf("path(%s) = %s, want in %s", name, got, want)
		}
	}
	if r, err := st.resolve("refs/bisect/bad"); err != nil || r.Hash().String() != base {
		t.Errorf("resolve(refs/bisect/bad) = %v, %v; want %s", r, err, base)
	}
	if r, err := st.reference(plumbing.HEAD); err != nil || r.Target() != "refs/heads/feature" {
		t.Errorf("worktree HEAD = %v, %v; want refs/heads/feature", r, err)
	}
	idx, err := st.index()
	if err != nil || len(idx.Entries) != 1 || idx.Entries[0].Name != "a.txt" || idx.ModTime.IsZero() {
		t.Errorf("worktree index = %+v, %v; want a.txt, with its file's time", idx, err)
	}
}

// TestStoreWriteObject writes a blob, a tree and a commit, and checks each
// with git: the same hash as git hash-object, readable by git cat-file,
// read-only like git's own, and a second write of the same object a no-op.
func TestStoreWriteObject(t *testing.T) {
	dir := t.TempDir()
	gt.Git(t, dir, "init", "-q", "-b", "main")
	st := storeOf(t, dir)
	blob := []byte("hello\nworld\n")
	h, err := st.writeObject(plumbing.BlobObject, blob)
	if err != nil {
		t.Fatal(err)
	}
	gt.WriteFile(t, dir, "f.txt", string(blob))
	if want := gt.Git(t, dir, "hash-object", "f.txt"); h.String() != want {
		t.Errorf("blob hash %s, git's %s", h, want)
	}
	if got := gt.Git(t, dir, "cat-file", "-p", h.String()); got != strings.TrimSpace(string(blob)) {
		t.Errorf("git cat-file of the blob: %q", got)
	}
	tree := encodeTree([]treeEntry{{name: "f.txt", mode: 0o100644, hash: h}})
	th, err := st.writeObject(plumbing.TreeObject, tree)
	if err != nil {
		t.Fatal(err)
	}
	if got := gt.Git(t, dir, "ls-tree", th.String()); !strings.HasSuffix(got, h.String()+"\tf.txt") {
		t.Errorf("git ls-tree of the tree: %q", got)
	}
	fi, err := os.Stat(filepath.Join(dir, ".git", "objects", h.String()[:2], h.String()[2:]))
	if err != nil || fi.Mode().Perm() != 0o444 {
		t.Errorf("loose object file: %v, %v; want mode 0444", fi, err)
	}
	again, err := st.writeObject(plumbing.BlobObject, blob)
	if err != nil || again != h {
		t.Errorf("second write = %s, %v; want %s", again, err, h)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "*", "tmp_obj_*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestMapRefspec maps a branch's merge ref through fetch refspecs as git
// does for an upstream.
func TestMapRefspec(t *testing.T) {
	for _, tt := range []struct {
		spec, ref, want string
		ok              bool
	}{
		{"+refs/heads/*:refs/remotes/origin/*", "refs/heads/main", "refs/remotes/origin/main", true},
		{"refs/heads/*:refs/remotes/origin/*", "refs/heads/a/b", "refs/remotes/origin/a/b", true},
		{"+refs/heads/*:refs/remotes/origin/*", "refs/tags/v1", "", false},
		{"+refs/heads/main:refs/remotes/origin/main", "refs/heads/main", "refs/remotes/origin/main", true},
		{"+refs/heads/main:refs/remotes/origin/main", "refs/heads/dev", "", false},
		{"refs/heads/feat-*:refs/remotes/o/f-*", "refs/heads/feat-x", "refs/remotes/o/f-x", true},
		{"^refs/heads/secret", "refs/heads/secret", "", false},
		{"refs/heads/main", "refs/heads/main", "", false}, // no destination: fetched into nothing
	} {
		got, ok := mapRefspec(tt.spec, tt.ref)
		if got != tt.want || ok != tt.ok {
			t.Errorf("mapRefspec(%q, %q) = %q, %v; want %q, %v", tt.spec, tt.ref, got, ok, tt.want, tt.ok)
		}
	}
}
