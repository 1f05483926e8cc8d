//go:build linux

package coordinator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/mdstate"
)

// turnEntries are the progress log's conversation turns, oldest first.
func turnEntries(t *testing.T, dir string) []mdstate.Entry {
	t.Helper()
	lg, err := mdstate.Open(dir).ReadProgress(100)
	if err != nil {
		t.Fatal(err)
	}
	var turns []mdstate.Entry
	for _, e := range lg.Recent {
		if strings.HasPrefix(e.Title, turnPrefix) {
			turns = append(turns, e)
		}
	}
	return turns
}

// TestTalkResumesTheConversation: two turns through the claude backend
// (this test binary as a fake claude, recording its arguments), then a new
// coordinator, as after a restart of ralph chat: the first turn starts a
// conversation, the others resume it with --resume and the session id the
// first turn's entry keeps. Each turn leaves an entry.
func TestTalkResumesTheConversation(t *testing.T) {
	opts, _ := fakeClaudeOptions(t, "")
	rec := filepath.Join(t.TempDir(), "record.json")
	opts.Env = append(opts.Env, "FAKE_CLAUDE_RECORD="+rec)
	args := func() []string {
		t.Helper()
		r, err := agenttest.ReadRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		return r.Args
	}
	co := newCoordinator(t, opts)
	turn, err := co.Talk(t.Context(), "Plan the docs work, please")
	if err != nil {
		t.Fatal(err)
	}
	if turn.Outcome != TurnAnswered || turn.Resumed || turn.Conversation != agenttest.SessionID {
		t.Fatalf("first turn %+v", turn)
	}
	if strings.Contains(turn.Answer, "<promise>") || !strings.Contains(turn.Answer, "Wrote notes.txt.") {
		t.Errorf("answer %q: want the final message without its tags", turn.Answer)
	}
	if slices.Contains(args(), "--resume") {
		t.Errorf("the first turn resumed something: %q", args())
	}
	turn, err = co.Talk(t.Context(), "And then?")
	if err != nil {
		t.Fatal(err)
	}
	if a := args(); !turn.Resumed || !slices.Contains(a, "--resume") || a[slices.Index(a, "--resume")+1] != agenttest.SessionID {
		t.Errorf("second turn %+v with args %q: want --resume %s", turn, a, agenttest.SessionID)
	}
	co.Close()

	co = newCoordinator(t, opts) // ralph chat started again
	if _, err := co.Talk(t.Context(), "Where were we?"); err != nil {
		t.Fatal(err)
	}
	if a := args(); !slices.Contains(a, "--resume") {
		t.Errorf("after a restart the turn did not resume: %q", a)
	}
	turns := turnEntries(t, opts.Root)
	if len(turns) != 3 {
		t.Fatalf("%d turn entries, want 3", len(turns))
	}
	e := turns[0]
	for key, want := range map[string]string{"outcome": "answered", "conversation": agenttest.SessionID, "tokens": "300 in, 40 out", "cost": "$0.0123"} {
		if got := e.Get(key); got != want {
			t.Errorf("first entry's %s = %q, want %q (%+v)", key, got, want, e)
		}
	}
	if e.Title != "chat: Plan the docs work, please" || !strings.HasPrefix(e.Get("answer"), "Wrote notes.txt.") {
		t.Errorf("first entry %+v", e)
	}
}

// TestTalkReplaysForAnAgentWithoutSessions: an agent that has no session
// to resume (exec) gets the recent turns replayed in its prompt.
func TestTalkReplaysForAnAgentWithoutSessions(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	prompts := filepath.Join(t.TempDir(), "prompts")
	script := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >> "+prompts+"\necho '----' >> "+prompts+"\necho 'Sure, noted.'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ag, err := agent.Exec(script)
	if err != nil {
		t.Fatal(err)
	}
	co := newCoordinator(t, Options{Root: dir, Agent: ag})
	for _, text := range []string{"Remember the colour blue", "Which colour?"} {
		turn, err := co.Talk(t.Context(), text)
		if err != nil {
			t.Fatal(err)
		}
		if turn.Outcome != TurnAnswered || turn.Answer != "Sure, noted." || turn.Resumed {
			t.Fatalf("turn %+v", turn)
		}
	}
	data, err := os.ReadFile(prompts)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(data), "----\n")
	if strings.Contains(parts[0], "The conversation so far") {
		t.Errorf("the first prompt replays a conversation:\n%s", parts[0])
	}
	if !strings.Contains(parts[1], "They said: Remember the colour blue\n  You answered: Sure, noted.") {
		t.Errorf("the second prompt does not replay the first turn:\n%s", parts[1])
	}
	if !strings.HasPrefix(parts[1], "# A message from the person you work with\n\nWhich colour?\n") {
		t.Errorf("the second prompt does not start with the message:\n%s", parts[1])
	}
}

