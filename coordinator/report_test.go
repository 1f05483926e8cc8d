package coordinator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/gitctx"
	"github.com/ralph-dev/ralph/gitctx/gitctxtest"
)

// projectDir writes files into a fresh folder and returns it. It fails
// the test if a .git above the temporary folder would be taken for the
// project's repository.
func projectDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for d := filepath.Dir(dir); d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			t.Fatalf("%s has a .git above it; set TMPDIR elsewhere", dir)
		}
	}
	for name, content := range files {
		gitctxtest.WriteFile(t, dir, name, content)
	}
	return dir
}

func buildReport(t *testing.T, dir string) *Report {
	t.Helper()
	return buildReportOpts(t, dir, ReportOptions{})
}

func buildReportOpts(t *testing.T, dir string, opts ReportOptions) *Report {
	t.Helper()
	r, err := BuildReport(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("BuildReport: %v", err)
	}
	return r
}

const smallTasks = `# Tasks

- [x] T1: Model the cart
- [ ] T2: Price the cart
  - after: T1
`

func TestBuildReportNoGit(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": smallTasks, "go.mod": "module x\n"})
	r := buildReport(t, dir)
	if r.Git != nil {
		t.Fatalf("Git = %+v outside a repository", r.Git)
	}
	if !errors.Is(r.GitErr, gitctx.ErrNotRepo) {
		t.Errorf("GitErr = %v, want ErrNotRepo", r.GitErr)
	}
	if !slices.Equal(r.Problems, []string{NoGitProblem}) {
		t.Errorf("Problems = %q", r.Problems)
	}
	if r.State.Tasks == nil || len(r.State.Tasks.Items()) != 2 {
		t.Fatalf("the state was not read: %+v", r.State.Tasks)
	}
	if r.Project == nil || len(r.Project.Types) == 0 || r.Project.Types[0].Name != "go" {
		t.Errorf("Project = %+v, want a go project", r.Project)
	}
	text, cur := r.Prompt(PromptOptions{})
	if cur == nil || cur.ID != "T2" {
		t.Errorf("current task = %v, want T2", cur)
	}
	if strings.Contains(text, "## Git") {
		t.Errorf("prompt without git has a Git section:\n%s", text)
	}
}

func TestBuildReportCorruptRepo(t *testing.T) {
	gitctxtest.Isolate(t)
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": smallTasks})
	gitctxtest.Git(t, dir, "init", "-q", "-b", "main")
	gitctxtest.Commit(t, dir, "Plan", 1)
	for name, content := range map[string]string{
		"garbage HEAD":   "not a ref, not a hash\n",
		"dangling hash":  "0123456789abcdef0123456789abcdef01234567\n",
		"not under refs": "ref: HEAD\n",
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			r := buildReport(t, dir)
			if r.Git != nil {
				t.Fatalf("Git = %+v from a corrupt repository", r.Git)
			}
			if !errors.Is(r.GitErr, gitctx.ErrCorrupt) {
				t.Errorf("GitErr = %v, want ErrCorrupt", r.GitErr)
			}
			if len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "looks corrupt") {
				t.Errorf("Problems = %q, want one saying the repository looks corrupt", r.Problems)
			}
			if r.State.Tasks == nil || len(r.State.Tasks.Items()) != 2 {
				t.Errorf("the state was not read")
			}
		})
	}
}

func TestBuildReportUnborn(t *testing.T) {
	gitctxtest.Isolate(t)
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": smallTasks + "\n## Session\n\n- status: running\n- baseline: 0123456\n"})
	gitctxtest.Git(t, dir, "init", "-q", "-b", "trunk")
	r := buildReport(t, dir)
	g := r.Git
	if g == nil {
		t.Fatalf("Git = nil in an empty repository; problems %q", r.Problems)
	}
	if !g.Unborn || g.Branch != "trunk" || g.Head != "" || g.Detached {
		t.Errorf("Git = %+v, want unborn trunk", g)
	}
	if len(g.Recent) != 0 || len(g.StateCommits) != 0 || g.SinceBaseline != nil || g.UpstreamKnown {
		t.Errorf("history in an empty repository: %+v", g)
	}
	if !g.Status.Available || !slices.Equal(g.Status.Untracked, []string{"RALPH_TASKS.md"}) || !g.Dirty() {
		t.Errorf("Status = %+v, want RALPH_TASKS.md untracked", g.Status)
	}
	if len(r.Problems) != 0 {
		t.Errorf("Problems = %q; an empty repository is not a problem, nor is a baseline it cannot have yet", r.Problems)
	}
	if !r.Interrupted() {
		t.Errorf("session %+v not interrupted", r.Session)
	}
	text, _ := r.Prompt(PromptOptions{})
	if !strings.Contains(text, "- branch trunk, no commits yet\n") {
		t.Errorf("prompt does not say the branch has no commits:\n%s", text)
	}
}

