package gitctx_test

import (
	"context"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/gitctx"
	"github.com/ralph-dev/ralph/gitctx/gitctxtest"
)

const (
	bigFiles   = 100_000
	bigCommits = 20_000
)

// bigRepo returns the cached large repository, building it on first use.
func bigRepo(b *testing.B) string {
	b.Helper()
	if testing.Short() {
		b.Skipf("skipping: -short; the %d-file, %d-commit repository takes a minute or more to generate", bigFiles, bigCommits)
	}
	gitctxtest.Isolate(b)
	dir := gitctxtest.CacheDir(bigFiles, bigCommits)
	gitctxtest.BigRepo(b, dir, bigFiles, bigCommits)
	return dir
}

func BenchmarkStatusBig(b *testing.B) {
	dir := bigRepo(b)
	r, err := gitctx.Open(dir, gitctxtest.Runner{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		st := r.Status(ctx, time.Minute)
		if !st.Available || st.Source != "git" || !st.Clean() {
			b.Fatalf("status: %+v", st)
		}
	}
}

// BenchmarkPlainGitStatusBig is the floor for BenchmarkStatusBig: git
// itself, with the default untracked-file mode and nothing parsed.
func BenchmarkPlainGitStatusBig(b *testing.B) {
	dir := bigRepo(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := (gitctxtest.Runner{}).Output(ctx, dir, "git", "status", "--porcelain=v2", "-z"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGoGitStatusBig is the status without git on the same
// repository, to show why it is only a fallback.
func BenchmarkGoGitStatusBig(b *testing.B) {
	dir := bigRepo(b)
	r, err := gitctx.Open(dir, gitctxtest.Runner{})
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("PATH", b.TempDir()) // no git: take the go-git fallback
	ctx := context.Background()
	for b.Loop() {
		st := r.Status(ctx, 10*time.Minute)
		if !st.Available || st.Source != "go-git" || !st.Clean() {
			b.Fatalf("status: %+v", st)
		}
	}
}

func BenchmarkLogBig(b *testing.B) {
	dir := bigRepo(b)
	r, err := gitctx.Open(dir, gitctxtest.Runner{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		log, err := r.Log(ctx, 20)
		if err != nil || len(log) != 20 || len(log[0].Files) != 1 {
			b.Fatalf("log: %d commits, %v", len(log), err)
		}
	}
}

// BenchmarkStateCommitsBig looks for the last 5 commits to the one state
// file, which only every 100th commit touches: 500 commits deep.
func BenchmarkStateCommitsBig(b *testing.B) {
	dir := bigRepo(b)
	r, err := gitctx.Open(dir, gitctxtest.Runner{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		cs, err := r.StateCommits(ctx, []string{"RALPH_PROGRESS.md", "AGENT.md"}, 5)
		if err != nil || len(cs) != 5 {
			b.Fatalf("state commits: %d, %v", len(cs), err)
		}
	}
}

func BenchmarkOpenHeadSmall(b *testing.B) {
	gitctxtest.Isolate(b)
	dir := b.TempDir()
	gitctxtest.Git(b, dir, "init", "-q", "-b", "main")
	for i := range 10 {
		gitctxtest.WriteFile(b, dir, "f.txt", string(rune('a'+i)))
		gitctxtest.Commit(b, dir, "c", i)
	}
	for b.Loop() {
		r, err := gitctx.Open(dir, gitctxtest.Runner{})
		if err != nil {
			b.Fatal(err)
		}
		if h, err := r.Head(); err != nil || h.Branch != "main" {
			b.Fatalf("head: %+v, %v", h, err)
		}
	}
}

// wideRoot returns the cached repository of 20,000 files and 10 commits
// whose root commit adds them all, the one issue 14 measured `ralph
// context` on: a Log that reaches the root commit lists what it changed.
func wideRoot(b *testing.B) string {
	b.Helper()
	gitctxtest.Isolate(b)
	dir := gitctxtest.CacheDir(20_000, 10)
	gitctxtest.BigRepo(b, dir, 20_000, 10)
	return dir
}

// BenchmarkOpenHeadWide is what every command that shows git facts pays
// first: Open (which reads HEAD's commit) and Head, in a repository whose
// pack holds about 20,000 objects.
func BenchmarkOpenHeadWide(b *testing.B) {
	dir := wideRoot(b)
	for b.Loop() {
		r, err := gitctx.Open(dir, gitctxtest.Runner{})
		if err != nil {
			b.Fatal(err)
		}
		if h, err := r.Head(); err != nil || h.Branch != "main" {
			b.Fatalf("head: %+v, %v", h, err)
		}
		r.Close()
	}
}

// BenchmarkContextHistoryWide is the history `ralph context` reads, from
// Open to Close: Head, Log(10) down to the 20,000-file root commit, and
// the state-file commits.
func BenchmarkContextHistoryWide(b *testing.B) {
	dir := wideRoot(b)
	ctx := context.Background()
	for b.Loop() {
		r, err := gitctx.Open(dir, gitctxtest.Runner{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Head(); err != nil {
			b.Fatal(err)
		}
		log, err := r.Log(ctx, 10)
		if err != nil || len(log) != 10 {
			b.Fatalf("log: %d commits, %v", len(log), err)
		}
		if _, err := r.StateCommits(ctx, []string{"RALPH_PROGRESS.md", "AGENT.md"}, 5); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

// BenchmarkGoGitStatusWide is the status fallback (no git CLI) on the
// 20,000-file work tree.
func BenchmarkGoGitStatusWide(b *testing.B) {
	dir := wideRoot(b)
	r, err := gitctx.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	for b.Loop() {
		st := r.Status(ctx, 10*time.Minute)
		if !st.Available || st.Source != "go-git" || !st.Clean() {
			b.Fatalf("status: %+v", st)
		}
	}
}
