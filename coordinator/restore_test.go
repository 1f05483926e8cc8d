package coordinator

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/gitctx"
	"github.com/ralph-dev/ralph/gitctx/gitctxtest"
	"github.com/ralph-dev/ralph/mdstate"
)

const (
	restorePlan   = "# Tasks\n\n- [ ] T1: Model the cart\n- [ ] T2: Price the cart\n"
	restoreHead   = "# Tasks\n\n- [x] T1: Model the cart\n- [ ] T2: Price the cart\n"
	restoreEdited = "# Tasks\n\n- [x] T1: Model the cart\n- [ ] T2: Price the cart\n  - note: a hand edit nobody committed\n"
)

// restoreRepo makes a repository whose RALPH_TASKS.md was committed twice
// (restorePlan, then restoreHead) and whose RALPH_GOALS.md once, and
// returns its root and the hashes of those two commits.
func restoreRepo(t *testing.T) (dir, plan, head string) {
	t.Helper()
	gitctxtest.Isolate(t)
	dir = t.TempDir()
	gitctxtest.Git(t, dir, "init", "-q", "-b", "main")
	gitctxtest.WriteFile(t, dir, "go.mod", "module example.com/shop\n")
	gitctxtest.WriteFile(t, dir, ".gitignore", ".ralph/\n")
	gitctxtest.Commit(t, dir, "Start", 1)
	gitctxtest.WriteFile(t, dir, mdstate.TasksFile, restorePlan)
	gitctxtest.WriteFile(t, dir, mdstate.GoalsFile, "# Goals\n\n- [ ] G1: Pay by card\n")
	plan = gitctxtest.Commit(t, dir, "Plan the work", 2)
	gitctxtest.WriteFile(t, dir, mdstate.TasksFile, restoreHead)
	head = gitctxtest.Commit(t, dir, "Finish T1", 3)
	return dir, plan, head
}

func checkFile(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Errorf("%s =\n%s\nwant\n%s", filepath.Base(path), b, want)
	}
}

func TestRestore(t *testing.T) {
	dir, plan, head := restoreRepo(t)
	p := mdstate.Open(dir)
	tasks := p.Path(mdstate.TasksFile)
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	opts := RestoreOptions{File: mdstate.TasksFile, Now: now}

	// As committed: nothing to do.
	res, err := Restore(t.Context(), p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Unchanged || res.Rev != head || res.Commit == nil || res.Commit.Subject != "Finish T1" || res.Backup != "" {
		t.Fatalf("Restore of a clean file = %+v; want unchanged at %s", res, head)
	}

	// Uncommitted hand edits are refused, and nothing is written.
	gitctxtest.WriteFile(t, dir, mdstate.TasksFile, restoreEdited)
	if _, err := Restore(t.Context(), p, opts); !errors.Is(err, ErrUncommitted) {
		t.Fatalf("Restore over hand edits: %v; want ErrUncommitted", err)
	}
	checkFile(t, tasks, restoreEdited)
	if _, err := os.Stat(filepath.Join(dir, mdstate.BackupDir)); !os.IsNotExist(err) {
		t.Errorf("a refused restore made %s: %v", mdstate.BackupDir, err)
	}

	// Forced: the last commit's version, the hand edits in the backup.
	opts.Force = true
	res, err = Restore(t.Context(), p, opts)
	if err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(dir, ".ralph", "backup", "RALPH_TASKS.md.20261121T100000Z")
	if res.Unchanged || res.Rev != head || res.Backup != backup {
		t.Fatalf("forced Restore = %+v; want %s restored, backup %s", res, head, backup)
	}
	checkFile(t, tasks, restoreHead)
	checkFile(t, backup, restoreEdited)
	// Written through the project, which knows it wrote it.
	if changed, ok, err := p.ChangedSinceOwnWrite(mdstate.TasksFile); changed || !ok || err != nil {
		t.Errorf("ChangedSinceOwnWrite = %v, %v, %v; want false, true, nil", changed, ok, err)
	}

	// From any revision; a clean file needs no force, and its backup in
	// the same second takes the next name.
	res, err = Restore(t.Context(), p, RestoreOptions{File: mdstate.TasksFile, From: "HEAD~1", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rev != "HEAD~1" || res.Commit != nil || res.Backup != backup+".2" {
		t.Fatalf("Restore --from HEAD~1 = %+v", res)
	}
	checkFile(t, tasks, restorePlan)
	checkFile(t, backup+".2", restoreHead)
	res, err = Restore(t.Context(), p, RestoreOptions{File: mdstate.TasksFile, From: plan[:7], Now: now})
	if err != nil || !res.Unchanged {
		t.Fatalf("Restore --from %s = %+v, %v; want unchanged", plan[:7], res, err)
	}
}

func TestRestoreErrors(t *testing.T) {
	dir, _, _ := restoreRepo(t)
	p := mdstate.Open(dir)
	tasks := p.Path(mdstate.TasksFile)
	tests := []struct {
		name string
		opts RestoreOptions
		is   error  // errors.Is
		msg  string // or the whole message
	}{
		{"no such revision", RestoreOptions{File: mdstate.TasksFile, From: "no-such-branch"}, gitctx.ErrUnknownRevision, ""},
		{"no such commit", RestoreOptions{File: mdstate.TasksFile, From: strings.Repeat("0123456789", 4)}, gitctx.ErrUnknownRevision, ""},
		{"not there yet", RestoreOptions{File: mdstate.TasksFile, From: "HEAD~2"}, nil,
			"RALPH_TASKS.md did not exist at HEAD~2; see `ralph history RALPH_TASKS.md`"},
		{"never committed", RestoreOptions{File: mdstate.TodoFile}, nil,
			"RALPH_TODO.md has never been committed, so there is no version to restore"},
	}
	gitctxtest.WriteFile(t, dir, mdstate.TodoFile, "# To-do\n")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Restore(t.Context(), p, tc.opts)
			switch {
			case err == nil:
				t.Fatal("no error")
			case tc.is != nil && !errors.Is(err, tc.is):
				t.Fatalf("error %v; want %v", err, tc.is)
			case tc.msg != "" && err.Error() != tc.msg:
				t.Fatalf("error %q; want %q", err, tc.msg)
			}
			checkFile(t, tasks, restoreHead)
		})
	}

	// A folder in the file's place.
	if err := os.Remove(tasks); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tasks, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(t.Context(), p, RestoreOptions{File: mdstate.TasksFile, Force: true}); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Restore onto a folder: %v; want it refused", err)
	}

	// Outside git.
	other := mdstate.Open(t.TempDir())
	if _, err := Restore(t.Context(), other, RestoreOptions{File: mdstate.TasksFile}); !errors.Is(err, gitctx.ErrNotRepo) {
		t.Errorf("Restore outside git: %v; want ErrNotRepo", err)
	}
}

