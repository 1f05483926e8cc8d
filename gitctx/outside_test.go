//go:build linux

package gitctx_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ralph-dev/ralph/gitctx"
	gt "github.com/ralph-dev/ralph/gitctx/gitctxtest"
)

// Outside any repository CLIStatus starts no git (it would only fail),
// and wherever git could find one it asks git: a work tree, a folder
// inside one, a linked worktree's .git file, a dangling .git link, a git
// folder itself, and a plain folder with GIT_DIR pointing at a
// repository. In each, whether it started git agrees with git's own
// verdict on `git rev-parse --git-dir` there.
func TestCLIStatusOutsideARepository(t *testing.T) {
	gt.Isolate(t)
	base := t.TempDir()
	if out, err := gt.GitEnv(base, nil, "rev-parse", "--git-dir"); err == nil {
		t.Fatalf("the temporary folder %s is inside a git repository (%s): run the tests with TMPDIR outside one", base, out)
	}
	repo := filepath.Join(base, "repo")
	gt.Git(t, base, "init", "-q", repo)
	gt.Commit(t, repo, "first", 1)
	linked := filepath.Join(base, "linked")
	gt.Git(t, repo, "worktree", "add", "-q", linked)
	plain := filepath.Join(base, "plain", "deeper")
	dangling := filepath.Join(base, "dangling")
	for _, d := range []string{plain, filepath.Join(repo, "sub"), dangling} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(base, "nowhere"), filepath.Join(dangling, ".git")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, dir string
		env       []string
		wantGit   bool
	}{
		{"plain folder", plain, nil, false},
		{"work tree", repo, nil, true},
		{"folder in a work tree", filepath.Join(repo, "sub"), nil, true},
		{"linked worktree", linked, nil, true},
		{"dangling .git link", dangling, nil, true},
		{"git folder", filepath.Join(repo, ".git"), nil, true},
		{"GIT_DIR set", plain, []string{"GIT_DIR", filepath.Join(repo, ".git")}, true},
		{"GIT_WORK_TREE set", plain, []string{"GIT_WORK_TREE", repo}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.env != nil {
				t.Setenv(c.env[0], c.env[1])
			}
			run := &countingRunner{}
			st, err := gitctx.CLIStatus(t.Context(), run, c.dir, 0)
			started := run.runs.Load() > 0
			if started != c.wantGit {
				t.Fatalf("started git: %v, want %v (status %+v, %v)", started, c.wantGit, st, err)
			}
			_, gitErr := gt.GitEnv(c.dir, nil, "rev-parse", "--git-dir")
			if !started && gitErr == nil {
				t.Fatalf("git finds a repository from %s, but CLIStatus did not ask it", c.dir)
			}
			if !started && (!errors.Is(err, gitctx.ErrNoCLI) || !errors.Is(err, gitctx.ErrNotRepo) || st.Available) {
				t.Fatalf("outside a repository: status %+v, error %v; want none, ErrNoCLI and ErrNotRepo", st, err)
			}
		})
	}
}

// Outside any repository a status through the cache starts no git and
// does not look for one on PATH either: the cache's key (which names the
// git program) is made only for a work tree it may keep a status of. The
// look was a stat in every folder of PATH before git's, about a
// millisecond of every ralph status in a folder without git.
func TestCachedStatusOutsideARepository(t *testing.T) {
	gt.Isolate(t)
	dir := t.TempDir()
	if out, err := gt.GitEnv(dir, nil, "rev-parse", "--git-dir"); err == nil {
		t.Fatalf("the temporary folder %s is inside a git repository (%s): run the tests with TMPDIR outside one", dir, out)
	}
	run := &countingRunner{}
	cache := gitctx.StatusCache{File: filepath.Join(dir, ".ralph", "status.json")}
	st, err := gitctx.CachedCLIStatus(t.Context(), run, dir, cache, 0)
	if !errors.Is(err, gitctx.ErrNotRepo) || st.Available {
		t.Errorf("status %+v, error %v; want none and ErrNotRepo", st, err)
	}
	if n, looks := run.runs.Load(), run.looks.Load(); n != 0 || looks != 0 {
		t.Errorf("%d git processes started and %d looks on PATH, want none", n, looks)
	}
}
