package agent

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// Lines of `opencode run --format json` (opencode 1.18.33), recorded from
// the real CLI against agenttest.FakeChat, the project's path shortened to
// /project. A write tool call and a final answer:
const opencodeSuccess = `{"type":"step_start","timestamp":1795453723911,"sessionID":"ses_df69e6f79ffeMTFmHa2A5zdu7W","part":{"id":"prt_20961a396001Hn5wRuCgOmVIjx","messageID":"msg_209619896001uetMUzIAK6jM6u","sessionID":"ses_df69e6f79ffeMTFmHa2A5zdu7W","type":"step-start"}}
{"type":"tool_use","timestamp":1795453724606,"sessionID":"ses_df69e6f79ffeMTFmHa2A5zdu7W","part":{"type":"tool","tool":"write","callID":"call_ralph_2","state":{"status":"completed","input":{"content":"hello from opencode\n","filePath":"/project/hello.txt"},"output":"Wrote file successfully.","metadata":{"diagnostics":{},"filepath":"/project/hello.txt","exists":false,"truncated":false},"title":"project/hello.txt","time":{"start":1795453723790,"end":1795453723989}},"id":"prt_20961a3d8001Wzlpa2cJbqIP8F","sessionID":"ses_df69e6f79ffeMTFmHa2A5zdu7W","messageID":"msg_209619896001uetMUzIAK6jM6u"}}
{"type":"step_finish","timestamp":1795453724606,"sessionID":"ses_df69e6f79ffeMTFmHa2A5zdu7W","part":{"id":"prt_20961a5660013Er469wWo7Agb5","reason":"tool-calls","messageID":"msg_209619896001uetMUzIAK6jM6u","sessionID":"ses_df69e6f79ffeMTFmHa2A5zdu7W","type":"step-finish","tokens":{"total":175,"input":100,"output":25,"reasoning":0,"cache":{"write":0,"read":50}},"cost":0}}
{"type":"step_start","timestamp":1795453724873,"sessionID":"ses_df69e6f79ffeMTFmHa2A5zdu7W","part":{"id":"prt_20961a82d001AbwjPcwAtV4SD2","messageID":"msg_20961a5fe0017A36djpW7AhChF","sessionID":"ses_df69e6f79ffeMTFmHa2A5zdu7W","type":"step-start"}}
{"type":"text","timestamp":1795453724874,"sessionID":"ses_df69e6f79ffeMTFmHa2A5zdu7W","part":{"id":"prt_20961a833001nx3NQdwMSCycV0","messageID":"msg_20961a5fe0017A36djpW7AhChF","sessionID":"ses_df69e6f79ffeMTFmHa2A5zdu7W","type":"text","text":"Wrote the file.\n<promise>COMPLETE</promise>","time":{"start":1795453724723,"end":1795453724740}}}
{"type":"step_finish","timestamp":1795453724874,"sessionID":"ses_df69e6f79ffeMTFmHa2A5zdu7W","part":{"id":"prt_20961a8580011gaUmw8LBBye5g","reason":"stop","messageID":"msg_20961a5fe0017A36djpW7AhChF","sessionID":"ses_df69e6f79ffeMTFmHa2A5zdu7W","type":"step-finish","tokens":{"total":162,"input":100,"output":12,"reasoning":0,"cache":{"write":0,"read":50}},"cost":0}}`

// The same call refused: with OPENCODE_PERMISSION={"edit":"ask"} and no
// --auto, opencode run rejects the write and stops, exit 0, saying so on
// stderr only.
const opencodeRejected = `{"type":"step_start","timestamp":1795453733239,"sessionID":"ses_df69e4352ffe1Y3Yv0WX5uS6Us","part":{"id":"prt_20961c952001MZfrsoz4p1fJgC","messageID":"msg_20961c3b9001qU0WrApjrLfvd2","sessionID":"ses_df69e4352ffe1Y3Yv0WX5uS6Us","type":"step-start"}}
{"type":"tool_use","timestamp":1795453733288,"sessionID":"ses_df69e4352ffe1Y3Yv0WX5uS6Us","part":{"type":"tool","tool":"write","callID":"call_ralph_2","state":{"status":"error","input":{"content":"hello from opencode\n","filePath":"/project/hello.txt"},"error":"The user rejected permission to use this specific tool call.","time":{"start":1795453733227,"end":1795453733250}},"id":"prt_20961c957001bB657hv791bggH","sessionID":"ses_df69e4352ffe1Y3Yv0WX5uS6Us","messageID":"msg_20961c3b9001qU0WrApjrLfvd2"}}
{"type":"step_finish","timestamp":1795453733288,"sessionID":"ses_df69e4352ffe1Y3Yv0WX5uS6Us","part":{"id":"prt_20961c98a001m1E5IJQJ921ZUv","reason":"tool-calls","messageID":"msg_20961c3b9001qU0WrApjrLfvd2","sessionID":"ses_df69e4352ffe1Y3Yv0WX5uS6Us","type":"step-finish","tokens":{"total":175,"input":100,"output":25,"reasoning":0,"cache":{"write":0,"read":50}},"cost":0}}`

