//go:build linux

package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Lines recorded from Gemini CLI 0.61.0 (gemini_real_test.go's runs against
// agenttest.FakeGemini), the session ids shortened.
const (
	geminiInit       = `{"type":"init","timestamp":"2026-11-23T17:04:08.678Z","session_id":"0205d414-99d1-4fa9-8a44-74b4d6ad34e1","model":"gemini-2.5-pro"}`
	geminiUserEcho   = `{"type":"message","timestamp":"2026-11-23T17:04:08.679Z","role":"user","content":"Create hello.txt saying hello, then say <promise>COMPLETE</promise>.\n"}`
	geminiToolUse    = `{"type":"tool_use","timestamp":"2026-11-23T17:04:08.762Z","tool_name":"write_file","tool_id":"write_file__write_file_1795453448720_0","parameters":{"content":"hello from gemini\n","file_path":"/tmp/gemscratch/proj/hello.txt"}}`
	geminiToolResult = `{"type":"tool_result","timestamp":"2026-11-23T17:04:08.816Z","tool_id":"write_file__write_file_1795453448720_0","status":"success"}`
	geminiText1      = `{"type":"message","timestamp":"2026-11-23T17:04:08.831Z","role":"assistant","content":"Wrote the file.\n<prom","delta":true}`
	geminiText2      = `{"type":"message","timestamp":"2026-11-23T17:04:08.832Z","role":"assistant","content":"ise>COMPLETE</promise>","delta":true}`
	geminiSuccess    = `{"type":"result","timestamp":"2026-11-23T17:04:08.834Z","status":"success","stats":{"total_tokens":340,"input_tokens":300,"output_tokens":30,"cached":0,"input":300,"duration_ms":157,"tool_calls":1,"models":{"gemini-2.5-pro":{"total_tokens":340,"input_tokens":300,"output_tokens":30,"cached":0,"input":300}}}}`
	geminiRefused    = `{"type":"tool_result","timestamp":"2026-11-23T17:05:12.186Z","tool_id":"run_shell_command__run_shell_command_1795453511992_0","status":"error","output":"Tool \"run_shell_command\" not found. Did you mean one of: \"update_topic\", \"grep_search\", \"replace\"?","error":{"type":"tool_not_registered","message":"Tool \"run_shell_command\" not found. Did you mean one of: \"update_topic\", \"grep_search\", \"replace\"?"}}`

	geminiZeroStats = `"stats":{"total_tokens":0,"input_tokens":0,"output_tokens":0,"cached":0,"input":0,"duration_ms":0,"tool_calls":0,"models":{"gemini-2.5-pro":{"total_tokens":0,"input_tokens":0,"output_tokens":0,"cached":0,"input":0}}}`
	gemini429       = `{"type":"result","timestamp":"2026-11-23T17:04:17.686Z","status":"error","error":{"type":"unknown","message":"[API Error: Resource has been exhausted (e.g. check quota).]\nPlease wait and try again later. To increase your limits, request a quota increase through AI Studio, or switch to another /auth method"},` + geminiZeroStats + `}`
	gemini500       = `{"type":"result","timestamp":"2026-11-23T17:04:24.181Z","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":500,\"message\":\"Internal error encountered.\",\"status\":\"INTERNAL\"}}]"},` + geminiZeroStats + `}`
	geminiTurnLimit = `{"type":"result","timestamp":"2026-11-23T17:04:43.544Z","status":"error","error":{"type":"FatalTurnLimitedError","message":"Reached max session turns for this session. Increase the number of turns by specifying maxSessionTurns in settings.json."},"stats":{"total_tokens":175,"input_tokens":150,"output_tokens":20,"cached":0,"input":150,"duration_ms":0,"tool_calls":1,"models":{"gemini-2.5-pro":{"total_tokens":175,"input_tokens":150,"output_tokens":20,"cached":0,"input":150}}}}`
)

// feedGemini runs lines through a gemini stream and finishes it with end.
func feedGemini(t *testing.T, s *geminiStream, end childEnd, lines ...string) Result {
	t.Helper()
	for _, l := range lines {
		s.line([]byte(l))
	}
	return s.finish(end, geminiNow)
}

var geminiNow = time.Date(2026, 11, 23, 17, 10, 0, 0, time.UTC)

// geminiUsageSum adds up the usage events.
func geminiUsageSum(ev *events) (u Usage, n int) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	for _, e := range ev.list {
		if e.Kind == EventUsage {
			u.In += e.Usage.In
			u.Out += e.Usage.Out
			n++
		}
	}
	return u, n
}

