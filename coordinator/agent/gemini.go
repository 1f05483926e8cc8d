package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/coordinator/internal/lazyre"
	"github.com/ralph-dev/ralph/coordinator/proc"
)

// Gemini returns the backend for Gemini CLI at bin ("gemini" finds it on
// PATH). It runs
//
//	gemini --output-format stream-json --skip-trust --approval-mode MODE [-m M] [--resume ID] [ARGS]
//
// with the prompt on stdin, which the CLI reads whole when stdin is not a
// terminal (then it runs headless without -p; -p would only be appended to
// it). --skip-trust trusts the project for the run: ralph runs in the
// project it was asked to work on. MODE is Request.Permission in the CLI's
// words (see geminiPermissionArgs):
//
//   - bypass: yolo, every tool without asking;
//   - accept-edits: auto_edit, file edits without asking; headless, the
//     CLI then does not offer its shell tool at all;
//   - default: default, the CLI's own policies; headless, whatever needs
//     approval (file writes, the shell) is not offered.
//
// The CLI takes a turn cap only from its settings files
// (model.maxSessionTurns, no flag), and its system settings only from
// root-owned directories: ralph does not write a person's settings, so it
// keeps Request.MaxTurns itself. Once the CLI has made MaxTurns model
// calls and holds the results of the last one's tool calls (the moment it
// would refuse the next call), Run stops it and reports ErrorKind
// "max_turns".
//
// The stream carries no per-call usage, only the run's totals in its
// result line; the CLI's own record of the session
// (~/.gemini/tmp/PROJECT/chats/session-…-ID.jsonl) has each model call's
// tokens as soon as the call ends, so Run reads it as the run goes (each
// tool call, the result) for EventUsage, and once more after a stop: a run
// stopped for its budget still reports what it used. Retries are not in
// the stream either (the CLI logs them on stderr): there is no EventRetry.
// No cost is reported; CostKnown only when PriceOf knows the model.
func Gemini(bin string) Backend {
	return geminiBackend{bin: bin, now: time.Now}
}

type geminiBackend struct {
	contained
	promptFirst
	bin string
	now func() time.Time
}

func (geminiBackend) Name() string { return "gemini" }

func (b geminiBackend) args(req Request) []string {
	args := []string{"--output-format", "stream-json", "--skip-trust"}
	args = append(args, geminiPermissionArgs.of(req.Permission)...)
	if req.Model != "" {
		// Without -m the CLI's router makes a side call to pick one.
		args = append(args, "-m", req.Model)
	}
	if req.Resume != "" {
		args = append(args, "--resume", req.Resume)
	}
	return append(args, req.Args...)
}

// Command is the command line Run starts for req; the prompt goes on
// stdin.
func (b geminiBackend) Command(req Request) []string {
	return append([]string{b.bin}, b.args(req)...)
}

func (b geminiBackend) Run(ctx context.Context, req Request, onEvent func(Event)) (Result, error) {
	// capCtx lets the stream stop the child at the turn cap.
	capCtx, stopAtCap := context.WithCancel(ctx)
	defer stopAtCap()
	s := newGeminiStream(onEvent, req.Model)
	s.chats = newGeminiChats(req.Env, b.now())
	s.maxTurns, s.stopAtCap, s.callerErr = req.MaxTurns, stopAtCap, ctx.Err
	return runCLI(capCtx, "gemini", proc.Cmd{Name: b.bin, Args: b.args(req), Env: req.Env}, req, s, b.now)
}

// geminiPermissionArgs are Gemini CLI's flags.
var geminiPermissionArgs = permissionArgs{
	bypass:      []string{"--approval-mode", "yolo"},
	acceptEdits: []string{"--approval-mode", "auto_edit"},
	byDefault:   []string{"--approval-mode", "default"},
}