// A rate limit, after opencode's own five retries: exit 1.
const opencode429 = `{"type":"error","timestamp":1795453744222,"sessionID":"ses_df69e22e4ffeKwggqWr6hMYZoU","error":{"name":"APIError","data":{"message":"Rate limit reached for requests per minute. Please try again later.","statusCode":429,"isRetryable":true,"responseHeaders":{"content-length":"152","content-type":"application/json","date":"Mon, 23 Nov 2026 17:09:04 GMT","retry-after-ms":"0"},"responseBody":"{\"error\":{\"code\":\"rate_limit_exceeded\",\"message\":\"Rate limit reached for requests per minute. Please try again later.\",\"param\":null,\"type\":\"requests\"}}\n","metadata":{"url":"http://127.0.0.1:46595/v1/chat/completions"}}}}`

const opencodeSessionID = "ses_df69e6f79ffeMTFmHa2A5zdu7W"

// parseOpencode feeds lines to a stream for model and returns its events
// and the stream.
func parseOpencode(model string, lines ...string) (*opencodeStream, []Event) {
	var got []Event
	s := newOpencodeStream(func(e Event) { got = append(got, e) }, model)
	for _, l := range lines {
		for _, line := range strings.Split(l, "\n") {
			s.line([]byte(line))
		}
	}
	return s, got
}

func opencodeEventKinds(list []Event) []EventKind {
	var k []EventKind
	for _, e := range list {
		k = append(k, e.Kind)
	}
	return k
}

func TestOpencodeStreamSuccess(t *testing.T) {
	const model = "ralphfake/fake-model"
	s, ev := parseOpencode(model, opencodeSuccess)
	wantKinds := []EventKind{EventInit, EventToolUse, EventToolResult, EventUsage, EventText, EventUsage, EventResult}
	if k := opencodeEventKinds(ev); !slices.Equal(k, wantKinds) {
		t.Fatalf("events %v, want %v", k, wantKinds)
	}
	const final = "Wrote the file.\n<promise>COMPLETE</promise>"
	// input 100 + cache read 50; output 25 then 12.
	call1, call2 := Usage{In: 150, Out: 25}, Usage{In: 150, Out: 12}
	total := Usage{In: 300, Out: 37}
	if e := ev[0]; e.SessionID != opencodeSessionID || e.Text != model {
		t.Errorf("init %+v", e)
	}
	if e := ev[1]; e.Tool != "write" || !strings.Contains(e.Text, `"filePath":"/project/hello.txt"`) {
		t.Errorf("tool use %+v", e)
	}
	if e := ev[2]; e.Tool != "write" || e.Text != "Wrote file successfully." {
		t.Errorf("tool result %+v", e)
	}
	if ev[3].Usage != call1 || ev[5].Usage != call2 || ev[3].CostUSD != 0 {
		t.Errorf("usage events %+v, %+v", ev[3], ev[5])
	}
	if e := ev[6]; e.Text != final || e.Usage != total || e.SessionID != opencodeSessionID {
		t.Errorf("result event %+v", e)
	}
	if !s.settled() {
		t.Error("not settled after the final step")
	}
	res := s.finish(childEnd{pid: 42, exitCode: 0, duration: time.Second}, time.Now())
	want := Result{Final: final, SessionID: opencodeSessionID, Model: model, Usage: total, UsageKnown: true,
		NumTurns: 2, PID: 42, Duration: time.Second}
	if res != want {
		t.Errorf("result\n got %+v\nwant %+v", res, want)
	}
}

// opencode's cost is 0 for a model its catalogue has no price for: the
// price table estimates it when it knows the model, else it is unknown. A
// cost opencode reports is taken as it is.
func TestOpencodeCost(t *testing.T) {
	s, ev := parseOpencode("anthropic/claude-sonnet-4-5", opencodeSuccess)
	res := s.finish(childEnd{}, time.Now())
	want := sonnetPrice.Cost(Tokens{Input: 200, CacheRead: 100, Output: 37})
	if !res.CostKnown || math.Abs(res.CostUSD-want) > 1e-12 {
		t.Errorf("estimated cost %v (known %v), want %v", res.CostUSD, res.CostKnown, want)
	}
	if u := ev[3]; math.Abs(u.CostUSD-sonnetPrice.Cost(Tokens{Input: 100, CacheRead: 50, Output: 25})) > 1e-12 {
		t.Errorf("first call's cost %v", u.CostUSD)
	}

	priced := strings.ReplaceAll(opencodeSuccess, `"cost":0`, `"cost":0.0125`)
	s, ev = parseOpencode("openai/gpt-5.5", priced)
	res = s.finish(childEnd{}, time.Now())
	if !res.CostKnown || math.Abs(res.CostUSD-0.025) > 1e-12 || ev[3].CostUSD != 0.0125 {
		t.Errorf("reported cost %v (known %v), first call %v; want 0.025, known, 0.0125", res.CostUSD, res.CostKnown, ev[3].CostUSD)
	}
}

