package coordinator

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ralph-dev/ralph/mdstate"
)

// An agent's learnings and to-dos that say the same as one in their file,
// or as one earlier in the same report, are not added again: the progress
// entry lists them as known. Filing the report once more (a recovery)
// adds nothing.
func TestFileReportAddsNoCopies(t *testing.T) {
	dir := projectDir(t, map[string]string{
		mdstate.AgentFile: "# Agent\n\n## Learnings\n\n- Build with make.\n",
		mdstate.TodoFile:  "# To-do\n\n- [x] D1: Check the exit codes\n",
	})
	p := mdstate.Open(dir)
	rep := AgentReport{
		Learnings: []string{"Tests need Docker.", "tests need   docker", "build with make"},
		Todos:     []string{"Update the changelog", "update the CHANGELOG.", "check the exit codes"},
	}
	f, err := fileReport(p, rep, nil)
	if err != nil {
		t.Fatal(err)
	}
	known := []string{"learning: tests need docker", "learning: build with make", "to-do D2: update the CHANGELOG.", "to-do D1: check the exit codes"}
	if !slices.Equal(f.learnings, []string{"Tests need Docker."}) || !slices.Equal(f.todos, []string{"Update the changelog"}) || !slices.Equal(f.known, known) {
		t.Errorf("filed %+v", f)
	}
	fields := f.fields()
	if len(fields) != 1 || fields[0].Key != "known" || !slices.Equal(fields[0].List, known) {
		t.Errorf("entry fields %+v", fields)
	}
	wantAgent := "# Agent\n\n## Learnings\n\n- Build with make.\n- Tests need Docker.\n"
	wantTodo := "# To-do\n\n- [x] D1: Check the exit codes\n- [ ] D2: Update the changelog\n"
	check := func() {
		t.Helper()
		for name, want := range map[string]string{mdstate.AgentFile: wantAgent, mdstate.TodoFile: wantTodo} {
			if got, _ := os.ReadFile(filepath.Join(dir, name)); string(got) != want {
				t.Errorf("%s =\n%s\nwant\n%s", name, got, want)
			}
		}
	}
	check()

	f, err = fileReport(p, rep, nil)
	if err != nil || len(f.learnings)+len(f.todos) != 0 || len(f.known) != 6 {
		t.Errorf("filed again: %+v, %v", f, err)
	}
	check()
}
