//go:build linux

package coordinator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/mdstate"
)

// The circuit breaker stops a run whose iterations neither complete a task
// nor change a file; a person's edit of RALPH_TASKS.md starts it afresh.
func TestRunBreaker(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	fa := &fakeAgent{reply: func(int) agent.Result { return agent.Result{Final: "nothing done"} }}
	co := newCoordinator(t, Options{Root: dir, Agent: fa, MaxAttempts: 100})
	out, _ := runAll(t, t.Context(), co)
	if out.Reason != StopLimit || out.Iterations != 3 || !strings.HasPrefix(out.Detail, "circuit breaker: 3 iterations") {
		t.Fatalf("outcome %s after %d: %s", out.Reason, out.Iterations, out.Detail)
	}

	// A person steps in during the second iteration: it counts as the
	// first of three more chances.
	dir = projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	fa = &fakeAgent{
		reply: func(int) agent.Result { return agent.Result{Final: "nothing done"} },
		before: func(n int) {
			if n == 2 {
				p := filepath.Join(dir, "RALPH_TASKS.md")
				data, _ := os.ReadFile(p)
				_ = os.WriteFile(p, append(data, []byte("\nA person's note.\n")...), 0o644)
			}
		},
	}
	co = newCoordinator(t, Options{Root: dir, Agent: fa, MaxAttempts: 100})
	out, _ = runAll(t, t.Context(), co)
	if out.Reason != StopLimit || out.Iterations != 4 {
		t.Fatalf("with a hand edit: outcome %s after %d iterations, want the breaker after 4", out.Reason, out.Iterations)
	}

	// Off.
	dir = projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	co = newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{reply: func(int) agent.Result { return agent.Result{Final: "no"} }}, MaxAttempts: 100, MaxIterations: 6, Breaker: -1})
	if out, _ = runAll(t, t.Context(), co); out.Iterations != 6 {
		t.Fatalf("breaker off: %d iterations (%s)", out.Iterations, out.Detail)
	}
}

// A restart during a wait for a rate limit goes on waiting: the next agent
// call does not come before the recorded time.
func TestRateLimitWaitSurvivesRestart(t *testing.T) {
	until := time.Now().Add(700 * time.Millisecond).UTC().Truncate(time.Second).Add(time.Second)
	tasks := tasksMD(1) + "\n## Session\n\n- id: 20261122-100000\n- status: running\n- phase: waiting\n- iteration: 1\n- task: T1\n- wait: until " + until.Format(time.RFC3339) + "\n"
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	if err := os.WriteFile(filepath.Join(dir, "RALPH_TASKS.md"), []byte(tasks), 0o644); err != nil {
		t.Fatal(err)
	}
	var called time.Time
	fa := &fakeAgent{before: func(int) { called = time.Now() }}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	out, _ := runAll(t, t.Context(), co)
	if out.Reason != StopAllDone {
		t.Fatalf("outcome %+v", out)
	}
	if called.Before(until) {
		t.Fatalf("the agent was called at %s, before the limit reset at %s", called.Format(time.RFC3339Nano), until.Format(time.RFC3339))
	}
	_, s, _ := loadState(t, dir)
	if s.ID != "20261122-100000" || s.Iteration != 2 || !s.WaitUntil.IsZero() {
		t.Fatalf("session %+v", s)
	}
	// The rate-limited attempt did not count.
	p := mdstate.Open(dir)
	c, _ := p.LoadChecklist(mdstate.TasksKind)
	if it := c.Find("T1"); it.Status != mdstate.Done {
		t.Fatalf("T1 %s", it.Status)
	}
}

// currentTask is the task a prompt gives the agent.
func currentTask(prompt string) string {
	_, after, _ := strings.Cut(prompt, "## Current task\n\n")
	id, _, _ := strings.Cut(after, ":")
	return id
}

// After a rate limit, the same task is tried again, even when a person
// made another task go first during the wait; the limited attempt is not
// counted.
func TestRateLimitRetriesSameTask(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
	fa := &fakeAgent{}
	fa.reply = func(n int) agent.Result {
		if n > 1 {
			return agent.Result{Final: "<promise>COMPLETE</promise>"}
		}
		// A person gives T2 priority 1 while T1 waits for the limit.
		p := filepath.Join(dir, "RALPH_TASKS.md")
		data, _ := os.ReadFile(p)
		data = []byte(strings.Replace(string(data), "Task number 2\n", "Task number 2\n  - priority: 1\n", 1))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Error(err)
		}
		return agent.Result{IsError: true, ErrorKind: agent.KindRateLimit, APIStatus: 429, ErrorText: "rate limited",
			ResetAt: time.Now().Add(50 * time.Millisecond)}
	}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
		t.Fatalf("outcome %+v", out)
	}
	var order []string
	for n := 1; n <= fa.calls(); n++ {
		order = append(order, currentTask(fa.prompt(n)))
	}
	if got := strings.Join(order, " "); got != "T1 T1 T2" {
		t.Fatalf("tasks in order %q, want T1 T1 T2", got)
	}
	tasks, _, _ := loadState(t, dir)
	if it := tasks.Find("T1"); it.Attempts != 0 || it.Priority != 0 || tasks.Find("T2").Priority != 1 {
		t.Fatalf("T1 attempts %d; priorities T1 %d, T2 %d", it.Attempts, it.Priority, tasks.Find("T2").Priority)
	}

	// The same after a restart during the wait: the session names the
	// task, and it goes before T1, which is first in the file.
	until := time.Now().UTC().Truncate(time.Second)
	dir = projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2) + "\n## Session\n\n- id: 20261122-100000\n- status: running\n- phase: waiting\n- iteration: 1\n- task: T2\n- wait: until " + until.Format(time.RFC3339) + "\n"})
	fa = &fakeAgent{}
	co = newCoordinator(t, Options{Root: dir, Agent: fa})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
		t.Fatalf("after a restart: outcome %+v", out)
	}
	if first := currentTask(fa.prompt(1)); first != "T2" {
		t.Fatalf("after a restart during the wait, the first task was %q, want T2", first)
	}
}

// After an iteration that completed a task, no fingerprint of the work
// tree is taken (a completion is progress whatever the tree): the next
// iteration has none to compare with and counts as progress too, so the
// breaker trips one iteration later than after a failed one, never sooner.
func TestRunBreakerAfterCompletion(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
	fa := &fakeAgent{reply: func(n int) agent.Result {
		if n == 1 {
			return agent.Result{Final: "Done.\n<promise>COMPLETE</promise>"}
		}
		return agent.Result{Final: "nothing done"}
	}}
	co := newCoordinator(t, Options{Root: dir, Agent: fa, MaxAttempts: 100})
	out, _ := runAll(t, t.Context(), co)
	if out.Reason != StopLimit || out.Iterations != 5 || !strings.HasPrefix(out.Detail, "circuit breaker: 3 iterations") {
		t.Fatalf("outcome %s after %d: %s", out.Reason, out.Iterations, out.Detail)
	}
}
