// Package agent runs one child coding agent for one task and reports what
// it did, whatever CLI is behind it.
//
// The contract every backend keeps:
//
//   - the prompt goes to the child on stdin, which is then closed (an open,
//     silent stdin makes some CLIs wait or block); the child of a CLI
//     that reads its whole prompt before it acts (PromptFirst) may start
//     before its prompt is known and be given it later (Hold), or be
//     killed unprompted;
//   - the child runs in its own process group, contained (through package
//     proc, Cmd.Contain): when Run returns, the child and everything it
//     spawned are gone, what left its group (setsid, a daemon) too, and
//     so within a second when ralph dies, by any signal;
//   - every raw byte of the child's stdout is copied to Request.RawLog;
//   - a child that prints nothing on stdout for Request.NoOutputTimeout, or
//     runs past Request.Timeout, is stopped (SIGINT to the group, SIGKILL
//     after Request.Grace): headless agents can hang with no output
//     (anthropics/claude-code#39700);
//   - Result.Final is the agent's final assistant message only, never raw
//     stdout: echoed prompts, tool results and file contents may carry the
//     completion marker (snarktank/ralph PR #31);
//   - exit code 0 alone is not success (subsy/ralph-tui#259): a claude
//     child that ends without a result line is an error;
//   - rate limits are read from structured fields and the result's text,
//     never from tool output (frankbria/ralph-claude-code#183);
//   - what the child may do is decided before it starts (Request.Permission,
//     in the CLI's own flags), and its usage is streamed call by call
//     (EventUsage), so that a caller can stop it the moment a budget is
//     spent; a run stopped before its result still reports what it used.
package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc"
)

// Request is one task for one child agent.
type Request struct {
	Prompt string   // given to the child on stdin
	Dir    string   // the project root: the child's working directory
	Model  string   // "" = the CLI's default
	Env    []string // the child's full environment; nil = inherit ralph's
	// RawLog receives every raw byte of the child's stdout (ralph keeps it
	// per iteration under .ralph/logs/); nil discards.
	RawLog io.Writer
	// OnStart, when set, is called with the child's pid (which is also its
	// process group) as soon as it runs, before any event: the coordinator
	// records it so that a later start can stop a survivor of a crash.
	OnStart func(pid int)
	// Mark, when set, is put in the environment of the child and of
	// everything it starts (proc.MarkVar): after a crash, the coordinator
	// finds what is left of its session's agents by it.
	Mark string
	// NoOutputTimeout stops a child that writes no stdout byte for this
	// long (ErrorKind "no_output"); zero disables the watchdog.
	NoOutputTimeout time.Duration
	// Timeout stops a child that runs longer than this (ErrorKind
	// "timeout"); zero means no deadline.
	Timeout time.Duration
	// Grace is the time between SIGINT and SIGKILL when the child is
	// stopped; zero means proc.DefaultGrace.
	Grace time.Duration
	// MaxTurns caps the model calls of the run, for CLIs that take a cap
	// (claude --max-turns); zero means none. The CLI ends a run that
	// reaches it with ErrorKind "max_turns".
	MaxTurns int
	// Permission is what the agent may do without asking; "" is
	// PermissionBypass. Backends map it to their CLI's own flags.
	Permission Permission
	// Resume, when set, continues the agent's own earlier session with
	// this id (Result.SessionID of an earlier run) instead of starting a
	// new one: claude --resume, codex exec resume, opencode --session,
	// gemini --resume. A chat's conversation goes on across turns so.
	Resume string
	// Args are extra arguments for the CLI, from the person's agent
	// settings: they come after ralph's own, before the prompt when the
	// prompt is an argument.
	Args []string
	// Hold, when set, starts the child before its prompt is known: it
	// gets its prompt, with RawLog and OnStart, once the Hold gives them
	// (see Hold). Only a PromptFirst backend takes one.
	Hold *Hold
	// After, when set, is the child of the agent run before this one,
	// which may still be ending: this child is started right after it
	// (proc.Cmd.After). OnProcess, when set, is called with the child's
	// process as soon as it runs, before it has a prompt when held: what
	// the next Request's After names.
	After     *proc.Process
	OnProcess func(*proc.Process)
}

