package cli

import (
	"io"
	"slices"
	"testing"

	"github.com/ralph-dev/ralph/coordinator"
)

// ralph run's coordinator makes one run: it stops watching the state
// files as its loop ends, and runs the loop on one processor unless
// GOMAXPROCS says how many ralph has.
func TestOneRun(t *testing.T) {
	for _, tc := range []struct {
		environ []string
		oneProc bool
	}{
		{[]string{"HOME=/h"}, true},
		{[]string{"HOME=/h", "GOMAXPROCS=4"}, false},
		{[]string{"GOMAXPROCS="}, true}, // empty: the runtime's default
		{[]string{"XGOMAXPROCS=4"}, true},
	} {
		var opts coordinator.Options
		(&Factory{Env: Env{Environ: tc.environ}}).oneRun(&opts)
		if !opts.SingleRun || opts.OneProc != tc.oneProc {
			t.Errorf("environment %q: SingleRun %v, OneProc %v, want true, %v", tc.environ, opts.SingleRun, opts.OneProc, tc.oneProc)
		}
	}
}

// writeCounter records the length of every write it gets.
type writeCounter struct{ writes []int }

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, len(p))
	return len(p), nil
}

// The run's display writes an event's lines in one write, and nothing for
// an event that shows nothing (usage, a state write): an empty write is
// still a system call, several an iteration on stderr.
func TestRunDisplayWritesNothingEmpty(t *testing.T) {
	var errOut writeCounter
	d := newRunDisplay(&Factory{IO: IOStreams{Out: io.Discard, ErrOut: &errOut}}, false)
	for _, ev := range []coordinator.Event{
		{Kind: coordinator.EventTaskStarted, Iteration: 1, Task: "T1", Title: "Task number 1", Position: 1, Total: 1},
		{Kind: coordinator.EventUsage, TokensIn: 10, TokensOut: 5},
		{Kind: coordinator.EventStateWritten, File: "RALPH_TASKS.md"},
		{Kind: coordinator.EventAgentText, Text: "Done.\nAll of it."},
		{Kind: coordinator.EventIterationDone, Iteration: 1, Task: "T1", Title: "Task number 1", Outcome: coordinator.OutcomeDone},
	} {
		d.show(ev)
	}
	if want := 3; len(errOut.writes) != want || slices.Contains(errOut.writes, 0) {
		t.Errorf("writes of %v bytes, want %d, none empty", errOut.writes, want)
	}
}