func TestGeminiStreamToolTurn(t *testing.T) {
	ev := &events{t: t}
	s := newGeminiStream(ev.on, "")
	res := feedGemini(t, s, childEnd{pid: 42}, geminiInit, geminiUserEcho, geminiToolUse, geminiToolResult, geminiText1, geminiText2, geminiSuccess)
	want := Result{
		Final:      "Wrote the file.\n<promise>COMPLETE</promise>",
		SessionID:  "0205d414-99d1-4fa9-8a44-74b4d6ad34e1",
		Model:      "gemini-2.5-pro",
		Usage:      Usage{In: 300, Out: 40}, // thinking (the total's remaining 10) is output
		UsageKnown: true,
		PID:        42,
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("got  %+v\nwant %+v", res, want)
	}
	wantKinds := []EventKind{EventInit, EventToolUse, EventToolResult, EventText, EventResult}
	if got := ev.kinds(); !slices.Equal(got, wantKinds) {
		t.Errorf("events %v, want %v", got, wantKinds)
	}
	last := ev.list[len(ev.list)-1]
	if last.Text != want.Final || last.Usage != want.Usage || ev.list[3].Text != want.Final || ev.list[1].Tool != "write_file" || !strings.Contains(ev.list[1].Text, "hello from gemini") {
		t.Errorf("events %+v", ev.list)
	}
	if !s.settled() {
		t.Error("not settled after the result line")
	}
}

// The final message is the last one: text written before a tool call is
// not part of it, nor is the prompt echoed with its marker.
func TestGeminiFinalIsLastMessage(t *testing.T) {
	before := `{"type":"message","role":"assistant","content":"I will write <promise>COMPLETE</promise> later.","delta":true}`
	ev := &events{t: t}
	res := feedGemini(t, newGeminiStream(ev.on, ""), childEnd{}, geminiInit, geminiUserEcho, before, geminiToolUse, geminiToolResult, geminiText1, geminiText2, geminiSuccess)
	if res.Final != "Wrote the file.\n<promise>COMPLETE</promise>" || res.IsError {
		t.Errorf("got %+v", res)
	}
	var texts []string
	for _, e := range ev.list {
		if e.Kind == EventText {
			texts = append(texts, e.Text)
		}
	}
	if want := []string{"I will write <promise>COMPLETE</promise> later.", res.Final}; !slices.Equal(texts, want) {
		t.Errorf("text events %q, want %q", texts, want)
	}
	// A run stopped while it wrote still shows what it wrote.
	ev = &events{t: t}
	res = feedGemini(t, newGeminiStream(ev.on, ""), childEnd{stopped: KindTimeout}, geminiInit, geminiText1)
	if res.Final != "" || res.ErrorKind != KindTimeout || ev.list[len(ev.list)-1].Text != "Wrote the file.\n<prom" {
		t.Errorf("stopped: got %+v, events %+v", res, ev.list)
	}
	res = feedGemini(t, newGeminiStream(nil, ""), childEnd{}, geminiInit, geminiUserEcho, geminiToolUse, geminiToolResult, geminiSuccess)
	if res.Final != "" || res.IsError {
		t.Errorf("no answer after the tool: got %+v", res)
	}
}

func TestGeminiStreamErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lines    []string
		exitCode int
		kind     ErrorKind
		status   int
		resetAt  time.Time
		text     string
	}{
		{"429", []string{gemini429}, 173, KindRateLimit, 429, time.Time{}, "Resource has been exhausted"},
		{"500", []string{gemini500}, 244, KindAPIError, 500, time.Time{}, `"code":500`},
		{"turn limit", []string{geminiToolUse, geminiToolResult, geminiTurnLimit}, 53, KindMaxTurns, 0, time.Time{}, "max session turns"},
		{"quota with a delay", []string{`{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: Quota exceeded for metric: generate_content_free_tier_requests\nSuggested retry after 30s.]\nPlease wait and try again later."}}`},
			173, KindRateLimit, 429, geminiNow.Add(30 * time.Second), "Quota exceeded"},
		{"overloaded", []string{`{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":503,\"message\":\"The model is overloaded. Please try again later.\",\"status\":\"UNAVAILABLE\"}}]"}}`},
			247, KindRateLimit, 503, time.Time{}, "overloaded"},
		{"status word", []string{`{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: API key not valid. (Status: INVALID_ARGUMENT)]"}}`},
			144, KindAPIError, 400, time.Time{}, "API key not valid"},
		{"invalid answer", []string{`{"type":"error","severity":"warning","message":"Loop detected, stopping execution"}`, `{"type":"error","severity":"error","message":"Model stream ended with an empty response."}`, `{"type":"result","status":"error"}`},
			0, KindAPIError, 0, time.Time{}, "empty response"},
		{"fatal tool error", []string{`{"type":"result","status":"error","error":{"type":"no_space_left","message":"Error executing tool write_file: no space left on device"}}`},
			1, KindCrashed, 0, time.Time{}, "no space left"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := feedGemini(t, newGeminiStream(nil, ""), childEnd{exitCode: tc.exitCode}, append([]string{geminiInit}, tc.lines...)...)
			if !res.IsError || res.ErrorKind != tc.kind || res.APIStatus != tc.status || !res.ResetAt.Equal(tc.resetAt) || res.Final != "" || !strings.Contains(res.ErrorText, tc.text) {
				t.Errorf("got %+v\nwant kind %s, status %d, reset %v, text with %q", res, tc.kind, tc.status, tc.resetAt, tc.text)
			}
		})
	}
}

func TestGeminiStreamNoResult(t *testing.T) {
	res := feedGemini(t, newGeminiStream(nil, ""), childEnd{exitCode: 41, stderrTail: "Warning: 256-color support not detected.\nWhen using Gemini API, you must specify the GEMINI_API_KEY environment variable.\n"},
		"Loaded cached credentials.")
	if res.ErrorKind != KindCrashed || !strings.Contains(res.ErrorText, "GEMINI_API_KEY") || !strings.Contains(res.ErrorText, "exit code 41") || res.SkippedLines != 1 || res.UsageKnown {
		t.Errorf("crashed: got %+v", res)
	}
	res = feedGemini(t, newGeminiStream(nil, "gemini-2.5-flash"), childEnd{}, geminiInit, geminiUserEcho, geminiText1)
	if res.ErrorKind != KindBadOutput || res.Final != "" || res.Model != "gemini-2.5-pro" {
		t.Errorf("exit 0 without a result: got %+v", res)
	}
}