// EventKind names what an Event reports.
type EventKind string

// The kinds of events a backend streams while the child runs.
const (
	EventInit       EventKind = "init"        // the session started: SessionID, Text = the model
	EventText       EventKind = "text"        // assistant text: Text
	EventToolUse    EventKind = "tool_use"    // the agent calls Tool; Text = its input, shortened
	EventToolResult EventKind = "tool_result" // a tool's result: Tool (when known), Text shortened
	EventUsage      EventKind = "usage"       // usage added since the last usage event (not a running total; one model call may send several): Usage, CostUSD estimated from the price table (0 when the model has none)
	EventRetry      EventKind = "retry"       // the CLI retries a failed API call: Text says why
	EventResult     EventKind = "result"      // the final result: Text = the final message, Usage and CostUSD of the whole run, the CLI's own figures
)

// Event is one step of a running child, for progress display. Events are
// not the record: the Result is.
type Event struct {
	Kind      EventKind
	Text      string
	Tool      string
	SessionID string
	Usage     Usage
	CostUSD   float64
	// A retry's attempt, its wait and the HTTP status that caused it
	// (EventRetry), when the CLI says.
	Attempt   int
	Delay     time.Duration
	APIStatus int
}

// Usage counts tokens: In includes cache reads and cache creation.
type Usage struct{ In, Out int64 }

// ErrorKind says why a run failed; "" when it did not.
type ErrorKind string

// The values of Result.ErrorKind.
const (
	KindAPIError    ErrorKind = "api_error"   // the model API failed (connection, 5xx, auth…)
	KindRateLimit   ErrorKind = "rate_limit"  // 429/529 or a usage limit: wait (until ResetAt if known), don't burn an attempt
	KindMaxTurns    ErrorKind = "max_turns"   // the CLI's turn limit ended the run
	KindCrashed     ErrorKind = "crashed"     // the child died or failed without a result
	KindTimeout     ErrorKind = "timeout"     // Request.Timeout passed; ralph stopped the child
	KindNoOutput    ErrorKind = "no_output"   // no stdout for Request.NoOutputTimeout; ralph stopped the child
	KindBadOutput   ErrorKind = "bad_output"  // the child exited 0 but its output had no result
	KindInterrupted ErrorKind = "interrupted" // the caller's context was cancelled; ralph stopped the child
)

// Result is how one run ended.
type Result struct {
	// Final is the agent's final assistant message only (claude: the
	// result line's "result"; exec: the last paragraph of stdout).
	Final     string
	SessionID string
	IsError   bool
	ErrorKind ErrorKind // "" or one of the Kind constants
	APIStatus int       // the API's HTTP status when it failed, e.g. 429, 529
	// ResetAt is when a usage limit resets, when the CLI said so.
	ResetAt   time.Time
	ErrorText string // a short human reason
	// Usage and CostUSD are the run's, as the CLI totals them at the end;
	// for a run ralph stopped before that, the sum of the calls it
	// streamed, the cost estimated from the price table (see PriceOf).
	Usage   Usage
	CostUSD float64
	// UsageKnown and CostKnown say whether the CLI reported Usage and
	// CostUSD (or streamed enough to estimate them): a 0 that is not
	// known is shown as unknown, never as free.
	UsageKnown, CostKnown bool
	// Model is the model the CLI says it ran ("" when it does not say).
	Model    string
	NumTurns int
	// SkippedLines counts stdout lines that were not understood: not JSON,
	// or longer than the line limit. They are still in RawLog.
	SkippedLines int
	ExitCode     int // -1 when a signal ended the child
	Duration     time.Duration
	PID          int // the child's pid, which is also its process group
}