// geminiPermissionFlags says how Gemini CLI carries out mode p.
func geminiPermissionFlags(p Permission) string {
	s := strings.Join(geminiPermissionArgs.of(p), " ")
	switch p.orDefault() {
	case PermissionAcceptEdits:
		s += " (headless, the shell tool is not offered)"
	case PermissionDefault:
		s += " (headless, tools that need approval are not offered)"
	}
	return s
}

// geminiMaxTurnsFlag says how a turn cap of n reaches Gemini CLI: it
// does not; ralph stops the run (see Gemini).
func geminiMaxTurnsFlag(n int) string {
	return "not passed on (the CLI reads a cap from its settings files only): ralph stops the run after " + strconv.Itoa(n) + " model calls"
}

// geminiStream parses `gemini --output-format stream-json` lines.
type geminiStream struct {
	streamState                   // settled: a result line has been parsed
	model       string            // the request's, then the init line's
	tools       map[string]string // tool_id → tool name
	// final is the last assistant message: the text deltas since the
	// last tool call. A tool call starts a new message. open says it has
	// not been sent as an EventText yet: a message goes out whole (when a
	// tool call or the result follows), not delta by delta.
	final      strings.Builder
	open       bool
	afterUse   bool // a tool was called since the last text delta
	resultLine *geminiLine
	lastErr    string       // the last error line's message
	chats      *geminiChats // the CLI's session record, for usage; may be nil
	// The turn cap: maxTurns model calls (0: none). pending counts the
	// tool calls of the current model call still without a result;
	// toolTurns the calls whose tool results are all in, after each of
	// which the CLI calls the model again.
	maxTurns  int
	pending   int
	toolTurns int
	stopAtCap func()
	capped    bool // the cap was reached and stopAtCap called
	// callerErr is the error of Run's own context (nil: never done): a
	// stop after the cap that the caller did not ask for is the cap's.
	callerErr func() error
}

func newGeminiStream(onEvent func(Event), model string) *geminiStream {
	return &geminiStream{streamState: newStreamState(onEvent), model: model, tools: map[string]string{}}
}

// geminiLine holds the fields ralph reads from any stream-json line.
type geminiLine struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id"` // init
	Model     string `json:"model"`      // init

	// message
	Role    string `json:"role"`
	Content string `json:"content"`

	// tool_use, tool_result
	ToolName   string          `json:"tool_name"`
	ToolID     string          `json:"tool_id"`
	Parameters json.RawMessage `json:"parameters"`
	Output     string          `json:"output"`

	// tool_result, error, result
	Status   string       `json:"status"`
	Severity string       `json:"severity"`
	Message  string       `json:"message"`
	Error    *geminiError `json:"error"`
	Stats    *geminiStats `json:"stats"`
}

type geminiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// geminiStats are a result line's totals, per model and over all.
type geminiStats struct {
	geminiTokens
	Models map[string]geminiTokens `json:"models"`
}

// geminiTokens counts a run's tokens: Input is the prompts' (the cached
// part included), Output the answers' without the model's thinking, which
// only Total holds.
type geminiTokens struct {
	Total  int64 `json:"total_tokens"`
	Input  int64 `json:"input_tokens"`
	Output int64 `json:"output_tokens"`
	Cached int64 `json:"cached"`
}

// usage counts thinking as output (it is billed so): everything in the
// total that is not input.
func (t geminiTokens) usage() Usage {
	return Usage{In: t.Input, Out: max(t.Output, t.Total-t.Input)}
}

func (t geminiTokens) tokens() Tokens {
	u := t.usage()
	return Tokens{Input: t.Input - t.Cached, CacheRead: t.Cached, Output: u.Out}
}

