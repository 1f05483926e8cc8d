//go:build linux

package coordinator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/mdstate"
)

// These tests are the coordinator's half of "a person's edit wins, and no
// edit is lost": state files written by someone else while an agent works.

// personMarks sets a task's status as `ralph task done|skip|block` does:
// through a Project of its own, as another process would.
func personMarks(t *testing.T, dir, id string, st mdstate.Status) {
	t.Helper()
	if _, err := mdstate.Open(dir).UpdateChecklist(mdstate.TasksKind, func(e *mdstate.ChecklistEdit) error {
		return e.SetStatus(id, st)
	}); err != nil {
		t.Fatal(err)
	}
}

// A person marks the running task done, skipped or blocked; the watcher's
// Notify stops its agent at once, the person's status stays, the log says
// why, and the task is not run again.
func TestPersonTakesRunningTask(t *testing.T) {
	for _, st := range []mdstate.Status{mdstate.Done, mdstate.Skipped, mdstate.Blocked} {
		t.Run(string(st), func(t *testing.T) {
			dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
			ba := &blockingAgent{block: func(n int) bool { return n == 1 }, started: make(chan int, 8)}
			co := newCoordinator(t, Options{Root: dir, Agent: ba})
			col := collect(co)
			if err := co.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			<-ba.started
			personMarks(t, dir, "T1", st)
			co.Notify(Change{File: mdstate.TasksFile})
			out, err := co.Wait()
			<-col.stopped
			// A blocked task is still open: the run ends with none ready.
			want := StopAllDone
			if st == mdstate.Blocked {
				want = StopNoneReady
			}
			if err != nil || out.Reason != want || out.TasksDone != 1 || ba.calls() != 2 {
				t.Fatalf("outcome %+v, %v, %d agent calls", out, err, ba.calls())
			}
			tasks, _, log := loadState(t, dir)
			t1 := tasks.Find("T1")
			if t1.Status != st || len(t1.Notes) != 1 || !strings.Contains(t1.Notes[0], "a person marked it "+string(st)) {
				t.Errorf("T1 %+v", t1)
			}
			if e := log.Recent[0]; e.Get("outcome") != "interrupted" || !strings.Contains(e.Get("note"), "a person marked T1 "+string(st)) {
				t.Errorf("entry 1 %+v", e)
			}
			if !strings.Contains(ba.prompt(2), "## Current task\n\nT2: ") {
				t.Errorf("call 2 is not T2:\n%s", ba.prompt(2))
			}
		})
	}
}

// A person skips the running task and the agent then succeeds (no watcher
// told ralph in time): the person's status stays, ralph's outcome is a
// note and is in the progress entry.
func TestPersonStatusWinsOverOutcome(t *testing.T) {
	for _, succeed := range []bool{true, false} {
		dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
		fa := &fakeAgent{
			before: func(int) { personMarks(t, dir, "T1", mdstate.Skipped) },
			reply: func(int) agent.Result {
				if succeed {
					return agent.Result{Final: "<promise>COMPLETE</promise>"}
				}
				return agent.Result{IsError: true, ErrorKind: agent.KindCrashed, ExitCode: 2, ErrorText: "boom"}
			},
		}
		co := newCoordinator(t, Options{Root: dir, Agent: fa, OnFailure: AbortOnFailure})
		out, _ := runAll(t, t.Context(), co)
		co.Close()
		tasks, _, log := loadState(t, dir)
		t1 := tasks.Find("T1")
		// No abort, no retry: the person has decided. Nor is it counted
		// as a task the session completed.
		if out.Reason != StopAllDone || out.TasksDone != 0 || out.Session.Done != 0 || fa.calls() != 1 || t1.Status != mdstate.Skipped || t1.Attempts != 0 {
			t.Errorf("succeed=%v: outcome %+v, %d calls, T1 %+v", succeed, out, fa.calls(), t1)
		}
		want := "the agent's outcome was failed"
		if succeed {
			want = "the agent's outcome was done"
		}
		if len(t1.Notes) != 1 || !strings.Contains(t1.Notes[0], want) || !strings.Contains(log.Recent[0].Get("note"), want) {
			t.Errorf("succeed=%v: notes %q, entry %+v", succeed, t1.Notes, log.Recent[0])
		}
	}
}

