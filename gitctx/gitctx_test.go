package gitctx_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/ralph-dev/ralph/gitctx"
	gt "github.com/ralph-dev/ralph/gitctx/gitctxtest"
)

// newRepo isolates git and returns a fresh repository on branch main.
func newRepo(t *testing.T) string {
	t.Helper()
	gt.Isolate(t)
	dir := t.TempDir()
	gt.Git(t, dir, "init", "-q", "-b", "main")
	return dir
}

func open(t *testing.T, dir string) *gitctx.Repo {
	t.Helper()
	r, err := gitctx.Open(dir, gt.Runner{})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return r
}

func hashes(cs []gitctx.Commit) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Hash
	}
	return out
}

// gitLines runs git and splits its output into lines (nil for none).
func gitLines(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	out := gt.Git(t, dir, args...)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// noGit hides the git CLI from gitctx for the rest of the test, so that it
// takes its go-git fallbacks.
func noGit(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
}

func TestOpenNotRepo(t *testing.T) {
	gt.Isolate(t)
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := gitctx.Open(dir, gt.Runner{})
	if !errors.Is(err, gitctx.ErrNotRepo) {
		t.Fatalf("Open: got %v, want ErrNotRepo", err)
	}
	_, err = gitctx.Open(filepath.Join(dir, "missing"), gt.Runner{})
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, gitctx.ErrNotRepo) {
		t.Fatalf("Open(missing dir): got %v, want a not-exist error", err)
	}
}

func TestOpenBare(t *testing.T) {
	tests := []struct {
		name    string
		builder string // "cli" or "go-git"
		sub     string // directory inside the bare repository to open
	}{
		{"cli", "cli", ""},
		{"cli from objects dir", "cli", "objects"},
		{"go-git", "go-git", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gt.Isolate(t)
			dir := filepath.Join(t.TempDir(), "repo.git")
			if tt.builder == "cli" {
				gt.Git(t, filepath.Dir(dir), "init", "-q", "--bare", dir)
			} else if _, err := git.PlainInit(dir, true); err != nil {
				t.Fatal(err)
			}
			_, err := gitctx.Open(filepath.Join(dir, tt.sub), gt.Runner{})
			if !errors.Is(err, gitctx.ErrBare) {
				t.Fatalf("Open: got %v, want ErrBare", err)
			}
			if !strings.Contains(err.Error(), "ralph needs a work tree") {
				t.Errorf("message %q does not say ralph needs a work tree", err)
			}
		})
	}
}

func TestOpenCorrupt(t *testing.T) {
	tests := []struct {
		name   string
		damage string
	}{
		{"garbage HEAD", "head"},
		{"garbage branch ref", "ref"},
		{"truncated HEAD commit object", "truncate"},
		{"HEAD commit object missing", "missing"},
		{".git file pointing nowhere", "gitfile"},
		{"unparsable config", "config"},
		{"HEAD file missing", "nohead"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t)
			gt.WriteFile(t, dir, "a.txt", "a\n")
			head := gt.Commit(t, dir, "one", 1)
			obj := filepath.Join(dir, ".git", "objects", head[:2], head[2:])
			switch tt.damage {
			case "head":
				gt.WriteFile(t, dir, ".git/HEAD", "this is not a ref\n")
			case "ref":
				gt.WriteFile(t, dir, ".git/refs/heads/main", "zzzz\n")
			case "truncate":
				b, err := os.ReadFile(obj)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(obj, 0o644); err != nil {
					t.Fatal(err)
				}
				gt.WriteFile(t, dir, filepath.ToSlash(strings.TrimPrefix(obj, dir+"/")), string(b[:len(b)/2]))
			case "missing":
				if err := os.Remove(obj); err != nil {
					t.Fatal(err)
				}
			case "gitfile":
				if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
					t.Fatal(err)
				}
				gt.WriteFile(t, dir, ".git", "gitdir: ../nowhere/.git\n")
			case "config":
				gt.WriteFile(t, dir, ".git/config", "[core\n\tbroken = = =\n")
			case "nohead":
				if err := os.Remove(filepath.Join(dir, ".git", "HEAD")); err != nil {
					t.Fatal(err)
				}
			}
			r, err := gitctx.Open(dir, gt.Runner{})
			if err == nil {
				r.Close()
				t.Fatal("Open succeeded on a corrupt repository")
			}
			if !errors.Is(err, gitctx.ErrCorrupt) {
				t.Fatalf("Open: got %v, want ErrCorrupt", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "looks corrupt") || !strings.Contains(msg, "carry on without git context") {
				t.Errorf("message %q does not explain itself", msg)
			}
			t.Logf("%s", msg)
		})
	}
}

