package agenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// FakeAPI is a minimal Anthropic Messages API for the real Claude Code CLI
// (ANTHROPIC_BASE_URL pointed at it). With Script set, it answers each
// request as Script says, as the other fakes do: Reply.Write is a call of
// the CLI's Write tool, Reply.Command of its Bash tool. Without a Script,
// the fields below decide: to a conversation without a tool result it
// streams one Write tool call, chosen by Route from what the user messages
// say; once the tool's result comes back it streams FakeFinal. With
// RateLimit it answers every request with a 429; a request Stall picks
// gets the start of an answer, then nothing until the client goes away.
type FakeAPI struct {
	Script Script
	// Route chooses the file the Write call creates, from the text of the
	// request's user messages (the prompt, then any tool results). ok false
	// answers with FakeFinal at once, writing nothing.
	Route     func(userText string) (path, content string, ok bool)
	RateLimit bool
	Stall     func(APICall) bool
	// Endless, when set, answers every request, tool results included,
	// with one more Write call: of the file it returns for the n-th
	// request (1-based, every request counted). An agent that never
	// finishes.
	Endless func(n int) (path, content string)
	// Bash, when set, chooses instead of Route: to a conversation
	// without a tool result, a call of the CLI's Bash tool running
	// command, if ok.
	Bash func(userText string) (command string, ok bool)

	record
	calls []APICall // every request, under record.mu
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

// Calls returns the requests seen so far, model requests or not.
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

// apiRequest is the part of a Messages request the fake reads.
type apiRequest struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (f *FakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	call := APICall{Method: r.Method, Path: r.URL.Path}
	defer func() {
		f.mu.Lock()
		f.calls = append(f.calls, call)
		f.mu.Unlock()
	}()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		f.notFound(w, r) // the CLI's HEAD / probe, and anything unexpected
		return
	}
	body, ok := readBody[apiRequest](w, r)
	if !ok {
		return
	}
	call.read(body)
	s := f.add(Seen{Model: call.Model, UserText: call.UserText, HasTools: len(body.Tools) > 0,
		ToolResult: strings.HasPrefix(call.ToolResultFor, FakeToolID), ToolResultText: call.ToolResultText})
	reply, toolID := f.reply(call, s)
	if reply.Status != 0 {
		writeAPIError(w, reply)
		return
	}
	startStream(w)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_ralph_%d", s.N), "type": "message", "role": "assistant", "model": body.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": FakeInputTokens, "output_tokens": 1},
	}})
	call.InputTokens = FakeInputTokens
	sse(w, "ping", map[string]any{"type": "ping"})
	switch {
	case reply.Hang:
		<-r.Context().Done()
		return
	case reply.Write != nil:
		call.OutputTokens = streamToolUse(w, toolID, "Write", map[string]string{"file_path": reply.Write.Path, "content": reply.Write.Content})
	case reply.Command != "":
		call.OutputTokens = streamToolUse(w, toolID, "Bash", map[string]string{"command": reply.Command, "description": "Run the command"})
	default:
		call.OutputTokens = streamFinalText(w, reply.Final)
	}
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// read fills in what c says of the conversation in body.
func (c *APICall) read(body apiRequest) {
	c.Model, c.Stream = body.Model, body.Stream
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
					c.ToolResultFor, c.ToolResultText = b.ToolUseID, blocksText(b.Content)
				}
			}
		}
	}
	c.UserText = strings.Join(text, "\n")
}

// reply is the answer to call, and the id of the tool call it may ask
// for: Script's answer, else the one f's fields give.
func (f *FakeAPI) reply(call APICall, s Seen) (Reply, string) {
	if f.Script != nil {
		return f.Script(s), fmt.Sprintf("%s_%d", FakeToolID, s.N)
	}
	f.mu.Lock()
	n := len(f.calls) + 1
	f.mu.Unlock()
	fresh := call.ToolResultFor == ""
	switch {
	case f.RateLimit:
		return Reply{Status: http.StatusTooManyRequests}, ""
	case f.Stall != nil && f.Stall(call):
		return Reply{Hang: true}, ""
	}
	if fresh && f.Bash != nil {
		if command, ok := f.Bash(call.UserText); ok {
			return Reply{Command: command}, FakeToolID
		}
	}
	if f.Endless != nil {
		path, content := f.Endless(n)
		return Reply{Write: &FileWrite{Path: path, Content: content}}, fmt.Sprintf("%s_%d", FakeToolID, n)
	}
	if fresh && f.Route != nil {
		if path, content, ok := f.Route(call.UserText); ok {
			return Reply{Write: &FileWrite{Path: path, Content: content}}, FakeToolID
		}
	}
	return Reply{}, ""
}

// writeAPIError answers with the API's error body for reply's status.
// Claude Code passes the message on, and ralph reads reply.RetryIn from it.
func writeAPIError(w http.ResponseWriter, reply Reply) {
	typ, msg := "api_error", "Internal server error"
	switch reply.Status {
	case http.StatusTooManyRequests:
		typ, msg = "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."+retryText(reply.RetryIn)
	case 529:
		typ, msg = "overloaded_error", "Overloaded"
	}
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(reply.Status)
	w.Write(b)
}

// streamToolUse streams one tool_use block calling tool with args, its
// input in pieces as from the real API, and returns the output tokens it
// reports.
func streamToolUse(w http.ResponseWriter, id, tool string, args map[string]string) int64 {
	input, _ := json.Marshal(args)
	sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "tool_use", "id": id, "name": tool, "input": map[string]any{}}})
	for _, part := range halves(string(input)) {
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": FakeToolCallOutput}})
	return FakeToolCallOutput
}

// streamFinalText streams the final answer, text ("": FakeFinal), in two
// pieces, and returns the output tokens it reports.
func streamFinalText(w http.ResponseWriter, text string) int64 {
	if text == "" {
		text = FakeFinal
	}
	sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
	for _, part := range halves(text) {
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": part}})
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": FakeFinalTextOutput}})
	return FakeFinalTextOutput
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
