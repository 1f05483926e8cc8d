//go:build linux

package coordinator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/mdstate"
)

func writeTasks(t *testing.T, dir, tasks string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, mdstate.TasksFile), []byte(tasks), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Killed after marking T1 done and before writing its entry: the next start
// writes the entry, once, and goes on with T2.
func TestResumeRestoresDoneEntry(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
	writeTasks(t, dir, "# Tasks\n\n- [x] T1: Task number 1\n- [ ] T2: Task number 2\n\n## Session\n\n- id: 20261122-100000\n- status: running\n- phase: writing\n- iteration: 1\n- task: T1\n")
	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
		t.Fatalf("outcome %+v", out)
	}
	lg, err := mdstate.Open(dir).ReadProgress(100)
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, e := range lg.Recent {
		titles = append(titles, e.Title+" ["+e.Get("outcome")+"]")
	}
	want := "T1: Task number 1 [done]|session 20261122-100000 recovered [recovered]|T2: Task number 2 [done]|session 20261122-100000 ended [ended (all_done)]"
	if got := strings.Join(titles, "|"); got != want {
		t.Fatalf("entries\n%s\nwant\n%s", got, want)
	}
}

// Killed while ending: the next start ends that session (writing its
// summary only if it is missing) and starts a new one.
func TestKilledWhileEnding(t *testing.T) {
	for _, summaryWritten := range []bool{false, true} {
		dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
		writeTasks(t, dir, "# Tasks\n\n- [x] T1: Task number 1\n- [ ] T2: New work\n\n## Session\n\n- id: 20261122-100000\n- status: running\n- phase: ending\n- iteration: 1\n- reason: all_done\n")
		if summaryWritten {
			if err := mdstate.Open(dir).AppendProgress(mdstate.Entry{Title: "session 20261122-100000 ended", Fields: []mdstate.Field{{Key: "outcome", Value: "ended (all_done)"}}}); err != nil {
				t.Fatal(err)
			}
		}
		co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
		out, _ := runAll(t, t.Context(), co)
		if out.Session.ID == "20261122-100000" {
			t.Fatalf("the ended session was resumed: %+v", out.Session)
		}
		lg, _ := mdstate.Open(dir).ReadProgress(100)
		n := 0
		for _, e := range lg.Recent {
			if e.Title == "session 20261122-100000 ended" {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("summary written before the kill: %v; %d summaries of the old session, want 1", summaryWritten, n)
		}
	}
}

// Killed between a clean end's summary and the session's last save (end
// writes no "ending" first): the session was saved running, as its last
// iteration left it, and its summary is the log's last entry. The next
// start, or a chat's Recover, records it ended for the summary's reason; it
// is not resumed, so there is no "recovered" entry and no second summary.
// The same holds for a paused session a --new-session run was ending.
func TestKilledAfterTheSummary(t *testing.T) {
	const old = "20261122-100000"
	setupAs := func(t *testing.T, status string) string {
		dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
		writeTasks(t, dir, "# Tasks\n\n- [x] T1: Task number 1\n- [ ] T2: New work\n\n## Session\n\n- id: "+old+
			"\n- status: "+status+"\n- iteration: 1\n- done: 1\n")
		p := mdstate.Open(dir)
		for _, e := range []mdstate.Entry{
			{Title: "T1: Task number 1", Fields: []mdstate.Field{{Key: "outcome", Value: "done"}, {Key: "iteration", Value: "1"}}},
			{Title: "session " + old + " ended", Fields: []mdstate.Field{{Key: "outcome", Value: "ended (all_done)"}, {Key: "session", Value: old}}},
		} {
			if err := p.AppendProgress(e); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	count := func(t *testing.T, dir string) (summaries, recovered int) {
		for _, e := range entries(t, dir) {
			switch e.Title {
			case "session " + old + " ended":
				summaries++
			case "session " + old + " recovered":
				recovered++
			}
		}
		return summaries, recovered
	}
	for _, status := range []string{"running", "paused"} {
		t.Run(status, func(t *testing.T) {
			dir := setupAs(t, status)
			fa := &fakeAgent{}
			co := newCoordinator(t, Options{Root: dir, Agent: fa})
			out, _ := runAll(t, t.Context(), co)
			if out.Session.ID == old || out.Reason != StopAllDone || fa.calls() != 1 {
				t.Fatalf("outcome %+v after %d agent calls: want a new session that does T2", out, fa.calls())
			}
			if s, r := count(t, dir); s != 1 || r != 0 {
				t.Fatalf("%d summaries and %d recovered entries of the old session, want 1 and 0", s, r)
			}
		})
	}
	t.Run("recover", func(t *testing.T) {
		dir := setupAs(t, "running")
		co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
		what, err := co.Recover()
		if err != nil || what != "session "+old+" had ended; its end is recorded" {
			t.Fatalf("Recover: %q, %v", what, err)
		}
		tasks, _, _ := loadState(t, dir)
		s, _ := tasks.Session()
		if s == nil || s.ID != old || s.Status != mdstate.SessionEnded || s.Reason != string(StopAllDone) {
			t.Fatalf("session %+v, want %s ended (all_done)", s, old)
		}
		if s, r := count(t, dir); s != 1 || r != 0 {
			t.Fatalf("%d summaries and %d recovered entries of the old session, want 1 and 0", s, r)
		}
	})
}

// TestSessionID: a session's id is its start to the second, or the
// second after the last session's when that one has the id or a later
// one (it started in the same second, or the clock went back).
func TestSessionID(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 500_000_000, time.UTC)
	for _, tc := range []struct {
		last string // "" for no last session
		want string
	}{
		{"", "20261122-100000"},
		{"20261122-095959", "20261122-100000"},
		{"20261122-100000", "20261122-100001"},
		{"20261122-100005", "20261122-100006"},
		{"a person's id", "20261122-100000"},
	} {
		var last *mdstate.Session
		if tc.last != "" {
			last = &mdstate.Session{ID: tc.last}
		}
		if got := sessionID(at, last); got != tc.want {
			t.Errorf("sessionID after %q = %s, want %s", tc.last, got, tc.want)
		}
	}
}

// TestSessionIDsDoNotRepeat: two runs in the same second, on a clock
// that stands still, open two sessions with two ids, and the logs of
// their agents, each the first iteration's on T1 (which the first fails),
// are two files.
func TestSessionIDsDoNotRepeat(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	now := func() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) }
	var ids []string
	for range 2 {
		fa := &fakeAgent{reply: func(int) agent.Result { return agent.Result{Final: "not yet"} }}
		co := newCoordinator(t, Options{Root: dir, Agent: fa, MaxIterations: 1, Now: now})
		out, _ := runAll(t, t.Context(), co)
		ids = append(ids, out.Session.ID)
		co.Close()
	}
	if ids[0] != "20261122-100000" || ids[1] != "20261122-100001" {
		t.Fatalf("session ids %v, want 20261122-100000 and 20261122-100001", ids)
	}
	logs, err := filepath.Glob(filepath.Join(dir, ".ralph", "logs", "*.log"))
	if err != nil || len(logs) != 2 {
		t.Fatalf("agent logs %v (%v), want one a session", logs, err)
	}
}

