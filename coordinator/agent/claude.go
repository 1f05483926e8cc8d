package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc"
)

// Claude returns the backend for Claude Code at bin ("claude" finds it on
// PATH). It runs
//
//	claude -p --output-format stream-json --verbose --include-partial-messages PERMISSION [--model M] [--max-turns N] [--resume ID] [ARGS]
//
// with the prompt on stdin (no argv length limit). The partial messages
// carry each model call's real usage while it streams: the assistant lines
// repeat the usage of the call's start, whose output count is a
// placeholder (1). PERMISSION is
// Request.Permission in the CLI's words (--dangerously-skip-permissions
// for the default, bypass; see claudePermissionArgs). With the bypass it
// sets IS_SANDBOX=1 when ralph runs as root: the CLI refuses to skip
// permissions as root otherwise (and takes no other value: IS_SANDBOX=yes
// is refused too).
func Claude(bin string) Backend {
	return claudeBackend{bin: bin, root: os.Geteuid() == 0, now: time.Now}
}

type claudeBackend struct {
	contained
	promptFirst
	bin  string
	root bool
	now  func() time.Time // resolves "resets 3pm" to a date
}

func (claudeBackend) Name() string { return "claude" }

func (b claudeBackend) args(req Request) []string {
	args := []string{"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages"}
	args = append(args, claudePermissionArgs.of(req.Permission)...)
	if req.Model != "" {
		args = append(args, "--model", req.Model)
	}
	if req.MaxTurns > 0 {
		// Accepted though `claude --help` does not list it (AGENT-CLIS.md).
		args = append(args, "--max-turns", strconv.Itoa(req.MaxTurns))
	}
	if req.Resume != "" {
		args = append(args, "--resume", req.Resume)
	}
	return append(args, req.Args...)
}

func (b claudeBackend) env(req Request) []string {
	env := req.Env
	if !b.root || req.Permission.orDefault() != PermissionBypass {
		return env
	}
	if env == nil {
		env = os.Environ()
	}
	// The CLI accepts exactly "1": an inherited IS_SANDBOX=yes still makes
	// it refuse, so any other value is replaced.
	return withEnv(env, "IS_SANDBOX=1")
}

// Command is the command line Run starts for req.
func (b claudeBackend) Command(req Request) []string {
	return append([]string{b.bin}, b.args(req)...)
}

func (b claudeBackend) Run(ctx context.Context, req Request, onEvent func(Event)) (Result, error) {
	s := newClaudeStream(onEvent, req.Model)
	return runCLI(ctx, "claude", proc.Cmd{Name: b.bin, Args: b.args(req), Env: b.env(req)}, req, s, b.now)
}

// claudeStream parses `claude -p --output-format stream-json` lines.
type claudeStream struct {
	streamState                       // settled: a result line has been parsed
	calls       map[string]*callUsage // model calls by message id
	current     string                // the id of the call streaming now
	tools       map[string]string     // tool_use id → tool name
	resultLine  *streamLine           // the last result line
	// limitResetsAt is the reset time of the last rejected
	// rate_limit_event: a fallback when the result names no time.
	limitResetsAt int64
	// model is the session's model (the request's, then the init line's):
	// the price of a call whose message does not name its own.
	model string
	// streamed and estimate add up the calls reported so far: the
	// record of a run stopped before its result line.
	streamed Usage
	estimate float64
}

func newClaudeStream(onEvent func(Event), model string) *claudeStream {
	return &claudeStream{streamState: newStreamState(onEvent), calls: map[string]*callUsage{}, tools: map[string]string{}, model: model}
}

