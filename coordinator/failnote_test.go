//go:build linux

package coordinator

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/mdstate"
)

// TestFailureReasonsRead holds classify and failureReasons together: every
// reason classify gives a failed attempt reads back as a failure note,
// alone, counted, and with the words of a skip.
func TestFailureReasonsRead(t *testing.T) {
	tests := []struct {
		name string
		res  agent.Result
		err  error
	}{
		{"cannot start", agent.Result{}, errors.New(`exec: "nope": executable file not found in $PATH`)},
		{"silent", agent.Result{IsError: true, ErrorKind: agent.KindNoOutput}, nil},
		{"too long", agent.Result{IsError: true, ErrorKind: agent.KindTimeout}, nil},
		{"crash", agent.Result{IsError: true, ErrorKind: agent.KindCrashed, ExitCode: 3, ErrorText: "boom"}, nil},
		{"api error", agent.Result{IsError: true, ErrorKind: agent.KindAPIError, ErrorText: "overloaded"}, nil},
		{"max turns", agent.Result{IsError: true, ErrorKind: agent.KindMaxTurns}, nil},
		{"bad output", agent.Result{ErrorKind: agent.KindBadOutput}, nil},
		{"no marker, exit 0", agent.Result{Final: "I think it works."}, nil},
		{"no marker, exit 1", agent.Result{Final: "Hmm.", ExitCode: 1}, nil},
	}
	last := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		a := classify(t.Context(), tt.res, tt.err)
		if a.Outcome != OutcomeFailed || a.Note == "" {
			t.Fatalf("%s: classify = %s %q; want a failed attempt with a reason", tt.name, a.Outcome, a.Note)
		}
		for _, note := range []string{a.Note, a.Note + skippedNote(giveUpAttempts, 3), a.Note + skippedNote(giveUpPolicy, 0)} {
			n, ok := readFailNote(note)
			if !ok || n.reason != a.Note || n.times != 1 {
				t.Errorf("%s: readFailNote(%q) = %+v, %v", tt.name, note, n, ok)
			}
		}
		counted := failNote{reason: a.Note, times: 4, last: last, gaveUp: skippedNote(giveUpAttempts, 4)}
		n, ok := readFailNote(counted.String())
		if !ok || n.reason != a.Note || n.times != 4 || !n.last.Equal(last) || n.gaveUp != "" {
			t.Errorf("%s: %q read back as %+v, %v", tt.name, counted, n, ok)
		}
	}
}

func TestFailNoteText(t *testing.T) {
	last := time.Date(2026, 11, 23, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	for _, tt := range []struct {
		n    failNote
		want string
	}{
		{failNote{reason: "the agent crashed (exit code 3): boom", times: 1, last: last}, "the agent crashed (exit code 3): boom"},
		{failNote{reason: "the agent ended without <promise>COMPLETE</promise>", times: 3, last: last},
			"failed 3 times, last at 2026-11-23T09:00:00Z: the agent ended without <promise>COMPLETE</promise>"},
		{failNote{reason: "x", times: 2, last: last, gaveUp: skippedNote(giveUpAttempts, 3)},
			"failed 2 times, last at 2026-11-23T09:00:00Z: x; skipped after 3 failed attempts"},
	} {
		if got := tt.n.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.n, got, tt.want)
		}
	}
}

// A person's notes and ralph's other notes are no failure notes: a done
// task keeps them. A note that ends with ralph giving up on the task goes.
func TestOtherNotesStay(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	stay := []string{
		"ask Sam about CRLF files",
		"no network here", // a BLOCKED report's reason
		"the agent should use the v2 API",
		"interrupted at 2026-11-21T10:00:00Z in iteration 2",
		"stopped at 2026-11-21T10:00:00Z in iteration 1: --max-time 1s reached",
		"usage or rate limit (HTTP 429): slow down; waiting until 2026-11-21T10:01:00Z",
		personKeptNote(mdstate.Done, OutcomeFailed, now),
		"failed 2 times, last at tuesday: the agent crashed",
		"failed 1 times, last at 2026-11-21T10:00:00Z: once is no count",
		"failed twice; skipped after lunch",
	}
	for _, note := range stay {
		if n, ok := readFailNote(note); ok || staleOnDone(note) {
			t.Errorf("%q reads as a failure note (%+v) or stale", note, n)
		}
	}
	gone := []string{
		"interrupted at 2026-11-21T10:00:00Z during phase agent (iteration 1); ralph resumed the session" + skippedNote(giveUpAttempts, 3),
		"the agent ended without <promise>COMPLETE</promise>" + skippedNote(giveUpPolicy, 0),
		"failed 2 times, last at 2026-11-21T10:00:00Z: anything the agent said",
	}
	for _, note := range gone {
		if !staleOnDone(note) {
			t.Errorf("%q stays on a done task", note)
		}
	}
}

