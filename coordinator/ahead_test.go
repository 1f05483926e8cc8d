//go:build linux

package coordinator

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
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
	if n := entriesFor(lg, "T1"); n != 1 {
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
	out, fa := runPausingAt(t, dir, "- [/] T2:", nil)
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

// A new session's first write begins its first iteration: the first
// agent runs with T1 in progress and the session in phase "agent" of
// iteration 1, after one write of RALPH_TASKS.md (TestRunEventsInOrder
// has the whole order of writes). A pause that comes after that write
// (here, on the first look at the clock once the file shows T1 in
// progress) takes T1 back before any agent: T1 pending without an attempt
// or a note, written back in a session in phase "starting" (not
// "writing", which is an iteration's that ran), and the session paused at
// iteration 0 with nothing in the log.
func TestFirstWriteBeginsFirstIteration(t *testing.T) {
	t.Run("runs", func(t *testing.T) {
		dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
		var seen string
		fa := &fakeAgent{before: func(n int) {
			if n == 1 {
				data, _ := os.ReadFile(filepath.Join(dir, mdstate.TasksFile))
				seen = string(data)
			}
		}}
		co := newCoordinator(t, Options{Root: dir, Agent: fa})
		out, evs := runAll(t, t.Context(), co)
		if out.Reason != StopAllDone || out.TasksDone != 2 {
			t.Fatalf("outcome %+v", out)
		}
		writes := 0 // of RALPH_TASKS.md before T1's iteration began
		for _, e := range evs {
			if e.Kind == EventTaskStarted {
				break
			}
			if e.Kind == EventStateWritten && e.File == mdstate.TasksFile {
				writes++
			}
		}
		if !strings.Contains(seen, "- [/] T1:") || !strings.Contains(seen, "- phase: agent\n- iteration: 1\n- task: T1\n") {
			t.Errorf("the first agent started with RALPH_TASKS.md:\n%s", seen)
		}
		if writes != 1 {
			t.Errorf("%d writes of RALPH_TASKS.md before the first agent, want 1", writes)
		}
	})
	t.Run("paused before the agent", func(t *testing.T) {
		dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
		var undone string // the file once T1 is pending again
		out, fa := runPausingAt(t, dir, "- [/] T1:", func(tasks string) {
			if undone == "" && strings.Contains(tasks, "- [ ] T1:") {
				undone = tasks
			}
		})
		if out.Reason != StopPaused || fa.calls() != 0 || out.TasksDone != 0 {
			t.Fatalf("outcome %+v after %d agents", out, fa.calls())
		}
		if !strings.Contains(undone, "- phase: starting\n- iteration: 0\n") {
			t.Errorf("T1 taken back in:\n%s", undone)
		}
		tasks, s, lg := loadState(t, dir)
		if t1 := tasks.Find("T1"); t1.Status != mdstate.Pending || t1.Attempts != 0 || len(t1.Notes) != 0 {
			t.Errorf("T1 %s, %d attempts, notes %q", t1.Status, t1.Attempts, t1.Notes)
		}
		if s.Status != mdstate.SessionPaused || s.Iteration != 0 || s.Task != "" {
			t.Errorf("session %+v", s)
		}
		if lg.Entries != 0 {
			t.Errorf("log: %d entries %+v", lg.Entries, lg.Recent)
		}
	})
}

// A person who changes the picked task between ralph's read of the tasks
// and the session's first write (here, marks T1 done as that write looks
// at the clock) keeps their change: the write opens the session alone,
// and the loop picks again, T2.
func TestFirstWriteLeavesAChangedTask(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
	path := filepath.Join(dir, mdstate.TasksFile)
	edited := false
	now := func() time.Time {
		if !edited && calledFrom("openSession") {
			edited = true
			data, err := os.ReadFile(path)
			if err != nil {
				t.Error(err)
			}
			if err := os.WriteFile(path, []byte(strings.Replace(string(data), "- [ ] T1:", "- [x] T1:", 1)), 0o644); err != nil {
				t.Error(err)
			}
		}
		return time.Now()
	}
	fa := &fakeAgent{}
	co := newCoordinator(t, Options{Root: dir, Agent: fa, Now: now})
	out, _ := runAll(t, t.Context(), co)
	if !edited {
		t.Fatal("the session's first write never looked at the clock")
	}
	if out.Reason != StopAllDone || fa.calls() != 1 || out.TasksDone != 1 {
		t.Fatalf("outcome %+v after %d agents", out, fa.calls())
	}
	if p := fa.prompt(1); !strings.Contains(p, "T2") {
		t.Errorf("the agent was given:\n%s", p)
	}
	tasks, s, _ := loadState(t, dir)
	if t1 := tasks.Find("T1"); t1.Status != mdstate.Done || t1.Attempts != 0 || len(t1.Notes) != 0 {
		t.Errorf("T1 %s, %d attempts, notes %q", t1.Status, t1.Attempts, t1.Notes)
	}
	if s.Iteration != 1 || s.Done != 1 {
		t.Errorf("session %+v", s)
	}
}

// calledFrom reports whether a method named name of the Coordinator is
// on the calling goroutine's stack.
func calledFrom(name string) bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, ".(*Coordinator)."+name) {
			return true
		}
		if !more {
			return false
		}
	}
}