// The agent of T2 puts RALPH_TASKS.md, RALPH_TODO.md and the progress log
// back to what they were before the run (as `git checkout -- .` would),
// after adding a line of its own: ralph writes again T1's completion, its
// to-do and its entry, keeps the agent's line, and does not run T1 again.
func TestOlderCopyDoesNotMakeRalphForget(t *testing.T) {
	dir := initedProject(t, tasksMD(3))
	old := map[string][]byte{}
	for _, name := range []string{mdstate.TasksFile, mdstate.TodoFile, mdstate.ProgressFile} {
		old[name], _ = os.ReadFile(filepath.Join(dir, name))
	}
	fa := &fakeAgent{
		before: func(n int) {
			if n != 2 {
				return
			}
			for name, data := range old {
				if data == nil {
					_ = os.Remove(filepath.Join(dir, name))
					continue
				}
				if name == mdstate.TasksFile {
					data = append(data, "\nA line the agent wrote.\n"...)
				}
				writeFile(t, filepath.Join(dir, name), string(data))
			}
		},
		reply: func(n int) agent.Result {
			return agent.Result{Final: "<todo>Follow-up " + string(rune('0'+n)) + "</todo><promise>COMPLETE</promise>"}
		},
	}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	out, evs := runAll(t, t.Context(), co)
	if out.Reason != StopAllDone || fa.calls() != 3 {
		t.Fatalf("outcome %+v after %d calls", out, fa.calls())
	}
	tasks, _, log := loadState(t, dir)
	for _, id := range []string{"T1", "T2", "T3"} {
		if st := status(t, tasks, id); st != mdstate.Done {
			t.Errorf("%s is %s", id, st)
		}
	}
	if !strings.Contains(string(tasks.Source()), "A line the agent wrote.") {
		t.Error("the agent's own line is gone")
	}
	if log.Entries != 3 {
		t.Errorf("%d iteration entries, want 3", log.Entries)
	}
	todos, err := mdstate.Open(dir).LoadChecklist(mdstate.TodoKind)
	if err != nil || len(todos.Items()) != 3 {
		t.Errorf("to-dos %v: %+v", err, todos)
	}
	notices := 0
	for _, e := range evs {
		if e.Kind == EventNotice && strings.Contains(e.Text, "went back to an older version") {
			notices++
		}
	}
	if notices == 0 {
		t.Error("no notice says a file went back")
	}
}

// An editor saves older copies of RALPH_TODO.md and AGENT.md, without
// T1's to-do and learning, in the moment after ralph looked for what an
// older copy dropped and before it files T2's: the writes of T2's to-do
// and learning put T1's back in the same writes. Filed on top of the older
// copies alone, T2's would stand after the gap and make T1's loss look
// like a person's deletion, kept for good.
func TestStaleSaveBeforeFilingLosesNoAddition(t *testing.T) {
	dir := initedProject(t, tasksMD(2))
	before := map[string][]byte{}
	for _, name := range []string{mdstate.TodoFile, mdstate.AgentFile} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		before[name] = data
	}
	looks := 0
	lookedProbe = func() {
		if looks++; looks == 2 { // T2's agent is done
			for name, data := range before {
				writeFile(t, filepath.Join(dir, name), string(data))
			}
		}
	}
	t.Cleanup(func() { lookedProbe = nil })
	fa := &fakeAgent{reply: func(n int) agent.Result {
		return agent.Result{Final: fmt.Sprintf("<todo>Follow-up %d</todo><learning>Lesson %d</learning><promise>COMPLETE</promise>", n, n)}
	}}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	out, evs := runAll(t, t.Context(), co)
	if out.Reason != StopAllDone || looks != 2 {
		t.Fatalf("outcome %+v after %d looks", out, looks)
	}
	for name, want := range map[string][]string{mdstate.TodoFile: {"Follow-up 1", "Follow-up 2"}, mdstate.AgentFile: {"Lesson 1", "Lesson 2"}} {
		data, _ := os.ReadFile(filepath.Join(dir, name))
		for _, w := range want {
			if !strings.Contains(string(data), w) {
				t.Errorf("%s lacks %q:\n%s", name, w, data)
			}
		}
	}
	for _, what := range []string{"Follow-up 1", "Lesson 1"} {
		said := false
		for _, e := range evs {
			said = said || (e.Kind == EventNotice && strings.Contains(e.Text, "went back to an older version") && strings.Contains(e.Text, what))
		}
		if !said {
			t.Errorf("no notice says %q was written again", what)
		}
	}
}

// A person deletes a to-do ralph added, and keeps a later one: that is
// deliberate, and ralph does not add it again.
func TestPersonDeletionOfAdditionStays(t *testing.T) {
	dir := initedProject(t, tasksMD(3))
	todo := filepath.Join(dir, mdstate.TodoFile)
	fa := &fakeAgent{
		before: func(n int) {
			if n != 3 {
				return
			}
			data, _ := os.ReadFile(todo)
			var kept []string
			for _, l := range strings.SplitAfter(string(data), "\n") {
				if !strings.Contains(l, "Follow-up 1") {
					kept = append(kept, l)
				}
			}
			writeFile(t, todo, strings.Join(kept, ""))
		},
		reply: func(n int) agent.Result {
			return agent.Result{Final: "<todo>Follow-up " + string(rune('0'+n)) + "</todo><promise>COMPLETE</promise>"}
		},
	}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
		t.Fatalf("outcome %+v", out)
	}
	data, _ := os.ReadFile(todo)
	if strings.Contains(string(data), "Follow-up 1") || !strings.Contains(string(data), "Follow-up 2") || !strings.Contains(string(data), "Follow-up 3") {
		t.Errorf("RALPH_TODO.md:\n%s", data)
	}
}

