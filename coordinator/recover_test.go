package coordinator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-dev/ralph/mdstate"
)

func writeTasks(t *testing.T, dir, tasks string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, mdstate.TasksFile), []byte(tasks), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Killed after marking T1 done and before writing its entry: the next start
// writes the entry, once, and goes on with T2.
func TestResumeRestoresDoneEntry(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
	writeTasks(t, dir, "# Tasks\n\n- [x] T1: Task number 1\n- [ ] T2: Task number 2\n\n## Session\n\n- id: 20261122-100000\n- status: running\n- phase: writing\n- iteration: 1\n- task: T1\n")
	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
		t.Fatalf("outcome %+v", out)
	}
	lg, err := mdstate.Open(dir).ReadProgress(100)
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, e := range lg.Recent {
		titles = append(titles, e.Title+" ["+e.Get("outcome")+"]")
	}
	want := "T1: Task number 1 [done]|session 20261122-100000 recovered [recovered]|T2: Task number 2 [done]|session 20261122-100000 ended [ended (all_done)]"
	if got := strings.Join(titles, "|"); got != want {
		t.Fatalf("entries\n%s\nwant\n%s", got, want)
	}
}

// Killed while ending: the next start ends that session (writing its
// summary only if it is missing) and starts a new one.
func TestKilledWhileEnding(t *testing.T) {
	for _, summaryWritten := range []bool{false, true} {
		dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
		writeTasks(t, dir, "# Tasks\n\n- [x] T1: Task number 1\n- [ ] T2: New work\n\n## Session\n\n- id: 20261122-100000\n- status: running\n- phase: ending\n- iteration: 1\n- reason: all_done\n")
		if summaryWritten {
			if err := mdstate.Open(dir).AppendProgress(mdstate.Entry{Title: "session 20261122-100000 ended", Fields: []mdstate.Field{{Key: "outcome", Value: "ended (all_done)"}}}); err != nil {
				t.Fatal(err)
			}
		}
		co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
		out, _ := runAll(t, t.Context(), co)
		if out.Session.ID == "20261122-100000" {
			t.Fatalf("the ended session was resumed: %+v", out.Session)
		}
		lg, _ := mdstate.Open(dir).ReadProgress(100)
		n := 0
		for _, e := range lg.Recent {
			if e.Title == "session 20261122-100000 ended" {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("summary written before the kill: %v; %d summaries of the old session, want 1", summaryWritten, n)
		}
	}
}
