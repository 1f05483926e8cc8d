//go:build linux

package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Lines recorded from codex 0.169.0 runs against agenttest.FakeResponses
// (paths shortened); the session file's turn_context and token_count lines
// are whole, the null-info token_count trimmed of its rate limits.
const (
	cxThread    = "01a2095c-c89a-75a1-88d3-2cbf26ba91f2"
	cxStarted   = `{"type":"thread.started","thread_id":"01a2095c-c89a-75a1-88d3-2cbf26ba91f2"}`
	cxTurn      = `{"type":"turn.started"}`
	cxPatchOn   = `{"type":"item.started","item":{"id":"item_0","type":"file_change","changes":[{"path":"/p/hello.txt","kind":"add"}],"status":"in_progress"}}`
	cxPatchDone = `{"type":"item.completed","item":{"id":"item_0","type":"file_change","changes":[{"path":"/p/hello.txt","kind":"add"}],"status":"completed"}}`
	cxCmdOn     = `{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'echo hi > cmd.txt; echo done'","aggregated_output":"","exit_code":null,"status":"in_progress"}}`
	cxCmdDone   = `{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'echo hi > cmd.txt; echo done'","aggregated_output":"done\n","exit_code":0,"status":"completed"}}`
	cxMessage   = `{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"hi there\n<promise>COMPLETE</promise>"}}`
	cxCompleted = `{"type":"turn.completed","usage":{"input_tokens":200,"cached_input_tokens":20,"cache_write_input_tokens":0,"output_tokens":10,"reasoning_output_tokens":0}}`
	cx429       = `{"type":"error","message":"exceeded retry limit, last status: 429 Too Many Requests"}`
	cx429Failed = `{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 429 Too Many Requests"}}`
	cx500Failed = `{"type":"turn.failed","error":{"message":"We’re currently experiencing high demand, which may cause temporary errors."}}`
	cxRetry     = `{"type":"error","message":"Reconnecting... 1/3 (rate limit exceeded: Rate limit reached. Please try again in 20s.)"}`

	cxContext = `{"timestamp":"2026-11-23T17:08:30.556Z","ordinal":5,"type":"turn_context","payload":{"turn_id":"01a20961-70be-7a32-a705-91cd1e151dc1","root_turn_id":"01a20961-70be-7a32-a705-91cd1e151dc1","disabled_plugin_ids":[],"cwd":"/tmp/cx/proj","approval_policy":"never","approvals_reviewer":"user","permission_profile":{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"}]},"network":"restricted"},"active_permission_profile":{"id":":read-only"},"model":"gpt-5.5","comp_hash":"2911","collaboration_mode":{"mode":"default","settings":{"model":"gpt-5.5","reasoning_effort":null,"developer_instructions":null}},"multi_agent_version":"v1","realtime_active":false,"summary":"none","sandbox_policy":{"type":"read-only"}}}`
	cxNoInfo  = `{"timestamp":"2026-11-23T17:04:24.100Z","ordinal":9,"type":"event_msg","payload":{"type":"token_count","info":null}}`
	cxCount1  = `{"timestamp":"2026-11-23T17:08:30.732Z","ordinal":12,"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":10,"cache_write_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":0,"total_tokens":105},"last_token_usage":{"input_tokens":100,"cached_input_tokens":10,"cache_write_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":0,"total_tokens":105},"last_usage_includes_reasoning":false,"model_context_window":258400},"rate_limits":{"limit_id":"codex","limit_name":null,"primary":null,"secondary":null,"credits":null,"individual_limit":null,"spend_control_reached":null,"plan_type":null,"rate_limit_reached_type":null}}}`
	cxCount2  = `{"timestamp":"2026-11-23T17:08:30.773Z","ordinal":16,"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":200,"cached_input_tokens":20,"cache_write_input_tokens":0,"output_tokens":10,"reasoning_output_tokens":0,"total_tokens":210},"last_token_usage":{"input_tokens":100,"cached_input_tokens":10,"cache_write_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":0,"total_tokens":105},"last_usage_includes_reasoning":false,"model_context_window":258400},"rate_limits":{"limit_id":"codex","limit_name":null,"primary":null,"secondary":null,"credits":null,"individual_limit":null,"spend_control_reached":null,"plan_type":null,"rate_limit_reached_type":null}}}`
	cxCount3  = `{"timestamp":"2026-11-23T17:04:37.901Z","ordinal":40,"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":300,"cached_input_tokens":30,"cache_write_input_tokens":0,"output_tokens":15,"reasoning_output_tokens":0,"total_tokens":315},"last_token_usage":{"input_tokens":100,"cached_input_tokens":10,"cache_write_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":0,"total_tokens":105},"last_usage_includes_reasoning":false,"model_context_window":258400},"rate_limits":{"limit_id":"codex","limit_name":null,"primary":null,"secondary":null,"credits":null,"individual_limit":null,"spend_control_reached":null,"plan_type":null,"rate_limit_reached_type":null}}}`
	// A resumed thread's turn.completed: the thread's totals, its
	// earlier run's included.
	cxResumedCompleted = `{"type":"turn.completed","usage":{"input_tokens":300,"cached_input_tokens":30,"cache_write_input_tokens":0,"output_tokens":15,"reasoning_output_tokens":0}}`
)