// With RALPH_TODO.md gone, ralph does not create it (only `ralph init`
// does): the to-dos are in the progress entry, and a notice says so.
func TestMissingTodoFileNotCreated(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	fa := &fakeAgent{reply: func(int) agent.Result {
		return agent.Result{Final: "<todo>Later.</todo><promise>COMPLETE</promise>"}
	}}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	out, evs := runAll(t, t.Context(), co)
	if out.Reason != StopAllDone {
		t.Fatalf("outcome %+v", out)
	}
	if _, err := os.Stat(filepath.Join(dir, mdstate.TodoFile)); !os.IsNotExist(err) {
		t.Errorf("RALPH_TODO.md was created: %v", err)
	}
	_, _, log := loadState(t, dir)
	if got := fieldList(log.Recent[0], "todos"); len(got) != 1 || got[0] != "Later." {
		t.Errorf("entry %+v", log.Recent[0])
	}
	said := false
	for _, e := range evs {
		said = said || (e.Kind == EventNotice && strings.Contains(e.Text, "RALPH_TODO.md is missing"))
	}
	if !said {
		t.Error("no notice about the missing file")
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A half-merged RALPH_TASKS.md: the run refuses to start, names the file
// and its lines, and writes nothing.
func TestConflictRefusesRun(t *testing.T) {
	tasks := "# Tasks\n\n<<<<<<< HEAD\n- [ ] T1: Ours\n=======\n- [ ] T1: Theirs\n>>>>>>> branch\n"
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasks})
	fa := &fakeAgent{}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	_, err := co.Run(t.Context())
	var conflict *mdstate.ConflictError
	if !errors.As(err, &conflict) || conflict.File != mdstate.TasksFile || !strings.Contains(err.Error(), "3, 5, 7") {
		t.Fatalf("Run: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, mdstate.TasksFile)); string(data) != tasks || fa.calls() != 0 {
		t.Errorf("%d agent calls; RALPH_TASKS.md:\n%s", fa.calls(), data)
	}
}

// With the watcher on, a person's `ralph task done` from another process
// stops the running agent without anyone calling Notify, and the notice
// and the change reach the event stream.
func TestWatcherStopsTakenTask(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
	ba := &blockingAgent{block: func(n int) bool { return n == 1 }, started: make(chan int, 8)}
	co := newCoordinator(t, Options{Root: dir, Agent: ba, Watch: true})
	col := collect(co)
	if err := co.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-ba.started
	edited := time.Now()
	personMarks(t, dir, "T1", mdstate.Done)
	n := <-ba.started // call 2 starts once call 1 is over
	t.Logf("from the person's edit to the next task's agent: %v", time.Since(edited))
	out, err := co.Wait()
	<-col.stopped
	if err != nil || n != 2 || out.Reason != StopAllDone || ba.calls() != 2 {
		t.Fatalf("outcome %+v, %v, %d calls", out, err, ba.calls())
	}
	changed := false
	for _, e := range col.events() {
		changed = changed || (e.Kind == EventStateChanged && strings.Contains(e.Text, "T1"))
	}
	if !changed {
		t.Errorf("no state_changed event names T1: %+v", col.events())
	}
	tasks, _, _ := loadState(t, dir)
	if st := status(t, tasks, "T1"); st != mdstate.Done {
		t.Errorf("T1 is %s", st)
	}
}

// The same for a one-shot: with AGENT.md and RALPH_TODO.md gone, its
// entry keeps the learnings and to-dos, and neither file is created.
func TestOneShotKeepsUnfiledReport(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	fa := &fakeAgent{reply: func(int) agent.Result {
		return agent.Result{Final: "<learning>Use make.</learning><todo>Later.</todo><promise>COMPLETE</promise>"}
	}}
	if _, err := OneShot(t.Context(), Options{Root: dir, Agent: fa}, "fix the thing"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{mdstate.AgentFile, mdstate.TodoFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s was created: %v", name, err)
		}
	}
	log, err := mdstate.Open(dir).ReadProgress(1)
	if err != nil || len(log.Recent) != 1 {
		t.Fatalf("progress: %v %+v", err, log)
	}
	e := log.Recent[0]
	if l, td := fieldList(e, "learnings"), fieldList(e, "todos"); len(l) != 1 || l[0] != "Use make." || len(td) != 1 || td[0] != "Later." {
		t.Errorf("entry %+v", e)
	}
}

// initedProject is a project with tasks, as `ralph init` leaves it: the
// files an agent's report goes to exist (ralph itself creates none).
func initedProject(t *testing.T, tasks string) string {
	return projectDir(t, map[string]string{mdstate.TasksFile: tasks,
		mdstate.TodoFile: mdstate.Templates[mdstate.TodoFile], mdstate.AgentFile: mdstate.Templates[mdstate.AgentFile]})
}
