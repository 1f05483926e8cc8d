//go:build linux

package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
)

// The real Codex CLI against a fake OpenAI Responses API on loopback: it
// asks for tool calls (apply_patch, exec_command), really runs them, sends
// their output back and gets its final text.

// codexRequest is a run of the real CLI (realRequest) with no model: the
// config's is used, and must be read back.
func codexRequest(t *testing.T, baseURL string) Request {
	t.Helper()
	req := realRequest(t, agenttest.CodexCLI, baseURL)
	req.Model = ""
	return req
}

// runCodex runs the real CLI (runReal), and checks that the fake got n
// model requests, all offering tools, with the prompt.
func runCodex(ctx context.Context, t *testing.T, bin string, api *agenttest.FakeResponses, req Request, onEvent func(Event), n int) (Result, string) {
	t.Helper()
	res, raw := runReal(ctx, t, agenttest.CodexCLI, bin, api, req, onEvent)
	seen := api.Seen()
	if len(seen) != n {
		t.Fatalf("the fake got %d model requests, want %d: %+v\nraw output:\n%s", len(seen), n, seen, raw)
	}
	for _, s := range seen {
		if !s.HasTools || !strings.Contains(s.UserText, realPrompt) {
			t.Errorf("request %d: tools %v, prompt in it: %v", s.N, s.HasTools, strings.Contains(s.UserText, realPrompt))
		}
	}
	return res, raw
}

// codexUsageSum adds up the usage events.
func codexUsageSum(list []Event) (sum Usage, n int) {
	for _, e := range list {
		if e.Kind == EventUsage {
			sum.In += e.Usage.In
			sum.Out += e.Usage.Out
			n++
		}
	}
	return sum, n
}

