package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/coordinator/internal/lazyre"
	"github.com/ralph-dev/ralph/coordinator/proc"
)

// Opencode returns the backend for opencode (opencode-ai) at bin. It runs
//
//	opencode run --format json [--auto] [--model PROVIDER/MODEL] [--session ID] [ARGS]
//
// with the prompt on stdin (opencode run reads a stdin that is not a
// terminal as its message), and PWD set to the project root: opencode
// takes its project from $PWD before its working directory, so an
// inherited PWD would start it in ralph's folder instead.
//
// Request.Model is opencode's "provider/model" (e.g.
// anthropic/claude-sonnet-4-5); "" is the model of opencode's own config.
// Request.Permission in opencode's words:
//
//   - bypass: --auto, which grants everything opencode's permission
//     settings would ask about; what they deny stays denied.
//   - accept-edits: OPENCODE_PERMISSION with "edit": "allow" (merged
//     into an OPENCODE_PERMISSION already in the environment); whatever
//     else the settings would ask about, opencode run refuses.
//   - default: nothing; opencode's settings decide, and opencode run
//     refuses whatever they would ask about.
//
// opencode has no turn cap on its command line (only "steps" in an
// agent's config, which forces a text answer instead of ending the run),
// so Request.MaxTurns is not passed on. It retries a 429 or a 5xx five
// times on its own (2 s to 30 s apart, or as the server's retry-after
// says), silently: nothing on stdout while it waits, so ralph sees no
// retry events, and a long wait can trip the no-output watchdog.
//
// Its JSON lines carry tokens and a cost per model call (step_finish). The
// cost is opencode's, from its model catalogue: a model it has no price
// for costs 0 there, which ralph does not take for free: the price table
// (PriceOf) estimates it, else the cost is unknown. The lines name no
// model: Result.Model is the request's.
func Opencode(bin string) Backend {
	return opencodeBackend{bin: bin, now: time.Now}
}

type opencodeBackend struct {
	contained
	promptFirst
	bin string
	now func() time.Time // resolves reset times
}

func (opencodeBackend) Name() string { return "opencode" }

func (b opencodeBackend) args(req Request) []string {
	args := []string{"run", "--format", "json"}
	args = append(args, opencodePermissionArgs.of(req.Permission)...)
	if req.Model != "" {
		args = append(args, "--model", req.Model)
	}
	if req.Resume != "" {
		args = append(args, "--session", req.Resume)
	}
	return append(args, req.Args...)
}

// env is the child's environment: req.Env (nil: ralph's) with PWD at the
// project root and the permission mode's OPENCODE_PERMISSION.
func (b opencodeBackend) env(req Request) []string {
	env := req.Env
	if env == nil {
		env = os.Environ()
	}
	var set []string
	if req.Dir != "" {
		dir, err := filepath.Abs(req.Dir)
		if err != nil {
			dir = req.Dir
		}
		set = append(set, "PWD="+dir)
	}
	if req.Permission.orDefault() == PermissionAcceptEdits {
		set = append(set, opencodePermissionVar+"="+allowEdits(envValue(env, opencodePermissionVar)))
	}
	return withEnv(env, set...)
}

// opencodePermissionVar holds permission rules, as JSON, that opencode
// merges over its config's.
const opencodePermissionVar = "OPENCODE_PERMISSION"

// allowEdits is the rules in current (JSON, may be "") with edits allowed;
// rules that are not a JSON object are replaced.
func allowEdits(current string) string {
	rules := map[string]any{}
	if json.Unmarshal([]byte(current), &rules) != nil || rules == nil {
		rules = map[string]any{}
	}
	rules["edit"] = "allow"
	b, _ := json.Marshal(rules)
	return string(b)
}

// Command is the command line Run starts for req; the prompt goes on stdin.
func (b opencodeBackend) Command(req Request) []string {
	return append([]string{b.bin}, b.args(req)...)
}