// runPausingAt runs a coordinator on dir that asks for a pause on its
// first look at the clock once RALPH_TASKS.md holds marker, and passes the
// file to then (when set) at each look after that. It fails the test when
// the file never held marker.
func runPausingAt(t *testing.T, dir, marker string, then func(tasks string)) (Outcome, *fakeAgent) {
	t.Helper()
	path := filepath.Join(dir, mdstate.TasksFile)
	fa := &fakeAgent{}
	var co *Coordinator
	paused := false
	now := func() time.Time {
		data, _ := os.ReadFile(path)
		switch {
		case !paused && strings.Contains(string(data), marker):
			paused = true
			co.Pause()
		case paused && then != nil:
			then(string(data))
		}
		return time.Now()
	}
	co = newCoordinator(t, Options{Root: dir, Agent: fa, Now: now})
	out, _ := runAll(t, t.Context(), co)
	if !paused {
		t.Fatalf("RALPH_TASKS.md never held %q", marker)
	}
	return out, fa
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

// The done iteration's entry goes in beside the next agent's start: the
// next prompt already shows it (it is never in the log yet when that
// prompt is built), and each entry is in the log once the run is over.
func TestEntryAppendedBesideNextAgent(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(3)})
	fa := &fakeAgent{}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone || out.TasksDone != 3 {
		t.Fatalf("outcome %+v", out)
	}
	for n, shown := range map[int][]string{1: nil, 2: {"T1"}, 3: {"T1", "T2"}} {
		_, progress, _ := strings.Cut(fa.prompt(n), "## Recent progress (oldest first)\n")
		for _, id := range []string{"T1", "T2", "T3"} {
			want := slices.Contains(shown, id)
			if got := strings.Contains(progress, " "+id+": Task number"); got != want {
				t.Errorf("prompt %d shows %s's entry: %v, want %v; progress block:\n%s", n, id, got, want, progress)
			}
		}
	}
	_, _, lg := loadState(t, dir)
	for _, id := range []string{"T1", "T2", "T3"} {
		if n := entriesFor(lg, id); n != 1 {
			t.Errorf("%d entries for %s, want 1", n, id)
		}
	}
}