// A session record as Gemini CLI 0.61.0 writes it, shortened: a run that
// wrote a file and answered, then the same session resumed for one call
// that ralph stopped. Each call with tool calls is written twice.
const geminiSessionFile = `{"sessionId":"0205d414-99d1-4fa9-8a44-74b4d6ad34e1","projectHash":"9988875b","startTime":"2026-11-23T17:05:23.172Z","lastUpdated":"2026-11-23T17:05:23.172Z","kind":"main"}
{"id":"76c8ef8c-4215-48c5-b84f-695eea457aa6","timestamp":"2026-11-23T17:05:23.191Z","type":"user","content":[{"text":"Create hello.txt saying hello, then say <promise>COMPLETE</promise>.\n"}]}
{"$set":{"lastUpdated":"2026-11-23T17:05:23.192Z"}}
{"id":"eea65372-b3e1-4a3b-b9db-5197c0735302","timestamp":"2026-11-23T17:05:23.408Z","type":"gemini","content":"","thoughts":[],"tokens":{"input":150,"output":20,"cached":0,"thoughts":5,"tool":0,"total":175},"model":"gemini-2.5-pro"}
{"id":"eea65372-b3e1-4a3b-b9db-5197c0735302","timestamp":"2026-11-23T17:05:23.408Z","type":"gemini","content":"","thoughts":[],"tokens":{"input":150,"output":20,"cached":0,"thoughts":5,"tool":0,"total":175},"model":"gemini-2.5-pro","toolCalls":[{"id":"write_file__write_file_1795453523243_0","name":"write_file","args":{"content":"hello from gemini\n","file_path":"/tmp/proj/hello.txt"}}]}
{"id":"dab3e3d8-9b43-44aa-af3b-49b57688f5fc","timestamp":"2026-11-23T17:05:23.449Z","type":"gemini","content":"Wrote the file.\n<promise>COMPLETE</promise>","thoughts":[],"tokens":{"input":150,"output":10,"cached":0,"thoughts":5,"tool":0,"total":165},"model":"gemini-2.5-pro"}
{"sessionId":"0205d414-99d1-4fa9-8a44-74b4d6ad34e1","projectHash":"9988875b","startTime":"2026-11-23T17:05:29.378Z","lastUpdated":"2026-11-23T17:05:29.378Z","kind":"main"}
{"$set":{"messages":[{"id":"eea65372-b3e1-4a3b-b9db-5197c0735302","timestamp":"2026-11-23T17:05:23.408Z","type":"gemini","content":"","tokens":{"input":150,"output":20,"cached":0,"thoughts":5,"tool":0,"total":175},"model":"gemini-2.5-pro"}]}}
{"id":"ef0f2e29-d518-403e-be8b-ef7f379ade47","timestamp":"2026-11-23T17:05:29.417Z","type":"user","content":[{"text":"Check the file again.\n"}]}
{"id":"314888ec-4357-401a-9d83-96915df55d90","timestamp":"2026-11-23T17:05:29.825Z","type":"gemini","content":"","thoughts":[],"tokens":{"input":1150,"output":20,"cached":1000,"thoughts":5,"tool":0,"total":1175},"model":"gemini-2.5-pro"}
{"id":"314888ec-4357-401a-9d83-96915df55d90","timestamp":"2026-11-23T17:05:29.825Z","type":"gemini","content":"","thoughts":[],"tokens":{"input":1150,"output":20,"cached":1000,"thoughts":5,"tool":0,"total":1175},"model":"gemini-2.5-pro","toolCalls":[{"id":"write_file__write_file_1795453529509_0","name":"write_file","args":{"content":"hello from gemini\n","file_path":"/tmp/proj/hello.txt"}}]}
{"id":"a0037e1e-6e6b-4008-b335-36871324fc46","timestamp":"2026-11-23T17:05:29.983Z","type":"gem`

// writeGeminiSession puts the session record where the CLI keeps it,
// under a fresh home, and returns the home.
func writeGeminiSession(t *testing.T, content string) (home, path string) {
	t.Helper()
	home = t.TempDir()
	dir := filepath.Join(home, ".gemini", "tmp", "project", "chats")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "session-2026-11-23T17-05-0205d414.jsonl")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return home, path
}