func TestOpencodeStreamFailures(t *testing.T) {
	now := time.Date(2026, 11, 23, 17, 0, 0, 0, time.UTC)
	// An error line as opencode 1.18.33 prints it, with this name and data.
	apiError := func(name, data string) string {
		return `{"type":"error","timestamp":1795453744222,"sessionID":"ses_x","error":{"name":"` + name + `","data":` + data + `}}`
	}
	tests := []struct {
		name    string
		model   string
		lines   string
		end     childEnd
		kind    ErrorKind
		status  int
		resetAt time.Time
		text    string // in ErrorText
		usage   Usage
	}{
		{name: "rate limit", lines: opencode429, end: childEnd{exitCode: 1},
			kind: KindRateLimit, status: 429, text: "APIError: Rate limit reached"},
		{name: "rate limit with retry-after", end: childEnd{exitCode: 1},
			lines: apiError("APIError", `{"message":"Too Many Requests","statusCode":429,"isRetryable":true,"responseHeaders":{"retry-after":"30"}}`),
			kind:  KindRateLimit, status: 429, resetAt: now.Add(30 * time.Second), text: "Too Many Requests"},
		{name: "overloaded", end: childEnd{exitCode: 1},
			lines: apiError("APIError", `{"message":"Overloaded","statusCode":529,"isRetryable":true,"responseHeaders":{"retry-after-ms":"1500"}}`),
			kind:  KindRateLimit, status: 529, resetAt: now.Add(1500 * time.Millisecond)},
		{name: "server error", end: childEnd{exitCode: 1},
			lines: apiError("APIError", `{"message":"The server had an error while processing your request.","statusCode":500,"isRetryable":true}`),
			kind:  KindAPIError, status: 500, text: "The server had an error"},
		{name: "auth", end: childEnd{exitCode: 1},
			lines: apiError("ProviderAuthError", `{"providerID":"openai","message":"Invalid API key"}`),
			kind:  KindAPIError, text: "ProviderAuthError: Invalid API key"},
		{name: "unknown model", model: "sonnet", end: childEnd{exitCode: 1},
			lines: apiError("UnknownError", `{"message":"Unexpected server error. Check server logs for details.","ref":"err_b03d5220"}`),
			kind:  KindCrashed, text: `not "sonnet"`},
		{name: "error of an unknown shape", end: childEnd{exitCode: 1},
			lines: apiError("SomethingNew", `"just a string"`), kind: KindCrashed, text: "SomethingNew"},
		{name: "permission refused", lines: opencodeRejected,
			end:  childEnd{stderrTail: "\x1b[93m\x1b[1m! \x1b[0mpermission requested: edit (project/hello.txt); auto-rejecting\n"},
			kind: KindBadOutput, text: "write: The user rejected permission to use this specific tool call. (stderr: ! permission requested: edit", usage: Usage{In: 150, Out: 25}},
		{name: "died", lines: opencodeRejected, end: childEnd{exitCode: -1, stderrTail: "Segmentation fault\n"},
			kind: KindCrashed, text: "killed by a signal", usage: Usage{In: 150, Out: 25}},
		{name: "stopped by ralph", lines: opencodeRejected, end: childEnd{exitCode: -1, stopped: KindInterrupted},
			kind: KindInterrupted, text: "interrupted", usage: Usage{In: 150, Out: 25}},
		{name: "no output", end: childEnd{exitCode: -1, stopped: KindNoOutput}, kind: KindNoOutput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ev := parseOpencode(tt.model, tt.lines)
			res := s.finish(tt.end, now)
			if !res.IsError || res.ErrorKind != tt.kind || res.APIStatus != tt.status || !res.ResetAt.Equal(tt.resetAt) ||
				!strings.Contains(res.ErrorText, tt.text) || res.Final != "" || res.Usage != tt.usage {
				t.Errorf("got %+v\nwant kind %s, status %d, reset %v, text %q, usage %+v", res, tt.kind, tt.status, tt.resetAt, tt.text, tt.usage)
			}
			if strings.Contains(tt.lines, `"type":"error"`) && (!s.settled() || ev[len(ev)-1].Kind != EventResult) {
				t.Errorf("an error line is the run's outcome: settled %v, events %v", s.settled(), opencodeEventKinds(ev))
			}
		})
	}
}

