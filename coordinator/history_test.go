package coordinator

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ralph-dev/ralph/gitctx"
	"github.com/ralph-dev/ralph/gitctx/gitctxtest"
	"github.com/ralph-dev/ralph/mdstate"
)

func TestStateHistory(t *testing.T) {
	gitctxtest.Isolate(t)
	repo := t.TempDir()
	gitctxtest.Git(t, repo, "init", "-q", "-b", "main")
	// The project is a folder of the repository: paths are relative to it.
	w := func(name, content string) { gitctxtest.WriteFile(t, repo, "app/"+name, content) }
	w("go.mod", "module x\n")
	gitctxtest.Commit(t, repo, "Start", 1)
	w(mdstate.TasksFile, "# Tasks\n\n- [ ] T1: Model the cart\n- [ ] T2: Price the cart\n")
	w(mdstate.ProgressFile, "# Progress\n")
	gitctxtest.Commit(t, repo, "Plan", 2)
	w(mdstate.TasksFile, "# Tasks\n\n- [x] T1: Model the cart\n- [ ] T2: Price the whole cart\n- [ ] Send the invoice\n")
	w(mdstate.ProgressFile, "# Progress\n\n## 2026-11-19 — T1: Model the cart\n")
	gitctxtest.Commit(t, repo, "Finish T1", 3)
	w("go.mod", "module y\n")
	gitctxtest.Commit(t, repo, "Not state", 4)
	w(mdstate.TasksFile, "\x00binary")
	if err := os.Remove(filepath.Join(repo, "app", mdstate.ProgressFile)); err != nil {
		t.Fatal(err)
	}
	gitctxtest.Commit(t, repo, "Break things", 5)

	p := mdstate.Open(filepath.Join(repo, "app"))
	h, err := StateHistory(t.Context(), p, []string{mdstate.TasksFile, mdstate.ProgressFile}, 10)
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for _, c := range h.Commits {
		subjects = append(subjects, c.Subject)
	}
	if want := []string{"Break things", "Finish T1", "Plan"}; !reflect.DeepEqual(subjects, want) || h.Shallow {
		t.Fatalf("commits %q, shallow %v; want %q", subjects, h.Shallow, want)
	}

	broken := h.Commits[0].Changes
	if len(broken) != 2 || broken[0].File != mdstate.ProgressFile || broken[1].File != mdstate.TasksFile {
		t.Fatalf("changes of \"Break things\" = %+v", broken)
	}
	if !broken[0].Deleted || broken[1].Unreadable == nil {
		t.Errorf("\"Break things\": %+v; want the progress log deleted and the tasks unreadable", broken)
	}

	finish := h.Commits[1].Changes
	wantTasks := mdstate.FileDiff{File: mdstate.TasksFile, Items: []mdstate.ItemChange{
		{Kind: mdstate.ItemStatusChanged, ID: "T1", Title: "Model the cart", From: mdstate.Pending, To: mdstate.Done},
		{Kind: mdstate.ItemRetitled, ID: "T2", Title: "Price the whole cart", OldTitle: "Price the cart"},
		{Kind: mdstate.ItemAdded, ID: "T3", Provisional: true, Title: "Send the invoice"},
	}}
	if len(finish) != 2 || !reflect.DeepEqual(finish[1].Diff, wantTasks) || finish[0].Diff.Entries != 1 {
		t.Errorf("changes of \"Finish T1\" = %+v; want one entry and %+v", finish, wantTasks)
	}

	plan := h.Commits[2].Changes
	if len(plan) != 2 || !plan[0].Diff.Created || !plan[1].Diff.Created || len(plan[1].Diff.Items) != 2 {
		t.Errorf("changes of \"Plan\" = %+v; want both created", plan)
	}

	// The limit, and one file.
	h, err = StateHistory(t.Context(), p, []string{mdstate.ProgressFile}, 1)
	if err != nil || len(h.Commits) != 1 || len(h.Commits[0].Changes) != 1 || h.Commits[0].Subject != "Break things" {
		t.Errorf("StateHistory(progress, 1) = %+v, %v", h, err)
	}
}

func TestStateHistoryNothingToShow(t *testing.T) {
	gitctxtest.Isolate(t)

	// No commit yet: nothing, and not a shallow clone.
	empty := t.TempDir()
	gitctxtest.Git(t, empty, "init", "-q", "-b", "main")
	h, err := StateHistory(t.Context(), mdstate.Open(empty), mdstate.Files, 5)
	if err != nil || len(h.Commits) != 0 || h.Shallow {
		t.Errorf("StateHistory of an empty repository = %+v, %v", h, err)
	}

	// A shallow clone has the file at HEAD but not the commit that
	// changed it.
	origin := t.TempDir()
	gitctxtest.Git(t, origin, "init", "-q", "-b", "main")
	gitctxtest.WriteFile(t, origin, mdstate.TasksFile, "# Tasks\n")
	gitctxtest.Commit(t, origin, "Plan", 1)
	gitctxtest.WriteFile(t, origin, "README", "x\n")
	gitctxtest.Commit(t, origin, "Docs", 2)
	clone := filepath.Join(t.TempDir(), "clone")
	gitctxtest.Git(t, origin, "clone", "-q", "--depth", "1", "file://"+origin, clone)
	h, err = StateHistory(t.Context(), mdstate.Open(clone), []string{mdstate.TasksFile}, 5)
	if err != nil || len(h.Commits) != 0 || !h.Shallow {
		t.Errorf("StateHistory of a shallow clone = %+v, %v; want none, shallow", h, err)
	}

	if _, err := StateHistory(t.Context(), mdstate.Open(t.TempDir()), mdstate.Files, 5); !errors.Is(err, gitctx.ErrNotRepo) {
		t.Errorf("StateHistory outside git: %v; want ErrNotRepo", err)
	}
}
