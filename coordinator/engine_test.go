//go:build linux

package coordinator

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
	"github.com/ralph-dev/ralph/gitctx/gitctxtest"
	"github.com/ralph-dev/ralph/mdstate"
)

// collect reads co's events in the background until Close; wait returns
// those of the run that has ended (up to its stopped event).
type collector struct {
	mu      sync.Mutex
	evs     []Event
	stopped chan struct{}
}

func collect(co *Coordinator) *collector {
	c := &collector{stopped: make(chan struct{}, 16)}
	go func() {
		for e := range co.Events() {
			c.mu.Lock()
			c.evs = append(c.evs, e)
			c.mu.Unlock()
			if e.Kind == EventStopped {
				c.stopped <- struct{}{}
			}
		}
	}()
	return c
}

func (c *collector) events() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.evs...)
}

func (c *collector) count(kind EventKind) int {
	n := 0
	for _, e := range c.events() {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// blockingAgent runs until its context ends on the calls block says, and
// completes the others; started receives each call's number.
type blockingAgent struct {
	fakeAgent
	block   func(n int) bool
	started chan int
}

func (a *blockingAgent) Run(ctx context.Context, req agent.Request, onEvent func(agent.Event)) (agent.Result, error) {
	a.mu.Lock()
	a.prompts = append(a.prompts, req.Prompt)
	n := len(a.prompts)
	a.mu.Unlock()
	if a.started != nil {
		a.started <- n
	}
	if a.block != nil && a.block(n) {
		<-ctx.Done()
		return agent.Result{IsError: true, ErrorKind: agent.KindInterrupted, ExitCode: -1}, nil
	}
	return agent.Result{Final: "Done.\n<promise>COMPLETE</promise>", Usage: agent.Usage{In: 100, Out: 10}, CostUSD: 0.01}, nil
}

// The same coordinator runs, pauses, resumes and runs again: no panic, one
// session whose counters go on, one stopped event per run.
func TestEngineRunPauseRunAgain(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(4)})
	fa := &fakeAgent{}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	col := collect(co)

	fa.before = func(n int) {
		if n == 1 {
			co.Pause()
		}
	}
	out, err := co.Run(t.Context())
	if err != nil || out.Reason != StopPaused || out.Iterations != 1 {
		t.Fatalf("first run: %+v, %v", out, err)
	}
	<-col.stopped
	id := out.Session.ID
	if _, s, _ := loadState(t, dir); s.Status != mdstate.SessionPaused || s.ID != id {
		t.Fatalf("after pause: %+v", s)
	}

	// Pause, then Resume before the pause takes effect: the run goes on.
	fa.before = func(n int) {
		if n == 2 {
			co.Pause()
			if err := co.Resume(t.Context()); err != nil {
				t.Error(err)
			}
		}
		if n == 3 {
			co.Pause()
		}
	}
	out, err = co.Run(t.Context())
	if err != nil || out.Reason != StopPaused || out.Iterations != 3 || out.TasksDone != 2 || out.Session.ID != id {
		t.Fatalf("second run: %+v, %v", out, err)
	}
	<-col.stopped

	// Resume with no run going starts one; Wait returns its outcome.
	fa.before = nil
	if err := co.Resume(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := co.Start(t.Context()); !errors.Is(err, ErrRunning) {
		t.Errorf("Start during a run: %v, want ErrRunning", err)
	}
	out, err = co.Wait()
	if err != nil || out.Reason != StopAllDone || out.Iterations != 4 || out.Session.ID != id || out.Session.Done != 4 {
		t.Fatalf("third run: %+v, %v", out, err)
	}
	<-col.stopped
	if n := col.count(EventStopped); n != 3 {
		t.Errorf("%d stopped events for 3 runs", n)
	}
	if n := col.count(EventResumed); n != 2 {
		t.Errorf("%d resumed events, want 2", n)
	}
	tasks, s, log := loadState(t, dir)
	if s.Status != mdstate.SessionEnded || s.Iteration != 4 || s.TokensIn != 400 || len(log.Recent) != 4 {
		t.Errorf("session %+v, %d entries", s, len(log.Recent))
	}
	for i := 1; i <= 4; i++ {
		if st := status(t, tasks, "T"+strconv.Itoa(i)); st != mdstate.Done {
			t.Errorf("T%d is %s", i, st)
		}
	}
}

// Snapshot while an agent works shows the task, the session and the
// queued guidance.
func TestEngineSnapshotWhileRunning(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	ba := &blockingAgent{block: func(int) bool { return true }, started: make(chan int, 4)}
	co := newCoordinator(t, Options{Root: dir, Agent: ba})
	col := collect(co)
	if err := co.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-ba.started
	if err := co.Queue(Guidance{Text: "mind the CRLF files"}); err != nil {
		t.Fatal(err)
	}
	snap := co.Snapshot()
	if !snap.Running || snap.Task != "T1" || snap.Iteration != 1 || snap.Session.Phase != mdstate.PhaseAgent ||
		snap.Session.Task != "T1" || snap.Agent != "fake" || len(snap.Guidance) != 1 || snap.Guidance[0] != "mind the CRLF files" {
		t.Fatalf("snapshot while running: %+v", snap)
	}
	co.Stop(true)
	<-col.stopped
	if snap := co.Snapshot(); snap.Running || snap.Task != "" || snap.Session.Status != mdstate.SessionPaused {
		t.Fatalf("snapshot after stop: %+v", snap)
	}
}

// An urgent message stops only the current iteration: the task goes back
// to pending without an attempt, runs again first, with the message.
func TestEngineUrgentGuidance(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
	ba := &blockingAgent{block: func(n int) bool { return n == 1 }, started: make(chan int, 8)}
	co := newCoordinator(t, Options{Root: dir, Agent: ba})
	col := collect(co)
	if err := co.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-ba.started
	if err := co.Queue(Guidance{Text: "use the v2 API", Urgent: true}); err != nil {
		t.Fatal(err)
	}
	out, err := co.Wait()
	if err != nil || out.Reason != StopAllDone || out.Iterations != 3 || out.TasksDone != 2 {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	<-col.stopped
	if p := ba.prompt(1); strings.Contains(p, "v2 API") {
		t.Errorf("prompt 1 has the message queued after it started")
	}
	if p := ba.prompt(2); !strings.Contains(p, "## Current task\n\nT1: ") || !strings.Contains(p, "## Guidance from the user\n\n- use the v2 API\n") {
		t.Errorf("prompt 2 is not T1 with the message:\n%s", p)
	}
	if p := ba.prompt(3); strings.Contains(p, "v2 API") {
		t.Errorf("prompt 3 repeats the delivered message:\n%s", p)
	}
	tasks, _, log := loadState(t, dir)
	t1 := tasks.Find("T1")
	if t1.Status != mdstate.Done || t1.Attempts != 0 || len(t1.Notes) != 1 || !strings.Contains(t1.Notes[0], "urgent message") {
		t.Errorf("T1 %+v", t1)
	}
	if g := tasks.Guidance(); len(g) != 0 {
		t.Errorf("guidance still queued: %+v", g)
	}
	if e := log.Recent[0]; e.Get("outcome") != "interrupted" {
		t.Errorf("entry 1 %+v", e)
	}
	if e := log.Recent[1]; e.Get("outcome") != "done" || !slices.Equal(fieldList(e, "guidance"), []string{"use the v2 API"}) {
		t.Errorf("entry 2 does not record the guidance: %+v", e)
	}
}

// Stop(hard) with an agent that ignores SIGINT: its whole group is gone
// when Stop returns, the task is pending with a note, the session paused.
func TestEngineHardStop(t *testing.T) {
	dir := projectDir(t, map[string]string{
		"RALPH_TASKS.md": tasksMD(1),
		// The agent and a grandchild in its group both ignore SIGINT.
		"agent.sh": "trap '' INT\nsh -c \"trap '' INT; sleep 60\" &\necho $$ $! > pids\necho working\nwhile :; do sleep 1; done\n",
	})
	ag, err := agent.Exec("sh agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	co := newCoordinator(t, Options{Root: dir, Agent: ag})
	col := collect(co)
	if err := co.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	pids := waitPids(t, filepath.Join(dir, "pids"))
	start := time.Now()
	co.Stop(true)
	took := time.Since(start)
	<-col.stopped
	for _, pid := range pids {
		if proctest.Alive(pid) {
			t.Errorf("pid %d still runs after Stop(true) returned", pid)
		}
	}
	tasks, s, _ := loadState(t, dir)
	if s.Status != mdstate.SessionPaused || s.Child != 0 || s.Phase != "" {
		t.Errorf("session %+v", s)
	}
	if t1 := tasks.Find("T1"); t1.Status != mdstate.Pending || len(t1.Notes) != 1 || !strings.HasPrefix(t1.Notes[0], "interrupted at ") {
		t.Errorf("T1 %+v", t1)
	}
	out, err := co.Wait()
	if err != nil || out.Reason != StopInterrupted {
		t.Errorf("outcome %+v, %v", out, err)
	}
	// The figure is a benchmark's (BenchmarkStopHard); this bound only
	// tells a hard stop from the 3 s grace of a soft one.
	if took > 2*time.Second {
		t.Errorf("Stop(true) took %s: not a hard stop", took)
	}
}

// fieldList is an entry's list field.
func fieldList(e mdstate.Entry, key string) []string {
	for _, f := range e.Fields {
		if f.Key == key {
			return f.List
		}
	}
	return nil
}

// waitPids reads the pids an agent script wrote to path.
func waitPids(t *testing.T, path string) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile(path)
		if f := strings.Fields(string(data)); err == nil && len(f) == 2 {
			var pids []int
			for _, s := range f {
				n, _ := strconv.Atoi(s)
				pids = append(pids, n)
			}
			return pids
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the agent wrote no pids to %s", path)
	return nil
}

// engineChildEnv makes the test binary a ralph that queues guidance, runs
// a hanging agent, and waits to be killed (TestEngineGuidanceSurvivesKill).
const engineChildEnv = "RALPH_TEST_ENGINE_CHILD"

func engineChild(dir string) int {
	ag, err := agent.Exec("sh hang.sh")
	if err != nil {
		return 2
	}
	co, err := New(Options{Root: dir, Agent: ag, Command: "test"})
	if err != nil {
		return 2
	}
	go func() {
		for range co.Events() {
		}
	}()
	if err := co.Queue(Guidance{Text: "keep the public API stable"}); err != nil {
		return 2
	}
	_, _ = co.Run(context.Background())
	return 0
}

// Guidance queued, ralph SIGKILLed while an agent that received it works:
// after the restart it is still queued, and it is delivered exactly once.
func TestEngineGuidanceSurvivesKill(t *testing.T) {
	dir := projectDir(t, map[string]string{
		"RALPH_TASKS.md": tasksMD(2),
		"hang.sh":        "echo $$ > pid\nwhile :; do sleep 1; done\n",
	})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), engineChildEnv+"="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if data, _ := os.ReadFile(filepath.Join(dir, "pid")); len(data) > 0 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatal("the child ralph's agent never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	tasks, err := mdstate.Open(dir).LoadChecklist(mdstate.TasksKind)
	if err != nil {
		t.Fatal(err)
	}
	if g := tasks.Guidance(); len(g) != 1 || g[0].Text != "keep the public API stable" {
		t.Fatalf("guidance after the kill: %+v\n%s", g, tasks.Source())
	}

	fa := &fakeAgent{}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	out, _ := runAll(t, t.Context(), co)
	if out.Reason != StopAllDone || fa.calls() != 2 {
		t.Fatalf("restart: %+v, %d calls", out, fa.calls())
	}
	if !strings.Contains(fa.prompt(1), "- keep the public API stable\n") || strings.Contains(fa.prompt(2), "public API") {
		t.Errorf("the guidance was not delivered exactly once:\n%s\n---\n%s", fa.prompt(1), fa.prompt(2))
	}
	tasks, _, log := loadState(t, dir)
	if g := tasks.Guidance(); len(g) != 0 {
		t.Errorf("still queued: %+v", g)
	}
	recorded := 0
	for _, e := range log.Recent {
		recorded += len(fieldList(e, "guidance"))
	}
	if recorded != 1 {
		t.Errorf("the guidance is in %d entries, want 1", recorded)
	}
}

// A backoff before a retry is an event with its delay, and Pause cuts it
// short (a wait for a limit carries its end as a time: see
// TestPauseDuringLimitWait).
func TestEngineTypedRetryAndWaitEvents(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	fa := &fakeAgent{reply: func(n int) agent.Result {
		return agent.Result{Final: "not yet"}
	}}
	co := newCoordinator(t, Options{Root: dir, Agent: fa, Backoff: time.Hour})
	col := collect(co)
	if err := co.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for col.count(EventRetry) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	co.Pause()
	out, err := co.Wait()
	if err != nil || out.Reason != StopPaused || fa.calls() != 1 {
		t.Fatalf("outcome %+v, %v, %d calls", out, err, fa.calls())
	}
	<-col.stopped
	var retry *Event
	for _, e := range col.events() {
		if e.Kind == EventRetry {
			retry = &e
		}
	}
	if retry == nil || retry.Delay != time.Minute || retry.Attempt != 1 || retry.Task != "T1" {
		t.Errorf("retry event %+v (the backoff is capped at a minute)", retry)
	}
}

// A front end that polls Snapshot while runs come and go, and starts a new
// run as soon as it sees a stopped event, never gets ErrRunning and never
// sees a run still marked running after its stopped event (run under
// -race: no data race either).
func TestEngineStartOnStoppedEvent(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(6)})
	fa := &fakeAgent{}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	fa.before = func(int) { co.Pause() }
	poll := make(chan struct{})
	go func() {
		defer close(poll)
		for i := 0; i < 2000; i++ {
			_ = co.Snapshot()
		}
	}()
	if err := co.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	runs := 1
	for e := range co.Events() {
		if e.Kind != EventStopped {
			continue
		}
		if snap := co.Snapshot(); snap.Running || snap.Paused {
			t.Errorf("after run %d's stopped event: running %v, paused %v", runs, snap.Running, snap.Paused)
		}
		if e.Stop == StopAllDone {
			break
		}
		if e.Stop != StopPaused {
			t.Fatalf("run %d stopped: %+v", runs, e)
		}
		if err := co.Start(t.Context()); err != nil {
			t.Fatalf("Start after run %d's stopped event: %v", runs, err)
		}
		runs++
	}
	<-poll
	if runs != 7 || fa.calls() != 6 {
		t.Errorf("%d runs, %d agent calls; want 7 and 6", runs, fa.calls())
	}
}

// A stop that comes right after the agent answered COMPLETE keeps the
// task's commit (--commit): the commit is not made under the stopped
// context.
func TestEngineStopKeepsCommit(t *testing.T) {
	gitctxtest.Isolate(t)
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
	gitctxtest.Git(t, dir, "init", "-q", "-b", "main")
	gitctxtest.Commit(t, dir, "base", 1)
	var co *Coordinator
	fa := &fakeAgent{reply: func(n int) agent.Result {
		if err := os.WriteFile(filepath.Join(dir, "work.go"), []byte("package work\n"), 0o644); err != nil {
			t.Error(err)
		}
		go co.Stop(false)
		time.Sleep(50 * time.Millisecond) // the stop lands before the answer is recorded
		return agent.Result{Final: "<promise>COMPLETE</promise>"}
	}}
	co = newCoordinator(t, Options{Root: dir, Agent: fa, Commit: true})
	col := collect(co)
	out, err := co.Run(t.Context())
	<-col.stopped
	if err != nil || out.Reason != StopInterrupted {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	tasks, s, log := loadState(t, dir)
	if st := status(t, tasks, "T1"); st != mdstate.Done || s.Commits != 1 || log.Entries != 1 {
		t.Fatalf("T1 %s, %d commits, %d entries", st, s.Commits, log.Entries)
	}
	// The commit holds T1's entry too (the only one: a pause writes none).
	if dirty := DirtyPaths(t.Context(), dir); slices.Contains(dirty, "work.go") || slices.Contains(dirty, mdstate.ProgressFile) {
		t.Errorf("work.go or T1's entry is still uncommitted: %v", dirty)
	}
}