// TestBuildReportSubfolder: a project in a folder of a larger repository
// (a monorepo) finds the commits that changed its own state files.
func TestBuildReportSubfolder(t *testing.T) {
	gitctxtest.Isolate(t)
	repo := projectDir(t, map[string]string{"README": "monorepo\n", "shop/RALPH_TASKS.md": smallTasks})
	gitctxtest.Git(t, repo, "init", "-q", "-b", "main")
	gitctxtest.Commit(t, repo, "Start the shop", 1)
	gitctxtest.WriteFile(t, repo, "README", "changed\n")
	gitctxtest.Commit(t, repo, "Unrelated", 2)
	r := buildReport(t, filepath.Join(repo, "shop"))
	if r.Git == nil {
		t.Fatalf("Git = nil; problems %q", r.Problems)
	}
	if len(r.Git.StateCommits) != 1 || r.Git.StateCommits[0].Subject != "Start the shop" {
		t.Errorf("StateCommits = %+v, want the commit that added shop/RALPH_TASKS.md", r.Git.StateCommits)
	}
}

func TestBuildReportBaseline(t *testing.T) {
	gitctxtest.Isolate(t)
	dir := projectDir(t, map[string]string{"go.mod": "module x\n"})
	gitctxtest.Git(t, dir, "init", "-q", "-b", "main")
	base := gitctxtest.Commit(t, dir, "Start", 1)
	gitctxtest.WriteFile(t, dir, "RALPH_TASKS.md", smallTasks+"\n## Session\n\n- status: running\n- baseline: "+base[:10]+"\n")
	gitctxtest.Commit(t, dir, "Plan", 2)
	gitctxtest.WriteFile(t, dir, "a.go", "package x\n")
	gitctxtest.Commit(t, dir, "Code", 3)
	r := buildReport(t, dir)
	sb := r.Git.SinceBaseline
	if sb == nil || len(sb.Commits) != 2 || sb.Stat.Files != 2 || sb.Commits[0].Subject != "Code" {
		t.Fatalf("SinceBaseline = %+v, want 2 commits and 2 files", sb)
	}

	// A baseline that history no longer has is a problem, not an error.
	gitctxtest.WriteFile(t, dir, "RALPH_TASKS.md", smallTasks+"\n## Session\n\n- status: running\n- baseline: 0123456789\n")
	r = buildReport(t, dir)
	if r.Git == nil || r.Git.SinceBaseline != nil {
		t.Fatalf("Git = %+v", r.Git)
	}
	if len(r.Problems) != 1 || !strings.HasPrefix(r.Problems[0], "commits since the session's baseline 0123456: ") {
		t.Errorf("Problems = %q", r.Problems)
	}
}