// streamLine holds the fields ralph reads from any stream-json line.
// Fields whose type varies between CLI versions are kept raw, so that one
// odd field does not make the whole line unreadable.
type streamLine struct {
	Type      string         `json:"type"`
	Subtype   string         `json:"subtype"`
	SessionID string         `json:"session_id"`
	Model     string         `json:"model"`
	Message   *streamMessage `json:"message"`

	// stream_event (--include-partial-messages): one event of the API's
	// stream, and the id of the message it belongs to.
	Event        *apiEvent `json:"event"`
	APIMessageID string    `json:"api_message_id"`

	// result
	IsError        bool            `json:"is_error"`
	TerminalReason string          `json:"terminal_reason"`
	Result         string          `json:"result"`
	Usage          *apiUsage       `json:"usage"`
	TotalCostUSD   float64         `json:"total_cost_usd"`
	NumTurns       int             `json:"num_turns"`
	APIErrorStatus json.RawMessage `json:"api_error_status"` // a number or null
	Errors         json.RawMessage `json:"errors"`

	// system/api_retry
	Attempt      int             `json:"attempt"`
	MaxRetries   int             `json:"max_retries"`
	RetryDelayMS float64         `json:"retry_delay_ms"`
	ErrorStatus  json.RawMessage `json:"error_status"`
	Error        json.RawMessage `json:"error"`

	// rate_limit_event
	RateLimitInfo *struct {
		Status   string `json:"status"`
		ResetsAt int64  `json:"resetsAt"`
	} `json:"rate_limit_info"`
}

type streamMessage struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"` // blocks; a string in some user lines
	Usage   *apiUsage       `json:"usage"`
}

// apiEvent is a Messages API stream event as the CLI passes it on.
type apiEvent struct {
	Type    string         `json:"type"`
	Message *streamMessage `json:"message"` // message_start
	Usage   *apiUsage      `json:"usage"`   // message_delta: the call's counts so far
	Delta   *struct {
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
	} `json:"delta"` // content_block_delta
}

type apiUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

func (u *apiUsage) usage() Usage {
	if u == nil {
		return Usage{}
	}
	return Usage{In: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens, Out: u.OutputTokens}
}

// merge keeps the larger of each count: the API's counts only grow
// during a call, and the CLI repeats older ones.
func (u *apiUsage) merge(v *apiUsage) {
	if v == nil {
		return
	}
	u.InputTokens = max(u.InputTokens, v.InputTokens)
	u.CacheCreationInputTokens = max(u.CacheCreationInputTokens, v.CacheCreationInputTokens)
	u.CacheReadInputTokens = max(u.CacheReadInputTokens, v.CacheReadInputTokens)
	u.OutputTokens = max(u.OutputTokens, v.OutputTokens)
}

func (u *apiUsage) tokens() Tokens {
	return Tokens{Input: u.InputTokens, CacheWrite: u.CacheCreationInputTokens, CacheRead: u.CacheReadInputTokens, Output: u.OutputTokens}
}

type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // tool_result: a string or text blocks
}

func (s *claudeStream) line(b []byte) {
	var l streamLine
	if !s.decode(b, &l) {
		return
	}
	if l.SessionID != "" && s.sessionID == "" {
		s.sessionID = l.SessionID
	}
	switch l.Type {
	case "system":
		switch l.Subtype {
		case "init":
			s.sessionID = l.SessionID
			if l.Model != "" {
				s.model = l.Model
			}
			s.onEvent(Event{Kind: EventInit, SessionID: l.SessionID, Text: l.Model})
		case "api_retry":
			s.onEvent(Event{Kind: EventRetry, SessionID: s.sessionID, Text: retryText(l), Attempt: l.Attempt,
				Delay: time.Duration(l.RetryDelayMS * float64(time.Millisecond)), APIStatus: rawInt(l.ErrorStatus)})
		}
	case "stream_event":
		s.streamEvent(l)
	case "assistant":
		s.assistant(l)
	case "user":
		s.user(l)
	case "rate_limit_event":
		if l.RateLimitInfo != nil && l.RateLimitInfo.Status == "rejected" && l.RateLimitInfo.ResetsAt > 0 {
			s.limitResetsAt = l.RateLimitInfo.ResetsAt
		}
	case "result":
		s.resultLine = &l
		s.got.Store(true)
		ev := Event{Kind: EventResult, SessionID: l.SessionID, Usage: l.Usage.usage(), CostUSD: l.TotalCostUSD}
		if !l.IsError {
			ev.Text = l.Result
		}
		s.onEvent(ev)
	}
}

func (s *claudeStream) assistant(l streamLine) {
	if l.Message == nil {
		return
	}
	var blocks []contentBlock
	if json.Unmarshal(l.Message.Content, &blocks) != nil {
		return
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			s.sendText(b.Text)
		case "tool_use":
			s.tools[b.ID] = b.Name
			s.sendToolUse(b.Name, string(b.Input))
		}
	}
	// The CLI prints one assistant line per content block, each repeating
	// the usage of the message's start: without partial messages, the
	// only figure there is.
	if l.Message.ID != "" && l.Message.Usage != nil {
		c := s.call(l.Message.ID, l.Message.Model)
		c.usage.merge(l.Message.Usage)
		s.report(c, 0)
	}
}