func (s *geminiStream) line(b []byte) {
	var l geminiLine
	if !s.decode(b, &l) {
		return
	}
	switch l.Type {
	case "init":
		s.sessionID = l.SessionID
		if l.Model != "" {
			s.model = l.Model
		}
		s.chats.found(l.SessionID)
		s.onEvent(Event{Kind: EventInit, SessionID: l.SessionID, Text: l.Model})
	case "message":
		// The user's message is the prompt echoed: it holds the
		// completion marker, and is never the agent's.
		if l.Role == "assistant" {
			s.text(l.Content)
		}
	case "tool_use":
		s.flushText()
		s.tools[l.ToolID] = l.ToolName
		s.afterUse = true
		s.pending++
		s.sendToolUse(l.ToolName, string(l.Parameters))
		s.readUsage()
	case "tool_result":
		text := l.Output
		if l.Error != nil && text == "" {
			text = l.Error.Message
		}
		s.sendToolResult(s.tools[l.ToolID], text)
		s.readUsage()
		s.toolDone()
	case "error":
		if l.Severity == "error" {
			s.lastErr = l.Message
		}
	case "result":
		s.flushText()
		s.readUsage()
		s.resultLine = &l
		s.got.Store(true)
		ev := Event{Kind: EventResult, SessionID: s.sessionID}
		if l.Stats != nil {
			ev.Usage = l.Stats.usage()
			ev.CostUSD, _ = s.cost(l.Stats)
		}
		if l.Status == "success" {
			ev.Text = s.final.String()
		}
		s.onEvent(ev)
	}
}

// text adds an assistant text delta to the message being written, or
// starts the next message after a tool call.
func (s *geminiStream) text(delta string) {
	if s.afterUse {
		s.final.Reset()
		s.afterUse = false
	}
	s.final.WriteString(delta)
	s.open = true
}

// flushText sends the message written since the last flush, whole.
func (s *geminiStream) flushText() {
	if s.open {
		s.open = false
		s.sendText(s.final.String())
	}
}

// toolDone counts a tool's result; with the last of a model call's, the
// CLI calls the model again, unless that would pass the turn cap.
func (s *geminiStream) toolDone() {
	if s.pending == 0 {
		return
	}
	s.pending--
	if s.pending > 0 {
		return
	}
	s.toolTurns++
	if s.maxTurns > 0 && s.toolTurns >= s.maxTurns && !s.capped && s.stopAtCap != nil {
		s.capped = true
		s.stopAtCap()
	}
}

// readUsage reports the model calls the session record holds that were
// not reported yet.
func (s *geminiStream) readUsage() {
	for _, c := range s.chats.read() {
		s.sendUsage(c.usage, c.cost)
	}
}

// cost prices a result's tokens, model by model, from the price table; ok
// is false when a model is not in it.
func (s *geminiStream) cost(st *geminiStats) (usd float64, ok bool) {
	if len(st.Models) == 0 {
		p, ok := PriceOf(s.model)
		return p.Cost(st.tokens()), ok
	}
	ok = true
	for m, t := range st.Models {
		p, known := PriceOf(m)
		ok = ok && known
		usd += p.Cost(t.tokens())
	}
	return usd, ok
}

// reportedModel is the model that did most of the run's work, by the
// result's per-model totals (a fallback model may have done part), else
// the init line's.
func (s *geminiStream) reportedModel() string {
	model, most := s.model, int64(-1)
	if s.resultLine == nil || s.resultLine.Stats == nil {
		return model
	}
	for m, t := range s.resultLine.Stats.Models {
		if t.Total > most || (t.Total == most && m < model) {
			model, most = m, t.Total
		}
	}
	return model
}

// finish turns the parsed stream and the way the child ended into the
// Result.
func (s *geminiStream) finish(end childEnd, now time.Time) Result {
	if s.capped && end.stopped == KindInterrupted && s.callerErr != nil && s.callerErr() == nil {
		end.stopped = KindMaxTurns
	}
	r := s.result(end)
	// The child is gone: what it wrote last is its message, and the
	// session record holds every call it finished.
	s.flushText()
	s.readUsage()
	r.Model = s.reportedModel()
	if s.chats.known() {
		r.NumTurns = s.chats.calls()
	}
	switch {
	case end.stoppedFirst():
		s.stopped(&r, end.stopped)
	case s.resultLine == nil:
		noResult(&r, end, "gemini")
	default:
		s.answered(&r, end.exitCode, now)
	}
	return r
}

