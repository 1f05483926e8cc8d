//go:build linux

package coordinator

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/gitctx/gitctxtest"
	"github.com/ralph-dev/ralph/mdstate"
)

// beganAheadTasks is RALPH_TASKS.md as a kill leaves it right after the
// write that saved T1's outcome and began T2 (ahead.go).
const beganAheadTasks = "# Tasks\n\n- [x] T1: Task number 1\n- [/] T2: Task number 2\n\n## Session\n\n" +
	"- id: 20261122-100000\n- status: running\n- phase: agent\n- iteration: 5\n- task: T2\n" +
	"- tokens: 5000 in, 600 out\n- cost: $0.5000\n- agent: claude (sonnet)\n" +
	"- started: 2026-11-22T10:00:00Z\n- updated: 2026-11-22T10:20:00Z\n" +
	"- result: iteration 4, T1: done, 1234 in, 56 out, $0.0789, 42s\n" +
	"- summary: Built the cart.\n- learnings: [\"Run make first.\"]\n- decisions: [\"Kept floats.\"]\n- guidance: [\"Use tabs.\"]\n"

// A kill after the write that saved T1's outcome and began T2, before
// T1's entry: recovery writes T1's entry from the result the session
// names and the kept report, once, and puts T2 back as an interrupted
// agent's task.
func TestRecoverBegunAheadWritesEntry(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2), "AGENT.md": "# Agent\n\n## Learnings\n"})
	writeTasks(t, dir, beganAheadTasks)
	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
	if _, err := co.Recover(); err != nil {
		t.Fatal(err)
	}
	co.Close()
	tasks, s, lg := loadState(t, dir)
	var t1 []mdstate.Entry
	for _, e := range lg.Recent {
		if strings.HasPrefix(e.Title, "T1: ") {
			t1 = append(t1, e)
		}
	}
	if len(t1) != 1 {
		t.Fatalf("%d entries for T1, want 1: %+v", len(t1), lg.Recent)
	}
	e := t1[0]
	if e.Get("iteration") != "4" || e.Get("outcome") != "done" || e.Get("tokens") != "1234 in, 56 out" || e.Get("cost") != "$0.0789" ||
		e.Get("duration") != "42s" || e.Get("summary") != "Built the cart." || strings.Join(fieldList(e, "guidance"), "|") != "Use tabs." ||
		!strings.HasPrefix(e.Get("note"), "written on recovery") {
		t.Errorf("T1's restored entry %+v", e)
	}
	t2 := tasks.Find("T2")
	if t2.Status != mdstate.Pending || t2.Attempts != 1 || len(t2.Notes) != 1 || !strings.Contains(t2.Notes[0], "agent") {
		t.Errorf("T2 after recovery: %s, %d attempts, notes %q", t2.Status, t2.Attempts, t2.Notes)
	}
	if s.Iteration != 5 || s.Result != nil || s.Report != nil || s.TokensIn != 5000 {
		t.Errorf("session after recovery %+v", s)
	}
	if a, err := mdstate.Open(dir).LoadAgent(); err != nil || len(a.Learnings) != 1 || a.Learnings[0].Text != "Run make first." {
		t.Errorf("learnings after recovery %+v, %v", a, err)
	}

	// Recovered twice (a kill during recovery): nothing is written again.
	writeTasks(t, dir, beganAheadTasks)
	co = newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
	if _, err := co.Recover(); err != nil {
		t.Fatal(err)
	}
	co.Close()
	_, _, lg = loadState(t, dir)
	n := 0
	for _, e := range lg.Recent {
		if strings.HasPrefix(e.Title, "T1: ") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d entries for T1 after a second recovery, want 1", n)
	}
}

// A kill while T2's agent ran, after T1's entry was written: the result
// the session still names is in the log, and nothing is written twice.
func TestRecoverBegunAheadEntryWritten(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
	writeTasks(t, dir, beganAheadTasks)
	e := mdstate.Entry{Time: time.Date(2026, 11, 22, 10, 20, 0, 0, time.UTC), Title: "T1: Task number 1",
		Fields: []mdstate.Field{{Key: "outcome", Value: "done"}, {Key: "iteration", Value: "4"}, {Key: "tokens", Value: "1234 in, 56 out"}}}
	if err := mdstate.Open(dir).AppendProgress(e); err != nil {
		t.Fatal(err)
	}
	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
		t.Fatalf("outcome %+v", out)
	}
	_, _, lg := loadState(t, dir)
	n := 0
	for _, e := range lg.Recent {
		if strings.HasPrefix(e.Title, "T1: ") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d entries for T1, want 1: %+v", n, lg.Recent)
	}
}

// A pause that comes after the write that saved T1's outcome and began
// T2 (here, on the first look at the clock once the file shows T2 in
// progress) takes T2 back before its agent starts: one agent ran, T2 is
// pending without an attempt or a note, the session paused at iteration
// 1, and T1's entry is in the log once.
func TestPauseAfterBegunAhead(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(3)})
	fa := &fakeAgent{}
	var co *Coordinator
	paused := false
	now := func() time.Time {
		if !paused {
			if data, err := os.ReadFile(dir + "/" + mdstate.TasksFile); err == nil && strings.Contains(string(data), "- [/] T2:") {
				paused = true
				co.Pause()
			}
		}
		return time.Now()
	}
	co = newCoordinator(t, Options{Root: dir, Agent: fa, Now: now})
	out, _ := runAll(t, t.Context(), co)
	if !paused {
		t.Fatal("T2 was never begun in the write of T1's outcome")
	}
	if out.Reason != StopPaused || fa.calls() != 1 || out.TasksDone != 1 {
		t.Fatalf("outcome %+v after %d agents", out, fa.calls())
	}
	tasks, s, lg := loadState(t, dir)
	if t2 := tasks.Find("T2"); t2.Status != mdstate.Pending || t2.Attempts != 0 || len(t2.Notes) != 0 {
		t.Errorf("T2 %s, %d attempts, notes %q", t2.Status, t2.Attempts, t2.Notes)
	}
	if s.Status != mdstate.SessionPaused || s.Iteration != 1 || s.Result != nil {
		t.Errorf("session %+v", s)
	}
	if n := lg.Entries; n != 1 || lg.Recent[0].Title != "T1: Task number 1" {
		t.Errorf("log: %d entries %+v", n, lg.Recent)
	}
}

// With --commit no iteration is begun ahead: a task's commit holds the
// task file as the task left it, the next task still pending in it.
func TestCommitBeginsNothingAhead(t *testing.T) {
	dir := commitProject(t, tasksMD(2))
	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}, Commit: true})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
		t.Fatalf("outcome %+v", out)
	}
	var t1 string
	for _, line := range strings.Split(gitctxtest.Git(t, dir, "log", "--format=%H %s"), "\n") {
		if hash, subject, _ := strings.Cut(line, " "); strings.HasPrefix(subject, "ralph: T1 ") {
			t1 = hash
		}
	}
	if t1 == "" {
		t.Fatalf("no commit of T1: %q", subjects(t, dir))
	}
	tasks := gitctxtest.Git(t, dir, "show", t1+":"+mdstate.TasksFile)
	if !strings.Contains(tasks, "- [x] T1:") || !strings.Contains(tasks, "- [ ] T2:") || strings.Contains(tasks, "- result: iteration") {
		t.Errorf("T1's commit holds:\n%s", tasks)
	}
}