func TestRealCodex(t *testing.T) {
	bin := realCLI(t, "codex")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	t.Run("tool turn", func(t *testing.T) {
		api := &agenttest.FakeResponses{}
		req := codexRequest(t, api.Start(t))
		target := filepath.Join(req.Dir, "hello.txt")
		api.Script = agenttest.WriteThenFinal("Create hello.txt saying hello", target, "hello from codex\n")
		ev := &events{t: t}
		res, raw := runCodex(ctx, t, bin, api, req, ev.on, 2)
		t.Logf("events %v", ev.kinds())
		if res.IsError || res.ErrorKind != "" || res.ExitCode != 0 {
			t.Fatalf("got %+v\nraw output:\n%s", res, raw)
		}
		data, err := os.ReadFile(target)
		if err != nil || string(data) != "hello from codex\n" {
			t.Fatalf("the CLI did not write the file: %q, %v", data, err)
		}
		// The final message only: the raw output echoes nothing of the
		// prompt here, but the marker must come from the agent's answer.
		if res.Final != agenttest.FakeFinal {
			t.Errorf("Final = %q", res.Final)
		}
		want := Usage{In: 2 * agenttest.FakeResponsesInput, Out: agenttest.FakeResponsesToolOutput + agenttest.FakeResponsesFinalOutput}
		if res.SessionID == "" || res.Model != agenttest.FakeResponsesModel || res.Usage != want || !res.UsageKnown {
			t.Errorf("session %q, model %q, usage %+v (known %v); want usage %+v", res.SessionID, res.Model, res.Usage, res.UsageKnown, want)
		}
		if res.CostKnown || res.CostUSD != 0 {
			t.Errorf("cost %v, known %v: codex reports none and gpt models are not in the price table", res.CostUSD, res.CostKnown)
		}
		seen := api.Seen()
		if seen[0].ToolResult || !seen[1].ToolResult || !strings.Contains(seen[1].ToolResultText, "hello.txt") {
			t.Errorf("tool results sent: %v then %v (%q)", seen[0].ToolResult, seen[1].ToolResult, seen[1].ToolResultText)
		}
		// Each model call's usage as it is spent, adding up to the run's.
		if sum, n := codexUsageSum(ev.list); n != 2 || sum != res.Usage {
			t.Errorf("%d usage events adding up to %+v; want 2, %+v", n, sum, res.Usage)
		}
		var init, tool, result bool
		for _, e := range ev.list {
			init = init || (e.Kind == EventInit && e.SessionID == res.SessionID && e.Text == agenttest.FakeResponsesModel)
			tool = tool || (e.Kind == EventToolUse && e.Tool == codexPatchTool && strings.Contains(e.Text, target))
			result = result || (e.Kind == EventResult && e.Text == agenttest.FakeFinal && e.Usage == want)
		}
		if !init || ev.list[0].Kind != EventInit || !tool || !result || !ev.has(EventToolResult) || !ev.has(EventText) {
			t.Errorf("events %+v", ev.list)
		}
	})

	// The permission modes, for real: a shell command writing a file in
	// the project is run under --sandbox workspace-write, refused by the
	// default read-only sandbox.
	for _, tt := range []struct {
		perm  Permission
		wrote bool
	}{{PermissionAcceptEdits, true}, {PermissionDefault, false}} {
		t.Run("shell "+string(tt.perm), func(t *testing.T) {
			api := &agenttest.FakeResponses{}
			req := codexRequest(t, api.Start(t))
			req.Permission = tt.perm
			api.Script = func(s agenttest.Seen) agenttest.Reply {
				if s.ToolResult {
					return agenttest.Reply{}
				}
				return agenttest.Reply{Command: "echo shell > shell.txt"}
			}
			ev := &events{t: t}
			res, _ := runCodex(ctx, t, bin, api, req, ev.on, 2)
			if res.IsError || res.Final != agenttest.FakeFinal {
				t.Fatalf("got %+v", res)
			}
			_, statErr := os.Stat(filepath.Join(req.Dir, "shell.txt"))
			if wrote := statErr == nil; wrote != tt.wrote {
				t.Errorf("shell.txt written: %v, want %v (tool result %q)", wrote, tt.wrote, api.Seen()[1].ToolResultText)
			}
			var ran bool
			for _, e := range ev.list {
				ran = ran || (e.Kind == EventToolUse && e.Tool == codexShellTool && strings.Contains(e.Text, "echo shell > shell.txt"))
			}
			// A command the read-only sandbox made fail is in codex's JSON
			// output only now and then (in 2 runs of 6, on 0.169.0); the
			// model always hears of it.
			refused := strings.Contains(api.Seen()[1].ToolResultText, "Read-only file system")
			if (tt.wrote && !ran) || refused == tt.wrote {
				t.Errorf("exec_command event: %v, refusal told to the model: %v; events %+v", ran, refused, ev.list)
			}
		})
	}

	t.Run("rate limit", func(t *testing.T) {
		api := &agenttest.FakeResponses{Script: agenttest.Always(agenttest.Reply{Status: 429})}
		req := codexRequest(t, api.Start(t))
		// Retries are off: one request, and an answer within seconds.
		res, _ := runCodex(ctx, t, bin, api, req, nil, 1)
		if !res.IsError || res.ErrorKind != KindRateLimit || res.APIStatus != 429 || res.Final != "" {
			t.Fatalf("got %+v", res)
		}
		if res.Duration > 15*time.Second {
			t.Errorf("took %s", res.Duration)
		}
	})

	t.Run("server error", func(t *testing.T) {
		api := &agenttest.FakeResponses{Script: agenttest.Always(agenttest.Reply{Status: 500})}
		req := codexRequest(t, api.Start(t))
		res, _ := runCodex(ctx, t, bin, api, req, nil, 1)
		if !res.IsError || res.ErrorKind != KindAPIError || res.APIStatus != 500 || res.Final != "" {
			t.Fatalf("got %+v", res)
		}
	})

	// A model that starts its answer and then says nothing: codex waits
	// (its own stream timeout is minutes long), and ralph's watchdog
	// stops it.
	t.Run("hang", func(t *testing.T) {
		api := &agenttest.FakeResponses{Script: agenttest.Always(agenttest.Reply{Hang: true})}
		req := codexRequest(t, api.Start(t))
		req.NoOutputTimeout = 2 * time.Second
		res, _ := runCodex(ctx, t, bin, api, req, nil, 1)
		if res.ErrorKind != KindNoOutput || res.SessionID == "" || res.Duration > 20*time.Second {
			t.Fatalf("got %+v", res)
		}
	})

	t.Run("no marker", func(t *testing.T) {
		const answer = "I looked, but I did not finish."
		api := &agenttest.FakeResponses{Script: agenttest.Always(agenttest.Reply{Final: answer})}
		req := codexRequest(t, api.Start(t))
		res, raw := runCodex(ctx, t, bin, api, req, nil, 1)
		if res.IsError || res.ErrorKind != "" || res.Final != answer {
			t.Fatalf("got %+v\nraw output:\n%s", res, raw)
		}
	})

	t.Run("endless tool loop stopped", func(t *testing.T) {
		testRealCodexEndless(ctx, t, bin)
	})

	t.Run("resume", func(t *testing.T) {
		api := &agenttest.FakeResponses{}
		req := codexRequest(t, api.Start(t))
		target := filepath.Join(req.Dir, "hello.txt")
		api.Script = agenttest.WriteThenFinal("Create hello.txt saying hello", target, "hello\n")
		first, _ := runCodex(ctx, t, bin, api, req, nil, 2)
		if first.IsError || first.SessionID == "" {
			t.Fatalf("first run: %+v", first)
		}
		const second = "Now say what you did."
		api.Script = agenttest.Always(agenttest.Reply{Final: "I wrote hello.txt."})
		req.Prompt, req.Resume = second, first.SessionID
		res, _ := runReal(ctx, t, agenttest.CodexCLI, bin, api, req, nil)
		if res.IsError || res.Final != "I wrote hello.txt." || res.SessionID != first.SessionID {
			t.Fatalf("second run: %+v", res)
		}
		seen := api.Seen()
		if len(seen) != 3 {
			t.Fatalf("%d model requests, want 2 then 1", len(seen))
		}
		// The conversation goes on: the first prompt and its tool's
		// result come before the second prompt.
		text := seen[2].UserText
		i, j, k := strings.Index(text, realPrompt), strings.Index(text, "hello.txt"), strings.Index(text, second)
		if i < 0 || j < 0 || k < 0 || !(i < k && j < k) {
			t.Errorf("the resumed request's user text lacks the first run's:\n%s", text)
		}
		// The thread's totals include the first run's; this run spent one
		// call.
		want := Usage{In: agenttest.FakeResponsesInput, Out: agenttest.FakeResponsesFinalOutput}
		if res.Usage != want || !res.UsageKnown {
			t.Errorf("resumed run's usage %+v (known %v), want %+v", res.Usage, res.UsageKnown, want)
		}
	})
}