// stopped is the outcome of a run ralph stopped for kind. What it spent
// until then is the record: a run stopped for its budget must count
// toward it.
func (s *geminiStream) stopped(r *Result, kind ErrorKind) {
	markStopped(r, kind)
	if kind == KindMaxTurns {
		r.ErrorText = fmt.Sprintf("stopped: the turn limit (%d) was reached", s.maxTurns)
	}
	if s.chats.known() {
		r.Usage, r.CostUSD, r.CostKnown = s.chats.total()
		r.UsageKnown = true
		if r.NumTurns == 0 {
			// No call finished: the cost is known to be 0 if the
			// model has a price at all.
			_, r.CostKnown = PriceOf(s.model)
		}
	}
}

// answered is the outcome the result line gives.
func (s *geminiStream) answered(r *Result, exitCode int, now time.Time) {
	l := s.resultLine
	if l.Stats != nil {
		r.Usage, r.UsageKnown = l.Stats.usage(), true
		r.CostUSD, r.CostKnown = s.cost(l.Stats)
	}
	if l.Status == "success" {
		r.Final = s.final.String()
		return
	}
	r.IsError = true
	r.ErrorKind, r.APIStatus, r.ResetAt = geminiClassify(l, s.lastErr, exitCode, now)
	switch {
	case l.Error != nil && l.Error.Message != "":
		r.ErrorText = l.Error.Message
	case s.lastErr != "":
		r.ErrorText = s.lastErr
	default:
		r.ErrorText = "gemini reported an error (" + exitText(exitCode) + ")"
	}
	r.ErrorText = shorten(strings.TrimSpace(r.ErrorText), 500)
}

const (
	// geminiTurnLimited is the error type of a result line at the CLI's
	// own turn cap (model.maxSessionTurns in its settings).
	geminiTurnLimited = "FatalTurnLimitedError"
	// geminiAPIPrefix starts the message of a result line after a failed
	// model call.
	geminiAPIPrefix = "[API Error: "
)

var (
	// geminiCodeJSON is the HTTP status in an API error body quoted in a
	// message: {"error":{"code":500,…}}.
	geminiCodeJSON = lazyre.New(`"code"\s*:\s*(\d{3})\b`)
	// geminiStatusWord is the API's status word in a message.
	geminiStatusWord = lazyre.New(`\b(RESOURCE_EXHAUSTED|UNAVAILABLE|INTERNAL|INVALID_ARGUMENT|UNAUTHENTICATED|PERMISSION_DENIED|NOT_FOUND|DEADLINE_EXCEEDED)\b`)
	// geminiRetryIn is how the CLI quotes the API's retry delay: "Please
	// retry in 30.5s", "Suggested retry after 30s".
	geminiRetryIn = lazyre.New(`(?i)retry (?:in|after) (\d+(?:\.\d+)?)s\b`)
)

var geminiStatusCodes = map[string]int{
	"RESOURCE_EXHAUSTED": 429, "UNAVAILABLE": 503, "INTERNAL": 500, "INVALID_ARGUMENT": 400,
	"UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "NOT_FOUND": 404, "DEADLINE_EXCEEDED": 504,
}

// geminiClassify reads a failed result: its error's type and message (or
// the last error line's), and the exit code. The CLI exits with an API
// error's HTTP status (429 shows as 429 mod 256 = 173), and its message
// quotes the API's error, or for a quota error says so in words. Only the
// result's own fields are read, never tool output
// (frankbria/ralph-claude-code#183).
func geminiClassify(l *geminiLine, lastErr string, exitCode int, now time.Time) (ErrorKind, int, time.Time) {
	var typ, msg string
	if l.Error != nil {
		typ, msg = l.Error.Type, l.Error.Message
	}
	if msg == "" {
		msg = lastErr
	}
	if typ == geminiTurnLimited {
		return KindMaxTurns, 0, time.Time{}
	}
	status := geminiErrorStatus(msg, exitCode)
	api, lower := strings.HasPrefix(msg, geminiAPIPrefix), strings.ToLower(msg)
	quota := status == 429 || status == 529 ||
		(status == 503 && strings.Contains(lower, "overloaded")) ||
		(api && (usageLimitText(msg) || strings.Contains(lower, "exhausted")))
	switch {
	case quota:
		return KindRateLimit, status, geminiResetAt(msg, now)
	case api || l.Error == nil:
		// A result that is only "status":"error" follows an invalid
		// answer of the model (empty, or a broken tool call).
		return KindAPIError, status, time.Time{}
	}
	return KindCrashed, 0, time.Time{}
}

