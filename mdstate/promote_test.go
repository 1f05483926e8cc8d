package mdstate_test

import (
	"errors"
	"os"
	"testing"

	"github.com/ralph-dev/ralph/mdstate"
)

func writeState(t *testing.T, p *mdstate.Project, name, content string) {
	t.Helper()
	if err := os.WriteFile(p.Path(name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPromote(t *testing.T) {
	p := mdstate.Open(t.TempDir())
	writeState(t, p, mdstate.TasksFile, "# Tasks\n\n- [ ] T1: Write the docs\n")
	writeState(t, p, mdstate.TodoFile, "# To-do\n\n- [ ] D1: Check the errors\n- [ ] D2: Rename the flag\n")
	res, err := p.Promote("d2")
	if err != nil {
		t.Fatal(err)
	}
	want := mdstate.PromoteResult{TodoID: "D2", TaskID: "T2", Title: "Rename the flag"}
	if res.TodoID != want.TodoID || res.TaskID != want.TaskID || res.Title != want.Title || res.Already || len(res.Warnings) != 0 {
		t.Fatalf("Promote(d2) = %+v; want %+v", res, want)
	}
	const tasks = "# Tasks\n\n- [ ] T1: Write the docs\n- [ ] T2: Rename the flag\n  - from: D2\n"
	const todo = "# To-do\n\n- [ ] D1: Check the errors\n- [x] D2: Rename the flag\n  - promoted: T2\n"
	if got := readString(t, p.Path(mdstate.TasksFile)); got != tasks {
		t.Errorf("tasks =\n%s\nwant\n%s", got, tasks)
	}
	if got := readString(t, p.Path(mdstate.TodoFile)); got != todo {
		t.Errorf("to-dos =\n%s\nwant\n%s", got, todo)
	}

	// Again: nothing to do, nothing written.
	res, err = p.Promote("D2")
	if err != nil || !res.Already || res.TaskID != "T2" {
		t.Fatalf("Promote(D2) again = %+v, %v; want Already, T2", res, err)
	}
	if readString(t, p.Path(mdstate.TasksFile)) != tasks || readString(t, p.Path(mdstate.TodoFile)) != todo {
		t.Error("a second promote changed the files")
	}
}

// A promotion cut short after the task was written is finished by the
// next one, without a second task.
func TestPromoteFinishesAnInterruptedPromotion(t *testing.T) {
	p := mdstate.Open(t.TempDir())
	const tasks = "# Tasks\n\n- [ ] T1: Check the errors\n  - from: D1\n"
	writeState(t, p, mdstate.TasksFile, tasks)
	writeState(t, p, mdstate.TodoFile, "# To-do\n\n- [ ] D1: Check the errors\n")
	res, err := p.Promote("D1")
	if err != nil || res.TaskID != "T1" || res.Already {
		t.Fatalf("Promote(D1) = %+v, %v; want T1", res, err)
	}
	if got := readString(t, p.Path(mdstate.TasksFile)); got != tasks {
		t.Errorf("tasks changed:\n%s", got)
	}
	if got, want := readString(t, p.Path(mdstate.TodoFile)), "# To-do\n\n- [x] D1: Check the errors\n  - promoted: T1\n"; got != want {
		t.Errorf("to-dos =\n%s\nwant\n%s", got, want)
	}
}

func TestPromoteErrors(t *testing.T) {
	p := mdstate.Open(t.TempDir())
	var missing *mdstate.MissingError
	if _, err := p.Promote("D1"); !errors.As(err, &missing) || missing.File != mdstate.TodoFile {
		t.Errorf("Promote without RALPH_TODO.md: %v; want it missing", err)
	}

	const todo = "# To-do\n\n- [ ] D1: Refunds\n- [?] D2: Odd box\n"
	writeState(t, p, mdstate.TodoFile, todo)
	_, err := p.Promote("D1")
	want := "RALPH_TASKS.md not found in " + p.Root + "; run `ralph init` to create the state files (needed to promote D1)"
	if !errors.As(err, &missing) || missing.File != mdstate.TasksFile || err.Error() != want {
		t.Errorf("Promote without RALPH_TASKS.md: %v; want %q", err, want)
	}
	if got := readString(t, p.Path(mdstate.TodoFile)); got != todo {
		t.Errorf("the to-do changed though the task could not be added:\n%s", got)
	}

	writeState(t, p, mdstate.TasksFile, "# Tasks\n")
	res, err := p.Promote("D9")
	var nf *mdstate.NotFoundError
	if !errors.As(err, &nf) || nf.ID != "D9" {
		t.Errorf("Promote(D9): %v; want not found", err)
	}
	if len(res.Warnings) != 1 || res.Warnings[0].File != mdstate.TodoFile {
		t.Errorf("warnings = %+v; want the one about D2's box", res.Warnings)
	}
}