// TestBuildReportStatusFallback: without the git CLI the work tree status
// comes from go-git; with a deadline too short for any status, it is
// unavailable and everything else is still there.
func TestBuildReportStatusFallback(t *testing.T) {
	gitctxtest.Isolate(t)
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": smallTasks})
	gitctxtest.Git(t, dir, "init", "-q", "-b", "main")
	gitctxtest.Commit(t, dir, "Plan", 1)
	gitctxtest.WriteFile(t, dir, "notes.txt", "x\n")

	r := buildReport(t, dir)
	if st := r.Git.Status; st.Source != "git" || !slices.Equal(st.Untracked, []string{"notes.txt"}) {
		t.Errorf("with git: Status = %+v", st)
	}

	t.Run("no git CLI", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		r := buildReport(t, dir)
		st := r.Git.Status
		if !st.Available || st.Source != "go-git" || !slices.Equal(st.Untracked, []string{"notes.txt"}) {
			t.Errorf("Status = %+v, want go-git's, with notes.txt untracked", st)
		}
	})

	t.Run("deadline", func(t *testing.T) {
		start := time.Now()
		r := buildReportOpts(t, dir, ReportOptions{StatusTimeout: time.Nanosecond})
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("BuildReport took %s with a 1ns status deadline", took)
		}
		st := r.Git.Status
		if st.Available || !strings.HasPrefix(st.Reason, "status unavailable: ") || r.Git.Dirty() {
			t.Errorf("Status = %+v, want unavailable", st)
		}
		if r.Git.Head == "" || len(r.Git.Recent) != 1 || len(r.Git.StateCommits) != 1 {
			t.Errorf("without a status the rest of git is still wanted: %+v", r.Git)
		}
		text, _ := r.Prompt(PromptOptions{})
		if strings.Contains(text, "work tree:") {
			t.Errorf("prompt claims a work tree state it does not know:\n%s", text)
		}
	})
}

func TestBuildReportUnreadableState(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": "# Tasks\n\x00\n"})
	if r, err := BuildReport(context.Background(), dir, ReportOptions{}); err == nil {
		t.Fatalf("BuildReport of a binary task file: %+v, want an error", r.State.Tasks)
	}
}

// A HistoryCache gives the git facts of the last report while no ref has
// changed, without reading the repository (here its objects are moved
// away, which would fail a read), and reads them again after a commit or a
// new session baseline.
func TestBuildReportHistoryCache(t *testing.T) {
	gitctxtest.Isolate(t)
	dir := projectDir(t, map[string]string{"go.mod": "module x\n"})
	gitctxtest.Git(t, dir, "init", "-q", "-b", "main")
	base := gitctxtest.Commit(t, dir, "Start", 1)
	gitctxtest.WriteFile(t, dir, "RALPH_TASKS.md", smallTasks+"\n## Session\n\n- status: running\n- baseline: "+base[:10]+"\n")
	gitctxtest.Commit(t, dir, "Plan", 2)
	var h HistoryCache
	report := func() *Report {
		t.Helper()
		r, err := BuildReport(t.Context(), dir, ReportOptions{NoDetect: true, NoStatus: true, History: &h})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := report()
	if first.Git == nil || len(first.Git.Recent) != 2 || first.Git.SinceBaseline == nil || len(first.Git.SinceBaseline.Commits) != 1 {
		t.Fatalf("first report: %+v", first.Git)
	}
	objects := filepath.Join(dir, ".git", "objects")
	if err := os.Rename(objects, objects+".away"); err != nil {
		t.Fatal(err)
	}
	kept := report()
	if kept.Git == nil || kept.Git.Head != first.Git.Head || len(kept.Git.Recent) != 2 || kept.Git.SinceBaseline == nil || len(kept.Problems) != 0 {
		t.Fatalf("kept report: %+v, problems %q", kept.Git, kept.Problems)
	}
	if err := os.Rename(objects+".away", objects); err != nil {
		t.Fatal(err)
	}
	gitctxtest.WriteFile(t, dir, "a.go", "package x\n")
	head := gitctxtest.Commit(t, dir, "Code", 3)
	after := report()
	if after.Git.Head != head || len(after.Git.Recent) != 3 || len(after.Git.SinceBaseline.Commits) != 2 {
		t.Fatalf("after a commit: head %s, %d recent, since %+v", after.Git.Head, len(after.Git.Recent), after.Git.SinceBaseline)
	}
	// A new session's baseline: the commits since it are read anew.
	gitctxtest.WriteFile(t, dir, "RALPH_TASKS.md", smallTasks+"\n## Session\n\n- status: running\n- baseline: "+head[:10]+"\n")
	again := report()
	if again.Git.SinceBaseline == nil || again.Git.SinceBaseline.Baseline != head[:10] || len(again.Git.SinceBaseline.Commits) != 0 {
		t.Fatalf("after a new baseline: %+v", again.Git.SinceBaseline)
	}
}
