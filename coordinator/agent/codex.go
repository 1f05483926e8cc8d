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

// Codex returns the backend for the Codex CLI (@openai/codex) at bin
// ("codex" finds it on PATH). It runs
//
//	codex exec --json --skip-git-repo-check PERMISSION [--model M] [ARGS] [resume ID] -
//
// with the prompt on stdin ("-"; an open, silent stdin would make it block,
// a closed one is read to its end). --skip-git-repo-check lets it work in a
// project that is not a git repository. PERMISSION is Request.Permission in
// the CLI's words (codexPermissionArgs); codex exec never asks for an
// approval, so whatever the mode does not allow fails and the model is told:
//
//   - bypass: --dangerously-bypass-approvals-and-sandbox, no sandbox at all;
//   - accept-edits: --sandbox workspace-write. Codex cannot let the agent
//     edit files without also letting its shell write: the nearest safe
//     mode is its sandbox, where apply_patch and shell commands may write
//     inside the project only, and commands have no network;
//   - default: no flag, so codex's own config decides (sandbox_mode,
//     read-only when unset).
//
// Codex has no turn cap: Request.MaxTurns is not passed on. Resume continues
// the thread (Result.SessionID, codex's thread id) with `exec resume`; the
// options before `resume` apply to it as well.
//
// What it reports: the thread id, each tool call, the agent's messages and,
// once the turn ends, the thread's token totals; never a cost, so CostKnown
// is false unless the price table knows the model. Its JSON output names no
// model and gives usage only per turn, so ralph also follows the session
// file codex writes under CODEX_HOME/sessions (codexSession): there it finds
// the model and each model call's tokens as they are spent, which makes
// EventUsage come call by call and lets a budget stop a long turn.
func Codex(bin string) Backend {
	return codexBackend{bin: bin, now: time.Now}
}

type codexBackend struct {
	contained
	promptFirst
	bin string
	now func() time.Time // resolves "try again at 3:20 PM" to a date
}

func (codexBackend) Name() string { return "codex" }

func (b codexBackend) args(req Request) []string {
	args := []string{"exec", "--json", "--skip-git-repo-check"}
	args = append(args, codexPermissionArgs.of(req.Permission)...)
	if req.Model != "" {
		args = append(args, "--model", req.Model)
	}
	args = append(args, req.Args...)
	if req.Resume != "" {
		args = append(args, "resume", req.Resume)
	}
	return append(args, "-") // the prompt: stdin
}

// Command is the command line Run starts for req.
func (b codexBackend) Command(req Request) []string {
	return append([]string{b.bin}, b.args(req)...)
}

func (b codexBackend) Run(ctx context.Context, req Request, onEvent func(Event)) (Result, error) {
	s := newCodexStream(onEvent, req)
	defer s.session.close()
	return runCLI(ctx, "codex", proc.Cmd{Name: b.bin, Args: b.args(req), Env: req.Env}, req, s, b.now)
}

// codexPermissionArgs are the Codex CLI's flags: none for default.
var codexPermissionArgs = permissionArgs{
	bypass:      []string{"--dangerously-bypass-approvals-and-sandbox"},
	acceptEdits: []string{"--sandbox", "workspace-write"},
}

// codexPermissionFlags says how the Codex CLI carries out mode p.
func codexPermissionFlags(p Permission) string {
	switch p.orDefault() {
	case PermissionAcceptEdits:
		return "--sandbox workspace-write (codex cannot allow edits alone: its shell may write inside the project too, without network)"
	case PermissionDefault:
		return "no flag: codex's own sandbox_mode decides (read-only when unset); codex exec never asks"
	}
	return strings.Join(codexPermissionArgs.of(p), " ")
}