// testRealCodexEndless runs an agent that never stops calling tools: its
// first call starts a process that leaves codex's process group and
// session, the others write one file each. Once three model calls have
// reported their usage, the context is cancelled: the run is interrupted,
// keeps the usage it streamed, and leaves nothing running.
func testRealCodexEndless(ctx context.Context, t *testing.T, bin string) {
	api := &agenttest.FakeResponses{}
	req := codexRequest(t, api.Start(t))
	pidFile := filepath.Join(req.Dir, "sleeper.pid")
	writes := agenttest.EndlessWrites(func(n int) (string, string) {
		return filepath.Join(req.Dir, fmt.Sprintf("file%d.txt", n)), fmt.Sprintf("file %d\n", n)
	})
	api.Script = func(s agenttest.Seen) agenttest.Reply {
		if s.N == 1 {
			return agenttest.Reply{Command: "setsid sleep 300 >/dev/null 2>&1 </dev/null & echo $! > " + pidFile}
		}
		return writes(s)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ev, onEvent := stopAfterCalls(t, 3, cancel)
	res, _ := runReal(ctx, t, agenttest.CodexCLI, bin, api, req, onEvent)
	t.Logf("real codex, endless: usage %+v", res.Usage)
	if res.ErrorKind != KindInterrupted || !res.IsError || res.Final != "" {
		t.Fatalf("got %+v", res)
	}
	sum, n := codexUsageSum(ev.list)
	if n < 3 || !res.UsageKnown || res.Usage != sum || res.Usage.In < 3*agenttest.FakeResponsesInput {
		t.Errorf("usage %+v (known %v) after %d usage events adding up to %+v", res.Usage, res.UsageKnown, n, sum)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the first tool call did not run: %v", err)
	}
	sleeper, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	assertGone(t, res.PID, res.PID, sleeper)
}
