package agenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FakeResponses is a minimal OpenAI Responses API (POST /v1/responses,
// server-sent events) for the real Codex CLI, which speaks no other wire
// protocol and ignores OPENAI_BASE_URL: CodexEnv points it here through a
// model provider in its config. Each request is answered as Script says
// (nil: FakeFinal): Reply.Write is a call of codex's own file-editing tool,
// apply_patch (a freeform "custom" tool whose input is a patch adding the
// file), Reply.Command a call of its shell tool, exec_command.
type FakeResponses struct {
	Script Script
	record
}

// The usage FakeResponses reports for each answer, in response.completed:
// input_tokens (cached ones included, as the API counts them), of which
// FakeResponsesCached in input_tokens_details.cached_tokens, and
// output_tokens.
const (
	FakeResponsesInput       = 150
	FakeResponsesCached      = 20
	FakeResponsesToolOutput  = 30 // an answer that is a tool call
	FakeResponsesFinalOutput = 14 // an answer that is a final text
)

// FakeCallIDPrefix starts the call_id of every tool call FakeResponses
// asks for: a tool output with such an id answers one of its calls.
const FakeCallIDPrefix = "call_ralph_"

// Start serves f on 127.0.0.1 (never another interface) until the test
// ends, and returns its base URL, without the /v1 (CodexEnv adds it).
func (f *FakeResponses) Start(t testing.TB) string {
	t.Helper()
	return serveLoopback(t, f)
}

// responsesRequest holds what FakeResponses reads of a request body.
type responsesRequest struct {
	Model  string            `json:"model"`
	Stream bool              `json:"stream"`
	Tools  []json.RawMessage `json:"tools"`
	Input  []responsesItem   `json:"input"`
}

// responsesItem is one item of a request's input: a message (role,
// content parts) or a tool call's output (call_id, output).
type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Output  json.RawMessage `json:"output"`
}

func (f *FakeResponses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		f.notFound(w, r)
		return
	}
	body, ok := readBody[responsesRequest](w, r)
	if !ok {
		return
	}
	s, reply := f.ask(f.Script, seenOf(body))
	if reply.Status != 0 {
		writeResponsesError(w, reply)
		return
	}
	respond(w, r, body.Model, s.N, reply)
}

// seenOf is what a request shows a Script.
func seenOf(body responsesRequest) Seen {
	s := Seen{Model: body.Model, HasTools: len(body.Tools) > 0}
	var text []string
	for _, it := range body.Input {
		switch it.Type {
		case "message":
			if it.Role == "user" {
				text = append(text, partsText(it.Content))
			}
		case "function_call_output", "custom_tool_call_output":
			text = append(text, partsText(it.Output))
		}
	}
	s.UserText = strings.Join(text, "\n")
	if n := len(body.Input); n > 0 {
		last := body.Input[n-1]
		if (last.Type == "function_call_output" || last.Type == "custom_tool_call_output") && strings.HasPrefix(last.CallID, FakeCallIDPrefix) {
			s.ToolResult, s.ToolResultText = true, partsText(last.Output)
		}
	}
	return s
}

// partsText flattens message content or a tool output: a string, or parts
// whose text is kept.
func partsText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n")
}

