package cli

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/ralph-dev/ralph/mdstate"
)

// The kinds the testscripts cannot reach easily (a bug, a signal) and
// the mapping as a whole: what Main prints with --json.
func TestErrorJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		code int
		want string
	}{
		{"usage", usagef("--limit must be 1 or more, not 0"), ExitUsage,
			`{"error":{"message":"--limit must be 1 or more, not 0","code":2,"kind":"usage"}}`},
		{"unknown ID", fmt.Errorf("promote: %w", &mdstate.NotFoundError{Kind: mdstate.TodoKind, ID: "D9"}), ExitFailure,
			`{"error":{"message":"promote: no to-do D9 in RALPH_TODO.md (it has no to-dos yet)","code":1,"kind":"not_found"}}`},
		{"state file", &mdstate.FileError{File: "RALPH_TASKS.md", Line: 4, Msg: "looks binary"}, ExitFailure,
			`{"error":{"message":"RALPH_TASKS.md:4: looks binary","code":1,"kind":"state_file"}}`},
		{"bug", fmt.Errorf("add T3: %w", mdstate.ErrVerify), ExitFailure,
			`{"error":{"message":"nothing was written: add T3: edit check failed; this is a bug in ralph: please report it with the file attached","code":1,"kind":"internal"}}`},
		{"work failed", &exitError{code: ExitFailure, msg: "the task is blocked"}, ExitFailure,
			`{"error":{"message":"the task is blocked","code":1,"kind":"failed"}}`},
		{"limit", &exitError{code: ExitLimit, msg: "reached the iteration limit (1 of 1)"}, ExitLimit,
			`{"error":{"message":"reached the iteration limit (1 of 1)","code":3,"kind":"limit"}}`},
		{"SIGTERM", &exitError{code: ExitInterrupted, msg: "interrupted"}, ExitTerminated,
			`{"error":{"message":"interrupted","code":143,"kind":"interrupted"}}`},
		{"other", errors.New("ralph history needs git history"), ExitFailure,
			`{"error":{"message":"ralph history needs git history","code":1,"kind":"error"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			writeErrorJSON(&b, tc.err, tc.code)
			if got := b.String(); got != tc.want+"\n" {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// A result that already says how it ended gets no error object after it.
func TestShownInJSONStaysOneDocument(t *testing.T) {
	var out bytes.Buffer
	f := &Factory{IO: IOStreams{Out: &out}}
	root := NewCmdRoot(f)
	if err := root.ParseFlags([]string{"--json"}); err != nil {
		t.Fatal(err)
	}
	reportJSON(f, root, []string{"--json"}, shownInJSON{&exitError{code: ExitFailure, msg: "the task is blocked"}}, ExitFailure)
	if out.Len() != 0 {
		t.Errorf("an error object after the result: %s", out.String())
	}
	reportJSON(f, root, []string{"--json"}, &exitError{code: ExitFailure, msg: "the task is blocked"}, ExitFailure)
	if out.Len() == 0 {
		t.Error("no error object for a failure with --json")
	}
}

// An entry's fields are one object in every --json output: text as
// written ("<" and "&" as they are), a field with nested items a list.
func TestEntryFieldsJSON(t *testing.T) {
	e := mdstate.Entry{Title: "T1: One", Fields: []mdstate.Field{
		{Key: "summary", Value: "Wrote <b> & more."},
		{Key: "decisions", List: []string{"Go 1.26", "no vendoring"}},
		{Key: "notes", Value: "two", List: []string{"a", "b"}},
		{Key: "summary", Value: "a second one, not read"},
	}}
	var b bytes.Buffer
	if err := writeJSON(&b, entryJSON(e).Fields); err != nil {
		t.Fatal(err)
	}
	const want = `{
  "decisions": [
    "Go 1.26",
    "no vendoring"
  ],
  "notes": [
    "two",
    "a",
    "b"
  ],
  "summary": "Wrote <b> & more."
}
`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}