// TestHistoryGoGit builds history with go-git and checks it against both
// the values used to build it and the git CLI's reading of it.
func TestHistoryGoGit(t *testing.T) {
	gt.Isolate(t)
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	commit := func(msg string, seq int) string {
		t.Helper()
		if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
			t.Fatal(err)
		}
		sig := &object.Signature{Name: "Go Git", Email: "gogit@example.com", When: gt.Epoch.Add(time.Duration(seq) * time.Hour)}
		h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig})
		if err != nil {
			t.Fatal(err)
		}
		return h.String()
	}
	gt.WriteFile(t, dir, "a.txt", "a\n")
	gt.WriteFile(t, dir, "dir/b.txt", "b\n")
	gt.WriteFile(t, dir, "keep/k.txt", "k\n")
	c1 := commit("first", 1)
	gt.WriteFile(t, dir, "a.txt", "a2\n")
	c2 := commit("second\n\nwith a body\n", 2)
	if err := os.Remove(filepath.Join(dir, "dir", "b.txt")); err != nil {
		t.Fatal(err)
	}
	gt.WriteFile(t, dir, "c.txt", "c\n")
	c3 := commit("third, line one\nline two\n\nbody\n", 3)

	r := open(t, filepath.Join(dir, "keep"))
	if r.Root() != dir {
		t.Errorf("Root = %q, want %q", r.Root(), dir)
	}
	h, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	if want := (gitctx.Head{Branch: "master", Hash: c3}); h != want {
		t.Errorf("Head = %+v, want %+v", h, want)
	}
	log, err := r.Log(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "log hashes", hashes(log), []string{c3, c2, c1})
	equal(t, "git log", hashes(log), gitLines(t, dir, "log", "--format=%H"))
	wantFiles := [][]string{{"c.txt", "dir/b.txt"}, {"a.txt"}, {"a.txt", "dir/b.txt", "keep/k.txt"}}
	gitSubjects := gitLines(t, dir, "log", "--format=%s")
	for i, c := range log {
		equal(t, "files of "+c.Subject, c.Files, wantFiles[i])
		if c.Subject != gitSubjects[i] {
			t.Errorf("subject %q, git says %q", c.Subject, gitSubjects[i])
		}
		if c.Author != "Go Git" || c.Email != "gogit@example.com" || !c.Time.Equal(gt.Epoch.Add(time.Duration(3-i)*time.Hour)) {
			t.Errorf("commit %d: author %q <%s> at %s", i, c.Author, c.Email, c.Time)
		}
	}
	if log[0].Subject != "third, line one line two" {
		t.Errorf("subject %q: want the first paragraph on one line", log[0].Subject)
	}
	if short, err := r.Log(context.Background(), 2); err != nil || len(short) != 2 {
		t.Errorf("Log(2) = %d commits, %v", len(short), err)
	}
}

// TestLogMergeOrder checks date order across a merge against git log.
func TestLogMergeOrder(t *testing.T) {
	dir := newRepo(t)
	gt.WriteFile(t, dir, "a.txt", "1\n")
	gt.Commit(t, dir, "m1", 1)
	gt.Git(t, dir, "checkout", "-q", "-b", "side")
	gt.WriteFile(t, dir, "side.txt", "s\n")
	gt.Commit(t, dir, "s1", 2)
	gt.Git(t, dir, "checkout", "-q", "main")
	gt.WriteFile(t, dir, "a.txt", "2\n")
	gt.Commit(t, dir, "m2", 3)
	gt.Git(t, dir, "checkout", "-q", "side")
	gt.WriteFile(t, dir, "side.txt", "s2\n")
	gt.Commit(t, dir, "s2", 4)
	gt.Git(t, dir, "checkout", "-q", "main")
	gt.GitAt(t, dir, 5, "merge", "-q", "--no-ff", "-m", "merge side", "side")

	r := open(t, dir)
	log, err := r.Log(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "log vs git log", hashes(log), gitLines(t, dir, "log", "--format=%H"))
	equal(t, "merge files (vs first parent)", log[0].Files, []string{"side.txt"})
}

func TestDetachedHead(t *testing.T) {
	dir := newRepo(t)
	var cs []string
	for i := range 3 {
		gt.WriteFile(t, dir, "f.txt", strconv.Itoa(i))
		cs = append(cs, gt.Commit(t, dir, "c"+strconv.Itoa(i), i))
	}
	gt.Git(t, dir, "checkout", "-q", "--detach", "HEAD~1")
	r := open(t, dir)
	h, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	if want := (gitctx.Head{Hash: cs[1], Detached: true}); h != want {
		t.Errorf("Head = %+v, want %+v", h, want)
	}
	log, err := r.Log(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "log", hashes(log), []string{cs[1], cs[0]})
	if _, _, ok := r.AheadBehind(context.Background()); ok {
		t.Error("AheadBehind ok on a detached HEAD")
	}
}

