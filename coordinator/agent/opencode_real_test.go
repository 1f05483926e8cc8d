//go:build linux

package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
)

// The real opencode CLI against a fake OpenAI Chat Completions API on
// loopback (agenttest.FakeChat, reached through an openai-compatible
// provider in opencode's config): it asks for a write or bash tool call,
// really runs it, sends the result back and gets its final text.

// The usage FakeChat reports for a tool call and for a final answer, in
// ralph's terms: the prompt tokens include the cached ones.
var (
	opencodeToolCallUsage = Usage{In: agenttest.FakeChatPromptTokens, Out: agenttest.FakeChatToolCallOutput}
	opencodeFinalUsage    = Usage{In: agenttest.FakeChatPromptTokens, Out: agenttest.FakeChatFinalOutput}
)

// runOpencode runs the real CLI: runReal.
func runOpencode(ctx context.Context, t *testing.T, bin string, api *agenttest.FakeChat, req Request, onEvent func(Event)) (Result, string) {
	t.Helper()
	return runReal(ctx, t, agenttest.OpencodeCLI, bin, api, req, onEvent)
}

// opencodeAgentCalls are the requests that offered tools: the agent's own
// model calls, without opencode's title side call.
func opencodeAgentCalls(api *agenttest.FakeChat) []agenttest.Seen {
	var calls []agenttest.Seen
	for _, s := range api.Seen() {
		if s.HasTools {
			calls = append(calls, s)
		}
	}
	return calls
}

// A turn with both of opencode's tools: the bash tool runs a command, the
// write tool writes a file, then the final answer. The command runs in the
// project though the inherited PWD names another folder: opencode takes
// its project from $PWD.
func TestRealOpencodeToolTurn(t *testing.T) {
	bin := realCLI(t, "opencode")
	api := &agenttest.FakeChat{}
	req := realRequest(t, agenttest.OpencodeCLI, api.Start(t))
	req.Env = append(req.Env, "PWD="+t.TempDir())
	target := filepath.Join(req.Dir, "hello.txt")
	var agentCalls atomic.Int32
	api.Script = func(s agenttest.Seen) agenttest.Reply {
		if !s.HasTools {
			return agenttest.Reply{} // the session's title
		}
		switch agentCalls.Add(1) {
		case 1:
			return agenttest.Reply{Command: "pwd > where.txt"}
		case 2:
			return agenttest.Reply{Write: &agenttest.FileWrite{Path: target, Content: "hello from opencode\n"}}
		}
		return agenttest.Reply{}
	}
	ev := &events{t: t}
	res, raw := runOpencode(t.Context(), t, bin, api, req, ev.on)
	if res.IsError || res.ErrorKind != "" || res.ExitCode != 0 {
		t.Fatalf("got %+v\nraw output:\n%s", res, raw)
	}
	if data, err := os.ReadFile(target); err != nil || string(data) != "hello from opencode\n" {
		t.Fatalf("the CLI did not write the file: %q, %v", data, err)
	}
	if data, err := os.ReadFile(filepath.Join(req.Dir, "where.txt")); err != nil || strings.TrimSpace(string(data)) != req.Dir {
		t.Errorf("the command ran in %q (%v), want %s", data, err, req.Dir)
	}
	if res.Final != agenttest.FakeFinal {
		t.Errorf("Final = %q, want the last message %q", res.Final, agenttest.FakeFinal)
	}
	want := Usage{In: 3 * agenttest.FakeChatPromptTokens, Out: 2*opencodeToolCallUsage.Out + opencodeFinalUsage.Out}
	if !strings.HasPrefix(res.SessionID, "ses_") || res.Model != agenttest.OpencodeCLI.Model || res.Usage != want || !res.UsageKnown || res.NumTurns != 3 {
		t.Errorf("session %q, model %q, usage %+v (known %v), %d turns; want usage %+v, 3 turns", res.SessionID, res.Model, res.Usage, res.UsageKnown, res.NumTurns, want)
	}
	// opencode prices the fake model at 0 and the price table does not
	// know it: unknown, not free.
	if res.CostKnown || res.CostUSD != 0 {
		t.Errorf("cost %v, known %v", res.CostUSD, res.CostKnown)
	}
	calls := opencodeAgentCalls(api)
	if len(calls) != 3 || calls[0].ToolResult || !calls[1].ToolResult || !calls[2].ToolResult ||
		!strings.Contains(calls[2].ToolResultText, "Wrote file successfully") || !strings.Contains(calls[0].UserText, realPrompt) {
		t.Errorf("agent calls %+v: want the prompt, then the command's result, then the write's", calls)
	}
	if sum, n := geminiUsageSum(ev); n != 3 || sum != res.Usage {
		t.Errorf("%d usage events adding up to %+v; want 3, %+v", n, sum, res.Usage)
	}
	var init, bash, write, result bool
	for _, e := range ev.list {
		init = init || (e.Kind == EventInit && e.SessionID == res.SessionID && e.Text == agenttest.OpencodeCLI.Model)
		bash = bash || (e.Kind == EventToolUse && e.Tool == "bash" && strings.Contains(e.Text, "pwd > where.txt"))
		write = write || (e.Kind == EventToolUse && e.Tool == "write" && strings.Contains(e.Text, target))
		result = result || (e.Kind == EventResult && e.Text == agenttest.FakeFinal && e.Usage == want)
	}
	if !init || !bash || !write || !result || !ev.has(EventToolResult) || !ev.has(EventText) {
		t.Errorf("events %v", ev.list)
	}
}

