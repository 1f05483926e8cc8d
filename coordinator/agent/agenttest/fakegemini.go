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

// FakeGemini is a minimal Gemini API for the real Gemini CLI
// (GOOGLE_GEMINI_BASE_URL pointed at it, see GeminiEnv): it answers
// POST /v1beta/models/MODEL:streamGenerateContent?alt=sse as Script says,
// in the API's server-sent events, and anything else with a 404 (kept in
// Others, so that a test sees a call it did not expect). A nil Script is
// FakeFinal to every request.
type FakeGemini struct {
	Script Script
	record
}

// The usage FakeGemini reports in each answer's usageMetadata, as the real
// API does: the prompt, the answer's own tokens (candidates) and, apart,
// the model's thinking (thoughts), which is billed as output.
const (
	FakeGeminiPromptTokens   = 150
	FakeGeminiToolCallTokens = 20 // an answer that is a tool call
	FakeGeminiFinalTokens    = 10 // an answer that is final text
	FakeGeminiThoughtTokens  = 5  // every answer's thinking
)

// The CLI's tools that FakeGemini calls (Gemini CLI 0.61).
const (
	GeminiWriteTool = "write_file"
	GeminiShellTool = "run_shell_command"
)

// geminiModelPrefix and geminiStreamSuffix frame a streaming model call's
// path: /v1beta/models/MODEL:streamGenerateContent.
const (
	geminiModelPrefix  = "/v1beta/models/"
	geminiStreamSuffix = ":streamGenerateContent"
)

// Start serves f on 127.0.0.1 (never another interface) until the test
// ends, and returns its base URL.
func (f *FakeGemini) Start(t testing.TB) string {
	t.Helper()
	return serveLoopback(t, f)
}