func TestEmptyRepo(t *testing.T) {
	tests := []struct {
		builder, branch string
	}{
		{"cli", "main"},
		{"go-git", "master"},
	}
	for _, tt := range tests {
		t.Run(tt.builder, func(t *testing.T) {
			gt.Isolate(t)
			dir := t.TempDir()
			if tt.builder == "cli" {
				gt.Git(t, dir, "init", "-q", "-b", "main")
			} else if _, err := git.PlainInit(dir, false); err != nil {
				t.Fatal(err)
			}
			r := open(t, dir)
			ctx := context.Background()
			h, err := r.Head()
			if err != nil {
				t.Fatal(err)
			}
			if want := (gitctx.Head{Branch: tt.branch, Unborn: true}); h != want {
				t.Errorf("Head = %+v, want %+v", h, want)
			}
			if log, err := r.Log(ctx, 10); log != nil || err != nil {
				t.Errorf("Log = %v, %v; want nil, nil", log, err)
			}
			if cs, err := r.StateCommits(ctx, []string{"AGENT.md"}, 5); cs != nil || err != nil {
				t.Errorf("StateCommits = %v, %v; want nil, nil", cs, err)
			}
			if _, _, ok := r.AheadBehind(ctx); ok {
				t.Error("AheadBehind ok with no commits")
			}
			if _, _, err := r.CommitsSince(ctx, "HEAD"); !errors.Is(err, gitctx.ErrUnknownRevision) {
				t.Errorf("CommitsSince(HEAD) = %v, want ErrUnknownRevision", err)
			}
			if _, err := r.FileAt(ctx, "HEAD", "AGENT.md"); !errors.Is(err, gitctx.ErrUnknownRevision) {
				t.Errorf("FileAt(HEAD) = %v, want ErrUnknownRevision", err)
			}
			gt.WriteFile(t, dir, "AGENT.md", "hi\n")
			st := r.Status(ctx, 10*time.Second)
			if !st.Available || st.Source != "git" {
				t.Fatalf("Status = %+v", st)
			}
			equal(t, "untracked", st.Untracked, []string{"AGENT.md"})
			if dirty, err := r.IsDirty(ctx, "AGENT.md"); !dirty || err != nil {
				t.Errorf("IsDirty = %v, %v; want true", dirty, err)
			}
		})
	}
}

func TestShallowClone(t *testing.T) {
	src := newRepo(t)
	var cs []string
	for i := 1; i <= 5; i++ {
		gt.WriteFile(t, src, "f"+strconv.Itoa(i)+".txt", "x\n")
		cs = append(cs, gt.Commit(t, src, "c"+strconv.Itoa(i), i))
	}
	dir := filepath.Join(t.TempDir(), "shallow")
	gt.Git(t, src, "clone", "-q", "--depth", "2", "file://"+src, dir)
	if _, err := os.Stat(filepath.Join(dir, ".git", "shallow")); err != nil {
		t.Fatalf("clone is not shallow: %v", err)
	}

	r := open(t, dir)
	ctx := context.Background()
	log, err := r.Log(ctx, 10)
	if err != nil {
		t.Fatalf("Log on a shallow clone: %v", err)
	}
	equal(t, "log", hashes(log), []string{cs[4], cs[3]})
	equal(t, "git log", hashes(log), gitLines(t, dir, "log", "--format=%H"))
	equal(t, "files of newest", log[0].Files, []string{"f5.txt"})
	if log[1].Files != nil {
		t.Errorf("boundary commit files = %q, want nil (unknown)", log[1].Files)
	}

	since, stat, err := r.CommitsSince(ctx, cs[3])
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "commits since boundary", hashes(since), []string{cs[4]})
	if want := (gitctx.DiffStat{Files: 1, Insertions: 1}); stat != want {
		t.Errorf("stat = %+v, want %+v", stat, want)
	}
	if _, _, err := r.CommitsSince(ctx, cs[1]); !errors.Is(err, gitctx.ErrUnknownRevision) {
		t.Errorf("CommitsSince(beyond boundary) = %v, want ErrUnknownRevision", err)
	}
	state, err := r.StateCommits(ctx, []string{"f5.txt", "f1.txt"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "state commits", hashes(state), []string{cs[4]})
	if ahead, behind, ok := r.AheadBehind(ctx); !ok || ahead != 0 || behind != 0 {
		t.Errorf("AheadBehind = %d, %d, %v; want 0, 0, true", ahead, behind, ok)
	}
}

func TestSubmodule(t *testing.T) {
	lib := newRepo(t)
	gt.WriteFile(t, lib, "pkg/x.go", "package x\n")
	libHead := gt.Commit(t, lib, "lib", 1)
	parent := t.TempDir()
	gt.Git(t, parent, "init", "-q", "-b", "main")
	gt.WriteFile(t, parent, "main.go", "package main\n")
	gt.Commit(t, parent, "parent", 2)
	gt.Git(t, parent, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "lib")
	gt.Commit(t, parent, "add lib", 3)
	sub := filepath.Join(parent, "lib")
	if b, err := os.ReadFile(filepath.Join(sub, ".git")); err != nil || !strings.HasPrefix(string(b), "gitdir: ") {
		t.Fatalf("submodule .git is not a gitdir file: %q, %v", b, err)
	}

	r := open(t, filepath.Join(sub, "pkg"))
	if r.Root() != sub {
		t.Errorf("Root = %q, want %q", r.Root(), sub)
	}
	h, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	if h.Hash != libHead {
		t.Errorf("Head = %+v, want hash %s", h, libHead)
	}
	ctx := context.Background()
	log, err := r.Log(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "log", hashes(log), []string{libHead})
	if st := r.Status(ctx, 10*time.Second); !st.Clean() {
		t.Errorf("fresh submodule status = %+v", st)
	}

	gt.WriteFile(t, sub, "pkg/x.go", "package x // changed\n")
	st := r.Status(ctx, 10*time.Second)
	equal(t, "submodule modified", st.Modified, []string{"pkg/x.go"})
	pst := open(t, parent).Status(ctx, 10*time.Second)
	equal(t, "parent sees submodule modified", pst.Modified, []string{"lib"})
}

