package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/mdstate"
)

// This file is the vocabulary every --json command shares (README.md,
// "JSON for scripts"): the words the text output uses, null (never "" or
// 0) for what is unknown or empty, numbers as numbers, and an error as
// {"error": {...}} on stdout.

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// nullIfZero is v, or nil (JSON null) when it is its type's zero: an
// empty text, a pid or a limit of 0.
func nullIfZero[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// ItemStatus is a goal's or a to-do's status, the same word in `ralph
// goal|todo list`, in their --json and in the counts of `ralph status`.
// Tasks keep the five statuses of their checkboxes.
type ItemStatus string

const (
	// ItemOpen is still to do: [ ], [/] or [!].
	ItemOpen ItemStatus = "open"
	// ItemDone is met or done: [x].
	ItemDone ItemStatus = "done"
	// ItemDropped is given up: [-]. It counts neither as open nor as done.
	ItemDropped ItemStatus = "dropped"
)

// itemStatus is the word for a goal or a to-do with checkbox status s.
func itemStatus(s mdstate.Status) ItemStatus {
	switch s {
	case mdstate.Done:
		return ItemDone
	case mdstate.Skipped:
		return ItemDropped
	}
	return ItemOpen
}

// FiguresJSON are a progress entry's numbers, typed, beside its fields
// as written: null when the entry has none, when the agent's CLI did not
// report them ("unknown") or when they cannot be read.
type FiguresJSON struct {
	Iteration  *int     `json:"iteration"`
	DurationMS *int64   `json:"duration_ms"`
	TokensIn   *int64   `json:"tokens_in"`
	TokensOut  *int64   `json:"tokens_out"`
	CostUSD    *float64 `json:"cost_usd"`
}

func figuresJSON(e mdstate.Entry) FiguresJSON {
	f := coordinator.EntryFigures(e)
	j := FiguresJSON{Iteration: f.Iteration, TokensIn: f.TokensIn, TokensOut: f.TokensOut, CostUSD: f.CostUSD}
	if f.Duration != nil {
		ms := f.Duration.Milliseconds()
		j.DurationMS = &ms
	}
	return j
}

// EntryJSON is one progress entry, the same in every --json output that
// has entries (`status --json`'s progress.last, `context --json`'s
// recent_progress, `log --json`, `resume --list --json`): its numbers
// typed (FiguresJSON), and its fields as written, text for text. The
// fields stay, unparsed, for the scripts that read them and for what ralph
// does not parse (outcome, agent, summary, a person's own keys); the
// numbers are read from them by the one reader of ralph's entries
// (coordinator.EntryFigures).
type EntryJSON struct {
	Time  *time.Time `json:"time"` // null when the heading has no time ralph can read
	Title string     `json:"title"`
	Line  int        `json:"line"`
	FiguresJSON
	Fields map[string]FieldValueJSON `json:"fields"`
}

func entryJSON(e mdstate.Entry) *EntryJSON {
	j := &EntryJSON{Time: timeOrNull(e.Time), Title: e.Title, Line: e.Line, FiguresJSON: figuresJSON(e), Fields: map[string]FieldValueJSON{}}
	for _, f := range e.Fields {
		// The first of a repeated key, as ralph reads it (Entry.Get).
		if _, dup := j.Fields[f.Key]; !dup {
			j.Fields[f.Key] = FieldValueJSON{Text: f.Value, List: f.List}
		}
	}
	return j
}

// FieldValueJSON is the value of one field of an entry: its text, or for a
// field with nested items (decisions, guidance) the list of them, led by
// the text on the key's own line when there is one.
type FieldValueJSON struct {
	Text string
	List []string
}

func (v FieldValueJSON) MarshalJSON() ([]byte, error) {
	if len(v.List) == 0 {
		return marshalText(v.Text)
	}
	if v.Text == "" {
		return marshalText(v.List)
	}
	return marshalText(append([]string{v.Text}, v.List...))
}

// marshalText is json.Marshal for a MarshalJSON method: with "<", ">" and
// "&" as they are, as writeJSON prints the rest (the encoder leaves a
// method's escapes in place).
func marshalText(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ErrorKind says what kind of error a --json command's {"error": …}
// reports, for a script to branch on without reading the message.
type ErrorKind string

const (
	ErrorUsage       ErrorKind = "usage"       // exit 2: a wrong flag, argument or value
	ErrorNotFound    ErrorKind = "not_found"   // exit 1: an ID that is not in its file
	ErrorStateFile   ErrorKind = "state_file"  // exit 1: a state file missing, unreadable, half-merged or not writable
	ErrorFailed      ErrorKind = "failed"      // exit 1: the work ran and failed (a run, a one-shot that did not complete)
	ErrorInternal    ErrorKind = "internal"    // exit 1: a bug in ralph (an edit that did not check out)
	ErrorOther       ErrorKind = "error"       // exit 1: anything else; the message says what
	ErrorLimit       ErrorKind = "limit"       // exit 3: a limit stopped the work, or low disk space paused it
	ErrorLocked      ErrorKind = "locked"      // exit 4: another coordinator holds the project
	ErrorInterrupted ErrorKind = "interrupted" // exit 130, 129, 143: Ctrl-C or a signal stopped the work
)

// ErrorJSON is what a --json command prints on stdout when it fails:
// {"error": {"message": …, "code": …, "kind": …}}, code being ralph's exit
// code.
type ErrorJSON struct {
	Error ErrorDetailJSON `json:"error"`
}

// ErrorDetailJSON is the error itself.
type ErrorDetailJSON struct {
	Message string    `json:"message"`
	Code    int       `json:"code"`
	Kind    ErrorKind `json:"kind"`
}

// errorKind names the kind of err, which Main maps to exit code code.
func errorKind(err error, code int) ErrorKind {
	switch code {
	case ExitUsage:
		return ErrorUsage
	case ExitLimit:
		return ErrorLimit
	case ExitLocked:
		return ErrorLocked
	case ExitInterrupted, ExitHangup, ExitTerminated:
		return ErrorInterrupted
	}
	var (
		notFound *mdstate.NotFoundError
		missing  *mdstate.MissingError
		file     *mdstate.FileError
		conflict *mdstate.ConflictError
		exit     *exitError
	)
	switch {
	case errors.Is(err, mdstate.ErrVerify):
		return ErrorInternal
	case errors.As(err, &notFound):
		return ErrorNotFound
	case errors.As(err, &missing), errors.As(err, &file), errors.As(err, &conflict):
		return ErrorStateFile
	case errors.As(err, &exit):
		return ErrorFailed
	}
	return ErrorOther
}

// writeErrorJSON prints err as --json's error object on w, on one line:
// `ralph run --json` prints one JSON value a line, and the error is its
// last.
func writeErrorJSON(w io.Writer, err error, code int) {
	msg := err.Error()
	if errors.Is(err, mdstate.ErrVerify) {
		msg = "nothing was written: " + msg + "; this is a bug in ralph: please report it with the file attached"
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(ErrorJSON{Error: ErrorDetailJSON{Message: msg, Code: code, Kind: errorKind(err, code)}})
}

// wantsJSON reports whether the command that failed was asked for --json:
// its flag is set, or, when the error came while the flags were read,
// "--json" is among the arguments before "--". A command whose --json is
// hidden (chat, which refuses it) has none.
func wantsJSON(cmd *cobra.Command, args []string) bool {
	if cmd == nil {
		return false
	}
	fl := cmd.Flags().Lookup("json")
	if fl == nil || fl.Hidden {
		return false
	}
	if fl.Value.String() == "true" {
		return true
	}
	if end := slices.Index(args, "--"); end >= 0 {
		args = args[:end]
	}
	return slices.Contains(args, "--json") || slices.Contains(args, "--json=true")
}

// shownInJSON marks the error of a command whose --json result already
// says how it ended (a one-shot's status and reason): Main adds no error
// object, and stdout stays one JSON document. The exit code is err's.
type shownInJSON struct{ error }

func (e shownInJSON) Unwrap() error { return e.error }

// reportJSON prints err's object for a command run with --json, unless the
// command's own output already told it.
func reportJSON(f *Factory, cmd *cobra.Command, args []string, err error, code int) {
	var shown shownInJSON
	if errors.As(err, &shown) || !wantsJSON(cmd, args) {
		return
	}
	writeErrorJSON(f.IO.Out, err, code)
}

// timeOrNull is t, or nil (JSON null) when it is zero.
func timeOrNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// runStartedJSON is the run_started event, the first line of `ralph run
// --json` (runHeader): when the run starts, as every event has its time,
// and null for a model, a permission flag or a limit that is not set.
type runStartedJSON struct {
	Event           string           `json:"event"`
	Time            *time.Time       `json:"time"`
	Agent           string           `json:"agent"`
	Model           *string          `json:"model"`
	Permission      agent.Permission `json:"permission_mode"`
	PermissionFlags *string          `json:"permission_flags"` // how the agent's CLI is told
	MaxTurns        *int             `json:"max_turns"`        // null too when the agent's CLI takes no cap
	MaxIterations   *int             `json:"max_iterations"`
	MaxCost         *float64         `json:"max_cost_usd"`
	MaxTokens       *int64           `json:"max_tokens"`
	MaxTime         *string          `json:"max_time"`
	Plan            *RunPlan         `json:"plan"`
}

func (h runHeader) MarshalJSON() ([]byte, error) {
	return marshalText(runStartedJSON{Event: h.Event, Time: timeOrNull(h.Time), Agent: h.Agent, Model: nullIfZero(h.Model),
		Permission: h.Permission, PermissionFlags: nullIfZero(h.PermissionFlags), MaxTurns: nullIfZero(h.MaxTurns),
		MaxIterations: nullIfZero(h.MaxIterations), MaxCost: nullIfZero(h.MaxCost), MaxTokens: nullIfZero(h.MaxTokens),
		MaxTime: nullIfZero(h.MaxTime), Plan: h.Plan})
}