// geminiRequest is the part of a generateContent request the fake reads.
type geminiRequest struct {
	Contents []geminiContent `json:"contents"`
	Tools    []struct {
		FunctionDeclarations []json.RawMessage `json:"functionDeclarations"`
	} `json:"tools"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text             string `json:"text"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

func (f *FakeGemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	model, ok := strings.CutPrefix(r.URL.Path, geminiModelPrefix)
	if ok {
		model, ok = strings.CutSuffix(model, geminiStreamSuffix)
	}
	if r.Method != http.MethodPost || !ok {
		f.notFound(w, r)
		return
	}
	body, ok := readBody[geminiRequest](w, r)
	if !ok {
		return
	}
	s, reply := f.ask(f.Script, body.seen(model))
	switch {
	case reply.Status != 0:
		geminiError(w, reply)
	case reply.Hang:
		startStream(w)
		w.WriteHeader(http.StatusOK)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		<-r.Context().Done()
	default:
		geminiAnswer(w, model, s.N, reply)
	}
}

// seen is what a request shows of the conversation.
func (b geminiRequest) seen(model string) Seen {
	s := Seen{Model: model}
	var text []string
	for i, c := range b.Contents {
		if c.Role != "user" {
			continue
		}
		last := i == len(b.Contents)-1
		for _, p := range c.Parts {
			switch {
			case p.FunctionResponse != nil:
				out := geminiFunctionOutput(p.FunctionResponse.Response)
				text = append(text, out)
				if last {
					s.ToolResult, s.ToolResultText = true, out
				}
			case p.Text != "":
				text = append(text, p.Text)
			}
		}
	}
	s.UserText = strings.Join(text, "\n")
	for _, t := range b.Tools {
		s.HasTools = s.HasTools || len(t.FunctionDeclarations) > 0
	}
	return s
}

// geminiFunctionOutput is a functionResponse's text: the CLI sends
// {"output": "…"} (or {"error": "…"}); anything else is kept as JSON.
func geminiFunctionOutput(raw json.RawMessage) string {
	var r struct{ Output, Error string }
	if json.Unmarshal(raw, &r) == nil && r.Output+r.Error != "" {
		return r.Output + r.Error
	}
	return string(raw)
}

// geminiStatus is the API's status word for an HTTP error code.
func geminiStatus(code int) string {
	switch code {
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	}
	return "INTERNAL"
}

// geminiError answers with the API's error body for reply's status. A
// reply.RetryIn is said as the API says it: in the message ("Please retry
// in 2s.") and in a RetryInfo detail, which the CLI quotes ("Suggested
// retry after 2s.").
func geminiError(w http.ResponseWriter, reply Reply) {
	code := reply.Status
	msg := "Internal error encountered."
	if code == http.StatusTooManyRequests {
		msg = "Resource has been exhausted (e.g. check quota)."
	}
	e := map[string]any{"code": code, "message": msg, "status": geminiStatus(code)}
	if reply.RetryIn > 0 {
		delay := fmt.Sprintf("%ds", wholeSeconds(reply.RetryIn))
		e["message"] = msg + " Please retry in " + delay + "."
		e["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}}
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	w.Write(b)
}

// geminiAnswer streams reply as the API does: the parts in one or more
// chunks, the last with the finish reason and the call's usage.
func geminiAnswer(w http.ResponseWriter, model string, n int, reply Reply) {
	startStream(w)
	var chunks [][]map[string]any
	out := int64(FakeGeminiFinalTokens)
	switch {
	case reply.Write != nil:
		out = FakeGeminiToolCallTokens
		chunks = [][]map[string]any{{geminiFunctionCall(GeminiWriteTool, map[string]string{
			"file_path": reply.Write.Path, "content": reply.Write.Content})}}
	case reply.Command != "":
		out = FakeGeminiToolCallTokens
		chunks = [][]map[string]any{{geminiFunctionCall(GeminiShellTool, map[string]string{
			"command": reply.Command, "description": "Run the command"})}}
	default:
		text := reply.Final
		if text == "" {
			text = FakeFinal
		}
		// Text comes in pieces, as from the real API.
		parts := halves(text)
		chunks = [][]map[string]any{{{"text": parts[0]}}, {{"text": parts[1]}}}
	}
	for i, parts := range chunks {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		chunk := map[string]any{"candidates": []any{cand}, "modelVersion": model,
			"responseId": fmt.Sprintf("ralph-fake-%d", n)}
		if i == len(chunks)-1 {
			cand["finishReason"] = "STOP"
			chunk["usageMetadata"] = map[string]any{
				"promptTokenCount":     FakeGeminiPromptTokens,
				"candidatesTokenCount": out,
				"thoughtsTokenCount":   FakeGeminiThoughtTokens,
				"totalTokenCount":      FakeGeminiPromptTokens + out + FakeGeminiThoughtTokens,
			}
		}
		sse(w, "", chunk)
	}
}

func geminiFunctionCall(name string, args map[string]string) map[string]any {
	return map[string]any{"functionCall": map[string]any{"name": name, "args": args}}
}

// geminiSettings are the user settings GeminiEnv writes: API-key auth, one
// attempt per model call (the CLI retries 429s and 5xx ten times by
// default, for minutes), and nothing sent anywhere but the model API.
const geminiSettings = `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "general": {"maxAttempts": 1, "enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false}
}
`

// GeminiEnv writes the Gemini CLI's user settings under home
// (home/.gemini/settings.json, see geminiSettings) and returns the whole
// environment of a CLI that may talk to the fake API at baseURL only,
// with PATH path. TMPDIR is home/tmp: the CLI leaves a report file there
// for every API error.
func GeminiEnv(home, baseURL, path string) ([]string, error) {
	dir, tmp := filepath.Join(home, ".gemini"), filepath.Join(home, "tmp")
	for _, d := range []string{dir, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("gemini settings: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(geminiSettings), 0o644); err != nil {
		return nil, fmt.Errorf("gemini settings: %w", err)
	}
	return []string{
		"HOME=" + home,
		"TMPDIR=" + tmp,
		"GEMINI_API_KEY=test",
		"GOOGLE_GEMINI_BASE_URL=" + baseURL,
		"GEMINI_TELEMETRY_ENABLED=false",
		"PATH=" + path,
	}, nil
}
