//go:build linux

package coordinator

import (
	"errors"
	"strconv"
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
			n, ok := readNote(note)
			if !ok || n.kind != noteFailed || n.reason != a.Note || n.times != 1 {
				t.Errorf("%s: readNote(%q) = %+v, %v", tt.name, note, n, ok)
			}
		}
		counted := countedNote{kind: noteFailed, reason: a.Note, times: 4, last: last, gaveUp: skippedNote(giveUpAttempts, 4)}
		n, ok := readNote(counted.String())
		if !ok || n.kind != noteFailed || n.reason != a.Note || n.times != 4 || !n.last.Equal(last) || n.gaveUp != "" {
			t.Errorf("%s: %q read back as %+v, %v", tt.name, counted, n, ok)
		}
	}
}

func TestFailNoteText(t *testing.T) {
	last := time.Date(2026, 11, 23, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	for _, tt := range []struct {
		n    countedNote
		want string
	}{
		{countedNote{kind: noteFailed, reason: "the agent crashed (exit code 3): boom", times: 1, last: last}, "the agent crashed (exit code 3): boom"},
		{countedNote{kind: noteFailed, reason: "the agent ended without <promise>COMPLETE</promise>", times: 3, last: last},
			"failed 3 times, last at 2026-11-23T09:00:00Z: the agent ended without <promise>COMPLETE</promise>"},
		{countedNote{kind: noteFailed, reason: "x", times: 2, last: last, gaveUp: skippedNote(giveUpAttempts, 3)},
			"failed 2 times, last at 2026-11-23T09:00:00Z: x; skipped after 3 failed attempts"},
		{countedNote{kind: noteBlocked, reason: "no network here", times: 1, last: last}, "no network here"},
		{countedNote{kind: noteBlocked, reason: "no network here", times: 2, last: last},
			"blocked 2 times, last at 2026-11-23T09:00:00Z: no network here"},
		{countedNote{kind: noteInterrupted, reason: recoveredReason("agent", 4), times: 1, last: last},
			"interrupted at 2026-11-23T09:00:00Z during phase agent (iteration 4); ralph resumed the session"},
		{countedNote{kind: noteInterrupted, reason: recoveredReason("writing", 7), times: 5, last: last, gaveUp: skippedNote(giveUpAttempts, 5)},
			"interrupted 5 times, last at 2026-11-23T09:00:00Z during phase writing (iteration 7); ralph resumed the session; skipped after 5 failed attempts"},
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
		if n, ok := readNote(note); ok || staleOnDone(note) {
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

// Every kind of counted note reads back, alone, counted and with the
// words of a skip; a note of another shape, or another kind's separator,
// is no counted note.
func TestCountedNotesRead(t *testing.T) {
	last := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, n := range []countedNote{
		{kind: noteFailed, reason: "the agent crashed (exit code 3): boom", times: 1},
		{kind: noteFailed, reason: "the agent crashed (exit code 3): boom", times: 3, last: last},
		{kind: noteBlocked, reason: "no network here", times: 2, last: last},
		{kind: noteInterrupted, reason: recoveredReason("agent", 2), times: 1, last: last},
		{kind: noteInterrupted, reason: recoveredReason("writing", 9), times: 4, last: last},
	} {
		for _, gaveUp := range []string{"", skippedNote(giveUpAttempts, 3), skippedNote(giveUpPolicy, 0)} {
			n.gaveUp = gaveUp
			got, ok := readNote(n.String())
			if n.gaveUp = ""; !ok || got != n {
				t.Errorf("%q read back as %+v, %v; want %+v", n.String(), got, ok, n)
			}
		}
	}
	for _, note := range []string{
		"no network here", // a block's first note: only its reason tells (earlier)
		"interrupted at 2026-11-21T10:00:00Z in iteration 2",                                                             // Ctrl-C: not counted
		"interrupted 2 times, last at 2026-11-21T10:00:00Z in iteration 2",                                               // not recovery's
		"interrupted 2 times, last at 2026-11-21T10:00:00Z: during phase agent (iteration 1); ralph resumed the session", // a colon
		"blocked 2 times, last at 2026-11-21T10:00:00Z waiting",                                                          // no colon
		"blocked 2 times, last at noon: waiting",
	} {
		if n, ok := readNote(note); ok {
			t.Errorf("%q reads as a counted note: %+v", note, n)
		}
	}
}

// A block for the same reason as a note there, ralph's earlier block or a
// person's words, is one counted note; another reason is a note of its
// own.
func TestRepeatedBlockIsOneNote(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": "# Tasks\n\n- [ ] T1: Task number 1\n" +
		"  - note: No network here.\n" +
		"  - note: ask Sam first\n"})
	clock := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	for i, tc := range []struct {
		reason string
		want   []string
	}{
		{"no network here", []string{"ask Sam first", "blocked 2 times, last at 2026-11-23T10:00:00Z: no network here"}},
		{"needs an API key", []string{"ask Sam first", "blocked 2 times, last at 2026-11-23T10:00:00Z: no network here", "needs an API key"}},
		{"No  network here", []string{"ask Sam first", "needs an API key", "blocked 3 times, last at 2026-11-23T11:00:00Z: No network here"}},
	} {
		clock = clock.Add(time.Duration(i/2) * time.Hour)
		reply := agent.Result{Final: "<promise>BLOCKED: " + tc.reason + "</promise>"}
		co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{reply: func(int) agent.Result { return reply }}, NewSession: i > 0, Now: now})
		runAll(t, t.Context(), co)
		co.Close()
		tasks, _, _ := loadState(t, dir)
		t1 := tasks.Find("T1")
		if t1.Status != mdstate.Blocked || strings.Join(t1.Notes, "\n") != strings.Join(tc.want, "\n") {
			t.Fatalf("block %d: T1 %s, notes\n%s\nwant\n%s", i+1, t1.Status, strings.Join(t1.Notes, "\n"), strings.Join(tc.want, "\n"))
		}
		// A person reopens it.
		writeTasks(t, dir, strings.Replace(string(tasks.Source()), "- [!] T1", "- [ ] T1", 1))
	}
}