// codexStream parses `codex exec --json` lines, and the session file
// beside them.
type codexStream struct {
	streamState        // settled: the turn ended, either way
	model       string // the request's, then the session file's
	modelRead   bool   // model is the session file's
	initSent    bool
	tools       map[string]string // item id → tool, for items started
	final       string            // the last agent message
	lastError   string            // the last error line that was not a retry
	completed   *codexUsage       // turn.completed's thread totals
	failed      *string           // turn.failed's message

	session codexSession
	// base is the thread's totals before this run (zero for a new
	// thread; a resumed one carries its earlier runs' in its totals);
	// seen is the totals reported so far. Their difference is what this
	// run spent.
	base, seen codexUsage
	baseKnown  bool
	estimate   float64 // the cost of the usage reported, when priced
}

// codexUsage is a thread's token totals as codex counts them: input
// includes the cached input.
type codexUsage struct {
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
}

func (u codexUsage) usage() Usage { return Usage{In: u.InputTokens, Out: u.OutputTokens} }

// minus is u−v, count by count, never below zero.
func (u codexUsage) minus(v codexUsage) codexUsage {
	return codexUsage{
		InputTokens:       max(u.InputTokens-v.InputTokens, 0),
		CachedInputTokens: max(u.CachedInputTokens-v.CachedInputTokens, 0),
		OutputTokens:      max(u.OutputTokens-v.OutputTokens, 0),
	}
}

func (u codexUsage) tokens() Tokens {
	return Tokens{Input: max(u.InputTokens-u.CachedInputTokens, 0), CacheRead: u.CachedInputTokens, Output: u.OutputTokens}
}

func newCodexStream(onEvent func(Event), req Request) *codexStream {
	s := &codexStream{streamState: newStreamState(onEvent), model: req.Model, tools: map[string]string{}, baseKnown: req.Resume == ""}
	s.session.home = codexHome(req.Env, req.Dir)
	if req.Resume != "" && s.session.find(req.Resume) {
		// What the file holds now is the thread's past: its last totals
		// are this run's starting point.
		s.session.read(func(l codexSessionLine) {
			if l.total != nil {
				s.base = *l.total
			}
		})
		s.baseKnown = true
	}
	s.seen = s.base
	return s
}

// codexLine holds the fields ralph reads from any `codex exec --json` line.
type codexLine struct {
	Type     string      `json:"type"`
	ThreadID string      `json:"thread_id"`
	Item     *codexItem  `json:"item"`
	Usage    *codexUsage `json:"usage"`
	Message  string      `json:"message"` // error
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"` // turn.failed
}

// codexItem is a thread item: a message, a command, a file change, a tool
// call…
type codexItem struct {
	ID               string `json:"id"`
	Type             string `json:"type"`
	Text             string `json:"text"`    // agent_message
	Command          string `json:"command"` // command_execution
	AggregatedOutput string `json:"aggregated_output"`
	ExitCode         *int   `json:"exit_code"`
	Status           string `json:"status"`
	Changes          []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"` // file_change
	Server    string          `json:"server"` // mcp_tool_call
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
	Query     string          `json:"query"` // web_search
}

func (s *codexStream) line(b []byte) {
	var l codexLine
	if !s.decode(b, &l) {
		return
	}
	if l.Type == "thread.started" {
		s.sessionID = l.ThreadID
	}
	s.followSession()
	s.sendInit(l.Type != "thread.started" && l.Type != "turn.started")
	switch l.Type {
	case "item.started":
		s.itemStarted(l.Item)
	case "item.completed":
		s.itemCompleted(l.Item)
	case "error":
		s.errorLine(l.Message)
	case "turn.completed":
		s.turnCompleted(l.Usage)
	case "turn.failed":
		msg := s.lastError
		if l.Error != nil && l.Error.Message != "" {
			msg = l.Error.Message
		}
		s.failed = &msg
		s.got.Store(true)
		s.onEvent(Event{Kind: EventResult, SessionID: s.sessionID, Usage: s.seen.minus(s.base).usage(), CostUSD: s.estimate})
	}
}