func TestLinkedWorktree(t *testing.T) {
	dir := newRepo(t)
	gt.WriteFile(t, dir, "a.txt", "a\n")
	base := gt.Commit(t, dir, "base", 1)
	wt := filepath.Join(t.TempDir(), "wt")
	gt.Git(t, dir, "worktree", "add", "-q", "-b", "feature", wt)

	r := open(t, wt)
	if r.Root() != wt {
		t.Errorf("Root = %q, want %q", r.Root(), wt)
	}
	ctx := context.Background()
	h, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	if want := (gitctx.Head{Branch: "feature", Hash: base}); h != want {
		t.Errorf("Head = %+v, want %+v", h, want)
	}
	gt.WriteFile(t, wt, "w.txt", "w\n")
	c := gt.Commit(t, wt, "in worktree", 2)
	log, err := r.Log(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "log", hashes(log), []string{c})
	equal(t, "files", log[0].Files, []string{"w.txt"})

	gt.WriteFile(t, wt, "u.txt", "u\n")
	st := r.Status(ctx, 10*time.Second)
	equal(t, "worktree untracked", st.Untracked, []string{"u.txt"})
	if mst := open(t, dir).Status(ctx, 10*time.Second); !mst.Clean() {
		t.Errorf("main work tree status = %+v, want clean", mst)
	}

	// Upstream set to a local branch: branch.feature.remote = "."
	gt.Git(t, wt, "branch", "-q", "--set-upstream-to=main")
	if ahead, behind, ok := r.AheadBehind(ctx); !ok || ahead != 1 || behind != 0 {
		t.Errorf("AheadBehind = %d, %d, %v; want 1, 0, true", ahead, behind, ok)
	}
}