// Backend runs child agents of one kind.
type Backend interface {
	Name() string
	// Run starts the child, streams events to onEvent and returns when
	// the child and its process group are gone. onEvent (may be nil) is
	// called one event at a time, in order, never concurrently; it must
	// return quickly: while it runs the child's output is not read.
	// Cancelling ctx stops the child's group (SIGINT, then SIGKILL after
	// Grace) and returns ErrorKind "interrupted". The error is non-nil
	// only when the child could not be started at all.
	Run(ctx context.Context, req Request, onEvent func(Event)) (Result, error)
	// Command is the command line Run starts for req, program first, for
	// a person to read (ralph agents, the run's header): a prompt passed
	// as an argument shows as "PROMPT".
	Command(req Request) []string
	// Prepare gets ready for the next Run while the caller does something
	// else, and returns at once: the supervisor that will contain the
	// child starts now (proc.Prepare), not when Run needs it.
	Prepare()
}

// ErrNotInstalled reports that no usable agent CLI was found.
var ErrNotInstalled = errors.New("no agent CLI found")

// installHint says what to do when no agent is installed.
const installHint = "install Claude Code (npm install -g @anthropic-ai/claude-code), " +
	`or run any agent program with --agent exec --agent-cmd "PROGRAM ARGS"`

// Find returns the backend for name, or, for name "", for the first of
// claude, codex, opencode and gemini that lookPath finds. "exec" needs a
// command: use Exec.
func Find(name string, lookPath func(string) (string, error)) (Backend, error) {
	switch name {
	case "":
		for _, c := range clis {
			if _, err := lookPath(c.name); err == nil {
				return Find(c.name, lookPath)
			}
		}
		return nil, fmt.Errorf("%w on PATH (looked for %s): %s", ErrNotInstalled, joinNames(CLINames()), installHint)
	case "exec":
		return nil, fmt.Errorf(`--agent exec needs the program to run: --agent-cmd "PROGRAM ARGS"`)
	}
	if c, ok := findCLI(name); ok {
		p, err := lookPath(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not on PATH: install it (%s), or pick another with --agent (ralph agents lists them)", ErrNotInstalled, name, c.install)
		}
		return c.backend(p), nil
	}
	return nil, fmt.Errorf("unknown agent %q: use %s", name, strings.Join(append(CLINames(), "exec"), ", "))
}

// CLINames are the agent CLIs ralph drives, in the order Find("") looks
// for them on PATH.
func CLINames() []string {
	names := make([]string, len(clis))
	for i, c := range clis {
		names[i] = c.name
	}
	return names
}

// cli is an agent CLI ralph drives.
type cli struct {
	name    string                   // the backend's name, also its program's
	backend func(bin string) Backend // the backend, given the program's path
	install string                   // how a person installs it (a command)
	// permissionFlags says how the CLI is told a permission mode, for the
	// run's header (PermissionFlags).
	permissionFlags func(Permission) string
	// maxTurnsFlag is how the CLI is told a turn cap, for the run's
	// header; nil when it takes none (MaxTurnsFlag).
	maxTurnsFlag func(n int) string
}

// InstallHint says how to install the agent CLI named name ("" for a
// name ralph does not drive).
func InstallHint(name string) string {
	c, _ := findCLI(name)
	return c.install
}

// findCLI is the CLI named name.
func findCLI(name string) (cli, bool) {
	for _, c := range clis {
		if c.name == name {
			return c, true
		}
	}
	return cli{}, false
}

// clis are the agent CLIs ralph drives, in the order Find("") looks for
// them: Claude Code first, the one tested longest.
var clis = []cli{
	{name: "claude", backend: Claude, install: "npm install -g @anthropic-ai/claude-code", permissionFlags: claudePermissionFlags, maxTurnsFlag: claudeMaxTurnsFlag},
	{name: "codex", backend: Codex, install: "npm install -g @openai/codex", permissionFlags: codexPermissionFlags},
	{name: "opencode", backend: Opencode, install: "npm install -g opencode-ai", permissionFlags: opencodePermissionFlags},
	{name: "gemini", backend: Gemini, install: "npm install -g @google/gemini-cli", permissionFlags: geminiPermissionFlags, maxTurnsFlag: geminiMaxTurnsFlag},
}

func joinNames(names []string) string {
	s := ""
	for i, n := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			s += " and "
		default:
			s += ", "
		}
		s += n
	}
	return s
}