// A run ralph stopped reports the calls the session record holds: this
// run's only (the resumed session's earlier calls are older), each once,
// a line still being written not yet.
func TestGeminiStoppedUsage(t *testing.T) {
	home, path := writeGeminiSession(t, geminiSessionFile)
	ev := &events{t: t}
	s := newGeminiStream(ev.on, "gemini-2.5-pro")
	s.chats = newGeminiChats([]string{"HOME=" + home}, time.Date(2026, 11, 23, 17, 5, 29, 0, time.UTC))
	for _, l := range []string{geminiInit, geminiUserEcho, geminiToolUse, geminiToolResult} {
		s.line([]byte(l))
	}
	call := Usage{In: 1150, Out: 25}
	if u, n := geminiUsageSum(ev); u != call || n != 1 {
		t.Fatalf("usage events %+v in %d, want %+v in 1", u, n, call)
	}
	// The call being written when ralph stopped the CLI is finished by
	// the time the CLI is gone.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`ini","content":"","tokens":{"input":1200,"output":20,"cached":0,"thoughts":0,"tool":0,"total":1220},"model":"gemini-2.5-pro"}` + "\n")
	f.Close()
	res := s.finish(childEnd{stopped: KindInterrupted, exitCode: -1}, geminiNow)
	total := Usage{In: call.In + 1200, Out: call.Out + 20}
	if res.ErrorKind != KindInterrupted || !res.UsageKnown || res.Usage != total || res.NumTurns != 2 || res.CostKnown || res.SessionID == "" {
		t.Errorf("got %+v, want usage %+v in 2 calls", res, total)
	}
	if u, n := geminiUsageSum(ev); u != total || n != 2 {
		t.Errorf("usage events %+v in %d, want %+v in 2", u, n, total)
	}
}

// Without its session record (another home, a format the CLI changed), a
// stopped run's usage is unknown, not 0.
func TestGeminiStoppedUsageUnknown(t *testing.T) {
	s := newGeminiStream(nil, "")
	s.chats = newGeminiChats([]string{"HOME=" + t.TempDir()}, geminiNow)
	res := feedGemini(t, s, childEnd{stopped: KindNoOutput}, geminiInit, geminiToolUse)
	if res.ErrorKind != KindNoOutput || res.UsageKnown || res.Usage != (Usage{}) {
		t.Errorf("got %+v", res)
	}
}

// ralph keeps the turn cap: it stops the CLI when the last tool result of
// the MaxTurns-th call is in, the moment the CLI would call again.
func TestGeminiTurnCap(t *testing.T) {
	secondUse := strings.Replace(geminiToolUse, "_0", "_1", 1)
	secondResult := strings.Replace(geminiToolResult, "_0", "_1", 1)
	for _, tc := range []struct {
		maxTurns int
		lines    []string
		stopAt   int // the line (1-based) after which the stop came; 0 none
	}{
		{1, []string{geminiInit, geminiToolUse, secondUse, geminiToolResult, secondResult, geminiText1}, 5},
		{2, []string{geminiInit, geminiToolUse, geminiToolResult, geminiToolUse, geminiRefused}, 5},
		{2, []string{geminiInit, geminiToolUse, geminiToolResult, geminiText1, geminiText2, geminiSuccess}, 0},
		{0, []string{geminiInit, geminiToolUse, geminiToolResult, geminiToolUse, geminiToolResult}, 0},
	} {
		s := newGeminiStream(nil, "")
		stops, stopAt := 0, 0
		s.maxTurns = tc.maxTurns
		s.stopAtCap = func() { stops++ }
		for i, l := range tc.lines {
			s.line([]byte(l))
			if stops == 1 && stopAt == 0 {
				stopAt = i + 1
			}
		}
		if stopAt != tc.stopAt || stops > 1 || s.capped != (tc.stopAt > 0) {
			t.Errorf("cap %d: stopped after line %d (%d stops), want %d", tc.maxTurns, stopAt, stops, tc.stopAt)
		}
	}
	res := newGeminiStream(nil, "").finish(childEnd{stopped: KindMaxTurns}, geminiNow)
	if res.ErrorKind != KindMaxTurns || !res.IsError {
		t.Errorf("got %+v", res)
	}
}