// writeResponsesError answers with the API's error body for reply's
// status. (Codex 0.169 shows only the status of a 429, not its message:
// ralph then waits its own backoff.)
func writeResponsesError(w http.ResponseWriter, reply Reply) {
	status := reply.Status
	typ, code, msg := "server_error", "server_error", "The server had an error while processing your request."
	if status == http.StatusTooManyRequests {
		typ, code, msg = "requests", "rate_limit_exceeded", "Rate limit reached for requests."+retryText(reply.RetryIn)
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// responseStream writes one response's server-sent events, numbered.
type responseStream struct {
	w   http.ResponseWriter
	seq int
}

func (rs *responseStream) send(typ string, fields map[string]any) {
	fields["type"] = typ
	fields["sequence_number"] = rs.seq
	rs.seq++
	sse(rs.w, typ, fields)
}

// respond streams the answer to request n: one output item, then
// response.completed with its usage.
func respond(w http.ResponseWriter, r *http.Request, model string, n int, reply Reply) {
	startStream(w)
	rs := &responseStream{w: w}
	id := fmt.Sprintf("resp_ralph_%d", n)
	head := map[string]any{"id": id, "object": "response", "model": model, "status": "in_progress", "output": []any{}}
	rs.send("response.created", map[string]any{"response": head})
	rs.send("response.in_progress", map[string]any{"response": head})
	if reply.Hang {
		<-r.Context().Done()
		return
	}
	var item map[string]any
	var out int64
	switch {
	case reply.Write != nil:
		item, out = customToolCall(rs, n, "apply_patch", addFilePatch(reply.Write.Path, reply.Write.Content)), FakeResponsesToolOutput
	case reply.Command != "":
		args, _ := json.Marshal(map[string]string{"cmd": reply.Command})
		item, out = functionCall(rs, n, "exec_command", string(args)), FakeResponsesToolOutput
	default:
		text := reply.Final
		if text == "" {
			text = FakeFinal
		}
		item, out = outputMessage(rs, n, text), FakeResponsesFinalOutput
	}
	done := map[string]any{"id": id, "object": "response", "model": model, "status": "completed", "output": []any{item},
		"usage": map[string]any{
			"input_tokens":          FakeResponsesInput,
			"input_tokens_details":  map[string]any{"cached_tokens": FakeResponsesCached},
			"output_tokens":         out,
			"output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens":          FakeResponsesInput + out,
		}}
	rs.send("response.completed", map[string]any{"response": done})
}

// addFilePatch is an apply_patch input that creates (or replaces) path
// with content. The format has no way to say "no newline at the end": the
// file ends with one whatever content does.
func addFilePatch(path, content string) string {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Add File: " + path + "\n")
	for _, l := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
		b.WriteString("+" + l + "\n")
	}
	b.WriteString("*** End Patch\n")
	return b.String()
}

// customToolCall streams a call of a freeform tool (apply_patch).
func customToolCall(rs *responseStream, n int, name, input string) map[string]any {
	id := fmt.Sprintf("ctc_ralph_%d", n)
	item := map[string]any{"type": "custom_tool_call", "id": id, "status": "in_progress", "call_id": fmt.Sprintf("%s%d", FakeCallIDPrefix, n), "name": name, "input": ""}
	rs.send("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	rs.send("response.custom_tool_call_input.delta", map[string]any{"output_index": 0, "item_id": id, "delta": input})
	rs.send("response.custom_tool_call_input.done", map[string]any{"output_index": 0, "item_id": id, "input": input})
	item = clone(item)
	item["status"], item["input"] = "completed", input
	rs.send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	return item
}

// functionCall streams a call of a function tool (exec_command), its
// arguments in two pieces as from the real API.
func functionCall(rs *responseStream, n int, name, args string) map[string]any {
	id := fmt.Sprintf("fc_ralph_%d", n)
	item := map[string]any{"type": "function_call", "id": id, "status": "in_progress", "call_id": fmt.Sprintf("%s%d", FakeCallIDPrefix, n), "name": name, "arguments": ""}
	rs.send("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	for _, part := range halves(args) {
		rs.send("response.function_call_arguments.delta", map[string]any{"output_index": 0, "item_id": id, "delta": part})
	}
	rs.send("response.function_call_arguments.done", map[string]any{"output_index": 0, "item_id": id, "arguments": args})
	item = clone(item)
	item["status"], item["arguments"] = "completed", args
	rs.send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	return item
}

// outputMessage streams an assistant message, its text in pieces.
func outputMessage(rs *responseStream, n int, text string) map[string]any {
	id := fmt.Sprintf("msg_ralph_%d", n)
	item := map[string]any{"type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": []any{}}
	rs.send("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	empty := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
	rs.send("response.content_part.added", map[string]any{"output_index": 0, "content_index": 0, "item_id": id, "part": empty})
	for _, part := range halves(text) {
		rs.send("response.output_text.delta", map[string]any{"output_index": 0, "content_index": 0, "item_id": id, "delta": part})
	}
	rs.send("response.output_text.done", map[string]any{"output_index": 0, "content_index": 0, "item_id": id, "text": text})
	part := map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
	rs.send("response.content_part.done", map[string]any{"output_index": 0, "content_index": 0, "item_id": id, "part": part})
	item = clone(item)
	item["status"], item["content"] = "completed", []any{part}
	rs.send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	return item
}

func clone(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// FakeResponsesModel is the model CodexEnv's config selects: the one a run
// without Request.Model uses and reports.
const FakeResponsesModel = "gpt-5.5"

// codexKeyVar is the environment variable CodexEnv's provider reads its
// API key from.
const codexKeyVar = "RALPH_FAKE_OPENAI_KEY"

// CodexEnv writes the Codex CLI's config under home (CODEX_HOME is
// home/.codex) for a model provider at baseURL (what FakeResponses.Start
// returns) and returns the whole environment of a codex child that can
// reach nothing else: HOME and CODEX_HOME, a dummy API key, PATH=path.
// The config turns off what would look for outside hosts (update checks,
// analytics, plugins, apps, model discovery: with them a run takes 5 s
// instead of 0.5 s) and the retries of model requests and streams, so
// that an injected error ends the run at once.
func CodexEnv(home, baseURL, path string) ([]string, error) {
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		return nil, fmt.Errorf("codex home: %w", err)
	}
	base := strings.TrimSuffix(baseURL, "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	// Root keys first: in TOML, a key after a table header belongs to
	// the table.
	config := fmt.Sprintf(`model = %q
model_provider = "ralph_fake"
check_for_update_on_startup = false

[model_providers.ralph_fake]
name = "ralph fake"
base_url = %q
env_key = %q
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false
api_key_model_discovery = false
`, FakeResponsesModel, base, codexKeyVar)
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o644); err != nil {
		return nil, fmt.Errorf("codex config: %w", err)
	}
	return []string{
		"HOME=" + home,
		"CODEX_HOME=" + codexHome,
		codexKeyVar + "=ralph-test-key",
		"PATH=" + path,
	}, nil
}