// sendInit reports the session once its id and the model the session file
// names are known; forced, with the model known so far. The turn's context
// reaches the file a few milliseconds after the turn starts, and before
// anything else happens in it.
func (s *codexStream) sendInit(force bool) {
	if s.initSent || s.sessionID == "" || (!force && !s.modelRead) {
		return
	}
	s.initSent = true
	s.onEvent(Event{Kind: EventInit, SessionID: s.sessionID, Text: s.model})
}

// followSession reads what codex has added to its session file: the model
// of the turn, and the thread's totals after each model call.
func (s *codexStream) followSession() {
	if s.session.f == nil && (s.sessionID == "" || !s.session.find(s.sessionID)) {
		return
	}
	s.session.read(func(l codexSessionLine) {
		if l.model != "" {
			s.model, s.modelRead = l.model, true
		}
		// Without the thread's earlier totals (a thread resumed by a
		// name), its earlier runs' tokens cannot be told from this one's.
		if l.total != nil && s.baseKnown {
			s.advance(*l.total)
		}
	})
}

// advance reports the usage between the totals reported so far and total,
// the thread's totals now. Totals only grow: a repeated or older one adds
// nothing.
func (s *codexStream) advance(total codexUsage) {
	d := total.minus(s.seen)
	if d.InputTokens == 0 && d.OutputTokens == 0 {
		return
	}
	s.sendInit(true) // the session comes first
	s.seen = codexUsage{
		InputTokens:       max(s.seen.InputTokens, total.InputTokens),
		CachedInputTokens: max(s.seen.CachedInputTokens, total.CachedInputTokens),
		OutputTokens:      max(s.seen.OutputTokens, total.OutputTokens),
	}
	var cost float64
	if p, ok := PriceOf(s.model); ok {
		cost = p.Cost(d.tokens())
	}
	s.estimate += cost
	s.sendUsage(d.usage(), cost)
}

func (s *codexStream) turnCompleted(u *codexUsage) {
	c := codexUsage{}
	if u != nil {
		c = *u
	}
	s.completed = &c
	s.got.Store(true)
	// What the session file has not shown yet: the whole turn's, when it
	// could not be read.
	if s.baseKnown {
		s.advance(c)
	}
	ev := Event{Kind: EventResult, Text: s.final, SessionID: s.sessionID}
	if s.baseKnown {
		ev.Usage = c.minus(s.base).usage()
		ev.CostUSD = s.estimate
	}
	s.onEvent(ev)
}

// The names ralph gives codex's tools in events: the tools' own, as the
// model calls them.
const (
	codexShellTool = "exec_command"
	codexPatchTool = "apply_patch"
	codexWebTool   = "web_search"
)

// codexToolOf is the tool an item is a call of, "" for an item that is none.
func codexToolOf(it *codexItem) string {
	switch it.Type {
	case "command_execution":
		return codexShellTool
	case "file_change":
		return codexPatchTool
	case "mcp_tool_call":
		return it.Server + "." + it.Tool
	case "web_search":
		return codexWebTool
	}
	return ""
}

func (s *codexStream) itemStarted(it *codexItem) {
	if it == nil {
		return
	}
	tool := codexToolOf(it)
	if tool == "" {
		return
	}
	s.tools[it.ID] = tool
	s.sendToolUse(tool, codexToolInput(it))
}

func (s *codexStream) itemCompleted(it *codexItem) {
	if it == nil {
		return
	}
	if it.Type == "agent_message" {
		s.final = it.Text
		s.sendText(it.Text)
		return
	}
	tool := codexToolOf(it)
	if tool == "" {
		return // reasoning, a to-do list, a warning
	}
	if _, ok := s.tools[it.ID]; !ok {
		// Some items are only reported once done.
		s.sendToolUse(tool, codexToolInput(it))
	}
	delete(s.tools, it.ID)
	s.sendToolResult(tool, codexToolOutput(it))
}

// codexToolInput is what a tool call asks, for display.
func codexToolInput(it *codexItem) string {
	switch it.Type {
	case "command_execution":
		return it.Command
	case "file_change":
		return codexFileChanges(it)
	case "mcp_tool_call":
		return string(it.Arguments)
	case "web_search":
		return it.Query
	}
	return ""
}