// An append beside the next agent that fails stops that agent and ends
// the run with the append's error, the session as a kill would leave it:
// the next run writes the entry from the result the session names, once,
// and does the stopped agent's task again.
func TestEntryAppendFailsBesideAgent(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(3)})
	// A journal that cannot be written (a link to nowhere) fails the first
	// append, and nothing before it: reading it finds no record.
	journal := filepath.Join(dir, mdstate.RuntimeDir, "progress.journal")
	if err := os.MkdirAll(filepath.Dir(journal), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "gone", "journal"), journal); err != nil {
		t.Fatal(err)
	}
	ba := &blockingAgent{block: func(n int) bool { return n == 2 }}
	co := newCoordinator(t, Options{Root: dir, Agent: ba})
	_, err := co.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), mdstate.ProgressFile+": cannot append") {
		t.Fatalf("Run: %v, want the append's error", err)
	}
	if ba.calls() != 2 {
		t.Fatalf("%d agents ran, want 2 (the second stopped)", ba.calls())
	}
	tasks, s, lg := loadState(t, dir)
	if lg.Entries != 0 || s.Result == nil || s.Result.Task != "T1" || s.Task != "T2" || s.Phase != mdstate.PhaseAgent {
		t.Fatalf("after the failed append: %d entries, session %+v, result %+v", lg.Entries, s, s.Result)
	}
	if st := status(t, tasks, "T1"); st != mdstate.Done {
		t.Errorf("T1 is %s", st)
	}

	if err := os.Remove(journal); err != nil {
		t.Fatal(err)
	}
	co.Close()
	fa := &fakeAgent{}
	co = newCoordinator(t, Options{Root: dir, Agent: fa})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone || out.TasksDone != 2 {
		t.Fatalf("the next run: %+v", out)
	}
	tasks, _, lg = loadState(t, dir)
	for _, id := range []string{"T1", "T2", "T3"} {
		if st := status(t, tasks, id); st != mdstate.Done {
			t.Errorf("%s is %s", id, st)
		}
	}
	// T1's entry written on recovery (T2's stopped attempt is counted on
	// the task, not logged), T2's and T3's.
	for id, want := range map[string]int{"T1": 1, "T2": 1, "T3": 1} {
		if n := entriesFor(lg, id); n != want {
			t.Errorf("%d entries for %s, want %d: %+v", n, id, want, lg.Recent)
		}
	}
}

// entriesFor counts lg's recent entries for task id.
func entriesFor(lg *mdstate.Log, id string) int {
	n := 0
	for _, e := range lg.Recent {
		if strings.HasPrefix(e.Title, id+": ") {
			n++
		}
	}
	return n
}

// An agent that puts back an older copy of the log before the append
// beside it lands: the entry is kept out of that copy, ralph first writes
// again the entries the copy dropped (restoreAdditions), then appends it,
// and the agent is not stopped. (Driven step by step: a real agent that
// fast would race the append.)
func TestEntryBesideAgentWaitsForAnOlderCopy(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
	older, err := os.ReadFile(filepath.Join(dir, mdstate.ProgressFile))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if out, _ := runAll(t, t.Context(), co); out.TasksDone != 1 {
		t.Fatalf("outcome %+v", out)
	}
	_, _, lg := loadState(t, dir)
	if entriesFor(lg, "T1") != 1 {
		t.Fatalf("T1's entries: %+v", lg.Recent)
	}

	next := mdstate.Entry{Time: time.Now(), Title: "T9: The next one", Fields: []mdstate.Field{{Key: "outcome", Value: "done"}}}
	co.queueEntry(next)
	co.p.SaveGrace = 10 * time.Millisecond // the log removed is not coming back
	// The agent's first act: the log as it was before the run.
	path := filepath.Join(dir, mdstate.ProgressFile)
	if older == nil {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	} else if err := os.WriteFile(path, older, 0o644); err != nil {
		t.Fatal(err)
	}
	stopped := false
	co.startEntry(func(error) { stopped = true })
	if err := co.joinEntry(); err != nil {
		t.Fatal(err)
	}
	if co.entryQueued() == nil || stopped {
		t.Fatalf("after the join: queued %v, agent stopped %v", co.entryQueued(), stopped)
	}
	if data, _ := os.ReadFile(path); strings.Contains(string(data), "T9:") {
		t.Fatalf("the entry went onto the older copy:\n%s", data)
	}
	if err := co.restoreAdditions(); err != nil {
		t.Fatal(err)
	}
	if err := co.settleEntry(); err != nil {
		t.Fatal(err)
	}
	_, _, lg = loadState(t, dir)
	if entriesFor(lg, "T1") != 1 || entriesFor(lg, "T9") != 1 || lg.Recent[len(lg.Recent)-1].Title != next.Title {
		t.Fatalf("log after the restore and the append: %+v", lg.Recent)
	}
}