func TestStatus(t *testing.T) {
	dir := newRepo(t)
	for _, f := range []string{"a.txt", "b.txt", "c.txt", "d.txt", "e.txt", "dir/f.txt", "sp ace.txt", "mv-src.txt"} {
		gt.WriteFile(t, dir, f, f+"\n")
	}
	gt.WriteFile(t, dir, ".gitignore", "*.tmp\n")
	gt.Commit(t, dir, "base", 1)

	gt.WriteFile(t, dir, "a.txt", "changed\n")
	gt.WriteFile(t, dir, "b.txt", "staged\n")
	gt.Git(t, dir, "add", "b.txt")
	if err := os.Remove(filepath.Join(dir, "c.txt")); err != nil {
		t.Fatal(err)
	}
	gt.Git(t, dir, "rm", "-q", "d.txt")
	if err := os.Chmod(filepath.Join(dir, "e.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	gt.WriteFile(t, dir, "g.txt", "new\n")
	gt.Git(t, dir, "add", "g.txt")
	gt.WriteFile(t, dir, "sp ace.txt", "changed\n")
	gt.Git(t, dir, "mv", "mv-src.txt", "mv-dst.txt")
	gt.WriteFile(t, dir, "new dir/h.txt", "h\n")
	gt.WriteFile(t, dir, "new dir/deeper/i.txt", "i\n")
	gt.WriteFile(t, dir, "new\nline.txt", "n\n")
	gt.WriteFile(t, dir, "x.tmp", "ignored\n")
	gt.WriteFile(t, dir, "dir/y.tmp", "ignored\n")

	want := gitctx.Status{
		Available: true,
		Modified:  []string{"a.txt", "b.txt", "e.txt", "sp ace.txt"},
		Added:     []string{"g.txt", "mv-dst.txt"},
		Deleted:   []string{"c.txt", "d.txt", "mv-src.txt"},
		Untracked: []string{"new\nline.txt", "new dir/deeper/i.txt", "new dir/h.txt"}, // byte order: \n < ' '
	}
	check := func(t *testing.T, st gitctx.Status, source string) {
		t.Helper()
		if !st.Available || st.Source != source || st.Reason != "" {
			t.Fatalf("Status = %+v, want available from %s", st, source)
		}
		equal(t, "modified", st.Modified, want.Modified)
		equal(t, "added", st.Added, want.Added)
		equal(t, "deleted", st.Deleted, want.Deleted)
		equal(t, "untracked", st.Untracked, want.Untracked)
		equal(t, "unmerged", st.Unmerged, nil)
	}
	t.Run("git", func(t *testing.T) {
		check(t, open(t, filepath.Join(dir, "dir")).Status(context.Background(), 10*time.Second), "git")
	})
	t.Run("go-git fallback", func(t *testing.T) {
		r := open(t, filepath.Join(dir, "dir"))
		noGit(t)
		check(t, r.Status(context.Background(), time.Minute), "go-git")
	})
	t.Run("no runner", func(t *testing.T) {
		r, err := gitctx.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		check(t, r.Status(context.Background(), time.Minute), "go-git")
		if _, err := gitctx.CLIStatus(context.Background(), nil, dir, time.Minute); !errors.Is(err, gitctx.ErrNoCLI) {
			t.Errorf("CLIStatus without a runner: %v, want ErrNoCLI", err)
		}
	})
}

func TestStatusUnmerged(t *testing.T) {
	dir := newRepo(t)
	gt.WriteFile(t, dir, "c.txt", "base\n")
	gt.Commit(t, dir, "base", 1)
	gt.Git(t, dir, "checkout", "-q", "-b", "side")
	gt.WriteFile(t, dir, "c.txt", "side\n")
	gt.Commit(t, dir, "side", 2)
	gt.Git(t, dir, "checkout", "-q", "main")
	gt.WriteFile(t, dir, "c.txt", "main\n")
	gt.Commit(t, dir, "main", 3)
	if _, err := gt.GitEnv(dir, nil, "merge", "-q", "side"); err == nil {
		t.Fatal("merge did not conflict")
	}
	st := open(t, dir).Status(context.Background(), 10*time.Second)
	equal(t, "unmerged", st.Unmerged, []string{"c.txt"})
	equal(t, "modified", st.Modified, nil)
}

func TestStatusGlobalGitignore(t *testing.T) {
	dir := newRepo(t)
	gt.WriteFile(t, dir, "tracked.txt", "t\n")
	gt.Commit(t, dir, "base", 1)
	ignore := filepath.Join(t.TempDir(), "global-ignore")
	if err := os.WriteFile(ignore, []byte("*.log\nsecret/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	global := os.Getenv("GIT_CONFIG_GLOBAL") // set by Isolate, inside the test's temp dir
	gt.Git(t, dir, "config", "--file", global, "core.excludesFile", ignore)
	gt.WriteFile(t, dir, ".git/info/exclude", "*.bak\n")
	gt.WriteFile(t, dir, "a.log", "x\n")
	gt.WriteFile(t, dir, "sub/b.log", "x\n")
	gt.WriteFile(t, dir, "secret/key.txt", "x\n")
	gt.WriteFile(t, dir, "c.bak", "x\n")
	gt.WriteFile(t, dir, "keep.txt", "x\n")
	equal(t, "git's own view", gitLines(t, dir, "ls-files", "--others", "--exclude-standard"), []string{"keep.txt"})

	st := open(t, dir).Status(context.Background(), 10*time.Second)
	if st.Source != "git" {
		t.Fatalf("Source = %q", st.Source)
	}
	equal(t, "untracked", st.Untracked, []string{"keep.txt"})

	// The fallback finds the global gitignore only through ~/.gitconfig
	// (where go-git's gitignore.LoadGlobalPatterns looked, and gitctx's
	// excludesFile still does), not GIT_CONFIG_GLOBAL; it reads
	// info/exclude too.
	t.Run("go-git fallback", func(t *testing.T) {
		home := os.Getenv("HOME")
		gt.WriteFile(t, home, ".gitconfig", "[core]\n\texcludesFile = "+ignore+"\n")
		r := open(t, dir)
		noGit(t)
		st := r.Status(context.Background(), time.Minute)
		if st.Source != "go-git" {
			t.Fatalf("Source = %q", st.Source)
		}
		equal(t, "untracked", st.Untracked, []string{"keep.txt"})
	})
}

func TestStatusTimeout(t *testing.T) {
	dir := newRepo(t)
	for i := range 2000 {
		gt.WriteFile(t, dir, "d"+strconv.Itoa(i%30)+"/f"+strconv.Itoa(i)+".txt", strconv.Itoa(i))
	}
	gt.Commit(t, dir, "many files", 1)
	r := open(t, dir)
	ctx := context.Background()

	t.Run("git", func(t *testing.T) {
		start := time.Now()
		st := r.Status(ctx, time.Nanosecond)
		if st.Available || !strings.Contains(st.Reason, "timed out after 1ns") {
			t.Errorf("Status = %+v, want a timeout", st)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("took %s", d)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if st := r.Status(cctx, time.Minute); st.Available || !strings.Contains(st.Reason, "canceled") {
			t.Errorf("Status = %+v, want cancelled", st)
		}
	})
	t.Run("go-git fallback", func(t *testing.T) {
		noGit(t)
		start := time.Now()
		st := r.Status(ctx, time.Millisecond)
		if st.Available || st.Source != "go-git" || !strings.Contains(st.Reason, "timed out after 1ms") {
			t.Errorf("Status = %+v, want a go-git timeout", st)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("took %s", d)
		}
		// The abandoned status finishes in the background; until then
		// calls say so instead of starting another.
		deadline := time.Now().Add(time.Minute)
		for {
			st = r.Status(ctx, 10*time.Second)
			if st.Available || time.Now().After(deadline) {
				break
			}
			if !strings.Contains(st.Reason, "still running") {
				t.Fatalf("Status = %+v", st)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if !st.Clean() || st.Source != "go-git" {
			t.Errorf("Status after the abandoned one = %+v, want clean", st)
		}
	})
}

func TestAheadBehind(t *testing.T) {
	tests := []struct {
		name                  string
		local, remote         int // commits made after cloning
		wantAhead, wantBehind int
	}{
		{"in sync", 0, 0, 0, 0},
		{"ahead", 2, 0, 2, 0},
		{"behind", 0, 3, 0, 3},
		{"diverged", 2, 1, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newRepo(t)
			gt.WriteFile(t, up, "a.txt", "a\n")
			gt.Commit(t, up, "base", 1)
			dir := filepath.Join(t.TempDir(), "clone")
			gt.Git(t, up, "clone", "-q", up, dir)
			for i := range tt.local {
				gt.WriteFile(t, dir, "local.txt", strconv.Itoa(i))
				gt.Commit(t, dir, "local", 10+i)
			}
			for i := range tt.remote {
				gt.WriteFile(t, up, "remote.txt", strconv.Itoa(i))
				gt.Commit(t, up, "remote", 20+i)
			}
			gt.Git(t, dir, "fetch", "-q")
			r := open(t, dir)
			ahead, behind, ok := r.AheadBehind(context.Background())
			if !ok || ahead != tt.wantAhead || behind != tt.wantBehind {
				t.Errorf("AheadBehind = %d, %d, %v; want %d, %d, true", ahead, behind, ok, tt.wantAhead, tt.wantBehind)
			}
			counts := gt.Git(t, dir, "rev-list", "--left-right", "--count", "HEAD...@{upstream}")
			if want := strconv.Itoa(ahead) + "\t" + strconv.Itoa(behind); counts != want {
				t.Errorf("git rev-list says %q, gitctx %q", counts, want)
			}
		})
	}

	t.Run("no upstream", func(t *testing.T) {
		dir := newRepo(t)
		gt.WriteFile(t, dir, "a.txt", "a\n")
		gt.Commit(t, dir, "base", 1)
		if _, _, ok := open(t, dir).AheadBehind(context.Background()); ok {
			t.Error("ok without an upstream")
		}
	})
	t.Run("upstream ref missing", func(t *testing.T) {
		up := newRepo(t)
		gt.WriteFile(t, up, "a.txt", "a\n")
		gt.Commit(t, up, "base", 1)
		dir := filepath.Join(t.TempDir(), "clone")
		gt.Git(t, up, "clone", "-q", up, dir)
		gt.Git(t, dir, "update-ref", "-d", "refs/remotes/origin/main")
		if _, _, ok := open(t, dir).AheadBehind(context.Background()); ok {
			t.Error("ok with the upstream ref gone")
		}
	})
}

func TestCommitsSince(t *testing.T) {
	dir := newRepo(t)
	gt.WriteFile(t, dir, "a.txt", "1\n2\n3\n")
	gt.WriteFile(t, dir, "b.txt", "x\ny\n")
	gt.WriteFile(t, dir, "old.txt", "o1\no2\no3\no4\n")
	gt.WriteFile(t, dir, "bin.dat", "\x00\x01\x02")
	gt.WriteFile(t, dir, "noeol.txt", "last line")
	base := gt.Commit(t, dir, "base", 1)

	gt.WriteFile(t, dir, "a.txt", "1\nTWO\n3\n4\n5\n") // +3 -1
	c2 := gt.Commit(t, dir, "edit a", 2)

	if err := os.Remove(filepath.Join(dir, "b.txt")); err != nil { // -2
		t.Fatal(err)
	}
	gt.WriteFile(t, dir, "new/n.txt", "1\n2\n3\n4\n5\n")   // +5
	gt.WriteFile(t, dir, "bin.dat", "\x00\x03")            // binary: a file, no lines
	gt.Git(t, dir, "mv", "old.txt", "renamed.txt")         // -4 +4 without renames
	gt.WriteFile(t, dir, "noeol.txt", "last line\nmore\n") // -1 +2
	c3 := gt.Commit(t, dir, "the rest", 3)

	r := open(t, dir)
	ctx := context.Background()
	commits, stat, err := r.CommitsSince(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "commits", hashes(commits), []string{c3, c2})
	equal(t, "files of c3", commits[0].Files, []string{"b.txt", "bin.dat", "new/n.txt", "noeol.txt", "old.txt", "renamed.txt"})
	want := gitctx.DiffStat{Files: 7, Insertions: 3 + 5 + 4 + 2, Deletions: 1 + 2 + 4 + 1}
	if stat != want {
		t.Errorf("stat = %+v, want %+v", stat, want)
	}
	wantShort := "7 files changed, 14 insertions(+), 8 deletions(-)"
	if got := gt.Git(t, dir, "diff", "--shortstat", "--no-renames", base, "HEAD"); strings.TrimSpace(got) != wantShort {
		t.Errorf("git diff --shortstat says %q, want %q", got, wantShort)
	}

	// A side branch merged in, and one that is not.
	gt.Git(t, dir, "checkout", "-q", "-b", "side", c2)
	gt.WriteFile(t, dir, "side.txt", "s\n")
	s1 := gt.Commit(t, dir, "side 1", 4)
	gt.Git(t, dir, "checkout", "-q", "-b", "other", c2)
	gt.WriteFile(t, dir, "other.txt", "o\n")
	o1 := gt.Commit(t, dir, "other 1", 5)
	gt.Git(t, dir, "checkout", "-q", "main")
	gt.GitAt(t, dir, 6, "merge", "-q", "--no-ff", "-m", "merge side", "side")

	tests := []struct {
		name, baseline string
	}{
		{"baseline before the fork", base},
		{"baseline at the fork", c2},
		{"baseline on the merged branch", s1},
		{"baseline on an unmerged branch", o1},
		{"baseline is HEAD", "HEAD"},
		{"baseline by branch name", "other"},
		{"baseline by short hash", c3[:10]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			commits, stat, err := r.CommitsSince(ctx, tt.baseline)
			if err != nil {
				t.Fatal(err)
			}
			equal(t, "commits vs git log base..HEAD", hashes(commits), gitLines(t, dir, "log", "--format=%H", tt.baseline+"..HEAD"))
			short := gt.Git(t, dir, "diff", "--shortstat", "--no-renames", tt.baseline, "HEAD")
			if got := shortstat(stat); got != strings.TrimSpace(short) {
				t.Errorf("stat %q, git diff --shortstat %q", got, short)
			}
		})
	}
	if _, _, err := r.CommitsSince(ctx, "no-such-rev"); !errors.Is(err, gitctx.ErrUnknownRevision) {
		t.Errorf("unknown baseline: %v, want ErrUnknownRevision", err)
	}
}

// shortstat formats a DiffStat as git diff --shortstat does.
func shortstat(s gitctx.DiffStat) string {
	if s.Files == 0 {
		return ""
	}
	plural := func(n int, one, many string) string {
		if n == 1 {
			return strconv.Itoa(n) + one
		}
		return strconv.Itoa(n) + many
	}
	out := plural(s.Files, " file changed", " files changed")
	if s.Insertions > 0 || s.Deletions == 0 {
		out += ", " + plural(s.Insertions, " insertion(+)", " insertions(+)")
	}
	if s.Deletions > 0 || s.Insertions == 0 {
		out += ", " + plural(s.Deletions, " deletion(-)", " deletions(-)")
	}
	return out
}

func TestStateCommits(t *testing.T) {
	dir := newRepo(t)
	gt.WriteFile(t, dir, "RALPH_TASKS.md", "t1\n")
	gt.WriteFile(t, dir, "main.go", "package main\n")
	s1 := gt.Commit(t, dir, "add tasks", 1)
	gt.WriteFile(t, dir, "main.go", "package main // 2\n")
	gt.Commit(t, dir, "code only", 2)
	gt.WriteFile(t, dir, "RALPH_TASKS.md", "t2\n")
	s3 := gt.Commit(t, dir, "edit tasks", 3)
	gt.WriteFile(t, dir, "AGENT.md", "agent\n")
	s4 := gt.Commit(t, dir, "add agent", 4)
	gt.WriteFile(t, dir, "docs/RALPH_TASKS.md", "same name, other path\n")
	gt.Commit(t, dir, "docs", 5)
	gt.Git(t, dir, "rm", "-q", "RALPH_TASKS.md")
	s6 := gt.Commit(t, dir, "remove tasks", 6)
	if err := os.Chmod(filepath.Join(dir, "AGENT.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	s7 := gt.Commit(t, dir, "chmod agent", 7)
	// A side branch that writes goals, merged in: the merge itself takes
	// the side's goals unchanged, so only the side commit counts.
	gt.Git(t, dir, "checkout", "-q", "-b", "side")
	gt.WriteFile(t, dir, "RALPH_GOALS.md", "g\n")
	g1 := gt.Commit(t, dir, "goals on side", 8)
	gt.Git(t, dir, "checkout", "-q", "main")
	gt.WriteFile(t, dir, "main.go", "package main // 3\n")
	gt.Commit(t, dir, "code on main", 9)
	gt.GitAt(t, dir, 10, "merge", "-q", "--no-ff", "-m", "merge side", "side")

	paths := []string{"RALPH_TASKS.md", "AGENT.md", "RALPH_GOALS.md"}
	r := open(t, dir)
	ctx := context.Background()
	got, err := r.StateCommits(ctx, paths, 10)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "state commits", hashes(got), []string{g1, s7, s6, s4, s3, s1})
	equal(t, "git log -- paths", hashes(got), gitLines(t, dir, append([]string{"log", "--format=%H", "--"}, paths...)...))
	two, err := r.StateCommits(ctx, paths, 2)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "n=2", hashes(two), []string{g1, s7})
	if _, err := r.StateCommits(ctx, []string{"../AGENT.md"}, 2); err == nil {
		t.Error("path outside the repository accepted")
	}
}

func TestFileAt(t *testing.T) {
	dir := newRepo(t)
	gt.WriteFile(t, dir, "RALPH_TASKS.md", "one\n")
	gt.WriteFile(t, dir, "docs/x.md", "doc\n")
	c1 := gt.Commit(t, dir, "one", 1)
	gt.GitAt(t, dir, 1, "tag", "-a", "-m", "v1", "v1")
	gt.WriteFile(t, dir, "RALPH_TASKS.md", "two\n")
	gt.Commit(t, dir, "two", 2)

	r := open(t, dir)
	ctx := context.Background()
	tests := []struct {
		rev, path, want string
	}{
		{"HEAD", "RALPH_TASKS.md", "two\n"},
		{"HEAD~1", "RALPH_TASKS.md", "one\n"},
		{"v1", "RALPH_TASKS.md", "one\n"},
		{c1, "RALPH_TASKS.md", "one\n"},
		{c1[:8], "RALPH_TASKS.md", "one\n"},
		{"main", "docs/x.md", "doc\n"},
		{"main", "./docs/../docs/x.md", "doc\n"},
	}
	for _, tt := range tests {
		got, err := r.FileAt(ctx, tt.rev, tt.path)
		if err != nil || string(got) != tt.want {
			t.Errorf("FileAt(%s, %s) = %q, %v; want %q", tt.rev, tt.path, got, err, tt.want)
		}
	}
	if _, err := r.FileAt(ctx, "HEAD", "missing.md"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing path: %v, want fs.ErrNotExist", err)
	}
	if _, err := r.FileAt(ctx, "nope", "RALPH_TASKS.md"); !errors.Is(err, gitctx.ErrUnknownRevision) {
		t.Errorf("bad revision: %v, want ErrUnknownRevision", err)
	}
	for _, p := range []string{"../etc/passwd", "/etc/passwd", "docs", ""} {
		if _, err := r.FileAt(ctx, "HEAD", p); err == nil {
			t.Errorf("FileAt(HEAD, %q) succeeded", p)
		}
	}
}

func TestIsDirty(t *testing.T) {
	dir := newRepo(t)
	for _, f := range []string{"clean.txt", "mod.txt", "staged.txt", "del.txt", "sub/deep.txt"} {
		gt.WriteFile(t, dir, f, f+"\n")
	}
	gt.WriteFile(t, dir, ".gitignore", "*.tmp\n")
	gt.Commit(t, dir, "base", 1)
	gt.WriteFile(t, dir, "mod.txt", "changed\n")
	gt.WriteFile(t, dir, "staged.txt", "changed\n")
	gt.Git(t, dir, "add", "staged.txt")
	if err := os.Remove(filepath.Join(dir, "del.txt")); err != nil {
		t.Fatal(err)
	}
	gt.WriteFile(t, dir, "new.txt", "new\n")
	gt.WriteFile(t, dir, "x.tmp", "ignored\n")
	gt.WriteFile(t, dir, "sub/deep.txt", "changed\n")

	tests := []struct {
		path              string
		wantGit, wantHash bool // the CLI, and the go-git hash comparison
		dir               bool // only git can answer for a directory
	}{
		{"clean.txt", false, false, false},
		{"mod.txt", true, true, false},
		{"staged.txt", true, true, false},
		{"del.txt", true, true, false},
		{"new.txt", true, true, false},
		{"x.tmp", false, true, false}, // the fallback does not consult ignore rules
		{"nope.txt", false, false, false},
		{"sub/deep.txt", true, true, false},
		{"sub", true, false, true}, // anything under it
	}
	r := open(t, dir)
	ctx := context.Background()
	for _, tt := range tests {
		if got, err := r.IsDirty(ctx, tt.path); err != nil || got != tt.wantGit {
			t.Errorf("git: IsDirty(%s) = %v, %v; want %v", tt.path, got, err, tt.wantGit)
		}
	}
	noGit(t)
	for _, tt := range tests {
		if tt.dir {
			if _, err := r.IsDirty(ctx, tt.path); err == nil {
				t.Errorf("go-git: IsDirty(%s) gave an answer for a directory", tt.path)
			}
			continue
		}
		if got, err := r.IsDirty(ctx, tt.path); err != nil || got != tt.wantHash {
			t.Errorf("go-git: IsDirty(%s) = %v, %v; want %v", tt.path, got, err, tt.wantHash)
		}
	}
}

// TestRepositoryFormatV1 covers a repository go-git v5 refuses to open
// itself: any extension under repositoryformatversion 1, even a harmless
// one like worktreeConfig (which git sparse-checkout turns on).
func TestRepositoryFormatV1(t *testing.T) {
	dir := newRepo(t)
	gt.WriteFile(t, dir, "a.txt", "a\n")
	head := gt.Commit(t, dir, "one", 1)
	gt.Git(t, dir, "config", "core.repositoryformatversion", "1")
	gt.Git(t, dir, "config", "extensions.worktreeConfig", "true")
	gt.Git(t, dir, "status") // git itself is happy

	if _, err := git.PlainOpen(dir); !errors.Is(err, git.ErrUnknownExtension) {
		t.Logf("go-git's PlainOpen now gives %v; the lenient open may be unnecessary", err)
	}
	r := open(t, dir)
	if h, err := r.Head(); err != nil || h.Hash != head {
		t.Errorf("Head = %+v, %v", h, err)
	}

	gt.Git(t, dir, "config", "extensions.objectFormat", "sha256")
	_, err := gitctx.Open(dir, gt.Runner{})
	if err == nil || errors.Is(err, gitctx.ErrCorrupt) || !strings.Contains(err.Error(), "unsupported repository format") {
		t.Errorf("Open with objectFormat: %v, want an unsupported-format error", err)
	}
}

// TestConcurrentUse runs every read at once on one Repo; with -race it
// checks the mutex really covers go-git (go-git/go-git#773).
func TestConcurrentUse(t *testing.T) {
	dir := newRepo(t)
	for i := range 20 {
		gt.WriteFile(t, dir, "RALPH_PROGRESS.md", strconv.Itoa(i))
		gt.WriteFile(t, dir, "f"+strconv.Itoa(i)+".txt", "x")
		gt.Commit(t, dir, "c", i)
	}
	r := open(t, dir)
	ctx := context.Background()
	errs := make(chan error, 5*8)
	for range 8 {
		go func() { _, err := r.Log(ctx, 20); errs <- err }()
		go func() { _, err := r.StateCommits(ctx, []string{"RALPH_PROGRESS.md"}, 5); errs <- err }()
		go func() { _, _, err := r.CommitsSince(ctx, "HEAD~10"); errs <- err }()
		go func() { _, err := r.FileAt(ctx, "HEAD~3", "RALPH_PROGRESS.md"); errs <- err }()
		go func() {
			var err error
			if st := r.Status(ctx, 10*time.Second); !st.Available {
				err = errors.New(st.Reason)
			}
			errs <- err
		}()
	}
	for range 5 * 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
