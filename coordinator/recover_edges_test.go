//go:build linux

package coordinator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/mdstate"
)

// The edges of recovery and of the failure policy, each found by a review
// of the loop: the state a kill (or an error) leaves, then a new start.

// session is a "## Session" block for the tests' tasks files.
func session(lines ...string) string {
	return "\n## Session\n\n- id: 20261122-100000\n" + strings.Join(lines, "\n") + "\n"
}

func entries(t *testing.T, dir string) []mdstate.Entry {
	t.Helper()
	lg, err := mdstate.Open(dir).ReadProgress(1000)
	if err != nil {
		t.Fatal(err)
	}
	return lg.Recent
}

// --task follows the failure policy: a failed attempt is tried again up to
// MaxAttempts, and a usage limit is waited out, then the same task again.
func TestRunTaskIDRetries(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
	var attempts int64 // when the third call starts: done drops them
	fa := &fakeAgent{before: func(n int) {
		if n == 3 {
			attempts = attemptsOf(dir, "T2")
		}
	}, reply: func(n int) agent.Result {
		switch n {
		case 1:
			return agent.Result{IsError: true, ErrorKind: agent.KindRateLimit, APIStatus: 429, ErrorText: "slow down", ResetAt: time.Now().Add(50 * time.Millisecond)}
		case 2:
			return agent.Result{Final: "not yet"}
		}
		return agent.Result{Final: "<promise>COMPLETE</promise>"}
	}}
	co := newCoordinator(t, Options{Root: dir, Agent: fa, TaskID: "T2"})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone || fa.calls() != 3 {
		t.Fatalf("outcome %+v after %d calls, want all done after 3", out, fa.calls())
	}
	tasks, _, _ := loadState(t, dir)
	if it := tasks.Find("T2"); it.Status != mdstate.Done || attempts != 1 || it.Attempts != 0 {
		t.Fatalf("T2 %s, attempts %d (%d before its last call); want done, 1 before (the rate limit does not count)", it.Status, it.Attempts, attempts)
	}
	for n := 1; n <= 3; n++ {
		if got := currentTask(fa.prompt(n)); got != "T2" {
			t.Errorf("call %d was for %q", n, got)
		}
	}
}

// A pause during a usage limit's wait stops the run at once, and the next
// run still takes the limited task first, though a person gave another
// task priority meanwhile.
func TestPauseDuringLimitWait(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
	fa := &fakeAgent{reply: func(n int) agent.Result {
		p := filepath.Join(dir, "RALPH_TASKS.md")
		data, _ := os.ReadFile(p)
		if err := os.WriteFile(p, []byte(strings.Replace(string(data), "Task number 2\n", "Task number 2\n  - priority: 1\n", 1)), 0o644); err != nil {
			t.Error(err)
		}
		return agent.Result{IsError: true, ErrorKind: agent.KindRateLimit, APIStatus: 429, ErrorText: "slow down", ResetAt: time.Now().Add(400 * time.Millisecond)}
	}}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	done := make(chan Outcome)
	go func() {
		out, err := co.Run(t.Context())
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	for e := range co.Events() {
		if e.Kind == EventWaiting {
			if e.Until.Before(time.Now()) || e.Until.After(time.Now().Add(time.Second)) || e.Task != "T1" {
				t.Errorf("waiting event %+v: until should be the limit's reset, 400 ms after the 429", e)
			}
			co.Pause()
		}
		if e.Kind == EventStopped {
			break
		}
	}
	if out := <-done; out.Reason != StopPaused {
		t.Fatalf("outcome %+v, want paused", out)
	}
	co.Close()

	fb := &fakeAgent{}
	co = newCoordinator(t, Options{Root: dir, Agent: fb})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
		t.Fatalf("second run: %+v", out)
	}
	if first := currentTask(fb.prompt(1)); first != "T1" {
		t.Fatalf("after the pause, %s went first; the rate-limited T1 should", first)
	}
}

// A task ralph gave up on keeps the run from saying "all done", also after
// a restart; a task a person skipped does not.
func TestGaveUpSurvivesRestart(t *testing.T) {
	for _, tc := range []struct {
		note string
		want StopReason
	}{
		{"the agent ended without <promise>COMPLETE</promise>; skipped after 3 failed attempts", StopFailed},
		{"the agent reported an error: boom; skipped (--on-failure skip)", StopFailed},
		{"not needed after all", StopAllDone},
	} {
		dir := projectDir(t, map[string]string{"RALPH_TASKS.md": "# Tasks\n\n- [-] T1: Task number 1\n  - note: " + tc.note + "\n- [/] T2: Task number 2\n" +
			session("- status: running", "- phase: agent", "- iteration: 3", "- task: T2")})
		co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
		if out, _ := runAll(t, t.Context(), co); out.Reason != tc.want {
			t.Errorf("T1 skipped with note %q: outcome %s (%s), want %s", tc.note, out.Reason, out.Detail, tc.want)
		}
	}
}