// The same failure again is one note with the count and the last time,
// also over copies an older ralph left; another reason is a note of its
// own; done, the task keeps only the notes that are not ralph's failures,
// and no attempts line.
func TestRepeatedFailureIsOneNote(t *testing.T) {
	const tasks = "# Tasks\n\n" +
		"- [ ] T1: Parse the files\n" +
		"  - note: ask Sam about CRLF files\n" +
		"  - attempts: 2\n" +
		"  - note: the agent crashed (exit code 3): boom\n" +
		"  - note: the agent crashed (exit code 3): boom\n" +
		"  - note: interrupted at 2026-11-20T09:00:00Z in iteration 4\n"
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasks})
	crash := agent.Result{IsError: true, ErrorKind: agent.KindCrashed, ExitCode: 3, ErrorText: "boom"}
	results := []agent.Result{crash, {Final: "I think it works."}, crash, {Final: "Done.\n<promise>COMPLETE</promise>"}}
	fa := &fakeAgent{reply: func(n int) agent.Result { return results[n-1] }}
	clock := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }

	co := newCoordinator(t, Options{Root: dir, Agent: fa, MaxIterations: 3, MaxAttempts: 10, Now: now})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopLimit {
		t.Fatalf("outcome %+v", out)
	}
	got, _, log := loadState(t, dir)
	t1 := got.Find("T1")
	want := []string{
		"ask Sam about CRLF files",
		"interrupted at 2026-11-20T09:00:00Z in iteration 4",
		"the agent ended without <promise>COMPLETE</promise> (exit code 0 is not completion)",
		"failed 4 times, last at 2026-11-23T10:00:00Z: the agent crashed (exit code 3): boom",
	}
	if t1.Attempts != 5 || strings.Join(t1.Notes, "\n") != strings.Join(want, "\n") {
		t.Errorf("T1: %d attempts, notes\n%s\nwant\n%s", t1.Attempts, strings.Join(t1.Notes, "\n"), strings.Join(want, "\n"))
	}
	// The log has each attempt's own reason.
	for i, e := range log.Recent[:3] {
		if r := []agent.Result{crash, results[1], crash}[i]; e.Get("outcome") != "failed" || (r.ErrorText == "boom") != strings.HasPrefix(e.Get("note"), "the agent crashed") {
			t.Errorf("entry %d: %+v", i+1, e)
		}
	}

	co.Close()
	co = newCoordinator(t, Options{Root: dir, Agent: fa, NewSession: true, Now: now})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
		t.Fatalf("outcome %+v", out)
	}
	got, _, _ = loadState(t, dir)
	t1 = got.Find("T1")
	want = []string{"ask Sam about CRLF files", "interrupted at 2026-11-20T09:00:00Z in iteration 4"}
	if t1.Status != mdstate.Done || t1.Attempts != 0 || strings.Join(t1.Notes, "\n") != strings.Join(want, "\n") {
		t.Errorf("T1 done: %s, %d attempts, notes %q", t1.Status, t1.Attempts, t1.Notes)
	}
	if strings.Contains(string(got.Source()), "attempts:") {
		t.Errorf("the done task keeps an attempts line:\n%s", got.Source())
	}
}

// attemptsOf is task id's attempts as the file in dir has them now, -1
// when it cannot be read: for a fakeAgent's before hook, since a task that
// is done has no attempts line left to read afterwards.
func attemptsOf(dir, id string) int64 {
	tasks, err := mdstate.Open(dir).LoadChecklist(mdstate.TasksKind)
	if err != nil || tasks.Find(id) == nil {
		return -1
	}
	return int64(tasks.Find(id).Attempts)
}
