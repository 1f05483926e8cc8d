package agenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FakeChat is a minimal OpenAI Chat Completions API (POST
// /v1/chat/completions with stream: true) for the real opencode CLI, which
// reaches it through an openai-compatible provider (see OpencodeEnv). Each
// request is answered as Script says: a tool call of opencode's write or
// bash tool, a final text, an HTTP error, or a stream that stops.
type FakeChat struct {
	// Script decides each answer; nil answers FakeFinal to everything.
	Script Script
	record
}

// The usage FakeChat reports for each answer, in the protocol's usage
// chunk: prompt_tokens includes the cached ones (OpenAI's convention).
const (
	FakeChatPromptTokens   = 150
	FakeChatCachedTokens   = 50
	FakeChatToolCallOutput = 25 // an answer that is a tool call
	FakeChatFinalOutput    = 12 // an answer that is a final text
)

// FakeChatToolCallID is the id of the n-th request's tool call.
func FakeChatToolCallID(n int) string { return fmt.Sprintf("call_ralph_%d", n) }

// FakeChatRetryAfterMS is the retry-after-ms header of every error
// FakeChat sends: the header OpenAI's servers send and the OpenAI SDKs
// honour. opencode retries a 429 or a 5xx five times whatever its
// settings say, waiting 2 s, 4 s … 30 s unless the server names a delay;
// with 0 it retries at once, and a test of a rate limit takes a second,
// not a minute.
const FakeChatRetryAfterMS = "0"

// Start serves f on 127.0.0.1 (never another interface) until the test
// ends, and returns its base URL (without /v1).
func (f *FakeChat) Start(t testing.TB) string {
	t.Helper()
	return serveLoopback(t, f)
}

// chatRequest holds the fields FakeChat reads from a request.
type chatRequest struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	Messages []chatMessage     `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string, or parts
}

// chatText flattens a message's content: a string, or parts whose text is
// kept.
func chatText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

func (f *FakeChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		f.notFound(w, r)
		return
	}
	body, ok := readBody[chatRequest](w, r)
	if !ok {
		return
	}
	s, reply := f.ask(f.Script, chatSeen(body))
	if reply.Status != 0 {
		writeChatError(w, reply)
		return
	}
	c := chatStream{w: w, id: fmt.Sprintf("chatcmpl-ralph-%d", s.N), model: body.Model}
	c.chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	if reply.Hang {
		<-r.Context().Done()
		return
	}
	var out int64
	switch {
	case reply.Write != nil:
		out = c.toolCall(FakeChatToolCallID(s.N), "write", map[string]string{"filePath": reply.Write.Path, "content": reply.Write.Content})
	case reply.Command != "":
		out = c.toolCall(FakeChatToolCallID(s.N), "bash", map[string]string{"command": reply.Command, "description": "Run the command"})
	default:
		out = c.text(reply.Final)
	}
	c.usage(out)
	c.done()
}

// chatSeen is what a request shows a Script.
func chatSeen(body chatRequest) Seen {
	s := Seen{Model: body.Model, HasTools: len(body.Tools) > 0}
	var text []string
	for i, m := range body.Messages {
		switch m.Role {
		case "user":
			text = append(text, chatText(m.Content))
		case "tool":
			t := chatText(m.Content)
			text = append(text, t)
			if i == len(body.Messages)-1 {
				s.ToolResult, s.ToolResultText = true, t
			}
		}
	}
	s.UserText = strings.Join(text, "\n")
	return s
}

// writeChatError answers with reply's status and the API's error body. Its
// retry-after-ms header is always FakeChatRetryAfterMS, for opencode's own
// retries; reply.RetryIn is said in the message, which opencode passes on.
func writeChatError(w http.ResponseWriter, reply Reply) {
	status := reply.Status
	typ, code, msg := "server_error", "", "The server had an error while processing your request."
	switch status {
	case http.StatusTooManyRequests:
		typ, code, msg = "requests", "rate_limit_exceeded", "Rate limit reached for requests per minute."+retryText(reply.RetryIn)
		if reply.RetryIn <= 0 {
			msg += " Please try again later."
		}
	case 529:
		typ, code, msg = "overloaded_error", "overloaded", "The server is overloaded."
	}
	if status < 500 && status != http.StatusTooManyRequests {
		typ, msg = "invalid_request_error", http.StatusText(status)
	}
	body := map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nilIfEmpty(code)}}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("retry-after-ms", FakeChatRetryAfterMS)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// chatStream writes one streamed completion as server-sent events.
type chatStream struct {
	w       http.ResponseWriter
	id      string
	model   string
	started bool
}

// chunk sends one chat.completion.chunk with delta (and finishReason, when
// not nil) in its one choice.
func (c *chatStream) chunk(delta map[string]any, finishReason any) {
	c.send(map[string]any{
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finishReason}},
	})
}

func (c *chatStream) send(fields map[string]any) {
	if !c.started {
		startStream(c.w)
		c.started = true
	}
	fields["id"], fields["object"], fields["created"], fields["model"] = c.id, "chat.completion.chunk", time.Now().Unix(), c.model
	sse(c.w, "", fields)
}

// toolCall streams one call of tool with args, its arguments in two
// pieces as from the real API, and returns the output tokens it reports.
func (c *chatStream) toolCall(id, tool string, args map[string]string) int64 {
	input, _ := json.Marshal(args)
	c.chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": id, "type": "function",
		"function": map[string]any{"name": tool, "arguments": ""}}}}, nil)
	for _, part := range halves(string(input)) {
		c.chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": part}}}}, nil)
	}
	c.chunk(map[string]any{}, "tool_calls")
	return FakeChatToolCallOutput
}

// text streams final ("" is FakeFinal) in two pieces and returns the
// output tokens it reports.
func (c *chatStream) text(final string) int64 {
	if final == "" {
		final = FakeFinal
	}
	for _, part := range halves(final) {
		c.chunk(map[string]any{"content": part}, nil)
	}
	c.chunk(map[string]any{}, "stop")
	return FakeChatFinalOutput
}

// usage sends the usage chunk (no choices), as the API does when asked
// for it with stream_options.include_usage.
func (c *chatStream) usage(out int64) {
	c.send(map[string]any{"choices": []any{}, "usage": map[string]any{
		"prompt_tokens":         FakeChatPromptTokens,
		"completion_tokens":     out,
		"total_tokens":          FakeChatPromptTokens + out,
		"prompt_tokens_details": map[string]any{"cached_tokens": FakeChatCachedTokens},
	}})
}

func (c *chatStream) done() { sseRaw(c.w, "", "[DONE]") }

// The provider and model OpencodeEnv configures: opencode names a model
// "provider/model".
const (
	FakeOpencodeProvider = "ralphfake"
	FakeOpencodeModel    = "fake-model"
)

// OpencodeEnv writes opencode's global config under home, pointing a
// provider FakeOpencodeProvider (the CLI's bundled openai-compatible
// package) at the fake server at baseURL, and returns the whole
// environment for a real opencode that may talk to it only: HOME, a dummy
// key, no auto-update, no models.dev fetch, no sharing, PATH=path. The
// model to ask for is FakeOpencodeProvider/FakeOpencodeModel. opencode's
// own retries cannot be turned off (see FakeChatRetryAfterMS).
func OpencodeEnv(home, baseURL, path string) ([]string, error) {
	model := map[string]any{"name": "Fake model", "tool_call": true,
		"limit": map[string]any{"context": 200000, "output": 8192}}
	config := map[string]any{
		"autoupdate": false,
		"share":      "disabled",
		// No language servers or formatters: they are found or fetched
		// per file type, and a test's files must not depend on them.
		"lsp":         false,
		"formatter":   false,
		"model":       FakeOpencodeProvider + "/" + FakeOpencodeModel,
		"small_model": FakeOpencodeProvider + "/" + FakeOpencodeModel,
		"provider": map[string]any{FakeOpencodeProvider: map[string]any{
			"npm":  "@ai-sdk/openai-compatible",
			"name": "ralph's fake",
			"options": map[string]any{
				"baseURL":      strings.TrimSuffix(baseURL, "/") + "/v1",
				"apiKey":       "{env:RALPH_FAKE_API_KEY}",
				"includeUsage": true,
			},
			"models": map[string]any{FakeOpencodeModel: model},
		}},
	}
	b, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("opencode config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "opencode.json"), b, 0o644); err != nil {
		return nil, fmt.Errorf("opencode config: %w", err)
	}
	// At start-up opencode installs @opencode-ai/plugin (the types of
	// local plugins) into its config folder, from the npm registry, unless
	// node_modules is there and the lock file lists it: a test must not
	// reach outside loopback.
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o755); err != nil {
		return nil, fmt.Errorf("opencode config: %w", err)
	}
	lock := `{"lockfileVersion": 3, "packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "package-lock.json"), []byte(lock), 0o644); err != nil {
		return nil, fmt.Errorf("opencode config: %w", err)
	}
	return []string{
		"HOME=" + home,
		"RALPH_FAKE_API_KEY=test",
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"PATH=" + path,
	}, nil
}