// A task ralph gave up on in an earlier session is reported, not a
// failure of this run: a run that did every task it could ends all done
// (exit 0), and a run with nothing to do says so with no counts of its
// own.
func TestSkippedEarlierIsNotThisRunsFailure(t *testing.T) {
	const skipped = "- [-] T1: Task number 1\n  - note: the agent ended without <promise>COMPLETE</promise>; skipped after 3 failed attempts\n"
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": "# Tasks\n\n" + skipped + "- [ ] T2: Task number 2\n" +
		session("- status: ended", "- iteration: 3", "- started: 2026-11-22T10:00:00Z")})
	fa := &fakeAgent{}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	out, _ := runAll(t, t.Context(), co)
	const want = "every task that can run is done; T1 skipped earlier after failed attempts (`ralph task reopen T1` tries it again)"
	if out.Reason != StopAllDone || out.Detail != want || out.TasksDone != 1 || fa.calls() != 1 {
		t.Fatalf("outcome %+v after %d calls; want all done: %s", out, fa.calls(), want)
	}
	co.Close()

	co = newCoordinator(t, Options{Root: dir, Agent: fa})
	out, _ = runAll(t, t.Context(), co)
	if out.Reason != StopAllDone || out.Detail != "nothing to do, "+want || out.Iterations != 0 || out.Session.Iteration != 0 || fa.calls() != 1 {
		t.Fatalf("a run with nothing to do: %+v after %d calls", out, fa.calls())
	}
}

// The session's summary counts the tasks done and commits made across the
// restarts of the session, not just the last run's.
func TestSummaryCountsWholeSession(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": "# Tasks\n\n- [x] T1: Task number 1\n- [ ] T2: Task number 2\n" +
		session("- status: running", "- phase: writing", "- iteration: 1", "- task: T1", "- tokens: 100 in, 10 out", "- done: 1",
			"- updated: 2026-11-22T10:00:00Z", "- result: done, 100 in, 10 out, $0.0000, 1s")})
	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
	runAll(t, t.Context(), co)
	es := entries(t, dir)
	sum := es[len(es)-1]
	if sum.Title != "session 20261122-100000 ended" || sum.Get("tasks") != "2 done" || sum.Get("iterations") != "2" {
		t.Fatalf("summary %+v", sum)
	}
}

// --new-session after a crash still recovers the crashed session (the task
// back with attempts+1, a lost entry written) and ends it with a summary,
// then starts afresh.
func TestNewSessionRecoversTheOld(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": "# Tasks\n\n- [x] T1: Task number 1\n- [/] T2: Task number 2\n" +
		session("- status: running", "- phase: agent", "- iteration: 2", "- task: T2", "- tokens: 100 in, 10 out", "- done: 1", "- updated: 2026-11-22T10:00:00Z")})
	var attempts int64 // when T2 runs again: done drops them
	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{before: func(int) { attempts = attemptsOf(dir, "T2") }}, NewSession: true})
	out, _ := runAll(t, t.Context(), co)
	if out.Reason != StopAllDone || out.Session.ID == "20261122-100000" {
		t.Fatalf("outcome %+v", out)
	}
	tasks, s, _ := loadState(t, dir)
	if it := tasks.Find("T2"); it.Status != mdstate.Done || attempts != 1 || it.Attempts != 0 {
		t.Errorf("T2 %s, attempts %d (%d when it ran again); want done after one interrupted attempt", it.Status, it.Attempts, attempts)
	}
	if s.Iteration != 1 || s.Done != 1 {
		t.Errorf("new session %+v", s)
	}
	var titles []string
	for _, e := range entries(t, dir) {
		titles = append(titles, e.Title+" ["+e.Get("outcome")+"]")
	}
	want := "session 20261122-100000 recovered [recovered]|session 20261122-100000 ended [ended (new_session)]|T2: Task number 2 [done]|session " + s.ID + " ended [ended (all_done)]"
	if got := strings.Join(titles, "|"); got != want {
		t.Errorf("entries\n%s\nwant\n%s", got, want)
	}

	// A paused session replaced by a new one gets its summary too.
	dir = projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1) + session("- status: paused", "- iteration: 4", "- tokens: 7 in, 1 out")})
	co = newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}, NewSession: true})
	runAll(t, t.Context(), co)
	if es := entries(t, dir); len(es) == 0 || es[0].Title != "session 20261122-100000 ended" || es[0].Get("tokens") != "7 in, 1 out" {
		t.Errorf("entries %+v", es)
	}
}