// geminiErrorStatus is the HTTP status of an API error: quoted in the
// message (a code, or a status word), else the exit code, which is the
// status mod 256 for 400 to 511.
func geminiErrorStatus(msg string, exitCode int) int {
	if !strings.HasPrefix(msg, geminiAPIPrefix) {
		return 0
	}
	if m := geminiCodeJSON().FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	if m := geminiStatusWord().FindStringSubmatch(msg); m != nil {
		return geminiStatusCodes[m[1]]
	}
	if exitCode >= 400-256 && exitCode <= 511-256 {
		return exitCode + 256
	}
	return 0
}

// geminiResetAt is when a rate limit ends: the retry delay the CLI quotes,
// or a time in the message.
func geminiResetAt(msg string, now time.Time) time.Time {
	if m := geminiRetryIn().FindStringSubmatch(msg); m != nil {
		if sec, err := strconv.ParseFloat(m[1], 64); err == nil {
			return now.Add(time.Duration(sec * float64(time.Second)))
		}
	}
	return parseResetAt(msg, now)
}

// geminiChats follows Gemini CLI's record of the session, a JSON-lines
// file it appends to as each model call ends:
// HOME/.gemini/tmp/PROJECT/chats/session-DATE-ID8.jsonl, where ID8 starts
// the session id, PROJECT is a short name of the project directory and
// HOME is GEMINI_CLI_HOME, else HOME. Each call is a line of type
// "gemini" with its tokens (the same call may be written twice, once
// more with its tool calls); a resumed session's earlier calls are older
// than the run. A nil *geminiChats knows nothing.
type geminiChats struct {
	home    string    // the CLI's home directory
	since   time.Time // the run's start: earlier calls are another run's
	session string    // the session id, from the init line
	path    string    // the session file, once found
	offset  int64     // how far it has been read, to a line's end
	seen    map[string]geminiCall
	order   []string // call ids in the order first seen
	readErr bool     // the file could not be read
}

// geminiCall is one model call's usage, as reported.
type geminiCall struct {
	usage Usage
	cost  float64
	known bool // PriceOf knew its model
}

// newGeminiChats follows the session of a child with environment env (nil:
// ralph's), started at since.
func newGeminiChats(env []string, since time.Time) *geminiChats {
	if env == nil {
		env = os.Environ()
	}
	home := envValue(env, "GEMINI_CLI_HOME")
	if home == "" {
		home = envValue(env, "HOME")
	}
	if home == "" {
		return nil
	}
	// The record's times are in milliseconds.
	return &geminiChats{home: home, since: since.Truncate(time.Millisecond), seen: map[string]geminiCall{}}
}

// found is called with the session id from the init line.
func (c *geminiChats) found(sessionID string) {
	if c != nil {
		c.session = sessionID
		c.locate()
	}
}

// locate looks for the session file, until it is there.
func (c *geminiChats) locate() {
	id := c.session
	if c.path != "" || len(id) < 8 || strings.ContainsAny(id, `/\*?[`) {
		return
	}
	pattern := filepath.Join(c.home, ".gemini", "tmp", "*", "chats", "session-*-"+id[:8]+".jsonl")
	matches, _ := filepath.Glob(pattern)
	for _, m := range matches {
		if geminiChatsOf(m) == id {
			c.path = m
			return
		}
	}
}

