package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc"
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
	realToolID = "toolu_ralph_01"
	realModel  = "claude-sonnet-4-5"
	realFinal  = "Wrote the file.\n<promise>COMPLETE</promise>"
)

// apiCall is what the fake API saw of one request.
type apiCall struct {
	Method, Path   string
	Model          string
	Stream         bool
	Prompt         bool   // the first user message holds the task's prompt
	ToolResultFor  string // tool_use_id of a tool_result in the last user message
	ToolResultText string
}

// fakeAPI is a minimal Anthropic Messages API: it streams a Write tool
// call, then, given the tool's result, a final text; or answers 429.
type fakeAPI struct {
	target    string // the file the tool call writes
	prompt    string // a piece of the task's prompt to look for
	rateLimit bool

	mu    sync.Mutex
	calls []apiCall
}

func (f *fakeAPI) seen() []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]apiCall(nil), f.calls...)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	call := apiCall{Method: r.Method, Path: r.URL.Path}
	defer func() {
		f.mu.Lock()
		f.calls = append(f.calls, call)
		f.mu.Unlock()
	}()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		http.NotFound(w, r) // the CLI's HEAD / probe, and anything unexpected
		return
	}
	var body struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	call.Model, call.Stream = body.Model, body.Stream
	for i, m := range body.Messages {
		if m.Role != "user" {
			continue
		}
		if !call.Prompt && strings.Contains(string(m.Content), f.prompt) {
			call.Prompt = true
		}
		var blocks []contentBlock
		if i == len(body.Messages)-1 && json.Unmarshal(m.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_result" {
					call.ToolResultFor, call.ToolResultText = b.ToolUseID, toolResultText(b.Content)
				}
			}
		}
	}
	if f.rateLimit {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	n := len(f.seen()) + 1
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_ralph_%d", n), "type": "message", "role": "assistant", "model": body.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 120, "output_tokens": 1},
	}})
	sse(w, "ping", map[string]any{"type": "ping"})
	if call.ToolResultFor == "" {
		input, _ := json.Marshal(map[string]string{"file_path": f.target, "content": "hello from claude\n"})
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": realToolID, "name": "Write", "input": map[string]any{}}})
		// The input arrives in pieces, as from the real API.
		half := len(input) / 2
		for _, part := range []string{string(input[:half]), string(input[half:])} {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		sse(w, "message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 25}})
	} else {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for _, part := range []string{"Wrote the file.\n", "<promise>COMPLETE</promise>"} {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": part}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		sse(w, "message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 12}})
	}
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

// startFakeAPI serves api on 127.0.0.1 until the test ends.
func startFakeAPI(t *testing.T, api *fakeAPI) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(api)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
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
		Prompt: "Create hello.txt saying hello, then say <promise>COMPLETE</promise>.",
		Dir:    project,
		Model:  realModel,
		Env: []string{
			"HOME=" + home,
			"ANTHROPIC_BASE_URL=" + baseURL,
			"ANTHROPIC_API_KEY=test",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"DISABLE_AUTOUPDATER=1",
			"CLAUDE_CODE_MAX_RETRIES=0",
			"IS_SANDBOX=1",
			"PATH=" + os.Getenv("PATH"),
		},
		NoOutputTimeout: 30 * time.Second,
		Timeout:         60 * time.Second,
		Grace:           2 * time.Second,
	}
}

// checkCalls checks that the API saw the POSTs want and nothing else but
// an optional HEAD / probe.
func checkCalls(t *testing.T, calls []apiCall, posts int) []apiCall {
	t.Helper()
	var got []apiCall
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
		if c.Model != realModel || !c.Stream || !c.Prompt {
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
		api := &fakeAPI{prompt: "Create hello.txt saying hello"}
		req := realRequest(t, startFakeAPI(t, api))
		api.target = filepath.Join(req.Dir, "hello.txt")
		var raw syncBuffer
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
		data, err := os.ReadFile(api.target)
		if err != nil || string(data) != "hello from claude\n" {
			t.Fatalf("the CLI did not write the file: %q, %v", data, err)
		}
		if res.Final != realFinal || !strings.Contains(res.Final, "<promise>COMPLETE</promise>") {
			t.Errorf("Final = %q", res.Final)
		}
		if res.SessionID == "" || res.Usage.In <= 0 || res.Usage.Out <= 0 || res.NumTurns < 1 {
			t.Errorf("session %q, usage %+v, turns %d", res.SessionID, res.Usage, res.NumTurns)
		}
		t.Logf("API calls: %+v", api.seen())
		posts := checkCalls(t, api.seen(), 2)
		if posts[0].ToolResultFor != "" || posts[1].ToolResultFor != realToolID {
			t.Errorf("tool results sent: %q then %q; want none, then %s", posts[0].ToolResultFor, posts[1].ToolResultFor, realToolID)
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
		api := &fakeAPI{prompt: "Create hello.txt saying hello", rateLimit: true}
		req := realRequest(t, startFakeAPI(t, api))
		res, err := Claude(bin).Run(ctx, req, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("real claude, 429: %s, exit %d, %q", res.Duration.Round(time.Millisecond), res.ExitCode, res.ErrorText)
		if !res.IsError || res.ErrorKind != KindRateLimit || res.APIStatus != 429 || res.Final != "" {
			t.Fatalf("got %+v", res)
		}
		checkCalls(t, api.seen(), 1)
		assertGone(t, res.PID, res.PID)
	})
}
