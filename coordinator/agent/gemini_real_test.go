//go:build linux

package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
)

// The real Gemini CLI against a fake Gemini API on loopback
// (agenttest.FakeGemini): the CLI asks for a write_file call, really writes
// the file, sends the result back and gets its final text.

// geminiRealModel is the model the tests ask for.
var geminiRealModel = agenttest.GeminiCLI.Model

// runGemini runs the real CLI: runReal.
func runGemini(ctx context.Context, t *testing.T, bin string, api *agenttest.FakeGemini, req Request, onEvent func(Event)) (Result, string) {
	t.Helper()
	return runReal(ctx, t, agenttest.GeminiCLI, bin, api, req, onEvent)
}

// The usage the fake reports for a tool call and for a final answer, in
// ralph's terms: thinking is output.
var (
	geminiToolCallUsage = Usage{In: agenttest.FakeGeminiPromptTokens, Out: agenttest.FakeGeminiToolCallTokens + agenttest.FakeGeminiThoughtTokens}
	geminiFinalUsage    = Usage{In: agenttest.FakeGeminiPromptTokens, Out: agenttest.FakeGeminiFinalTokens + agenttest.FakeGeminiThoughtTokens}
)

func TestRealGeminiToolTurn(t *testing.T) {
	bin := realCLI(t, "gemini")
	api := &agenttest.FakeGemini{}
	req := realRequest(t, agenttest.GeminiCLI, api.Start(t))
	target := filepath.Join(req.Dir, "hello.txt")
	api.Script = agenttest.WriteThenFinal("Create hello.txt saying hello", target, "hello from gemini\n")
	ev := &events{t: t}
	res, raw := runGemini(t.Context(), t, bin, api, req, ev.on)
	if res.IsError || res.ErrorKind != "" || res.ExitCode != 0 {
		t.Fatalf("got %+v\nraw output:\n%s", res, raw)
	}
	if data, err := os.ReadFile(target); err != nil || string(data) != "hello from gemini\n" {
		t.Fatalf("the CLI did not write the file: %q, %v", data, err)
	}
	// The prompt, echoed on stdout, holds the marker too: Final must be
	// the agent's answer.
	if res.Final != agenttest.FakeFinal {
		t.Errorf("Final = %q, want %q", res.Final, agenttest.FakeFinal)
	}
	want := Usage{In: geminiToolCallUsage.In + geminiFinalUsage.In, Out: geminiToolCallUsage.Out + geminiFinalUsage.Out}
	if res.SessionID == "" || res.Model != geminiRealModel || res.Usage != want || !res.UsageKnown || res.NumTurns != 2 {
		t.Errorf("session %q, model %q, usage %+v (known %v), turns %d; want usage %+v, 2 turns", res.SessionID, res.Model, res.Usage, res.UsageKnown, res.NumTurns, want)
	}
	if res.CostKnown || res.CostUSD != 0 {
		t.Errorf("cost %v known %v: the price table has no Gemini model", res.CostUSD, res.CostKnown)
	}
	if streamed, n := geminiUsageSum(ev); streamed != res.Usage || n != 2 {
		t.Errorf("usage events add up to %+v in %d events, want %+v in 2", streamed, n, res.Usage)
	}
	seen := api.Seen()
	if len(seen) != 2 || seen[0].ToolResult || !seen[1].ToolResult || !strings.Contains(seen[1].ToolResultText, target) {
		t.Errorf("model calls %+v: want the prompt, then the write's result", seen)
	}
	var tool bool
	for _, e := range ev.list {
		tool = tool || (e.Kind == EventToolUse && e.Tool == agenttest.GeminiWriteTool)
		if e.Kind == EventInit && (e.SessionID != res.SessionID || e.Text != geminiRealModel) {
			t.Errorf("init event %+v", e)
		}
	}
	if !tool || !ev.has(EventInit) || !ev.has(EventToolResult) || !ev.has(EventText) || !ev.has(EventResult) {
		t.Errorf("events %v", ev.kinds())
	}
}

func TestRealGeminiAPIErrors(t *testing.T) {
	bin := realCLI(t, "gemini")
	for _, tc := range []struct {
		status int
		kind   ErrorKind
	}{
		{429, KindRateLimit},
		{500, KindAPIError},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			api := &agenttest.FakeGemini{Script: agenttest.Always(agenttest.Reply{Status: tc.status})}
			req := realRequest(t, agenttest.GeminiCLI, api.Start(t))
			res, raw := runGemini(t.Context(), t, bin, api, req, nil)
			if !res.IsError || res.ErrorKind != tc.kind || res.APIStatus != tc.status || res.Final != "" {
				t.Fatalf("got %+v\nraw output:\n%s", res, raw)
			}
			// Retries are off (GeminiEnv): one call, and no backoff.
			if n := len(api.Seen()); n != 1 {
				t.Errorf("%d model calls, want 1", n)
			}
			if res.Duration > 60*time.Second {
				t.Errorf("took %s: retried?", res.Duration)
			}
		})
	}
}

func TestRealGeminiNoMarker(t *testing.T) {
	bin := realCLI(t, "gemini")
	const answer = "I looked at the project and changed nothing."
	api := &agenttest.FakeGemini{Script: agenttest.Always(agenttest.Reply{Final: answer})}
	req := realRequest(t, agenttest.GeminiCLI, api.Start(t))
	res, raw := runGemini(t.Context(), t, bin, api, req, nil)
	if res.IsError || res.ErrorKind != "" || res.Final != answer {
		t.Fatalf("got %+v, want Final %q and no error\nraw output:\n%s", res, answer, raw)
	}
	if res.Usage != geminiFinalUsage || res.NumTurns != 1 {
		t.Errorf("usage %+v, turns %d; want %+v, 1", res.Usage, res.NumTurns, geminiFinalUsage)
	}
}