func TestCodexArgs(t *testing.T) {
	base := []string{"exec", "--json", "--skip-git-repo-check"}
	tests := []struct {
		name string
		req  Request
		want []string
	}{
		{"bypass by default", Request{}, []string{"--dangerously-bypass-approvals-and-sandbox", "-"}},
		{"bypass", Request{Permission: PermissionBypass, Model: "gpt-5.5"}, []string{"--dangerously-bypass-approvals-and-sandbox", "--model", "gpt-5.5", "-"}},
		{"accept edits", Request{Permission: PermissionAcceptEdits}, []string{"--sandbox", "workspace-write", "-"}},
		{"default", Request{Permission: PermissionDefault}, []string{"-"}},
		// No turn cap in codex: MaxTurns is not passed on.
		{"max turns", Request{MaxTurns: 7}, []string{"--dangerously-bypass-approvals-and-sandbox", "-"}},
		{"resume", Request{Resume: cxThread, Permission: PermissionAcceptEdits}, []string{"--sandbox", "workspace-write", "resume", cxThread, "-"}},
		{"args after ralph's own, before resume", Request{Model: "o3", Args: []string{"-c", "model_reasoning_effort=\"high\""}, Resume: cxThread},
			[]string{"--dangerously-bypass-approvals-and-sandbox", "--model", "o3", "-c", "model_reasoning_effort=\"high\"", "resume", cxThread, "-"}},
	}
	for _, tt := range tests {
		got := Codex("/opt/codex").Command(tt.req)
		want := append(append([]string{"/opt/codex"}, base...), tt.want...)
		if !slices.Equal(got, want) {
			t.Errorf("%s: Command = %q\nwant %q", tt.name, got, want)
		}
	}
	if b := Codex("codex"); b.Name() != "codex" {
		t.Errorf("Name %q", b.Name())
	}
	if got := MaxTurnsFlag("codex", 5); got != "" {
		t.Errorf("MaxTurnsFlag = %q, want none", got)
	}
	for _, p := range Permissions {
		if PermissionFlags("codex", p) == "" {
			t.Errorf("no permission flags for %s", p)
		}
	}
	if !strings.HasPrefix(PermissionFlags("codex", PermissionAcceptEdits), "--sandbox workspace-write") {
		t.Errorf("accept-edits: %q", PermissionFlags("codex", PermissionAcceptEdits))
	}
	if InstallHint("codex") != "npm install -g @openai/codex" {
		t.Errorf("install hint %q", InstallHint("codex"))
	}
}

// cxStep is one thing codex does: print a line on stdout, or append one to
// its session file.
type cxStep struct{ out, session string }

func cxOut(lines ...string) []cxStep {
	s := make([]cxStep, len(lines))
	for i, l := range lines {
		s[i].out = l
	}
	return s
}

// replayCodex feeds steps to a codex stream as the CLI would produce them,
// with CODEX_HOME in a temporary folder (the session file there holds
// past before the run starts, when past is not nil), and finishes it with
// end.
func replayCodex(t *testing.T, req Request, past []string, steps []cxStep, end childEnd) (Result, *events) {
	t.Helper()
	home := t.TempDir()
	req.Env = []string{"HOME=/nonexistent", "CODEX_HOME=" + home}
	dir := filepath.Join(home, "sessions", "2026", "11", "23")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rollout-2026-11-23T17-08-30-"+cxThread+".jsonl")
	appendLine := func(l string) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range past {
		appendLine(l)
	}
	ev := &events{t: t}
	s := newCodexStream(ev.on, req)
	defer s.session.close()
	for _, st := range steps {
		if st.session != "" {
			appendLine(st.session)
		}
		if st.out != "" {
			s.line([]byte(st.out))
		}
	}
	return s.finish(end, time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)), ev
}