func (b opencodeBackend) Run(ctx context.Context, req Request, onEvent func(Event)) (Result, error) {
	s := newOpencodeStream(onEvent, req.Model)
	return runCLI(ctx, "opencode", proc.Cmd{Name: b.bin, Args: b.args(req), Env: b.env(req)}, req, s, b.now)
}

// opencodePermissionArgs are opencode run's flags: --auto for bypass, the
// other modes are in its environment (see opencodeBackend.env).
var opencodePermissionArgs = permissionArgs{bypass: []string{"--auto"}}

// opencodePermissionFlags says how opencode carries out mode p.
func opencodePermissionFlags(p Permission) string {
	switch p.orDefault() {
	case PermissionAcceptEdits:
		return opencodePermissionVar + `={"edit":"allow"}; opencode run refuses what else its settings would ask about`
	case PermissionDefault:
		return "none: opencode's settings decide, and opencode run refuses what they would ask about"
	}
	return "--auto: what opencode's settings would ask about is granted, what they deny stays denied"
}

// opencodeStream parses `opencode run --format json` lines: step_start,
// text, tool_use, step_finish (one per model call) and error, each with the
// session's id.
type opencodeStream struct {
	streamState        // settled: answered or failed, the run has its outcome
	model       string // the request's: the lines name none

	steps   int     // step_finish lines: model calls
	usage   Usage   // their tokens
	cost    float64 // their cost, as opencode reports it
	guessed float64 // their cost from the price table, when it knows the model
	// finalMsg and finalText are the last assistant message with text:
	// its id and its text parts.
	finalMsg  string
	finalText []string
	answered  bool           // a model call ended the turn (not for tool calls)
	err       *opencodeError // the session's error, if it failed
	lastTool  string         // the last tool error, for a run that stops after it
}

func newOpencodeStream(onEvent func(Event), model string) *opencodeStream {
	return &opencodeStream{streamState: newStreamState(onEvent), model: model}
}

// opencodeLine holds the fields ralph reads from any line. The error is
// kept raw: its shape varies with its name.
type opencodeLine struct {
	Type      string          `json:"type"`
	SessionID string          `json:"sessionID"`
	Part      *opencodePart   `json:"part"`
	Error     json.RawMessage `json:"error"`
}

type opencodePart struct {
	Type      string `json:"type"`
	MessageID string `json:"messageID"`
	// text
	Text string `json:"text"`
	// tool
	Tool  string `json:"tool"`
	State *struct {
		Status string          `json:"status"`
		Input  json.RawMessage `json:"input"`
		Output json.RawMessage `json:"output"` // a string, as of 1.18
		Error  json.RawMessage `json:"error"`
	} `json:"state"`
	// step-finish
	Reason string          `json:"reason"`
	Tokens *opencodeTokens `json:"tokens"`
	Cost   float64         `json:"cost"`
}

// opencodeTokens are one model call's tokens: input excludes the cache's,
// output excludes reasoning.
type opencodeTokens struct {
	Input     int64 `json:"input"`
	Output    int64 `json:"output"`
	Reasoning int64 `json:"reasoning"`
	Cache     struct {
		Read  int64 `json:"read"`
		Write int64 `json:"write"`
	} `json:"cache"`
}

func (t *opencodeTokens) usage() Usage {
	if t == nil {
		return Usage{}
	}
	return Usage{In: t.Input + t.Cache.Read + t.Cache.Write, Out: t.Output + t.Reasoning}
}

func (t *opencodeTokens) tokens() Tokens {
	if t == nil {
		return Tokens{}
	}
	return Tokens{Input: t.Input, CacheRead: t.Cache.Read, CacheWrite: t.Cache.Write, Output: t.Output + t.Reasoning}
}

// opencodeError is a session's error: APIError (with the HTTP status and
// headers), ProviderAuthError, UnknownError, ….
type opencodeError struct {
	Name string `json:"name"`
	Data struct {
		Message         string            `json:"message"`
		StatusCode      int               `json:"statusCode"`
		ResponseHeaders map[string]string `json:"responseHeaders"`
	} `json:"data"`
}

