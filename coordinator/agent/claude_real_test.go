//go:build linux

package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
)

// The real Claude Code CLI against a fake Anthropic Messages API on
// loopback: the CLI asks for a Write tool call, really writes the file,
// sends the tool result back and gets its final text.

// writeRoute makes the fake API write content to target when the prompt
// holds want.
func writeRoute(want, target, content string) func(string) (string, string, bool) {
	return func(text string) (string, string, bool) {
		return target, content, strings.Contains(text, want)
	}
}

// checkPosts checks that the API got posts model requests, all streaming,
// for the model, with the prompt, and returns them (runReal checks that
// there was nothing else).
func checkPosts(t *testing.T, api *agenttest.FakeAPI, posts int, prompt string) []agenttest.APICall {
	t.Helper()
	got := api.Posts()
	if len(got) != posts {
		t.Fatalf("the API got %d POST /v1/messages, want %d: %+v", len(got), posts, api.Calls())
	}
	for _, c := range got {
		if c.Model != agenttest.ClaudeCLI.Model || !c.Stream || !strings.Contains(c.UserText, prompt) {
			t.Errorf("request %+v: want model %s, streaming, with the prompt", c, agenttest.ClaudeCLI.Model)
		}
	}
	return got
}

func TestRealClaude(t *testing.T) {
	bin := realCLI(t, "claude")
	claude := agenttest.ClaudeCLI
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	t.Run("tool turn", func(t *testing.T) {
		api := &agenttest.FakeAPI{}
		req := realRequest(t, claude, api.Start(t))
		target := filepath.Join(req.Dir, "hello.txt")
		api.Route = writeRoute("Create hello.txt saying hello", target, "hello from claude\n")
		ev := &events{t: t}
		res, raw := runReal(ctx, t, claude, bin, api, req, ev.on)
		t.Logf("events %v", ev.kinds())
		if res.IsError || res.ErrorKind != "" || res.ExitCode != 0 {
			t.Fatalf("got %+v\nraw output:\n%s", res, raw)
		}
		data, err := os.ReadFile(target)
		if err != nil || string(data) != "hello from claude\n" {
			t.Fatalf("the CLI did not write the file: %q, %v", data, err)
		}
		if res.Final != agenttest.FakeFinal || !strings.Contains(res.Final, "<promise>COMPLETE</promise>") {
			t.Errorf("Final = %q", res.Final)
		}
		if res.SessionID == "" || res.Usage.In <= 0 || res.Usage.Out <= 0 || res.NumTurns < 1 {
			t.Errorf("session %q, usage %+v, turns %d", res.SessionID, res.Usage, res.NumTurns)
		}
		posts := checkPosts(t, api, 2, "Create hello.txt saying hello")
		if posts[0].ToolResultFor != "" || posts[1].ToolResultFor != agenttest.FakeToolID {
			t.Errorf("tool results sent: %q then %q; want none, then %s", posts[0].ToolResultFor, posts[1].ToolResultFor, agenttest.FakeToolID)
		}
		var tool bool
		for _, e := range ev.list {
			tool = tool || (e.Kind == EventToolUse && e.Tool == "Write")
		}
		if !tool || !ev.has(EventInit) || !ev.has(EventToolResult) || !ev.has(EventResult) {
			t.Errorf("events %v", ev.list)
		}
	})

	t.Run("rate limit", func(t *testing.T) {
		api := &agenttest.FakeAPI{RateLimit: true}
		req := realRequest(t, claude, api.Start(t))
		res, _ := runReal(ctx, t, claude, bin, api, req, nil)
		if !res.IsError || res.ErrorKind != KindRateLimit || res.APIStatus != 429 || res.Final != "" {
			t.Fatalf("got %+v", res)
		}
		checkPosts(t, api, 1, "Create hello.txt saying hello")
	})
}