func TestCodexToolTurn(t *testing.T) {
	steps := []cxStep{
		{out: cxStarted}, {session: cxContext}, {out: cxTurn},
		{out: cxPatchOn}, {session: cxCount1}, {out: cxPatchDone},
		{out: cxMessage}, {session: cxCount2}, {out: cxCompleted},
	}
	res, ev := replayCodex(t, Request{}, nil, steps, childEnd{pid: 42})
	want := Result{
		Final: "hi there\n<promise>COMPLETE</promise>", SessionID: cxThread, Model: "gpt-5.5",
		Usage: Usage{In: 200, Out: 10}, UsageKnown: true, PID: 42,
	}
	if res != want {
		t.Errorf("got  %+v\nwant %+v", res, want)
	}
	wantKinds := []EventKind{EventInit, EventToolUse, EventUsage, EventToolResult, EventText, EventUsage, EventResult}
	if !slices.Equal(ev.kinds(), wantKinds) {
		t.Fatalf("events %v, want %v", ev.kinds(), wantKinds)
	}
	l := ev.list
	if l[0].SessionID != cxThread || l[0].Text != "gpt-5.5" {
		t.Errorf("init %+v", l[0])
	}
	if l[1].Tool != codexPatchTool || l[1].Text != "add /p/hello.txt" || l[3].Tool != codexPatchTool || l[3].Text != "completed: add /p/hello.txt" {
		t.Errorf("tool events %+v, %+v", l[1], l[3])
	}
	if l[2].Usage != (Usage{In: 100, Out: 5}) || l[5].Usage != (Usage{In: 100, Out: 5}) || l[2].CostUSD != 0 {
		t.Errorf("usage events %+v, %+v", l[2], l[5])
	}
	if l[6].Text != want.Final || l[6].Usage != want.Usage {
		t.Errorf("result event %+v", l[6])
	}
}