// The CLI takes no turn cap but from its settings: ralph keeps it, and
// stops the run when the CLI would make one call too many.
func TestRealGeminiMaxTurns(t *testing.T) {
	bin := realCLI(t, "gemini")
	api := &agenttest.FakeGemini{}
	req := realRequest(t, agenttest.GeminiCLI, api.Start(t))
	target := filepath.Join(req.Dir, "hello.txt")
	write := agenttest.WriteThenFinal("Create hello.txt", target, "hello\n")
	api.Script = func(s agenttest.Seen) agenttest.Reply {
		if s.ToolResult {
			// The call past the cap, if it goes out before the stop,
			// never ends.
			return agenttest.Reply{Hang: true}
		}
		return write(s)
	}
	req.MaxTurns = 1
	res, raw := runGemini(t.Context(), t, bin, api, req, nil)
	if res.ErrorKind != KindMaxTurns || !res.IsError || res.Final != "" {
		t.Fatalf("got %+v\nraw output:\n%s", res, raw)
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the one turn's write: %v", err)
	}
	if res.Usage != geminiToolCallUsage || res.NumTurns != 1 || !res.UsageKnown {
		t.Errorf("usage %+v (known %v), turns %d; want %+v, 1", res.Usage, res.UsageKnown, res.NumTurns, geminiToolCallUsage)
	}
}

func TestRealGeminiEndlessStopped(t *testing.T) {
	bin := realCLI(t, "gemini")
	api := &agenttest.FakeGemini{}
	req := realRequest(t, agenttest.GeminiCLI, api.Start(t))
	api.Script = agenttest.EndlessWrites(func(n int) (string, string) {
		return filepath.Join(req.Dir, fmt.Sprintf("f%d.txt", n)), fmt.Sprintf("file %d\n", n)
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Stop it as a budget would: once three calls are paid for.
	const stopAfter = 3
	var stopped time.Time
	ev, on := stopAfterCalls(t, stopAfter, func() {
		stopped = time.Now()
		cancel()
	})
	res, raw := runGemini(ctx, t, bin, api, req, on)
	t.Logf("stopped %s after the cancel", time.Since(stopped).Round(time.Millisecond))
	if res.ErrorKind != KindInterrupted || !res.IsError {
		t.Fatalf("got %+v\nraw output:\n%s", res, raw)
	}
	if res.NumTurns < stopAfter || !res.UsageKnown ||
		res.Usage != (Usage{In: int64(res.NumTurns) * geminiToolCallUsage.In, Out: int64(res.NumTurns) * geminiToolCallUsage.Out}) {
		t.Errorf("usage %+v (known %v) for %d calls, want %+v per call", res.Usage, res.UsageKnown, res.NumTurns, geminiToolCallUsage)
	}
	if streamed, _ := geminiUsageSum(ev); streamed != res.Usage {
		t.Errorf("usage events add up to %+v, the result says %+v", streamed, res.Usage)
	}
	if n := len(api.Seen()); n < res.NumTurns {
		t.Errorf("the API got %d calls, the result counts %d", n, res.NumTurns)
	}
	// The stop came with the third call's usage, before its write.
	for i := 1; i < stopAfter; i++ {
		if _, err := os.Stat(filepath.Join(req.Dir, fmt.Sprintf("f%d.txt", i))); err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
}

func TestRealGeminiResume(t *testing.T) {
	bin := realCLI(t, "gemini")
	api := &agenttest.FakeGemini{}
	req := realRequest(t, agenttest.GeminiCLI, api.Start(t))
	first := filepath.Join(req.Dir, "first.txt")
	api.Script = agenttest.WriteThenFinal("Create hello.txt", first, "first run\n")
	res1, raw := runGemini(t.Context(), t, bin, api, req, nil)
	if res1.IsError || res1.SessionID == "" {
		t.Fatalf("first run: %+v\nraw output:\n%s", res1, raw)
	}
	calls := len(api.Seen())

	const answer = "Still done."
	api.Script = agenttest.Always(agenttest.Reply{Final: answer})
	req.Prompt = "Check the file again."
	req.Resume = res1.SessionID
	res2, raw := runGemini(t.Context(), t, bin, api, req, nil)
	if res2.IsError || res2.Final != answer || res2.SessionID != res1.SessionID {
		t.Fatalf("resumed run: %+v, want session %s\nraw output:\n%s", res2, res1.SessionID, raw)
	}
	seen := api.Seen()[calls:]
	if len(seen) != 1 {
		t.Fatalf("resumed run made %d model calls, want 1", len(seen))
	}
	// The conversation goes on: the first prompt and the first write's
	// result come before the new prompt.
	text := seen[0].UserText
	i, j, k := strings.Index(text, "Create hello.txt"), strings.Index(text, first), strings.Index(text, "Check the file again.")
	if i < 0 || j < i || k < j {
		t.Errorf("resumed conversation:\n%s", text)
	}
	// Only the resumed run's own call counts toward it.
	if res2.Usage != geminiFinalUsage || res2.NumTurns != 1 {
		t.Errorf("resumed run: usage %+v, turns %d; want %+v, 1", res2.Usage, res2.NumTurns, geminiFinalUsage)
	}
}