// codexToolOutput is what a tool call gave back, for display.
func codexToolOutput(it *codexItem) string {
	switch it.Type {
	case "command_execution":
		out := it.AggregatedOutput
		if it.ExitCode != nil && *it.ExitCode != 0 {
			out += fmt.Sprintf("\n(exit code %d)", *it.ExitCode)
		}
		if it.Status == "declined" {
			out += "\n(declined)"
		}
		return strings.TrimSpace(out)
	case "file_change":
		return it.Status + ": " + codexFileChanges(it)
	case "mcp_tool_call":
		return string(it.Result)
	}
	return it.Status
}

func codexFileChanges(it *codexItem) string {
	parts := make([]string, len(it.Changes))
	for i, c := range it.Changes {
		parts[i] = c.Kind + " " + c.Path
	}
	return strings.Join(parts, ", ")
}

// codexRetry is the error line codex prints while it retries a model
// request: "Reconnecting... 1/5 (the reason)".
var codexRetry = lazyre.New(`^Reconnecting\.\.\. (\d+)/(\d+)(?: \((.*)\))?$`)

// codexWait is a wait the API asked for ("try again in 20s"), which codex
// honours before its retry.
var codexWait = lazyre.New(`(?i)try again in\s*(\d+(?:\.\d+)?)\s*(ms|s|seconds?)\b`)

// codexStatus is an HTTP status in codex's error messages: "exceeded retry
// limit, last status: 429 Too Many Requests", "unexpected status 401
// Unauthorized: …".
var codexStatus = lazyre.New(`(?:last status:|unexpected status) (\d{3})\b`)

func (s *codexStream) errorLine(msg string) {
	m := codexRetry().FindStringSubmatch(msg)
	if m == nil {
		// Fatal: turn.failed follows with the same message.
		s.lastError = msg
		return
	}
	attempt, _ := strconv.Atoi(m[1])
	ev := Event{Kind: EventRetry, SessionID: s.sessionID, Attempt: attempt, Text: "retry " + m[1] + "/" + m[2]}
	if m[3] != "" {
		ev.Text += " (" + m[3] + ")"
		ev.APIStatus = codexStatusIn(m[3])
		ev.Delay = codexWaitIn(m[3])
	}
	s.onEvent(ev)
}