// geminiChatsOf is the session id a session file starts with.
func geminiChatsOf(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var head struct {
		SessionID string `json:"sessionId"`
	}
	line, _, _ := bytes.Cut(geminiReadHead(f, 64<<10), []byte("\n"))
	if json.Unmarshal(line, &head) != nil {
		return ""
	}
	return head.SessionID
}

func geminiReadHead(r io.Reader, n int64) []byte {
	b, _ := io.ReadAll(io.LimitReader(r, n))
	return b
}

// known says whether the record was found and read: then its sums are
// the run's usage.
func (c *geminiChats) known() bool { return c != nil && c.path != "" && !c.readErr }

// calls is how many model calls the run made, as recorded.
func (c *geminiChats) calls() int { return len(c.order) }

// total sums the calls recorded: usage, estimated cost, and whether there
// were calls and every one's model has a price.
func (c *geminiChats) total() (u Usage, usd float64, known bool) {
	known = len(c.order) > 0
	for _, id := range c.order {
		call := c.seen[id]
		u.In += call.usage.In
		u.Out += call.usage.Out
		usd += call.cost
		known = known && call.known
	}
	return u, usd, known
}

// read returns the usage of the calls recorded since the last read (for a
// call written again with more, what it added).
func (c *geminiChats) read() []geminiCall {
	if c == nil || c.readErr {
		return nil
	}
	if c.locate(); c.path == "" {
		return nil
	}
	f, err := os.Open(c.path)
	if err != nil {
		c.readErr = true
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(c.offset, io.SeekStart); err != nil {
		c.readErr = true
		return nil
	}
	data, err := io.ReadAll(f)
	if err != nil {
		c.readErr = true
		return nil
	}
	// A line still being written waits for the next read.
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return nil
	}
	c.offset += int64(end + 1)
	var out []geminiCall
	for _, line := range bytes.Split(data[:end], []byte("\n")) {
		if d, ok := c.record(line); ok {
			out = append(out, d)
		}
	}
	return out
}

// geminiRecord is the part of a session file line ralph reads.
type geminiRecord struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Model     string    `json:"model"`
	Tokens    *struct {
		Input    int64 `json:"input"`
		Output   int64 `json:"output"`
		Cached   int64 `json:"cached"`
		Thoughts int64 `json:"thoughts"`
		Tool     int64 `json:"tool"`
	} `json:"tokens"`
}

// record takes one line of the session file: a model call of this run
// gives what it adds to that call's usage so far.
func (c *geminiChats) record(line []byte) (geminiCall, bool) {
	// Only a call's own line is read; the others (a header, a "$set" of
	// the whole history when a session is resumed) are skipped cheaply.
	if !bytes.Contains(line, []byte(`"type":"gemini"`)) {
		return geminiCall{}, false
	}
	var r geminiRecord
	if json.Unmarshal(line, &r) != nil || r.Type != "gemini" || r.Tokens == nil || r.ID == "" || r.Timestamp.Before(c.since) {
		return geminiCall{}, false
	}
	t := Tokens{Input: r.Tokens.Input - r.Tokens.Cached + r.Tokens.Tool, CacheRead: r.Tokens.Cached, Output: r.Tokens.Output + r.Tokens.Thoughts}
	u := Usage{In: r.Tokens.Input + r.Tokens.Tool, Out: t.Output}
	p, known := PriceOf(r.Model)
	prev, ok := c.seen[r.ID]
	if !ok {
		c.order = append(c.order, r.ID)
	}
	call := geminiCall{usage: Usage{In: max(u.In, prev.usage.In), Out: max(u.Out, prev.usage.Out)}, cost: max(p.Cost(t), prev.cost), known: known}
	c.seen[r.ID] = call
	d := geminiCall{usage: Usage{In: call.usage.In - prev.usage.In, Out: call.usage.Out - prev.usage.Out}, cost: call.cost - prev.cost, known: known}
	if ok && d.usage == (Usage{}) {
		return geminiCall{}, false
	}
	return d, true
}