// opencode retries a 429 or a 5xx five times whatever its settings say;
// FakeChat's retry-after-ms of 0 makes that immediate.
func TestRealOpencodeAPIErrors(t *testing.T) {
	bin := realCLI(t, "opencode")
	for _, tt := range []struct {
		status int
		kind   ErrorKind
	}{
		{429, KindRateLimit},
		{500, KindAPIError},
	} {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			api := &agenttest.FakeChat{Script: agenttest.Always(agenttest.Reply{Status: tt.status})}
			req := realRequest(t, agenttest.OpencodeCLI, api.Start(t))
			res, raw := runOpencode(t.Context(), t, bin, api, req, nil)
			if !res.IsError || res.ErrorKind != tt.kind || res.APIStatus != tt.status || res.Final != "" || res.ExitCode != 1 {
				t.Fatalf("got %+v\nraw output:\n%s", res, raw)
			}
			// Quickly: the retries waited for nothing, and the run's
			// start-up is the rest.
			if res.Duration > 30*time.Second {
				t.Errorf("took %s", res.Duration)
			}
			if calls := opencodeAgentCalls(api); len(calls) != 6 {
				t.Errorf("%d agent calls, want 6: opencode's 5 retries after the first", len(calls))
			}
			if !res.UsageKnown || res.Usage != (Usage{}) || res.CostKnown {
				t.Errorf("usage %+v (known %v), cost known %v: no call was answered", res.Usage, res.UsageKnown, res.CostKnown)
			}
		})
	}
}

// An answer without the marker is the run's final message, not an error.
func TestRealOpencodeNoMarker(t *testing.T) {
	bin := realCLI(t, "opencode")
	const answer = "I looked at the task and did nothing."
	api := &agenttest.FakeChat{Script: agenttest.Always(agenttest.Reply{Final: answer})}
	req := realRequest(t, agenttest.OpencodeCLI, api.Start(t))
	res, raw := runOpencode(t.Context(), t, bin, api, req, nil)
	if res.IsError || res.ErrorKind != "" || res.Final != answer || res.NumTurns != 1 || res.Usage != opencodeFinalUsage {
		t.Fatalf("got %+v\nraw output:\n%s", res, raw)
	}
}

// What opencode's settings would ask about: --auto (bypass) grants it, the
// other modes refuse it, except that accept-edits allows edits.
func TestRealOpencodePermissions(t *testing.T) {
	bin := realCLI(t, "opencode")
	for _, tt := range []struct {
		perm  Permission
		wrote bool
	}{
		{PermissionBypass, true},
		{PermissionAcceptEdits, true},
		{PermissionDefault, false},
	} {
		t.Run(string(tt.perm), func(t *testing.T) {
			api := &agenttest.FakeChat{}
			req := realRequest(t, agenttest.OpencodeCLI, api.Start(t))
			req.Env = append(req.Env, `OPENCODE_PERMISSION={"edit":"ask"}`)
			req.Permission = tt.perm
			target := filepath.Join(req.Dir, "hello.txt")
			api.Script = agenttest.WriteThenFinal("Create hello.txt", target, "hello\n")
			res, raw := runOpencode(t.Context(), t, bin, api, req, nil)
			_, err := os.Stat(target)
			if wrote := err == nil; wrote != tt.wrote {
				t.Fatalf("file written: %v, want %v; got %+v\nraw output:\n%s", wrote, tt.wrote, res, raw)
			}
			if tt.wrote && (res.IsError || res.Final != agenttest.FakeFinal) {
				t.Errorf("got %+v", res)
			}
			if !tt.wrote && (res.ErrorKind != KindBadOutput || !strings.Contains(res.ErrorText, "rejected permission")) {
				t.Errorf("got %+v", res)
			}
		})
	}
}