func codexStatusIn(msg string) int {
	if m := codexStatus().FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

func codexWaitIn(msg string) time.Duration {
	m := codexWait().FindStringSubmatch(msg)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	if m[2] == "ms" {
		return time.Duration(v * float64(time.Millisecond))
	}
	return time.Duration(v * float64(time.Second))
}

// finish turns the parsed stream and the way the child ended into the
// Result. now resolves reset times.
func (s *codexStream) finish(end childEnd, now time.Time) Result {
	s.followSession() // what it wrote while it stopped
	r := s.result(end)
	r.Model = s.model
	s.spent(&r)
	switch {
	case end.stoppedFirst():
		markStopped(&r, end.stopped)
	case s.completed != nil:
		r.Final = s.final
	case s.failed != nil:
		r.IsError = true
		r.ErrorKind, r.APIStatus, r.ResetAt = classifyCodex(*s.failed, now)
		r.ErrorText = shorten(strings.TrimSpace(*s.failed), 500)
	case end.exitCode != 0:
		r.IsError, r.ErrorKind = true, KindCrashed
		r.ErrorText = "codex ended without finishing its turn (" + exitText(end.exitCode) + ")"
		if tail := lastLines(end.stderrTail, 5, 500); tail != "" {
			r.ErrorText += ": " + tail
		} else if s.lastError != "" {
			r.ErrorText += ": " + shorten(s.lastError, 500)
		}
	default:
		r.IsError, r.ErrorKind = true, KindBadOutput
		r.ErrorText = fmt.Sprintf("codex exited 0 without turn.completed (%d unreadable lines)", s.skipped)
	}
	return r
}

// spent fills in the run's usage: the turn's totals when it completed,
// else what the session file showed, less what the thread had spent
// before this run. Unknown when neither could be read.
func (s *codexStream) spent(r *Result) {
	if !s.baseKnown {
		return // a resumed thread whose earlier totals were not found
	}
	total := s.seen
	switch {
	case s.completed != nil:
		total = *s.completed
	case s.session.f == nil:
		return // nothing read: not even a zero is known
	}
	u := total.minus(s.base)
	r.Usage, r.UsageKnown = u.usage(), true
	if p, ok := PriceOf(s.model); ok {
		r.CostUSD, r.CostKnown = p.Cost(u.tokens()), true
	}
}

// classifyCodex reads turn.failed's message, which is all codex says of
// an error (its own texts, from codex-rs/protocol/src/error.rs): the HTTP
// status when the message carries one, else the wording of a limit.
func classifyCodex(msg string, now time.Time) (kind ErrorKind, status int, resetAt time.Time) {
	status = codexStatusIn(msg)
	lower := strings.ToLower(msg)
	switch {
	case status == 429 || status == 529:
		return KindRateLimit, status, codexResetAt(msg, now)
	case status != 0:
		return KindAPIError, status, time.Time{}
	case strings.Contains(lower, "currently experiencing high demand"):
		// codex's fixed text for an HTTP 500; the status is not shown.
		return KindAPIError, 500, time.Time{}
	case strings.Contains(lower, "model is at capacity"):
		// An overload, as Anthropic's 529: wait and try again.
		return KindRateLimit, 0, codexResetAt(msg, now)
	case usageLimitText(msg):
		return KindRateLimit, 0, codexResetAt(msg, now)
	case strings.Contains(lower, "agent loop died"):
		return KindCrashed, 0, time.Time{}
	}
	// Connection failures, a dropped stream, quota or billing, a context
	// window too small: the turn failed on the model API.
	return KindAPIError, 0, time.Time{}
}

// codexTryAgainAt is codex's usage-limit reset, in local time: "Try again
// at 3:20 PM." today, "Try again at Nov 24th, 2026 3:20 PM." another day.
var codexTryAgainAt = lazyre.New(`(?i)try again at (?:([a-z]{3}) (\d{1,2})(?:st|nd|rd|th), (\d{4}) )?(\d{1,2}):(\d{2}) ([ap]m)`)

// codexResetAt finds when a limit resets in codex's message, in now's
// location; the zero time when it names none.
func codexResetAt(msg string, now time.Time) time.Time {
	m := codexTryAgainAt().FindStringSubmatch(msg)
	if m == nil {
		return parseResetAt(msg, now) // "try again in 20s", and the like
	}
	hour, _ := strconv.Atoi(m[4])
	minute, _ := strconv.Atoi(m[5])
	if hour == 12 {
		hour = 0
	}
	if strings.EqualFold(m[6], "pm") {
		hour += 12
	}
	y, mo, d := now.Date()
	if m[1] != "" {
		month, ok := monthsByAbbr[strings.ToLower(m[1])]
		if !ok {
			return time.Time{}
		}
		y, _ = strconv.Atoi(m[3])
		mo = month
		d, _ = strconv.Atoi(m[2])
	}
	return time.Date(y, mo, d, hour, minute, 0, 0, now.Location())
}

// codexHome is where codex keeps its config and sessions for a child with
// env (nil: ralph's own) started in dir: CODEX_HOME, else ~/.codex; ""
// when neither is set.
func codexHome(env []string, dir string) string {
	if env == nil {
		env = os.Environ()
	}
	own := envValue(env, "CODEX_HOME")
	if own == "" {
		home := envValue(env, "HOME")
		if home == "" {
			return ""
		}
		own = filepath.Join(home, ".codex")
	}
	if !filepath.IsAbs(own) {
		own = filepath.Join(dir, own)
	}
	return own
}

// codexSession follows the session file ("rollout") codex appends to as a
// thread goes on: CODEX_HOME/sessions/YYYY/MM/DD/rollout-TIME-ID.jsonl,
// one JSON object a line. It is codex's own record, written as things
// happen, not an interface it documents: what cannot be found or read is
// simply not reported, and the JSON output stays the record of the run.
type codexSession struct {
	home     string
	looks    int // how many times the file was looked for
	f        *os.File
	partial  []byte // a line not yet complete
	skipping bool   // the rest of a line longer than maxLine
	buf      []byte
}

// maxSessionLooks bounds the search for a session file that is not there
// (codex exec --ephemeral writes none): it is looked for on each line of
// output until found, and a glob lists every day's folder.
const maxSessionLooks = 50

// find opens the session file of thread id, if there is one.
func (cs *codexSession) find(id string) bool {
	if cs.f != nil {
		return true
	}
	if cs.home == "" || id == "" || strings.ContainsAny(id, `*?[\/`) || cs.looks >= maxSessionLooks {
		return false
	}
	cs.looks++
	matches, _ := filepath.Glob(filepath.Join(cs.home, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
	if len(matches) == 0 {
		return false
	}
	f, err := os.Open(matches[len(matches)-1])
	if err != nil {
		return false
	}
	cs.f = f
	return true
}

// codexSessionLine is what ralph takes from one line of the session file.
type codexSessionLine struct {
	model string      // a turn's context: the model it runs
	total *codexUsage // a token count: the thread's totals
}

// read passes each complete line added since the last read to fn, when it
// says something ralph reads.
func (cs *codexSession) read(fn func(codexSessionLine)) {
	if cs.f == nil {
		return
	}
	if cs.buf == nil {
		cs.buf = make([]byte, 64<<10)
	}
	for {
		n, err := cs.f.Read(cs.buf)
		chunk := cs.buf[:n]
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				cs.keep(chunk)
				break
			}
			cs.keep(chunk[:i])
			if !cs.skipping {
				if l, ok := parseCodexSessionLine(cs.partial); ok {
					fn(l)
				}
			}
			cs.partial, cs.skipping = cs.partial[:0], false
			chunk = chunk[i+1:]
		}
		if err != nil || n == 0 {
			if err != nil && err != io.EOF {
				cs.close() // unreadable: report nothing more from it
			}
			return
		}
	}
}

// keep adds part to the line being read, unless the line is too long.
func (cs *codexSession) keep(part []byte) {
	if cs.skipping {
		return
	}
	if len(cs.partial)+len(part) > maxLine {
		cs.partial, cs.skipping = nil, true
		return
	}
	cs.partial = append(cs.partial, part...)
}

func (cs *codexSession) close() {
	if cs.f != nil {
		cs.f.Close()
		cs.f = nil
	}
}

// The session file's lines ralph reads: a turn's context, and a token
// count (an event_msg).
var (
	codexTurnContext = []byte(`"turn_context"`)
	codexTokenCount  = []byte(`"token_count"`)
)

func parseCodexSessionLine(b []byte) (codexSessionLine, bool) {
	// Most lines are the conversation itself, some of them large: only
	// those that may matter are decoded.
	if !bytes.Contains(b, codexTurnContext) && !bytes.Contains(b, codexTokenCount) {
		return codexSessionLine{}, false
	}
	var l struct {
		Type    string `json:"type"`
		Payload struct {
			Type  string `json:"type"`
			Model string `json:"model"`
			Info  *struct {
				Total *codexUsage `json:"total_token_usage"`
			} `json:"info"`
		} `json:"payload"`
	}
	if json.Unmarshal(b, &l) != nil {
		return codexSessionLine{}, false
	}
	switch {
	case l.Type == "turn_context" && l.Payload.Model != "":
		return codexSessionLine{model: l.Payload.Model}, true
	case l.Type == "event_msg" && l.Payload.Type == "token_count" && l.Payload.Info != nil && l.Payload.Info.Total != nil:
		return codexSessionLine{total: l.Payload.Info.Total}, true
	}
	return codexSessionLine{}, false
}