// Lines that are not opencode's JSON are counted and skipped; the
// stream's outcome does not change.
func TestOpencodeStreamSkipsNoise(t *testing.T) {
	s, _ := parseOpencode("", "Performing one time database migration...\n"+opencodeSuccess+"\n{not json")
	res := s.finish(childEnd{}, time.Now())
	if res.IsError || res.SkippedLines != 2 || res.Final == "" {
		t.Errorf("got %+v", res)
	}
}

// The final message is the last message's text only, never an earlier
// one's.
func TestOpencodeFinalIsLastMessage(t *testing.T) {
	text := func(msg, s string) string {
		b, _ := json.Marshal(map[string]any{"type": "text", "sessionID": "ses_x", "part": map[string]any{"type": "text", "messageID": msg, "text": s}})
		return string(b)
	}
	const stop = `{"type":"step_finish","sessionID":"ses_x","part":{"type":"step-finish","reason":"stop","tokens":{"input":1,"output":1}}}`
	s, _ := parseOpencode("", text("m1", "I will say <promise>COMPLETE</promise> when done."), text("m2", "Not done: the tests fail."), text("m2", "Giving up."), stop)
	if res := s.finish(childEnd{}, time.Now()); res.Final != "Not done: the tests fail.\nGiving up." {
		t.Errorf("Final = %q", res.Final)
	}
}

func TestOpencodeCommand(t *testing.T) {
	b := Opencode("/bin/opencode")
	tests := []struct {
		name string
		req  Request
		want []string
	}{
		{"defaults", Request{Prompt: "do it"}, []string{"run", "--format", "json", "--auto"}},
		{"bypass, model, resume, args", Request{Permission: PermissionBypass, Model: "anthropic/claude-sonnet-4-5", Resume: "ses_1", Args: []string{"--agent", "build"}, MaxTurns: 5},
			[]string{"run", "--format", "json", "--auto", "--model", "anthropic/claude-sonnet-4-5", "--session", "ses_1", "--agent", "build"}},
		{"accept-edits", Request{Permission: PermissionAcceptEdits}, []string{"run", "--format", "json"}},
		{"default", Request{Permission: PermissionDefault, Model: "m/x"}, []string{"run", "--format", "json", "--model", "m/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := append([]string{"/bin/opencode"}, tt.want...)
			if got := b.Command(tt.req); !slices.Equal(got, want) {
				t.Errorf("Command = %q, want %q", got, want)
			}
		})
	}
	if b.Name() != "opencode" || InstallHint("opencode") != "npm install -g opencode-ai" || MaxTurnsFlag("opencode", 5) != "" {
		t.Errorf("name %q, install %q, max turns %q", b.Name(), InstallHint("opencode"), MaxTurnsFlag("opencode", 5))
	}
	for _, p := range Permissions {
		if PermissionFlags("opencode", p) == "" {
			t.Errorf("no header text for %s", p)
		}
	}
}

// The child's environment: PWD is the project (opencode prefers it to its
// working directory), and accept-edits allows edits on top of the
// person's own OPENCODE_PERMISSION rules.
func TestOpencodeEnv(t *testing.T) {
	b := opencodeBackend{bin: "opencode"}
	base := []string{"HOME=/home/me", "PWD=/somewhere/else", `OPENCODE_PERMISSION={"bash":"ask","edit":"deny"}`}
	tests := []struct {
		perm Permission
		want []string
	}{
		{PermissionBypass, []string{"HOME=/home/me", `OPENCODE_PERMISSION={"bash":"ask","edit":"deny"}`, "PWD=/project"}},
		{PermissionDefault, []string{"HOME=/home/me", `OPENCODE_PERMISSION={"bash":"ask","edit":"deny"}`, "PWD=/project"}},
		{PermissionAcceptEdits, []string{"HOME=/home/me", "PWD=/project", `OPENCODE_PERMISSION={"bash":"ask","edit":"allow"}`}},
	}
	for _, tt := range tests {
		if got := b.env(Request{Dir: "/project", Env: base, Permission: tt.perm}); !slices.Equal(got, tt.want) {
			t.Errorf("%s: env %q, want %q", tt.perm, got, tt.want)
		}
	}
	if got := b.env(Request{Dir: "/project", Env: []string{"OPENCODE_PERMISSION=not json"}, Permission: PermissionAcceptEdits}); !slices.Contains(got, `OPENCODE_PERMISSION={"edit":"allow"}`) {
		t.Errorf("env %q", got)
	}
	// nil inherits ralph's environment.
	t.Setenv("RALPH_OPENCODE_ENV_TEST", "inherited")
	if got := b.env(Request{Dir: "/project"}); !slices.Contains(got, "RALPH_OPENCODE_ENV_TEST=inherited") || len(got) < len(os.Environ()) {
		t.Errorf("inherited env %q", got)
	}
}