func TestCodexStreamOutcomes(t *testing.T) {
	tests := []struct {
		name  string
		req   Request
		past  []string
		steps []cxStep
		end   childEnd
		want  Result // PID, Duration, ExitCode as end's
		kinds []EventKind
	}{
		{
			// Without a session file: no model read, usage once, at the
			// turn's end; the request's model is the one named.
			name:  "no session file",
			req:   Request{Model: "o3"},
			steps: cxOut(cxStarted, cxTurn, cxCmdOn, cxCmdDone, cxMessage, cxCompleted),
			want:  Result{Final: "hi there\n<promise>COMPLETE</promise>", SessionID: cxThread, Model: "o3", Usage: Usage{In: 200, Out: 10}, UsageKnown: true},
			kinds: []EventKind{EventInit, EventToolUse, EventToolResult, EventText, EventUsage, EventResult},
		},
		{
			// Final is the last agent message only: an earlier one and a
			// command's output hold the marker, the last one does not.
			name: "last message only",
			steps: cxOut(cxStarted, cxTurn,
				`{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"I will say <promise>COMPLETE</promise> when done."}}`,
				`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"cat PROMPT.md","aggregated_output":"<promise>COMPLETE</promise>","exit_code":0,"status":"completed"}}`,
				`{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Not done yet."}}`,
				"warning: not json", cxCompleted),
			want:  Result{Final: "Not done yet.", SessionID: cxThread, Usage: Usage{In: 200, Out: 10}, UsageKnown: true, SkippedLines: 1},
			kinds: []EventKind{EventInit, EventText, EventToolUse, EventToolResult, EventText, EventUsage, EventResult},
		},
		{
			name:  "rate limit",
			steps: []cxStep{{out: cxStarted}, {session: cxContext}, {out: cxTurn}, {session: cxNoInfo}, {out: cx429}, {out: cx429Failed}},
			end:   childEnd{exitCode: 1},
			want: Result{SessionID: cxThread, Model: "gpt-5.5", IsError: true, ErrorKind: KindRateLimit, APIStatus: 429,
				ErrorText: "exceeded retry limit, last status: 429 Too Many Requests", UsageKnown: true, ExitCode: 1},
			kinds: []EventKind{EventInit, EventResult},
		},
		{
			// codex's fixed text for an HTTP 500, which it does not name.
			name:  "server error",
			steps: cxOut(cxStarted, cxTurn, cx500Failed),
			end:   childEnd{exitCode: 1},
			want: Result{SessionID: cxThread, IsError: true, ErrorKind: KindAPIError, APIStatus: 500,
				ErrorText: "We’re currently experiencing high demand, which may cause temporary errors.", ExitCode: 1},
			kinds: []EventKind{EventInit, EventResult},
		},
		{
			name:  "retried",
			steps: cxOut(cxStarted, cxTurn, cxRetry, cxMessage, cxCompleted),
			want:  Result{Final: "hi there\n<promise>COMPLETE</promise>", SessionID: cxThread, Usage: Usage{In: 200, Out: 10}, UsageKnown: true},
			kinds: []EventKind{EventInit, EventRetry, EventText, EventUsage, EventResult},
		},
		{
			name:  "crashed",
			steps: cxOut(cxStarted, cxTurn, cxCmdOn),
			end:   childEnd{exitCode: 101, stderrTail: "thread 'main' panicked\n"},
			want: Result{SessionID: cxThread, IsError: true, ErrorKind: KindCrashed, ExitCode: 101,
				ErrorText: "codex ended without finishing its turn (exit code 101): thread 'main' panicked"},
			kinds: []EventKind{EventInit, EventToolUse},
		},
		{
			name:  "exit 0 without the turn's end",
			steps: cxOut(cxStarted, cxTurn),
			want: Result{SessionID: cxThread, IsError: true, ErrorKind: KindBadOutput,
				ErrorText: "codex exited 0 without turn.completed (0 unreadable lines)"},
		},
		{
			// Stopped mid-turn: the calls the session file showed are the
			// record, the last one read after the stop.
			name: "interrupted",
			steps: []cxStep{{out: cxStarted}, {session: cxContext}, {out: cxTurn}, {out: cxCmdOn}, {session: cxCount1},
				{out: cxCmdDone}, {out: cxCmdOn}, {session: cxCount2}},
			end: childEnd{exitCode: -1, stopped: KindInterrupted},
			want: Result{SessionID: cxThread, Model: "gpt-5.5", IsError: true, ErrorKind: KindInterrupted, ErrorText: "stopped: interrupted",
				Usage: Usage{In: 200, Out: 10}, UsageKnown: true, ExitCode: -1},
			kinds: []EventKind{EventInit, EventToolUse, EventUsage, EventToolResult, EventToolUse, EventUsage},
		},
		{
			// Stopped before the session file could be read: nothing is
			// known of its usage, not even a zero.
			name:  "interrupted unread",
			steps: cxOut(cxStarted, cxTurn),
			end:   childEnd{exitCode: -1, stopped: KindNoOutput},
			want: Result{SessionID: cxThread, IsError: true, ErrorKind: KindNoOutput, ErrorText: "stopped: no output for too long",
				ExitCode: -1},
		},
		{
			// It hung after its turn ended: the turn is the outcome.
			name:  "stopped after the turn",
			steps: cxOut(cxStarted, cxTurn, cxMessage, cxCompleted),
			end:   childEnd{exitCode: -1, stopped: KindTimeout, stoppedSettled: true},
			want:  Result{Final: "hi there\n<promise>COMPLETE</promise>", SessionID: cxThread, Usage: Usage{In: 200, Out: 10}, UsageKnown: true, ExitCode: -1},
			kinds: []EventKind{EventInit, EventText, EventUsage, EventResult},
		},
		{
			// A resumed thread's totals hold its earlier runs': this run
			// spent the difference.
			name:  "resumed",
			req:   Request{Resume: cxThread},
			past:  []string{cxContext, cxCount1, cxCount2},
			steps: []cxStep{{out: cxStarted}, {session: cxContext}, {out: cxTurn}, {out: cxMessage}, {session: cxCount3}, {out: cxResumedCompleted}},
			want:  Result{Final: "hi there\n<promise>COMPLETE</promise>", SessionID: cxThread, Model: "gpt-5.5", Usage: Usage{In: 100, Out: 5}, UsageKnown: true},
			kinds: []EventKind{EventInit, EventText, EventUsage, EventResult},
		},
		{
			// A thread resumed by its name: its session file is found
			// only once the run has started, too late to tell the
			// thread's earlier totals from this run's.
			name:  "resumed unknown",
			req:   Request{Resume: "my-thread-name"},
			past:  []string{cxContext, cxCount1, cxCount2},
			steps: []cxStep{{out: cxStarted}, {out: cxTurn}, {out: cxMessage}, {session: cxCount3}, {out: cxResumedCompleted}},
			want:  Result{Final: "hi there\n<promise>COMPLETE</promise>", SessionID: cxThread, Model: "gpt-5.5"},
			kinds: []EventKind{EventInit, EventText, EventResult},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, ev := replayCodex(t, tt.req, tt.past, tt.steps, tt.end)
			if res != tt.want {
				t.Errorf("got  %+v\nwant %+v", res, tt.want)
			}
			if !slices.Equal(ev.kinds(), tt.kinds) {
				t.Errorf("events %v, want %v", ev.kinds(), tt.kinds)
			}
			// Usage events add up to the run's usage.
			var sum Usage
			for _, e := range ev.list {
				if e.Kind == EventUsage {
					sum.In += e.Usage.In
					sum.Out += e.Usage.Out
				}
			}
			if sum != res.Usage {
				t.Errorf("usage events add up to %+v, the result says %+v", sum, res.Usage)
			}
		})
	}
}