// streamEvent reads a call's usage as the API streams it: the input at
// message_start, the output so far at each message_delta, and in between
// an estimate from the size of the content, so that a long call can be
// stopped before it ends.
func (s *claudeStream) streamEvent(l streamLine) {
	ev := l.Event
	if ev == nil {
		return
	}
	id := l.APIMessageID
	if ev.Type == "message_start" && ev.Message != nil && ev.Message.ID != "" {
		id = ev.Message.ID
		s.current = id
	}
	if id == "" {
		id = s.current
	}
	if id == "" {
		return
	}
	switch ev.Type {
	case "message_start":
		if ev.Message == nil {
			return
		}
		c := s.call(id, ev.Message.Model)
		c.usage.merge(ev.Message.Usage)
		s.report(c, 0)
	case "content_block_delta":
		if ev.Delta == nil {
			return
		}
		c := s.call(id, "")
		c.contentBytes += int64(len(ev.Delta.Text) + len(ev.Delta.PartialJSON) + len(ev.Delta.Thinking))
		s.report(c, estimateStep)
	case "message_delta":
		c := s.call(id, "")
		c.usage.merge(ev.Usage)
		c.counted = ev.Usage != nil
		s.report(c, 0)
	}
}

// callUsage is what ralph knows of one model call (one message id).
type callUsage struct {
	model        string
	usage        apiUsage // the largest counts seen, count by count
	contentBytes int64    // the content streamed so far
	counted      bool     // a message_delta gave the real output count
	reported     Usage    // the usage reported so far
	cost         float64  // the cost reported so far
}

// Estimating output from content: about 4 bytes a token, reported in
// steps of estimateStep tokens so that a long answer is not one event per
// word. A real count, when it comes, replaces the estimate.
const (
	bytesPerToken = 4
	estimateStep  = 32
)

func (s *claudeStream) call(id, model string) *callUsage {
	c := s.calls[id]
	if c == nil {
		c = &callUsage{}
		s.calls[id] = c
	}
	if c.model == "" && model != "<synthetic>" {
		c.model = model
	}
	return c
}

// report sends what a call has spent since its last report, if that is
// at least minOut output tokens or any input. Reports only grow: an
// estimate above the real count stands until the result line's totals
// replace the sums. A model call's reports add up to its usage, and the
// calls' to the run's.
func (s *claudeStream) report(c *callUsage, minOut int64) {
	t := c.usage.tokens()
	if !c.counted {
		t.Output = max(t.Output, c.contentBytes/bytesPerToken)
	}
	u := c.usage.usage()
	u.In, u.Out = max(u.In, c.reported.In), max(t.Output, c.reported.Out)
	t.Output = u.Out
	d := Usage{In: u.In - c.reported.In, Out: u.Out - c.reported.Out}
	if d.In == 0 && (d.Out == 0 || d.Out < minOut) {
		return
	}
	cost := s.estimateCost(c.model, t)
	dc := cost - c.cost
	c.reported, c.cost = u, cost
	s.streamed.In += d.In
	s.streamed.Out += d.Out
	s.estimate += dc
	s.sendUsage(d, dc)
}

// estimateCost prices one call by its message's model (a subagent may use
// another than the session's), else the session's; 0 when neither is in
// the price table.
func (s *claudeStream) estimateCost(model string, t Tokens) float64 {
	if model == "" {
		model = s.model
	}
	p, ok := PriceOf(model)
	if !ok {
		return 0
	}
	return p.Cost(t)
}

func (s *claudeStream) user(l streamLine) {
	if l.Message == nil {
		return
	}
	var blocks []contentBlock
	if json.Unmarshal(l.Message.Content, &blocks) != nil {
		return // a plain string: an echoed prompt, not a tool result
	}
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		s.sendToolResult(s.tools[b.ToolUseID], toolResultText(b.Content))
	}
}

