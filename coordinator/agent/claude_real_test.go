//go:build linux

package agent

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
)

// The real Claude Code CLI against a fake Anthropic Messages API on
// loopback: the CLI asks for a Write tool call, really writes the file,
// sends the tool result back and gets its final text. .ci/run installs the
// pinned CLI and sets RALPH_CLAUDE_BIN.

// realClaude finds the CLI: RALPH_CLAUDE_BIN, else claude on PATH, else the
// test is skipped (only then).
func realClaude(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("RALPH_CLAUDE_BIN"); p != "" {
		return p
	}
	if p, err := proc.LookPath("claude"); err == nil {
		return p
	}
	t.Skip("Claude Code CLI not found: set RALPH_CLAUDE_BIN or put claude on PATH (.ci/run installs it)")
	return ""
}

const (
	realModel = "claude-sonnet-4-5"
	realFinal = agenttest.FakeFinal
)

// writeRoute makes the fake API write content to target when the prompt
// holds want.
func writeRoute(want, target, content string) func(string) (string, string, bool) {
	return func(text string) (string, string, bool) {
		return target, content, strings.Contains(text, want)
	}
}

// realRequest is a run of the real CLI in a fresh project and HOME, with
// no way out but the fake API.
func realRequest(t *testing.T, baseURL string) Request {
	t.Helper()
	tmp := t.TempDir()
	home, project := filepath.Join(tmp, "home"), filepath.Join(tmp, "project")
	for _, d := range []string{home, project} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return Request{
		Prompt:          "Create hello.txt saying hello, then say <promise>COMPLETE</promise>.",
		Dir:             project,
		Model:           realModel,
		Env:             agenttest.FakeAPIEnv(home, baseURL, os.Getenv("PATH")),
		NoOutputTimeout: 30 * time.Second,
		Timeout:         60 * time.Second,
		Grace:           2 * time.Second,
	}
}

// checkCalls checks that the API saw the POSTs want and nothing else but
// an optional HEAD / probe.
func checkCalls(t *testing.T, calls []agenttest.APICall, posts int, prompt string) []agenttest.APICall {
	t.Helper()
	var got []agenttest.APICall
	for _, c := range calls {
		switch {
		case c.Method == http.MethodPost && c.Path == "/v1/messages":
			got = append(got, c)
		case c.Method == http.MethodHead && c.Path == "/":
		default:
			t.Errorf("unexpected request %s %s", c.Method, c.Path)
		}
	}
	if len(got) != posts {
		t.Fatalf("the API got %d POST /v1/messages, want %d: %+v", len(got), posts, calls)
	}
	for _, c := range got {
		if c.Model != realModel || !c.Stream || !strings.Contains(c.UserText, prompt) {
			t.Errorf("request %+v: want model %s, streaming, with the prompt", c, realModel)
		}
	}
	return got
}

func TestRealClaude(t *testing.T) {
	bin := realClaude(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	t.Run("tool turn", func(t *testing.T) {
		api := &agenttest.FakeAPI{}
		req := realRequest(t, api.Start(t))
		target := filepath.Join(req.Dir, "hello.txt")
		api.Route = writeRoute("Create hello.txt saying hello", target, "hello from claude\n")
		var raw proctest.SyncBuffer
		req.RawLog = &raw
		ev := &events{t: t}
		res, err := Claude(bin).Run(ctx, req, ev.on)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("real claude: %s, exit %d, %d raw bytes, events %v", res.Duration.Round(time.Millisecond), res.ExitCode, len(raw.String()), ev.kinds())
		if res.IsError || res.ErrorKind != "" || res.ExitCode != 0 {
			t.Fatalf("got %+v\nraw output:\n%s", res, raw.String())
		}
		data, err := os.ReadFile(target)
		if err != nil || string(data) != "hello from claude\n" {
			t.Fatalf("the CLI did not write the file: %q, %v", data, err)
		}
		if res.Final != realFinal || !strings.Contains(res.Final, "<promise>COMPLETE</promise>") {
			t.Errorf("Final = %q", res.Final)
		}
		if res.SessionID == "" || res.Usage.In <= 0 || res.Usage.Out <= 0 || res.NumTurns < 1 {
			t.Errorf("session %q, usage %+v, turns %d", res.SessionID, res.Usage, res.NumTurns)
		}
		posts := checkCalls(t, api.Calls(), 2, "Create hello.txt saying hello")
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
		assertGone(t, res.PID, res.PID)
	})

	t.Run("rate limit", func(t *testing.T) {
		api := &agenttest.FakeAPI{RateLimit: true}
		req := realRequest(t, api.Start(t))
		res, err := Claude(bin).Run(ctx, req, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("real claude, 429: %s, exit %d, %q", res.Duration.Round(time.Millisecond), res.ExitCode, res.ErrorText)
		if !res.IsError || res.ErrorKind != KindRateLimit || res.APIStatus != 429 || res.Final != "" {
			t.Fatalf("got %+v", res)
		}
		checkCalls(t, api.Calls(), 1, "Create hello.txt saying hello")
		assertGone(t, res.PID, res.PID)
	})
}