// A task whose ralph died at work on it again and again has one note
// counting the interruptions, with the last one's time, phase and
// iteration; the loop's own "interrupted at" (Ctrl-C) stays apart.
func TestRepeatedInterruptionIsOneNote(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_PROGRESS.md": "# Progress\n"})
	notes := []string{"ask Sam first", "interrupted at 2026-11-20T09:00:00Z in iteration 1"}
	attempts := 0
	for i, tc := range []struct {
		phase, updated string
		want           string
	}{
		{"agent", "2026-11-22T10:00:00Z", "interrupted at 2026-11-22T10:00:00Z during phase agent (iteration 2); ralph resumed the session"},
		{"waiting", "2026-11-22T10:01:00Z", "interrupted 2 times, last at 2026-11-22T10:01:00Z during phase waiting (iteration 3); ralph resumed the session"},
		{"agent", "2026-11-22T10:02:00Z", "interrupted 3 times, last at 2026-11-22T10:02:00Z during phase agent (iteration 4); ralph resumed the session; skipped after 3 failed attempts"},
	} {
		tasks := "# Tasks\n\n- [/] T1: Task number 1\n"
		if attempts > 0 {
			tasks += "  - attempts: " + strconv.Itoa(attempts) + "\n"
		}
		for _, n := range notes {
			tasks += "  - note: " + n + "\n"
		}
		writeTasks(t, dir, tasks+session("- status: running", "- phase: "+tc.phase, "- iteration: "+strconv.Itoa(i+2), "- task: T1", "- updated: "+tc.updated))
		co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}, MaxAttempts: 3})
		go func() {
			for range co.Events() { // read, or Close waits for a reader
			}
		}()
		if _, err := co.Recover(); err != nil {
			t.Fatal(err)
		}
		co.Close()
		got, _, _ := loadState(t, dir)
		t1 := got.Find("T1")
		want := []string{"ask Sam first", "interrupted at 2026-11-20T09:00:00Z in iteration 1", tc.want}
		if strings.Join(t1.Notes, "\n") != strings.Join(want, "\n") || t1.Attempts != i+1 {
			t.Fatalf("interruption %d: T1 %d attempts, notes\n%s\nwant\n%s", i+1, t1.Attempts, strings.Join(t1.Notes, "\n"), strings.Join(want, "\n"))
		}
		notes, attempts = t1.Notes, t1.Attempts
	}
}