// The step_finish reason of a model call that asked for tools: the turn
// goes on. Any other reason (stop, length, …) ends it.
const opencodeToolCalls = "tool-calls"

func (s *opencodeStream) line(b []byte) {
	var l opencodeLine
	if !s.decode(b, &l) {
		return
	}
	if l.SessionID != "" && s.sessionID == "" {
		// opencode prints no start line: the first line names the session.
		s.sessionID = l.SessionID
		s.onEvent(Event{Kind: EventInit, SessionID: l.SessionID, Text: s.model})
	}
	switch l.Type {
	case "text":
		s.text(l.Part)
	case "tool_use":
		s.tool(l.Part)
	case "step_finish":
		s.stepFinish(l.Part)
	case "error":
		s.errorLine(l.Error)
	}
}

func (s *opencodeStream) text(p *opencodePart) {
	if p == nil {
		return
	}
	if p.MessageID != s.finalMsg {
		s.finalMsg, s.finalText = p.MessageID, nil
	}
	s.finalText = append(s.finalText, p.Text)
	s.sendText(p.Text)
}

// tool reports a finished tool call: opencode prints one line when the
// call has completed or failed, with its input and its output.
func (s *opencodeStream) tool(p *opencodePart) {
	if p == nil || p.State == nil {
		return
	}
	st := p.State
	s.sendToolUse(p.Tool, string(st.Input))
	out := rawString(st.Output)
	if st.Status == "error" {
		out = rawString(st.Error)
		s.lastTool = p.Tool + ": " + out
	}
	s.sendToolResult(p.Tool, out)
}

func (s *opencodeStream) stepFinish(p *opencodePart) {
	if p == nil {
		return
	}
	s.steps++
	u := p.Tokens.usage()
	s.usage.In += u.In
	s.usage.Out += u.Out
	s.cost += p.Cost
	cost := p.Cost
	if price, ok := PriceOf(opencodeModelName(s.model)); ok {
		guess := price.Cost(p.Tokens.tokens())
		s.guessed += guess
		if cost == 0 {
			cost = guess
		}
	}
	s.sendUsage(u, cost)
	if p.Reason != opencodeToolCalls && p.Reason != "" {
		s.answered = true
		s.got.Store(true)
		c, _ := s.runCost()
		s.onEvent(Event{Kind: EventResult, Text: s.final(), Usage: s.usage, CostUSD: c, SessionID: s.sessionID})
	}
}

func (s *opencodeStream) errorLine(raw json.RawMessage) {
	e := &opencodeError{}
	if json.Unmarshal(raw, e) != nil {
		// A shape this version does not know: still a failure.
		e = &opencodeError{Name: shorten(string(raw), 200)}
	}
	s.err = e
	s.got.Store(true)
	c, _ := s.runCost()
	s.onEvent(Event{Kind: EventResult, Usage: s.usage, CostUSD: c, SessionID: s.sessionID})
}

// final is the text of the last assistant message that had text.
func (s *opencodeStream) final() string { return strings.Join(s.finalText, "\n") }

// runCost is the run's cost so far, and whether it is known: opencode's
// figure when it priced the calls, else the price table's estimate.
func (s *opencodeStream) runCost() (float64, bool) {
	if s.cost > 0 {
		return s.cost, true
	}
	_, ok := PriceOf(opencodeModelName(s.model))
	return s.guessed, ok
}

// opencodeModelName is the model of "provider/model", for the price table.
func opencodeModelName(model string) string {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		return model[i+1:]
	}
	return model
}

// finish turns the parsed stream and the way the child ended into the
// Result. now dates a retry-after.
func (s *opencodeStream) finish(end childEnd, now time.Time) Result {
	r := s.result(end)
	r.Model, r.NumTurns = s.model, s.steps
	r.Usage, r.UsageKnown = s.usage, s.steps > 0 || s.err != nil
	r.CostUSD, r.CostKnown = s.runCost()
	switch {
	case end.stoppedFirst():
		// What it streamed until then is the record, so that a run stopped
		// for its budget counts toward it.
		markStopped(&r, end.stopped)
		r.UsageKnown = true
	case s.err != nil:
		s.failed(&r, now)
	case !s.answered:
		s.noAnswer(&r, end)
	default:
		r.Final = s.final()
	}
	return r
}