// TestTalkOneAgentAtATime: a turn is refused while a run is under way, and
// a run while a turn is; a hard stop of a turn stops its agent's tree at
// once and records the turn as interrupted.
func TestTalkOneAgentAtATime(t *testing.T) {
	opts, pids := fakeClaudeOptions(t, "ignore_sigint")
	co := newCoordinator(t, opts)
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := co.Talk(ctx, "Tell me something long")
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !fileHasLines(pids, 2) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := co.Start(t.Context()); !errors.Is(err, ErrTalking) {
		t.Errorf("Start during a turn: %v, want ErrTalking", err)
	}
	if _, err := co.Talk(t.Context(), "another"); !errors.Is(err, ErrTalking) {
		t.Errorf("a second turn: %v, want ErrTalking", err)
	}
	began := time.Now()
	cancel(proc.ErrStopNow)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stopped turn did not return")
	}
	t.Logf("turn stopped in %s", time.Since(began).Round(time.Millisecond))
	checkPidsGone(t, pids)
	turns := turnEntries(t, opts.Root)
	if len(turns) != 1 || turns[0].Get("outcome") != string(TurnInterrupted) {
		t.Fatalf("entries %+v", turns)
	}

	// And a turn during a run.
	opts2, _ := fakeClaudeOptions(t, "hang_after_output")
	co2 := newCoordinator(t, opts2)
	if err := co2.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := co2.Talk(t.Context(), "hello"); !errors.Is(err, ErrRunning) {
		t.Errorf("Talk during a run: %v, want ErrRunning", err)
	}
	co2.Stop(true)
}

// fileHasLines reports whether path has at least n lines.
func fileHasLines(path string, n int) bool {
	data, err := os.ReadFile(path)
	return err == nil && strings.Count(string(data), "\n") >= n
}

// TestStartForLimitsOneRun: StartFor(ctx, 1) runs one iteration, and a
// later Start runs on, within the same session.
func TestStartForLimitsOneRun(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(3)})
	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
	if err := co.StartFor(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	out, err := co.Wait()
	if err != nil || out.Reason != StopLimit || out.TasksDone != 1 {
		t.Fatalf("StartFor 1: %+v, %v", out, err)
	}
	out, err = co.Run(t.Context())
	if err != nil || out.Reason != StopAllDone || out.TasksDone != 2 {
		t.Fatalf("then Run: %+v, %v", out, err)
	}
}

// A resumed turn that fails on an API error keeps the conversation (no
// second run, the next turn resumes the same session); one whose CLI
// cannot find the session starts a new one.
func TestTalkKeepsConversationOnAPIError(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	var resumes []string
	fa := &fakeAgent{}
	fa.reply = func(n int) agent.Result {
		switch n {
		case 2:
			return agent.Result{IsError: true, ErrorKind: agent.KindAPIError, APIStatus: 500, ErrorText: "overloaded", SessionID: "s-1"}
		case 3:
			return agent.Result{IsError: true, ErrorKind: agent.KindCrashed, ErrorText: "No conversation found with session ID: s-1"}
		}
		return agent.Result{Final: "Sure.", SessionID: fmt.Sprintf("s-%d", n)}
	}
	co := newCoordinator(t, Options{Root: dir, Agent: &resumeRecorder{fakeAgent: fa, resumes: &resumes}})
	for _, text := range []string{"one", "two", "three"} {
		if _, err := co.Talk(t.Context(), text); err != nil {
			t.Fatal(err)
		}
	}
	// Turn 1: new. Turn 2 resumes s-1 and fails on the API: no retry.
	// Turn 3 resumes s-1 again, the CLI lost it: a new one (4th run).
	if want := []string{"", "s-1", "s-1", ""}; !slices.Equal(resumes, want) {
		t.Errorf("resumed %q, want %q", resumes, want)
	}
}

// resumeRecorder is fakeAgent keeping each run's Request.Resume.
type resumeRecorder struct {
	*fakeAgent
	resumes *[]string
}

func (r *resumeRecorder) Run(ctx context.Context, req agent.Request, onEvent func(agent.Event)) (agent.Result, error) {
	*r.resumes = append(*r.resumes, req.Resume)
	return r.fakeAgent.Run(ctx, req, onEvent)
}