// What a person's `ralph task done` and `ralph task reopen` do to ralph's
// notes: done takes the failure notes and the attempts, as the agent's
// completion does; reopened, the notes lose only the words of a skip.
func TestPersonDoneAndReopen(t *testing.T) {
	const src = "# Tasks\n\n" +
		"- [-] T1: Parse the files\n" +
		"  - attempts: 3\n" +
		"  - note: ask Sam; skipped after lunch\n" +
		"  - note: blocked 2 times, last at 2026-11-21T09:00:00Z: no network\n" +
		"  - note: interrupted at 2026-11-21T09:30:00Z during phase agent (iteration 2); ralph resumed the session\n" +
		"  - note: the agent crashed (exit code 3): boom; skipped (--on-failure skip)\n" +
		"  - note: failed 2 times, last at 2026-11-21T10:00:00Z: the agent ended\n    without <promise>COMPLETE</promise>; skipped after 3 failed attempts\n" +
		"\n" +
		"  The description stays.\n"
	edit := func(fn func(e *mdstate.ChecklistEdit) error) string {
		t.Helper()
		c, err := mdstate.ParseChecklist(mdstate.TasksKind, []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		e := c.Edit()
		if err := fn(e); err != nil {
			t.Fatal(err)
		}
		out, _, err := e.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	done := edit(func(e *mdstate.ChecklistEdit) error {
		return errors.Join(e.SetStatus("T1", mdstate.Done), ClearFailures(e, "T1"))
	})
	if want := "# Tasks\n\n" +
		"- [x] T1: Parse the files\n" +
		"  - note: ask Sam; skipped after lunch\n" +
		"  - note: blocked 2 times, last at 2026-11-21T09:00:00Z: no network\n" +
		"  - note: interrupted at 2026-11-21T09:30:00Z during phase agent (iteration 2); ralph resumed the session\n" +
		"\n" +
		"  The description stays.\n"; done != want {
		t.Errorf("done:\n%s\nwant\n%s", done, want)
	}
	changed := false
	reopened := edit(func(e *mdstate.ChecklistEdit) error {
		var err error
		changed, err = ClearGaveUp(e, "T1")
		return errors.Join(e.SetStatus("T1", mdstate.Pending), err)
	})
	if want := "# Tasks\n\n" +
		"- [ ] T1: Parse the files\n" +
		"  - attempts: 3\n" +
		"  - note: ask Sam; skipped after lunch\n" +
		"  - note: blocked 2 times, last at 2026-11-21T09:00:00Z: no network\n" +
		"  - note: interrupted at 2026-11-21T09:30:00Z during phase agent (iteration 2); ralph resumed the session\n" +
		"  - note: the agent crashed (exit code 3): boom\n" +
		"  - note: failed 2 times, last at 2026-11-21T10:00:00Z: the agent ended without <promise>COMPLETE</promise>\n" +
		"\n" +
		"  The description stays.\n"; reopened != want || !changed {
		t.Errorf("reopened (changed %v):\n%s\nwant\n%s", changed, reopened, want)
	}
	if changed, err := ClearGaveUp(mustEdit(t, reopened), "T1"); changed || err != nil {
		t.Errorf("ClearGaveUp again: %v, %v", changed, err)
	}
}

func mustEdit(t *testing.T, src string) *mdstate.ChecklistEdit {
	t.Helper()
	c, err := mdstate.ParseChecklist(mdstate.TasksKind, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return c.Edit()
}