// An error in the middle of an iteration (here the agent's log cannot be
// created) leaves the session as a crash would: the next start recovers it
// instead of finding a task in progress forever under an ended session.
func TestErrorLeavesSessionRecoverable(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	block := filepath.Join(dir, mdstate.RuntimeDir, "logs")
	if err := os.MkdirAll(filepath.Dir(block), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(block, []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
	if _, err := co.Run(t.Context()); err == nil {
		t.Fatal("Run succeeded with .ralph/logs a file")
	}
	co.Close()
	tasks, s, _ := loadState(t, dir)
	if s.Status != "running" || !strings.HasPrefix(s.Reason, "error: ") || status(t, tasks, "T1") != mdstate.InProgress {
		t.Fatalf("after the error: session %+v, T1 %s", s, status(t, tasks, "T1"))
	}
	if err := os.Remove(block); err != nil {
		t.Fatal(err)
	}
	var attempts int64 // when T1 runs again: done drops them
	co = newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{before: func(int) { attempts = attemptsOf(dir, "T1") }}})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone || out.Session.ID != s.ID {
		t.Fatalf("after the fix: %+v", out)
	}
	tasks, _, _ = loadState(t, dir)
	if it := tasks.Find("T1"); it.Status != mdstate.Done || attempts != 1 || it.Attempts != 0 {
		t.Errorf("T1 %s, attempts %d (%d when it ran again)", it.Status, it.Attempts, attempts)
	}
}

// Costs are counted as the files show them, so the session's total is the
// sum of its entries even for costs below 1/100 of a cent.
func TestCostTotalsMatchEntries(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(3)})
	fa := &fakeAgent{reply: func(int) agent.Result {
		return agent.Result{Final: "<promise>COMPLETE</promise>", Usage: agent.Usage{In: 1, Out: 1}, CostUSD: 0.00004}
	}}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	runAll(t, t.Context(), co)
	_, s, lg := loadState(t, dir)
	for _, e := range lg.Recent {
		if e.Get("cost") != "$0.0000" {
			t.Errorf("entry cost %s", e.Get("cost"))
		}
	}
	if s.CostUSD != 0 {
		t.Errorf("session cost %v, the entries sum to 0", s.CostUSD)
	}
}

// An answer that came in before a stop counts: the task is done, not sent
// back to be done again.
func TestCompleteBeforeStopCounts(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	fa := &fakeAgent{reply: func(int) agent.Result {
		cancel() // Ctrl-C right after the agent answered
		return agent.Result{Final: "Done.\n<promise>COMPLETE</promise>"}
	}}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	out, _ := runAll(t, ctx, co)
	if out.Reason != StopInterrupted {
		t.Fatalf("outcome %+v", out)
	}
	tasks, s, _ := loadState(t, dir)
	if status(t, tasks, "T1") != mdstate.Done || s.Done != 1 {
		t.Fatalf("T1 %s, session %+v; the completed work was thrown away", status(t, tasks, "T1"), s)
	}
}

// Interruptions count as attempts: one that reaches --max-attempts skips
// the task, as failures do, instead of trying it a fourth time.
func TestInterruptedAttemptsReachMax(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": "# Tasks\n\n- [/] T1: Task number 1\n  - attempts: 2\n" +
		session("- status: running", "- phase: agent", "- iteration: 5", "- task: T1")})
	fa := &fakeAgent{}
	co := newCoordinator(t, Options{Root: dir, Agent: fa, MaxAttempts: 3})
	out, _ := runAll(t, t.Context(), co)
	tasks, _, _ := loadState(t, dir)
	it := tasks.Find("T1")
	if out.Reason != StopFailed || fa.calls() != 0 || it.Status != mdstate.Skipped || it.Attempts != 3 ||
		!strings.HasSuffix(it.Notes[len(it.Notes)-1], "; skipped after 3 failed attempts") {
		t.Fatalf("outcome %+v after %d calls; T1 %+v", out, fa.calls(), it)
	}
}