func TestCodexRetryEvent(t *testing.T) {
	_, ev := replayCodex(t, Request{}, nil, cxOut(cxStarted, cxTurn, cxRetry), childEnd{})
	var got Event
	for _, e := range ev.list {
		if e.Kind == EventRetry {
			got = e
		}
	}
	want := Event{Kind: EventRetry, SessionID: cxThread, Attempt: 1, Delay: 20 * time.Second,
		Text: "retry 1/3 (rate limit exceeded: Rate limit reached. Please try again in 20s.)"}
	if got != want {
		t.Errorf("retry event %+v\nwant %+v", got, want)
	}
}

// A priced model gets a cost, per call and in all.
func TestCodexPricedModel(t *testing.T) {
	turn := strings.Replace(cxContext, `"model":"gpt-5.5"`, `"model":"claude-sonnet-4-5"`, 1)
	steps := []cxStep{{out: cxStarted}, {session: turn}, {out: cxTurn}, {session: cxCount1}, {out: cxMessage}, {session: cxCount2}, {out: cxCompleted}}
	res, ev := replayCodex(t, Request{}, nil, steps, childEnd{})
	// Per call: 90 input, 10 cache reads, 5 output, at Sonnet's price.
	call := sonnetPrice.Cost(Tokens{Input: 90, CacheRead: 10, Output: 5})
	if !res.CostKnown || res.Model != "claude-sonnet-4-5" || !cxNear(res.CostUSD, 2*call) {
		t.Fatalf("got %+v, want cost %v", res, 2*call)
	}
	var cost float64
	for _, e := range ev.list {
		if e.Kind == EventUsage {
			cost += e.CostUSD
		}
	}
	if !cxNear(cost, res.CostUSD) {
		t.Errorf("usage events cost %v, the result %v", cost, res.CostUSD)
	}
}

func cxNear(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

func TestClassifyCodex(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		msg    string
		kind   ErrorKind
		status int
		reset  time.Time
	}{
		{"exceeded retry limit, last status: 429 Too Many Requests", KindRateLimit, 429, time.Time{}},
		{"exceeded retry limit, last status: 500 Internal Server Error, request id: abc", KindAPIError, 500, time.Time{}},
		{"unexpected status 529 <unknown status code>: overloaded, url: http://127.0.0.1:1/v1/responses", KindRateLimit, 529, time.Time{}},
		{"unexpected status 401 Unauthorized: Incorrect API key provided, url: http://127.0.0.1:1/v1/responses", KindAPIError, 401, time.Time{}},
		{"We’re currently experiencing high demand, which may cause temporary errors.", KindAPIError, 500, time.Time{}},
		{"We're currently experiencing high demand, which may cause temporary errors.", KindAPIError, 500, time.Time{}},
		{"rate limit exceeded: Rate limit reached. Please try again in 20s.", KindRateLimit, 0, now.Add(20 * time.Second)},
		{"Selected model is at capacity. Please try a different model.", KindRateLimit, 0, time.Time{}},
		{"You've hit your usage limit. Try again at 3:20 PM.", KindRateLimit, 0, time.Date(2026, 11, 23, 15, 20, 0, 0, time.UTC)},
		{"You've hit your usage limit. Visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again at Nov 24th, 2026 12:05 AM.", KindRateLimit, 0, time.Date(2026, 11, 24, 0, 5, 0, 0, time.UTC)},
		{"Quota exceeded. Check your plan and billing details.", KindAPIError, 0, time.Time{}},
		{"stream disconnected before completion: stream closed before response.completed", KindAPIError, 0, time.Time{}},
		{"internal error; agent loop died unexpectedly", KindCrashed, 0, time.Time{}},
	}
	for _, tt := range tests {
		kind, status, reset := classifyCodex(tt.msg, now)
		if kind != tt.kind || status != tt.status || !reset.Equal(tt.reset) {
			t.Errorf("%q: %s, %d, %v; want %s, %d, %v", tt.msg, kind, status, reset, tt.kind, tt.status, tt.reset)
		}
	}
}