func TestGeminiCommand(t *testing.T) {
	base := []string{"/bin/gemini", "--output-format", "stream-json", "--skip-trust"}
	for _, tc := range []struct {
		req  Request
		want []string
	}{
		{Request{Prompt: "do it"}, []string{"--approval-mode", "yolo"}},
		{Request{Permission: PermissionBypass, Model: "gemini-2.5-pro"}, []string{"--approval-mode", "yolo", "-m", "gemini-2.5-pro"}},
		{Request{Permission: PermissionAcceptEdits}, []string{"--approval-mode", "auto_edit"}},
		{Request{Permission: PermissionDefault, MaxTurns: 5}, []string{"--approval-mode", "default"}},
		{Request{Model: "m", Resume: "0205d414-99d1-4fa9-8a44-74b4d6ad34e1", Args: []string{"--include-directories", "../lib"}},
			[]string{"--approval-mode", "yolo", "-m", "m", "--resume", "0205d414-99d1-4fa9-8a44-74b4d6ad34e1", "--include-directories", "../lib"}},
	} {
		b := Gemini("/bin/gemini")
		if got, want := b.Command(tc.req), append(slices.Clone(base), tc.want...); !slices.Equal(got, want) {
			t.Errorf("%+v:\n got %q\nwant %q", tc.req, got, want)
		}
		if b.Name() != "gemini" {
			t.Errorf("name %q", b.Name())
		}
	}
}

func TestGeminiCLI(t *testing.T) {
	if !slices.Contains(CLINames(), "gemini") || InstallHint("gemini") != "npm install -g @google/gemini-cli" {
		t.Errorf("clis: %v, hint %q", CLINames(), InstallHint("gemini"))
	}
	b, err := Find("gemini", func(name string) (string, error) { return "/opt/bin/" + name, nil })
	if err != nil || b.Name() != "gemini" || b.Command(Request{})[0] != "/opt/bin/gemini" {
		t.Fatalf("Find: %v, %v", b, err)
	}
	for p, want := range map[Permission]string{
		"":                    "--approval-mode yolo",
		PermissionAcceptEdits: "--approval-mode auto_edit",
		PermissionDefault:     "--approval-mode default",
	} {
		if got := PermissionFlags("gemini", p); !strings.HasPrefix(got, want) {
			t.Errorf("PermissionFlags(%q) = %q, want %q…", p, got, want)
		}
	}
	if got := MaxTurnsFlag("gemini", 7); !strings.Contains(got, "7 model calls") {
		t.Errorf("MaxTurnsFlag = %q", got)
	}
}

// The session record may appear after the init line: it is looked for
// again until found.
func TestGeminiSessionFoundLate(t *testing.T) {
	home := t.TempDir()
	s := newGeminiStream(nil, "gemini-2.5-pro")
	s.chats = newGeminiChats([]string{"HOME=" + home}, time.Date(2026, 11, 23, 17, 5, 29, 0, time.UTC))
	s.line([]byte(geminiInit))
	if s.chats.known() {
		t.Fatal("known before the file exists")
	}
	dir := filepath.Join(home, ".gemini", "tmp", "project", "chats")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A file of another session whose id starts the same is not it.
	other := strings.Replace(geminiSessionFile, "0205d414-99d1-4fa9-8a44-74b4d6ad34e1", "0205d414-0000-4000-8000-000000000000", -1)
	if err := os.WriteFile(filepath.Join(dir, "session-2026-11-23T17-00-0205d414.jsonl"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "session-2026-11-23T17-05-0205d414.jsonl"), []byte(geminiSessionFile+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := s.finish(childEnd{stopped: KindInterrupted}, geminiNow)
	if !res.UsageKnown || res.Usage != (Usage{In: 1150, Out: 25}) || res.NumTurns != 1 {
		t.Errorf("got %+v", res)
	}
}