// toolResultText flattens a tool_result's content: a string, or blocks of
// which the text ones are kept.
func toolResultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []contentBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func retryText(l streamLine) string {
	var b strings.Builder
	fmt.Fprintf(&b, "retry %d", l.Attempt)
	if l.MaxRetries > 0 {
		fmt.Fprintf(&b, "/%d", l.MaxRetries)
	}
	if st := rawInt(l.ErrorStatus); st != 0 {
		fmt.Fprintf(&b, " after HTTP %d", st)
	}
	if e := rawString(l.Error); e != "" {
		fmt.Fprintf(&b, " (%s)", e)
	}
	if l.RetryDelayMS > 0 {
		fmt.Fprintf(&b, " in %s", (time.Duration(l.RetryDelayMS) * time.Millisecond).Round(time.Millisecond))
	}
	return b.String()
}

func rawInt(raw json.RawMessage) int {
	var n int
	if json.Unmarshal(raw, &n) != nil {
		return 0
	}
	return n
}

func rawString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// rawStrings reads a list of strings, or renders whatever else is there.
func rawStrings(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return strings.Join(list, "; ")
	}
	return string(raw)
}

// finish turns the parsed stream and the way the child ended into the
// Result. now resolves reset times stated without a date.
func (s *claudeStream) finish(end childEnd, now time.Time) Result {
	r := s.result(end)
	r.Model = s.model
	if end.stoppedFirst() {
		markStopped(&r, end.stopped)
		// What it spent until the stop is the record: a run stopped for
		// its budget must count toward it.
		r.Usage, r.CostUSD = s.streamed, s.estimate
		_, r.CostKnown = PriceOf(s.model)
		r.UsageKnown = true
		if s.resultLine != nil {
			r.Usage, r.CostUSD = s.resultLine.Usage.usage(), s.resultLine.TotalCostUSD
			r.CostKnown = true
		}
		return r
	}
	if s.resultLine == nil {
		noResult(&r, end, "claude")
		return r
	}
	l := s.resultLine
	if l.SessionID != "" {
		r.SessionID = l.SessionID
	}
	r.Usage, r.CostUSD, r.NumTurns = l.Usage.usage(), l.TotalCostUSD, l.NumTurns
	r.UsageKnown, r.CostKnown = true, true
	r.APIStatus = rawInt(l.APIErrorStatus)
	r.ErrorKind, r.ResetAt = classify(l, r.APIStatus, now)
	if r.ErrorKind == "" {
		r.Final = l.Result
		return r
	}
	r.IsError = true
	if r.ResetAt.IsZero() && r.ErrorKind == KindRateLimit && s.limitResetsAt > 0 {
		r.ResetAt = time.Unix(s.limitResetsAt, 0)
	}
	r.ErrorText = strings.TrimSpace(l.Result)
	if e := rawStrings(l.Errors); e != "" {
		if r.ErrorText != "" {
			r.ErrorText += "; "
		}
		r.ErrorText += e
	}
	if r.ErrorText == "" {
		r.ErrorText = strings.Trim(l.Subtype+" "+l.TerminalReason, " ")
	}
	r.ErrorText = shorten(r.ErrorText, 500)
	return r
}

// classify reads the result line's outcome. is_error decides, not subtype:
// after a 429 with retries off the result says subtype "success" with
// is_error true (AGENT-CLIS.md). Only the result's own fields and text are
// read, never tool output (frankbria/ralph-claude-code#183).
func classify(l *streamLine, status int, now time.Time) (kind ErrorKind, resetAt time.Time) {
	switch {
	case l.Subtype == "error_max_turns" || l.TerminalReason == "max_turns":
		return KindMaxTurns, time.Time{}
	case status == 429 || status == 529:
		return KindRateLimit, parseResetAt(l.Result, now)
	case l.IsError && usageLimitText(l.Result):
		return KindRateLimit, parseResetAt(l.Result, now)
	case !l.IsError && usageLimitMessage(l.Result):
		// Some CLI versions report a usage limit as the whole, successful
		// result text; the strict match keeps an agent's prose out.
		return KindRateLimit, parseResetAt(l.Result, now)
	case !l.IsError:
		return "", time.Time{}
	case status != 0 || l.TerminalReason == "api_error":
		return KindAPIError, time.Time{}
	default:
		return KindCrashed, time.Time{}
	}
}
