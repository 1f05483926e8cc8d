//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
	"github.com/ralph-dev/ralph/coordinator/proc"
)

// TestRealClaudeChatConversation talks with the real Claude Code CLI
// through `ralph chat` (piped) against a fake Messages API on loopback:
// two turns in one chat, then a third in a new chat. The second and third
// turns resume the CLI's own session (claude --resume with the id the
// first turn's entry keeps), which the API sees: their requests carry the
// first message.
func TestRealClaudeChatConversation(t *testing.T) {
	project, home, path := realClaudeDirs(t, "# Tasks\n\n- [ ] T1: Write hello\n")
	api := &agenttest.FakeAPI{}
	env := agenttest.FakeAPIEnv(home, api.Start(t), path)
	ralph := buildRalph(t)
	chat := func(lines string) proc.Result {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		res, err := proc.Run(ctx, proc.Cmd{Name: ralph, Args: []string{"chat", "--agent", "claude", "--model", "claude-sonnet-4-5"},
			Dir: project, Env: env, Stdin: strings.NewReader(lines)})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("ralph chat: exit %d in %s\nstdout: %s\nstderr: %s", res.ExitCode, res.Wall.Round(time.Millisecond), res.Stdout, res.Stderr)
		if res.ExitCode != 0 {
			t.Fatalf("ralph chat exited %d", res.ExitCode)
		}
		return res
	}
	res := chat("Remember the word banana\nWhich word was it?\n")
	if n := strings.Count(string(res.Stdout), "Wrote the file."); n != 2 {
		t.Errorf("%d answers shown, want 2:\n%s", n, res.Stdout)
	}
	chat("And once more?\n")

	posts := api.Posts()
	if len(posts) != 3 {
		t.Fatalf("the API got %d POSTs, want 3 (one answer per turn)", len(posts))
	}
	for i, c := range posts {
		if !strings.Contains(c.UserText, "Remember the word banana") {
			t.Errorf("request %d does not carry the first message: the turn did not continue the conversation\n%s", i+1, c.UserText)
		}
	}
	if strings.Contains(posts[0].UserText, "Which word") || !strings.Contains(posts[2].UserText, "Which word was it?") {
		t.Errorf("the requests do not grow turn by turn")
	}
	data, err := os.ReadFile(filepath.Join(project, "RALPH_PROGRESS.md"))
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	var ids []string
	for _, l := range strings.Split(log, "\n") {
		if id, ok := strings.CutPrefix(l, "- conversation: "); ok {
			ids = append(ids, id)
		}
	}
	if len(ids) != 3 || ids[0] == "" || ids[1] != ids[0] || ids[2] != ids[0] {
		t.Errorf("conversation ids %q: want one session id for the three turns\n%s", ids, log)
	}
	for _, want := range []string{"— chat: Remember the word banana\n- outcome: answered\n- agent: claude (claude-sonnet-4-5", "— chat session ended\n"} {
		if !strings.Contains(log, want) {
			t.Errorf("RALPH_PROGRESS.md lacks %q:\n%s", want, log)
		}
	}
}
