package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// FakeAPI is a minimal Anthropic Messages API for the real Claude Code CLI
// (ANTHROPIC_BASE_URL pointed at it): to a conversation without a tool
// result it streams one Write tool call, chosen by Route from what the user
// messages say; once the tool's result comes back it streams FakeFinal. With
// RateLimit it answers every request with a 429; a request Stall picks gets
// the start of an answer, then nothing until the client goes away.
type FakeAPI struct {
	// Route chooses the file the Write call creates, from the text of the
	// request's user messages (the prompt, then any tool results). ok false
	// answers with FakeFinal at once, writing nothing.
	Route     func(userText string) (path, content string, ok bool)
	RateLimit bool
	Stall     func(APICall) bool
	// Endless, when set, answers every request, tool results included,
	// with one more Write call: of the file it returns for the n-th
	// request (1-based). An agent that never finishes.
	Endless func(n int) (path, content string)
	// Bash, when set, chooses instead of Route: to a conversation
	// without a tool result, a call of the CLI's Bash tool running
	// command, if ok.
	Bash func(userText string) (command string, ok bool)

	mu    sync.Mutex
	calls []APICall
}

// APICall is what the fake API saw of one request.
type APICall struct {
	Method, Path   string
	Model          string
	Stream         bool
	UserText       string // the text of every user message, in order
	ToolResultFor  string // tool_use_id of a tool_result in the last user message
	ToolResultText string
	// The usage the fake reported for its answer: FakeInputTokens in
	// message_start, the output in message_delta (0 when the answer
	// stopped short of it).
	InputTokens, OutputTokens int64
}

// The tool call's id and the final text of the fake's conversations.
const (
	FakeToolID = "toolu_ralph_01"
	FakeFinal  = "Wrote the file.\n<promise>COMPLETE</promise>"
)

// The usage the fake reports for each answer, as the real API does: the
// input in message_start with a placeholder output of 1, the output in
// message_delta.
const (
	FakeInputTokens     = 120
	FakeToolCallOutput  = 25 // an answer that is a tool call
	FakeFinalTextOutput = 12 // an answer that is FakeFinal
)

// Calls returns the requests seen so far.
func (f *FakeAPI) Calls() []APICall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]APICall(nil), f.calls...)
}

// Posts returns the POST /v1/messages requests seen so far.
func (f *FakeAPI) Posts() []APICall {
	var posts []APICall
	for _, c := range f.Calls() {
		if c.Method == http.MethodPost && c.Path == "/v1/messages" {
			posts = append(posts, c)
		}
	}
	return posts
}

type apiBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// blocksText flattens message content: a string, or blocks whose text (and
// tool results' text) is kept.
func blocksText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []apiBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "tool_result":
			parts = append(parts, blocksText(b.Content))
		}
	}
	return strings.Join(parts, "\n")
}

func (f *FakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	call := APICall{Method: r.Method, Path: r.URL.Path}
	n := 0
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
	var text []string
	for i, m := range body.Messages {
		if m.Role != "user" {
			continue
		}
		text = append(text, blocksText(m.Content))
		var blocks []apiBlock
		if i == len(body.Messages)-1 && json.Unmarshal(m.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_result" {
					call.ToolResultFor, call.ToolResultText = b.ToolUseID, blocksText(b.Content)
				}
			}
		}
	}
	call.UserText = strings.Join(text, "\n")
	if f.RateLimit {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`)
		return
	}
	f.mu.Lock()
	n = len(f.calls) + 1
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_ralph_%d", n), "type": "message", "role": "assistant", "model": body.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": FakeInputTokens, "output_tokens": 1},
	}})
	call.InputTokens = FakeInputTokens
	sse(w, "ping", map[string]any{"type": "ping"})
	if f.Stall != nil && f.Stall(call) {
		<-r.Context().Done()
		return
	}
	path, content, ok := "", "", false
	toolID := FakeToolID
	if f.Endless != nil {
		path, content = f.Endless(n)
		ok, toolID = true, fmt.Sprintf("%s_%d", FakeToolID, n)
	} else if call.ToolResultFor == "" && f.Route != nil {
		path, content, ok = f.Route(call.UserText)
	}
	tool, args := "Write", map[string]string{"file_path": path, "content": content}
	if command, run := f.bashCall(call); run {
		tool, args, ok = "Bash", map[string]string{"command": command, "description": "Run the command"}, true
	}
	if ok {
		call.OutputTokens = streamToolUse(w, toolID, tool, args)
	} else {
		call.OutputTokens = streamFinalText(w)
	}
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// streamToolUse streams one tool_use block calling tool with args, its
// input in pieces as from the real API, and returns the output tokens it
// reports.
func streamToolUse(w http.ResponseWriter, id, tool string, args map[string]string) int64 {
	input, _ := json.Marshal(args)
	sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "tool_use", "id": id, "name": tool, "input": map[string]any{}}})
	half := len(input) / 2
	for _, part := range []string{string(input[:half]), string(input[half:])} {
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": FakeToolCallOutput}})
	return FakeToolCallOutput
}

// streamFinalText streams the final answer, COMPLETE, and returns the
// output tokens it reports.
func streamFinalText(w http.ResponseWriter) int64 {
	sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
	for _, part := range []string{"Wrote the file.\n", "<promise>COMPLETE</promise>"} {
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": part}})
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": FakeFinalTextOutput}})
	return FakeFinalTextOutput
}

// bashCall is the command of the Bash call Bash asks for, if any.
func (f *FakeAPI) bashCall(call APICall) (string, bool) {
	if f.Bash == nil || call.ToolResultFor != "" {
		return "", false
	}
	return f.Bash(call.UserText)
}

func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

// Start serves f on 127.0.0.1 (never another interface) until the test
// ends, and returns its base URL.
func (f *FakeAPI) Start(t testing.TB) string {
	t.Helper()
	return serveLoopback(t, f)
}

// FakeAPIEnv is the environment for a real CLI that may talk to the fake
// API at baseURL only, with HOME (its settings and sessions) at home.
func FakeAPIEnv(home, baseURL, path string) []string {
	return []string{
		"HOME=" + home,
		"ANTHROPIC_BASE_URL=" + baseURL,
		"ANTHROPIC_API_KEY=test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_MAX_RETRIES=0",
		"IS_SANDBOX=1",
		"PATH=" + path,
	}
}
