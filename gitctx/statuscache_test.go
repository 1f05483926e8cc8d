//go:build linux

package gitctx_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/gitctx"
	gt "github.com/ralph-dev/ralph/gitctx/gitctxtest"
)

// countingRunner counts the git processes it starts, and its looks for
// a program on PATH.
type countingRunner struct {
	gt.Runner
	runs, looks atomic.Int64
}

func (r *countingRunner) LookPath(name string) (string, error) {
	r.looks.Add(1)
	return r.Runner.LookPath(name)
}

func (r *countingRunner) Start(ctx context.Context, dir, name string, args ...string) (func() ([]byte, error), error) {
	r.runs.Add(1)
	return r.Runner.Start(ctx, dir, name, args...)
}

// A cached status is git's own, after any change a person, an agent or
// git makes: 200 random changes to a repository (tracked files rewritten
// at the same size and given back their old modification time, files
// made, removed and renamed, new folders, modes, the index, commits,
// branches, .gitignore and info/exclude edited in place, files in
// ignored folders), each followed by a status through the cache, at once
// or after the racy window, compared with a fresh git status. The seed is
// printed; RALPH_CACHE_SEED replays it.
func TestCachedStatusIsGits(t *testing.T) {
	global := gt.Isolate(t)
	dir := t.TempDir()
	gt.Git(t, dir, "init", "-q", "-b", "main")
	for name, content := range map[string]string{
		"a.txt": "alpha\n", "src/b.go": "package b\n", "src/deep/c.go": "package c\n",
		".gitignore": ".ralph/\nbuild/\n*.log\n", "docs/d.md": "# D\n",
	} {
		gt.WriteFile(t, dir, name, content)
	}
	gt.Git(t, dir, "add", "-A")
	gt.Git(t, dir, "commit", "-q", "-m", "start")
	if err := os.Mkdir(filepath.Join(dir, ".ralph"), 0o755); err != nil {
		t.Fatal(err)
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("RALPH_CACHE_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (RALPH_CACHE_SEED)", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	const window = 30 * time.Millisecond
	run := &countingRunner{}
	cache := gitctx.StatusCache{File: filepath.Join(dir, ".ralph", "git-status.json"), ConfigFiles: []string{global},
		Env: []string{"HOME=" + os.Getenv("HOME"), "GIT_CONFIG_GLOBAL=" + global}, RacyWindow: window}
	hits := 0
	for round := range 200 {
		what := mutate(t, rng, dir, round)
		if rng.IntN(2) == 0 {
			time.Sleep(window + 5*time.Millisecond)
		}
		want, err := gitctx.CLIStatus(t.Context(), gt.Runner{}, dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			before := run.runs.Load()
			got, err := gitctx.CachedCLIStatus(t.Context(), run, dir, cache, 0)
			if err != nil {
				t.Fatal(err)
			}
			if run.runs.Load() == before {
				hits++
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d, after %s: the cached status differs from git's\ncached %+v\ngit    %+v", round, what, got, want)
			}
		}
	}
	t.Logf("%d of 400 statuses answered from the cache", hits)
	if hits < 60 {
		t.Errorf("only %d of 400 statuses came from the cache: it is not kept", hits)
	}
}

// mutate makes one random change in the repository at dir and says which.
func mutate(t *testing.T, rng *rand.Rand, dir string, round int) string {
	t.Helper()
	tracked := []string{"a.txt", "src/b.go", "src/deep/c.go", "docs/d.md"}
	pick := tracked[rng.IntN(len(tracked))]
	path := filepath.Join(dir, pick)
	switch rng.IntN(14) {
	case 0: // same size, old modification time back: only the change time tells
		fi, err := os.Stat(path)
		if err != nil {
			gt.WriteFile(t, dir, pick, "restored\n")
			return "restored " + pick
		}
		data, _ := os.ReadFile(path)
		for i := range data {
			if data[i] >= 'a' && data[i] < 'z' {
				data[i]++
				break
			}
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
		return "same-size rewrite with the old mtime of " + pick
	case 1:
		gt.WriteFile(t, dir, pick, fmt.Sprintf("round %d\n", round))
		return "rewrote " + pick
	case 2:
		gt.WriteFile(t, dir, fmt.Sprintf("src/new%d.txt", round%5), "new\n")
		return "new file"
	case 3:
		gt.WriteFile(t, dir, fmt.Sprintf("new%d/deeper/x.txt", round%3), "x\n")
		return "new folders"
	case 4:
		_ = os.Remove(path)
		return "removed " + pick
	case 5:
		_ = os.Rename(path, path+".moved")
		return "renamed " + pick
	case 6:
		_ = os.Chmod(path, 0o755)
		return "chmod +x " + pick
	case 7:
		gt.Git(t, dir, "add", "-A")
		return "git add -A"
	case 8:
		gt.Git(t, dir, "add", "-A")
		gt.Git(t, dir, "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("round %d", round))
		return "commit"
	case 9:
		gt.Git(t, dir, "checkout", "-q", "-B", fmt.Sprintf("b%d", round%2))
		return "switched branch"
	case 10: // in place: the folder's times do not change
		f, err := os.OpenFile(filepath.Join(dir, ".gitignore"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "new%d/\n", round%3)
		f.Close()
		return ".gitignore appended in place"
	case 11:
		gt.WriteFile(t, dir, "build/out.bin", fmt.Sprint(round))
		gt.WriteFile(t, dir, fmt.Sprintf("run%d.log", round%2), "log\n")
		return "ignored files"
	case 12:
		f, err := os.OpenFile(filepath.Join(dir, ".git", "info", "exclude"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "src/new%d.txt\n", round%5)
		f.Close()
		return "info/exclude appended"
	default:
		gt.Git(t, dir, "reset", "-q", "--hard")
		gt.Git(t, dir, "clean", "-q", "-fd")
		return "reset --hard and clean"
	}
}

// Within the racy window nothing is kept: a file rewritten at its old size
// within the same tick of the clock would look unchanged.
func TestCachedStatusRacyNotKept(t *testing.T) {
	global := gt.Isolate(t)
	dir := t.TempDir()
	gt.Git(t, dir, "init", "-q", "-b", "main")
	gt.WriteFile(t, dir, "a.txt", "alpha\n")
	gt.WriteFile(t, dir, ".gitignore", ".ralph/\n")
	if err := os.Mkdir(filepath.Join(dir, ".ralph"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, ".ralph", "git-status.json")
	kept := func(c gitctx.StatusCache) bool {
		t.Helper()
		if _, err := gitctx.CachedCLIStatus(t.Context(), gt.Runner{}, dir, c, 0); err != nil {
			t.Fatal(err)
		}
		_, err := os.Stat(c.File)
		return err == nil
	}
	cache := gitctx.StatusCache{File: file, ConfigFiles: []string{global}}
	if kept(cache) {
		t.Fatal("a cache was kept from a snapshot taken within the racy window")
	}
	time.Sleep(5 * time.Millisecond)
	cache.RacyWindow = time.Millisecond
	// Off where the environment moves the repository.
	if kept(gitctx.StatusCache{File: file, Env: []string{"GIT_INDEX_FILE=/elsewhere"}, RacyWindow: time.Millisecond}) {
		t.Fatal("a cache was kept with GIT_INDEX_FILE set")
	}
	// Off in a folder git does not ignore: the file would be in the status.
	if kept(gitctx.StatusCache{File: filepath.Join(dir, "git-status.json"), RacyWindow: time.Millisecond}) {
		t.Fatal("a cache was kept in a folder git lists")
	}
	// Kept otherwise.
	if !kept(cache) {
		t.Fatal("no cache was kept for a quiet repository")
	}
}

// A folder a .gitignore ignores by name and then takes back ("!build/")
// is walked: a file made in it later is in git's answer, and so in the
// cache's.
func TestCachedStatusNegatedFolder(t *testing.T) {
	global := gt.Isolate(t)
	dir := t.TempDir()
	gt.Git(t, dir, "init", "-q", "-b", "main")
	gt.WriteFile(t, dir, ".gitignore", ".ralph/\nbuild/\n!build/\n")
	gt.WriteFile(t, dir, "build/a.txt", "a\n")
	if err := os.Mkdir(filepath.Join(dir, ".ralph"), 0o755); err != nil {
		t.Fatal(err)
	}
	cache := gitctx.StatusCache{File: filepath.Join(dir, ".ralph", "git-status.json"), ConfigFiles: []string{global}, RacyWindow: time.Millisecond}
	time.Sleep(5 * time.Millisecond)
	if _, err := gitctx.CachedCLIStatus(t.Context(), gt.Runner{}, dir, cache, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cache.File); err != nil {
		t.Fatalf("no cache kept: %v", err)
	}
	gt.WriteFile(t, dir, "build/b.txt", "b\n")
	got, err := gitctx.CachedCLIStatus(t.Context(), gt.Runner{}, dir, cache, 0)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := gitctx.CLIStatus(t.Context(), gt.Runner{}, dir, 0)
	if !reflect.DeepEqual(got, want) || !slices.Contains(got.Untracked, "build/b.txt") {
		t.Fatalf("cached %v, git %v", got.Untracked, want.Untracked)
	}
}

// StartCLIStatus has started git when it returns (the caller's other work
// then comes second), and its wait gives CLIStatus's answer; outside a
// repository it starts nothing.
func TestStartCLIStatusStartsGitFirst(t *testing.T) {
	gt.Isolate(t)
	dir := t.TempDir()
	gt.Git(t, dir, "init", "-q", "-b", "main")
	gt.WriteFile(t, dir, "new.txt", "new\n")
	run := &countingRunner{}
	wait := gitctx.StartCLIStatus(t.Context(), run, dir, 0)
	if n := run.runs.Load(); n != 1 {
		t.Fatalf("%d git processes started when StartCLIStatus returned, want 1", n)
	}
	st, err := wait()
	if err != nil || !st.Available || !slices.Equal(st.Untracked, []string{"new.txt"}) {
		t.Errorf("wait() = %+v, %v; want new.txt untracked", st, err)
	}

	outside := &countingRunner{}
	_, err = gitctx.StartCLIStatus(t.Context(), outside, t.TempDir(), 0)()
	if !errors.Is(err, gitctx.ErrNoCLI) || outside.runs.Load() != 0 {
		t.Errorf("outside a repository: %v after %d starts; want ErrNoCLI and none", err, outside.runs.Load())
	}
}