// An agent that never finishes, stopped as a budget would stop it: the
// run is interrupted, reports what it streamed, and leaves nothing
// running, not even what it started outside its process group.
func TestRealOpencodeEndlessStopped(t *testing.T) {
	bin := realCLI(t, "opencode")
	api := &agenttest.FakeChat{}
	req := realRequest(t, agenttest.OpencodeCLI, api.Start(t))
	sleeper := filepath.Join(req.Dir, "sleeper.pid")
	writes := agenttest.EndlessWrites(func(n int) (string, string) {
		return filepath.Join(req.Dir, fmt.Sprintf("f%d.txt", n)), fmt.Sprintf("file %d\n", n)
	})
	var first atomic.Bool
	api.Script = func(s agenttest.Seen) agenttest.Reply {
		if s.HasTools && first.CompareAndSwap(false, true) {
			// A process in a session of its own, which killing the
			// CLI's group does not reach.
			return agenttest.Reply{Command: "setsid sh -c 'echo $$ > sleeper.pid; exec sleep 600' > /dev/null 2>&1 &"}
		}
		return writes(s)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const stopAfter = 4
	ev, on := stopAfterCalls(t, stopAfter, cancel)
	res, raw := runOpencode(ctx, t, bin, api, req, on)
	if res.ErrorKind != KindInterrupted || !res.IsError {
		t.Fatalf("got %+v\nraw output:\n%s", res, raw)
	}
	if res.NumTurns < stopAfter || !res.UsageKnown ||
		res.Usage != (Usage{In: int64(res.NumTurns) * opencodeToolCallUsage.In, Out: int64(res.NumTurns) * opencodeToolCallUsage.Out}) {
		t.Errorf("usage %+v (known %v) for %d calls, want %+v per call", res.Usage, res.UsageKnown, res.NumTurns, opencodeToolCallUsage)
	}
	if streamed, _ := geminiUsageSum(ev); streamed != res.Usage {
		t.Errorf("usage events add up to %+v, the result says %+v", streamed, res.Usage)
	}
	data, err := os.ReadFile(sleeper)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		t.Fatalf("the agent's command did not run: %q, %v", data, err)
	}
	if proctest.Alive(pid) {
		t.Errorf("the process the agent started (%d) outlived the run", pid)
	}
	// The first call ran the command; each later one wrote a file.
	if files, _ := filepath.Glob(filepath.Join(req.Dir, "f*.txt")); len(files) < stopAfter-1 {
		t.Errorf("%d files written before the stop, want at least %d", len(files), stopAfter-1)
	}
}

// A second run with Resume goes on with the first run's conversation.
func TestRealOpencodeResume(t *testing.T) {
	bin := realCLI(t, "opencode")
	api := &agenttest.FakeChat{}
	req := realRequest(t, agenttest.OpencodeCLI, api.Start(t))
	first := filepath.Join(req.Dir, "first.txt")
	api.Script = agenttest.WriteThenFinal("Create hello.txt", first, "first run\n")
	res1, raw := runOpencode(t.Context(), t, bin, api, req, nil)
	if res1.IsError || res1.SessionID == "" {
		t.Fatalf("first run: %+v\nraw output:\n%s", res1, raw)
	}
	before := len(opencodeAgentCalls(api))

	const answer = "Still done."
	api.Script = agenttest.Always(agenttest.Reply{Final: answer})
	req.Prompt = "Check the file again."
	req.Resume = res1.SessionID
	res2, raw := runOpencode(t.Context(), t, bin, api, req, nil)
	if res2.IsError || res2.Final != answer || res2.SessionID != res1.SessionID {
		t.Fatalf("resumed run: %+v, want session %s\nraw output:\n%s", res2, res1.SessionID, raw)
	}
	calls := opencodeAgentCalls(api)[before:]
	if len(calls) != 1 {
		t.Fatalf("the resumed run made %d agent calls, want 1", len(calls))
	}
	// The first prompt and the first write's result come before the new
	// prompt.
	text := calls[0].UserText
	i, j, k := strings.Index(text, "Create hello.txt"), strings.Index(text, "Wrote file successfully"), strings.Index(text, "Check the file again.")
	if i < 0 || j < i || k < j {
		t.Errorf("resumed conversation:\n%s", text)
	}
	// Only the resumed run's own call counts toward it.
	if res2.Usage != opencodeFinalUsage || res2.NumTurns != 1 {
		t.Errorf("resumed run: usage %+v, turns %d; want %+v, 1", res2.Usage, res2.NumTurns, opencodeFinalUsage)
	}
}