// Killed after saving an iteration's status and result but before writing
// its entry, for each outcome: the next start writes the entry from the
// result (tokens, cost, duration; for a failure the task's note), so the
// session's totals are the sum of the entries; a failed attempt is not
// counted twice. An entry of the same task and iteration older than the
// save (another session's) does not count as written.
func TestResumeRestoresEntryFromResult(t *testing.T) {
	for _, tc := range []struct {
		box, outcome, note string
		attempts           int
	}{
		{box: "x", outcome: "done"},
		{box: " ", outcome: "failed", note: "the agent ended without <promise>COMPLETE</promise>", attempts: 1},
		{box: "!", outcome: "blocked", note: "needs an API key"},
	} {
		t.Run(tc.outcome, func(t *testing.T) {
			dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
			meta := ""
			if tc.note != "" {
				meta += "  - note: " + tc.note + "\n"
			}
			if tc.attempts > 0 {
				meta += fmt.Sprintf("  - attempts: %d\n", tc.attempts)
			}
			writeTasks(t, dir, "# Tasks\n\n- ["+tc.box+"] T1: Task number 1\n"+meta+"- [ ] T2: Task number 2\n\n## Session\n\n"+
				"- id: 20261122-100000\n- status: running\n- phase: writing\n- iteration: 4\n- task: T1\n"+
				"- tokens: 5000 in, 600 out\n- cost: $0.5000\n- agent: claude (sonnet)\n"+
				"- started: 2026-11-22T10:00:00Z\n- updated: 2026-11-22T10:20:00Z\n"+
				"- result: "+tc.outcome+", 1234 in, 56 out, $0.0789, 42s\n")
			// The same title and iteration, from an older session.
			old := mdstate.Entry{Time: time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC), Title: "T1: Task number 1",
				Fields: []mdstate.Field{{Key: "outcome", Value: "failed"}, {Key: "iteration", Value: "4"}}}
			if err := mdstate.Open(dir).AppendProgress(old); err != nil {
				t.Fatal(err)
			}
			var attempts int64 // T1's, when the first agent starts: done drops them
			fa := &fakeAgent{before: func(n int) {
				if n == 1 {
					attempts = attemptsOf(dir, "T1")
				}
			}}
			co := newCoordinator(t, Options{Root: dir, Agent: fa})
			out, _ := runAll(t, t.Context(), co)
			tasks, s, lg := loadState(t, dir)
			if s.ID != "20261122-100000" || s.Result != nil {
				t.Fatalf("session %+v", s)
			}
			var restored []mdstate.Entry
			for _, e := range lg.Recent[1:] {
				if e.Title == "T1: Task number 1" && e.Get("iteration") == "4" {
					restored = append(restored, e)
				}
			}
			if len(restored) != 1 {
				t.Fatalf("%d entries for iteration 4, want 1: %+v", len(restored), lg.Recent)
			}
			e := restored[0]
			if e.Get("outcome") != tc.outcome || e.Get("tokens") != "1234 in, 56 out" || e.Get("cost") != "$0.0789" ||
				e.Get("duration") != "42s" || e.Get("agent") != "claude (sonnet)" || !strings.HasPrefix(e.Get("note"), "written on recovery") {
				t.Errorf("restored entry %+v", e)
			}
			if tc.note != "" && !strings.HasSuffix(e.Get("note"), "; the task's note: "+tc.note) {
				t.Errorf("restored note %q, want the task's note at its end", e.Get("note"))
			}
			// The session was at 5000/600 with iteration 4 in it; each
			// later iteration adds what fakeAgent reports (100/10).
			if got, want := s.Iteration-4, fa.calls(); got != want {
				t.Errorf("iterations after resume %d, agent calls %d", got, want)
			}
			if s.TokensIn != 5000+100*int64(fa.calls()) || s.TokensOut != 600+10*int64(fa.calls()) {
				t.Errorf("session tokens %d in, %d out after %d calls", s.TokensIn, s.TokensOut, fa.calls())
			}
			if tc.outcome == "failed" {
				// Put back to pending by the failed iteration itself, with
				// its attempt counted once; resume adds none.
				if out.Reason != StopAllDone || attempts != 1 || tasks.Find("T1").Attempts != 0 {
					t.Errorf("outcome %+v, T1 attempts %d when it ran again, want all done and 1", out, attempts)
				}
			}
		})
	}
}

// A kill after the entry was written (phase still "writing"): nothing is
// written twice, even when a person renamed the task before the restart.
func TestResumeEntryAlreadyWritten(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	writeTasks(t, dir, "# Tasks\n\n- [x] T1: Task number 1, renamed\n\n## Session\n\n- id: 20261122-100000\n- status: running\n- phase: writing\n"+
		"- iteration: 1\n- task: T1\n- tokens: 10 in, 1 out\n- updated: 2026-11-22T10:20:00Z\n- result: done, 10 in, 1 out, $0.0000, 1s\n")
	e := mdstate.Entry{Time: time.Date(2026, 11, 22, 10, 20, 0, 0, time.UTC), Title: "T1: Task number 1",
		Fields: []mdstate.Field{{Key: "outcome", Value: "done"}, {Key: "iteration", Value: "1"}, {Key: "tokens", Value: "10 in, 1 out"}}}
	if err := mdstate.Open(dir).AppendProgress(e); err != nil {
		t.Fatal(err)
	}
	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
	runAll(t, t.Context(), co)
	_, _, lg := loadState(t, dir)
	if n := lg.Entries; n != 1 {
		t.Fatalf("%d task entries, want 1: %+v", n, lg.Recent)
	}
}