// A summary that could not be written (here the log is a folder) is not
// lost: the session stays in phase "ending", and the next start writes it.
func TestFailedSummaryWrittenNextStart(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": "# Tasks\n\n- [x] T1: Task number 1\n" +
		session("- status: paused", "- iteration: 1", "- tokens: 10 in, 1 out", "- done: 1")})
	log := filepath.Join(dir, mdstate.ProgressFile)
	if err := os.Mkdir(log, 0o755); err != nil {
		t.Fatal(err)
	}
	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
	if _, err := co.Run(t.Context()); err == nil {
		t.Fatal("Run succeeded with the progress log a folder")
	}
	co.Close()
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	co = newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
	runAll(t, t.Context(), co)
	es := entries(t, dir)
	if len(es) != 1 || es[0].Title != "session 20261122-100000 ended" || es[0].Get("outcome") != "ended (all_done)" || es[0].Get("tasks") != "1 done" {
		t.Fatalf("entries %+v", es)
	}
}

// A person removes a task while its agent works on it: the iteration is
// still recorded (its entry and its tokens), and the run goes on.
func TestTaskRemovedDuringIteration(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
	fa := &fakeAgent{before: func(n int) {
		if n != 1 {
			return
		}
		p := filepath.Join(dir, "RALPH_TASKS.md")
		data, _ := os.ReadFile(p)
		if err := os.WriteFile(p, []byte(strings.Replace(string(data), "- [/] T1: Task number 1\n", "", 1)), 0o644); err != nil {
			t.Error(err)
		}
	}}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
		t.Fatalf("outcome %+v", out)
	}
	tasks, s, lg := loadState(t, dir)
	if tasks.Find("T1") != nil || len(lg.Recent) != 2 || lg.Recent[0].Title != "T1: Task number 1" || s.TokensIn != 200 || s.Done != 2 {
		t.Fatalf("session %+v, entries %+v", s, lg.Recent)
	}
}

// A task that waits for a skipped one is named with it: the run says why
// nothing can start. When the skip was an earlier session's, the run did
// all it could (done, exit 0); a task blocked by a person still leaves the
// run with tasks it could not do.
func TestNoneReadyNamesSkippedDependency(t *testing.T) {
	for _, tc := range []struct {
		name, tasks string
		reason      StopReason
		detail      string
	}{
		{"skipped earlier", "- [-] T1: Task number 1\n  - note: the agent ended without <promise>COMPLETE</promise>; skipped after 3 failed attempts\n- [ ] T2: Task number 2\n  - after: T1\n- [ ] T3: Task number 3\n  - after: T2\n",
			StopAllDone, "every task that can run is done; T1 skipped earlier after failed attempts (`ralph task reopen T1` tries it again); T2 waits for T1, which is skipped; T3 waits for T1, which is skipped"},
		{"skipped by a person", "- [-] T1: Task number 1\n- [ ] T2: Task number 2\n  - after: T1\n",
			StopAllDone, "every task that can run is done; T2 waits for T1, which is skipped"},
		{"and one blocked", "- [-] T1: Task number 1\n- [ ] T2: Task number 2\n  - after: T1\n- [!] T3: Task number 3\n",
			StopNoneReady, "1 task left, not ready (blocked, in progress, or waiting for others); T2 waits for T1, which is skipped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := projectDir(t, map[string]string{"RALPH_TASKS.md": "# Tasks\n\n" + tc.tasks})
			co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
			out, _ := runAll(t, t.Context(), co)
			if out.Reason != tc.reason || !strings.Contains(out.Detail, tc.detail) {
				t.Fatalf("outcome %+v, want %s with %q", out, tc.reason, tc.detail)
			}
		})
	}
}

// A task that waits for one ralph gave up on in this run: the run failed.
func TestNoneReadyWaitsOnThisRunsSkip(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": "# Tasks\n\n- [ ] T1: Task number 1\n- [ ] T2: Task number 2\n  - after: T1\n"})
	fa := &fakeAgent{reply: func(int) agent.Result { return agent.Result{Final: "not finished"} }}
	co := newCoordinator(t, Options{Root: dir, Agent: fa, MaxAttempts: 1})
	out, _ := runAll(t, t.Context(), co)
	if out.Reason != StopFailed || !strings.Contains(out.Detail, "gave up on T1") || !strings.Contains(out.Detail, "T2 waits for T1, which is skipped") {
		t.Fatalf("outcome %+v", out)
	}
}