// failed fills in a run that ended with the session's error.
func (s *opencodeStream) failed(r *Result, now time.Time) {
	e := s.err
	r.IsError = true
	r.APIStatus = e.Data.StatusCode
	r.ErrorText = strings.TrimSpace(e.Name + ": " + e.Data.Message)
	switch {
	case r.APIStatus == 429 || r.APIStatus == 529 || usageLimitText(e.Data.Message):
		r.ErrorKind = KindRateLimit
		r.ResetAt = headerRetryAt(e.Data.ResponseHeaders, now)
		if r.ResetAt.IsZero() {
			r.ResetAt = parseResetAt(e.Data.Message, now)
		}
	case e.Name == "APIError" || e.Name == "ProviderAuthError" || r.APIStatus != 0:
		r.ErrorKind = KindAPIError
	default:
		// Not the model API's answer: opencode failed (an unknown model,
		// a broken config…); its log under ~/.local/share/opencode/log
		// says more.
		r.ErrorKind = KindCrashed
		if s.model != "" && !strings.Contains(s.model, "/") {
			r.ErrorText += fmt.Sprintf(` (opencode names models "provider/model", not %q)`, s.model)
		}
	}
	r.ErrorText = shorten(r.ErrorText, 500)
}

// noAnswer fills in a run that ended without a final answer or an error:
// opencode run also stops so after refusing a permission.
func (s *opencodeStream) noAnswer(r *Result, end childEnd) {
	r.IsError = true
	if end.exitCode != 0 {
		r.ErrorKind = KindCrashed
		r.ErrorText = "opencode ended without an answer (" + exitText(end.exitCode) + ")"
	} else {
		r.ErrorKind = KindBadOutput
		r.ErrorText = fmt.Sprintf("opencode exited 0 without a final answer (model calls: %d, unreadable lines: %d)", s.steps, s.skipped)
	}
	if s.lastTool != "" {
		r.ErrorText += "; last tool error: " + s.lastTool
	}
	if tail := lastLines(ansiEscape().ReplaceAllString(end.stderrTail, ""), 5, 500); tail != "" {
		r.ErrorText += " (stderr: " + tail + ")"
	}
	r.ErrorText = shorten(r.ErrorText, 1000)
}

// ansiEscape matches the colour codes opencode puts in its notices on
// stderr ("! permission requested: …; auto-rejecting").
var ansiEscape = lazyre.New(`\x1b\[[0-9;]*[A-Za-z]`)

// headerRetryAt is when the server said to come back (retry-after-ms, or
// retry-after in seconds or as a date); the zero time when it did not, or
// said now.
func headerRetryAt(h map[string]string, now time.Time) time.Time {
	if ms, err := strconv.ParseFloat(h["retry-after-ms"], 64); err == nil && ms > 0 {
		return now.Add(time.Duration(ms * float64(time.Millisecond)))
	}
	v := h["retry-after"]
	if sec, err := strconv.ParseFloat(v, 64); err == nil {
		if sec > 0 {
			return now.Add(time.Duration(sec * float64(time.Second)))
		}
		return time.Time{}
	}
	if t, ok := httpDate(v); ok && t.After(now) {
		return t
	}
	return time.Time{}
}

// httpDate reads an HTTP date in the three forms HTTP allows (RFC 9110
// section 5.6.7), as net/http's ParseTime does; net/http itself is not
// imported for this: its package init costs every ralph command start-up
// time (issue 14).
func httpDate(v string) (time.Time, bool) {
	for _, layout := range []string{"Mon, 02 Jan 2006 15:04:05 GMT", time.RFC850, time.ANSIC} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