func TestRestoreDeletedFile(t *testing.T) {
	dir, _, _ := restoreRepo(t)
	p := mdstate.Open(dir)
	if err := os.Remove(p.Path(mdstate.GoalsFile)); err != nil {
		t.Fatal(err)
	}
	res, err := Restore(t.Context(), p, RestoreOptions{File: mdstate.GoalsFile})
	if err != nil {
		t.Fatal(err)
	}
	if res.Backup != "" || res.Commit == nil || res.Commit.Subject != "Plan the work" {
		t.Errorf("Restore of a deleted file = %+v; want no backup, from \"Plan the work\"", res)
	}
	checkFile(t, p.Path(mdstate.GoalsFile), "# Goals\n\n- [ ] G1: Pay by card\n")
}

// In a project below the work tree's root, and in a shallow clone that
// lacks the commit that last changed the file, HEAD's version is restored.
func TestRestoreShallowSubfolder(t *testing.T) {
	gitctxtest.Isolate(t)
	origin := t.TempDir()
	gitctxtest.Git(t, origin, "init", "-q", "-b", "main")
	gitctxtest.WriteFile(t, origin, "app/"+mdstate.TasksFile, restoreHead)
	gitctxtest.Commit(t, origin, "Plan", 1)
	gitctxtest.WriteFile(t, origin, "README", "later\n")
	gitctxtest.Commit(t, origin, "Docs", 2)
	clone := filepath.Join(t.TempDir(), "clone")
	gitctxtest.Git(t, origin, "clone", "-q", "--depth", "1", "file://"+origin, clone)

	p := mdstate.Open(filepath.Join(clone, "app"))
	gitctxtest.WriteFile(t, p.Root, mdstate.TasksFile, restoreEdited)
	res, err := Restore(t.Context(), p, RestoreOptions{File: mdstate.TasksFile, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rev != "HEAD" || res.Commit != nil || res.Backup == "" {
		t.Errorf("Restore in a shallow clone = %+v; want from HEAD, with a backup", res)
	}
	checkFile(t, p.Path(mdstate.TasksFile), restoreHead)
	if _, err := Restore(t.Context(), p, RestoreOptions{File: mdstate.TasksFile, From: "HEAD~1"}); !errors.Is(err, gitctx.ErrUnknownRevision) {
		t.Errorf("Restore from beyond the shallow boundary: %v; want ErrUnknownRevision", err)
	}
}
