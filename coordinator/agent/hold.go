package agent

import (
	"context"
	"errors"
	"io"
	"strings"
)

// A Hold lets a child start before its prompt is known: Run starts the
// child of a Request with a Hold at once, and gives it its prompt on stdin
// only once Give is called. Until then the child gets nothing, ralph reads
// none of its output, and no watchdog or deadline runs; Run's result is
// that of the child from Give on (its Duration included). A caller that
// cancels Run's context before Give has the child killed at once (it has
// had no prompt, so there is nothing to wind up): Run then reports
// ErrorKind "interrupted".
//
// Only a backend whose child reads its whole prompt before it does
// anything may be held (PromptFirst): the child of any other could act
// before its prompt, at a moment its caller has not chosen.
type Hold struct{ given chan Given }

// NewHold returns a Hold for one Request.
func NewHold() *Hold { return &Hold{given: make(chan Given, 1)} }

// Given is what a held child waits for: its prompt, with the fields of the
// Request that go with it (a Request's own Prompt, RawLog and OnStart are
// not used when it has a Hold).
type Given struct {
	Prompt  string
	RawLog  io.Writer
	OnStart func(pid int)
}

// Give hands the held child its prompt. It never blocks; only the first
// call counts.
func (h *Hold) Give(g Given) {
	select {
	case h.given <- g:
	default:
	}
}

// await waits for Give, or for ctx to end first (ok false).
func (h *Hold) await(ctx context.Context) (g Given, ok bool) {
	select {
	case g = <-h.given:
		return g, true
	case <-ctx.Done():
		return Given{}, false
	}
}

// PromptFirst is a Backend whose child reads its whole prompt from stdin
// before it does anything else, so that it may start with a Hold: the
// CLIs (Claude Code, Codex, opencode, Gemini CLI). An exec agent runs a
// person's program, which may act before it reads its stdin, and is not
// one.
type PromptFirst interface {
	Backend
	readsPromptFirst()
}

// promptFirst makes a CLI's backend a PromptFirst.
type promptFirst struct{}

func (promptFirst) readsPromptFirst() {}

// errNotGiven ends the stdin of a held child that was let go without its
// prompt (it is killed first).
var errNotGiven = errors.New("let go before its prompt was given")

// heldInput is a held child's stdin: it waits for give or drop.
type heldInput struct {
	ready chan struct{} // closed once r is set
	r     io.Reader
}

func newHeldInput() *heldInput { return &heldInput{ready: make(chan struct{})} }

func (in *heldInput) Read(p []byte) (int, error) {
	<-in.ready
	return in.r.Read(p)
}

// WriteTo lets io.Copy write the prompt to the child's pipe in one write,
// as it does a strings.Reader's.
func (in *heldInput) WriteTo(w io.Writer) (int64, error) {
	<-in.ready
	return io.Copy(w, in.r)
}

// give makes prompt the child's stdin.
func (in *heldInput) give(prompt string) {
	in.r = strings.NewReader(prompt)
	close(in.ready)
}

// drop ends the stdin of a child let go without its prompt: an error, not
// an end of file, which would read as an empty prompt.
func (in *heldInput) drop() {
	in.r = errReader{errNotGiven}
	close(in.ready)
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