// fakeCodexScript is a stand-in codex: it records its arguments and stdin,
// writes a session file where codex would, and prints recorded lines.
const fakeCodexScript = `#!/bin/sh
printf '%s\n' "$@" > "$RECORD.args"
cat > "$RECORD.stdin"
dir="$CODEX_HOME/sessions/2026/11/23"
mkdir -p "$dir"
f="$dir/rollout-2026-11-23T17-08-30-` + cxThread + `.jsonl"
printf '%s\n' '` + cxStarted + `'
printf '%s\n' '` + cxContext + `' >> "$f"
printf '%s\n' '` + cxTurn + `'
printf '%s\n' '` + cxPatchOn + `'
printf '%s\n' '` + cxCount1 + `' >> "$f"
printf '%s\n' '` + cxPatchDone + `'
printf '%s\n' '` + cxMessage + `'
printf '%s\n' '` + cxCount2 + `' >> "$f"
printf '%s\n' '` + cxCompleted + `'
`

// Run starts the program with the arguments Command shows, the prompt on
// stdin, and follows the session file under CODEX_HOME as it grows.
func TestCodexRun(t *testing.T) {
	tmp := t.TempDir()
	bin, record, home := filepath.Join(tmp, "codex"), filepath.Join(tmp, "record"), filepath.Join(tmp, "codex-home")
	if err := os.WriteFile(bin, []byte(fakeCodexScript), 0o755); err != nil {
		t.Fatal(err)
	}
	req := Request{
		Prompt:     "Do the task.\nWhen done, say <promise>COMPLETE</promise>.",
		Dir:        tmp,
		Env:        []string{"PATH=" + os.Getenv("PATH"), "RECORD=" + record, "CODEX_HOME=" + home},
		Permission: PermissionAcceptEdits,
		Args:       []string{"-c", "x=1"},
		Timeout:    20 * time.Second,
	}
	b := Codex(bin)
	ev := &events{t: t}
	res, err := b.Run(context.Background(), req, ev.on)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || res.Final != "hi there\n<promise>COMPLETE</promise>" || res.Model != "gpt-5.5" || res.Usage != (Usage{In: 200, Out: 10}) {
		t.Errorf("got %+v", res)
	}
	args, _ := os.ReadFile(record + ".args")
	if got, want := strings.Fields(string(args)), b.Command(req)[1:]; !slices.Equal(got, want) {
		t.Errorf("argv %q, want %q", got, want)
	}
	if stdin, _ := os.ReadFile(record + ".stdin"); string(stdin) != req.Prompt {
		t.Errorf("stdin %q", stdin)
	}
	if _, n := codexUsageSum(ev.list); n != 2 {
		t.Errorf("usage events: %d, want one per model call; events %v", n, ev.kinds())
	}
	assertGone(t, res.PID, res.PID)
}

func TestCodexHome(t *testing.T) {
	tests := []struct {
		env  []string
		want string
	}{
		{[]string{"HOME=/home/a"}, "/home/a/.codex"},
		{[]string{"CODEX_HOME=/srv/codex", "HOME=/home/a"}, "/srv/codex"},
		{[]string{"CODEX_HOME=/srv/old", "CODEX_HOME=/srv/codex"}, "/srv/codex"}, // the last one wins
		{[]string{"CODEX_HOME=rel"}, "/project/rel"},                             // as the child, started in the project, sees it
		{[]string{"PATH=/bin"}, ""},
	}
	for _, tt := range tests {
		if got := codexHome(tt.env, "/project"); got != tt.want {
			t.Errorf("codexHome(%q) = %q, want %q", tt.env, got, tt.want)
		}
	}
}
