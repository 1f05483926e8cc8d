package mdstate

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func testSession() *Session {
	return &Session{
		ID: "20261122-100312", Status: SessionRunning, Phase: PhaseAgent, Iteration: 3, MaxIterations: 20,
		Task: "T2", TokensIn: 12034, TokensOut: 3201, CostUSD: 0.4123, Done: 2, Commits: 1, Baseline: "3f9c2e1a",
		Agent: "claude", Model: "sonnet",
		Started: time.Date(2026, 11, 22, 10, 3, 12, 0, time.UTC), Updated: time.Date(2026, 11, 22, 10, 15, 40, 0, time.UTC),
		PID: 4242, Child: 4250, Result: &IterationResult{Outcome: "failed", TokensIn: 1200, TokensOut: 300, CostUSD: 0.0123, Duration: 72 * time.Second},
		Extra: []Field{{Key: "note", Value: "kept"}},
	}
}

func sessionEdit(t *testing.T, src string, fn func(e *ChecklistEdit) error) string {
	t.Helper()
	c, err := ParseChecklist(TasksKind, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	e := c.Edit()
	if err := fn(e); err != nil {
		t.Fatal(err)
	}
	out, after, err := e.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	got, warns := after.Session()
	if len(warns) > 0 {
		t.Fatalf("warnings: %v", warns)
	}
	if got == nil {
		t.Fatal("no session read back")
	}
	return string(out)
}

func TestSetSessionAppendsSection(t *testing.T) {
	const src = "# Tasks\n\n- [ ] T1: One\n- [ ] T2: Two\n"
	out := sessionEdit(t, src, func(e *ChecklistEdit) error { return e.SetSession(testSession()) })
	want := src + "\n## Session\n\n" + string(testSession().Render("\n"))
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
}

func TestSetSessionReplacesOnlyItsList(t *testing.T) {
	const before = "# Tasks\n\n- [ ] T1: One\n\n## Session\n\nWritten by ralph; edit with care.\n\n* status: paused\n* iteration: 1\n\n## Later\n\nProse kept.\n"
	s := testSession()
	out := sessionEdit(t, before, func(e *ChecklistEdit) error { return e.SetSession(s) })
	// s.Extra is not written into an existing list: the file's own
	// items are the truth for keys ralph does not own. The list keeps its
	// bullet.
	want := "# Tasks\n\n- [ ] T1: One\n\n## Session\n\nWritten by ralph; edit with care.\n\n" + strings.ReplaceAll(string(s.render("\n")), "- ", "* ") + "\n## Later\n\nProse kept.\n"
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
}

// The coordinator marks a task in progress and records the phase in one
// atomic write.
func TestSetSessionWithStatusChange(t *testing.T) {
	const src = "# Tasks\r\n\r\n- [ ] T1: One\r\n\r\n## Session\r\n\r\n- status: running\r\n"
	out := sessionEdit(t, src, func(e *ChecklistEdit) error {
		if err := e.SetStatus("T1", InProgress); err != nil {
			return err
		}
		return e.SetSession(testSession())
	})
	if !strings.HasPrefix(out, "# Tasks\r\n\r\n- [/] T1: One\r\n\r\n## Session\r\n\r\n- id: 20261122-100312\r\n") {
		t.Fatalf("got %q", out)
	}
	if strings.Contains(strings.ReplaceAll(out, "\r\n", ""), "\n") {
		t.Fatalf("a bare LF crept into a CRLF file: %q", out)
	}
}

func TestSessionRoundTrip(t *testing.T) {
	s := testSession()
	out := sessionEdit(t, "- [ ] T1: One\n", func(e *ChecklistEdit) error { return e.SetSession(s) })
	c, _ := ParseChecklist(TasksKind, []byte(out))
	got, _ := c.Session()
	got.Line = 0
	if string(got.Render("\n")) != string(s.Render("\n")) || got.Iteration != 3 || got.MaxIterations != 20 ||
		got.TokensIn != 12034 || got.CostUSD != 0.4123 || got.Model != "sonnet" || got.Child != 4250 || !got.Started.Equal(s.Started) ||
		got.Result == nil || *got.Result != *s.Result || got.Done != 2 || got.Commits != 1 {
		t.Fatalf("read back %+v\nwant %+v", got, s)
	}
}

// The result of an earlier iteration than the session's, saved by the
// write that began the next, names its iteration and task, and reads back
// so; either form is read, and a malformed name is a warning.
func TestSessionNamedResult(t *testing.T) {
	s := testSession()
	s.Result = &IterationResult{Outcome: "done", TokensIn: 12, TokensOut: 3, CostUSD: 0.0012, Duration: 2 * time.Second, Iteration: 2, Task: "T1"}
	out := sessionEdit(t, "- [ ] T1: One\n", func(e *ChecklistEdit) error { return e.SetSession(s) })
	if !strings.Contains(out, "- result: iteration 2, T1: done, 12 in, 3 out, $0.0012, 2s\n") {
		t.Fatalf("written:\n%s", out)
	}
	c, _ := ParseChecklist(TasksKind, []byte(out))
	got, _ := c.Session()
	if got.Result == nil || *got.Result != *s.Result {
		t.Fatalf("read back %+v, want %+v", got.Result, s.Result)
	}
	for _, bad := range []string{"iteration two, T1: done, 1 in, 1 out, $0, 1s", "iteration 2: done, 1 in, 1 out, $0, 1s",
		"iteration 2, : done, 1 in, 1 out, $0, 1s", "round 2, T1: done, 1 in, 1 out, $0, 1s", "iteration 0, T1: done, 1 in, 1 out, $0, 1s",
		"iteration 2, T1: done, 1 in, 1 out"} {
		c, _ := ParseChecklist(TasksKind, []byte("## Session\n\n- status: running\n- result: "+bad+"\n"))
		s, warns := c.Session()
		if s == nil || s.Result != nil || len(warns) != 1 {
			t.Errorf("%q: result %+v, warnings %v", bad, s.Result, warns)
		}
	}
}

// The report kept with a result is written one line a part and read back
// as it was, whatever its text holds; a list that is not one warns, and
// a part left empty is unset.
func TestSessionReport(t *testing.T) {
	s := testSession()
	s.Report = &IterationReport{Summary: `Built the "cart" <fast>, née Panier | ok`,
		Learnings: []string{"Run `make` first.", `Paths use \ on Windows`}, Todos: []string{"Price it: [x] or not"},
		Decisions: []string{"Kept floats; see #12"}, Guidance: []string{"Use tabs,\nnot spaces."}}
	out := sessionEdit(t, "- [ ] T1: One\n", func(e *ChecklistEdit) error { return e.SetSession(s) })
	for _, line := range []string{"- summary: Built the \"cart\" <fast>, née Panier | ok\n", "- learnings: [\"Run `make` first.\",\"Paths use \\\\ on Windows\"]\n",
		"- guidance: [\"Use tabs,\\nnot spaces.\"]\n"} {
		if !strings.Contains(out, line) {
			t.Errorf("no line %q in:\n%s", line, out)
		}
	}
	c, _ := ParseChecklist(TasksKind, []byte(out))
	got, warns := c.Session()
	if len(warns) != 0 || !reflect.DeepEqual(got.Report, s.Report) {
		t.Fatalf("read back %+v (warnings %v), want %+v", got.Report, warns, s.Report)
	}
	// Only a summary; then none.
	s.Report = &IterationReport{Summary: "Done."}
	out = sessionEdit(t, out, func(e *ChecklistEdit) error { return e.SetSession(s) })
	if c, _ = ParseChecklist(TasksKind, []byte(out)); !reflect.DeepEqual(must(c.Session()).Report, s.Report) || strings.Contains(out, "learnings:") {
		t.Fatalf("summary only:\n%s", out)
	}
	s.Report = nil
	out = sessionEdit(t, out, func(e *ChecklistEdit) error { return e.SetSession(s) })
	if c, _ = ParseChecklist(TasksKind, []byte(out)); must(c.Session()).Report != nil || strings.Contains(out, "summary:") {
		t.Fatalf("no report:\n%s", out)
	}
	c, _ = ParseChecklist(TasksKind, []byte("## Session\n\n- status: running\n- todos: Price the cart.\n- summary: Done.\n- learnings:\n"))
	got, warns = c.Session()
	if len(warns) != 1 || got.Report == nil || got.Report.Summary != "Done." || got.Report.Todos != nil || got.Report.Learnings != nil {
		t.Fatalf("report %+v, warnings %v", got.Report, warns)
	}
}

// must is the session of Checklist.Session, without its warnings.
func must(s *Session, _ []Warning) *Session { return s }

func TestSessionBadValuesWarn(t *testing.T) {
	c, _ := ParseChecklist(TasksKind, []byte("## Session\n\n- iteration: three\n- status: running\n- result: done, 12 in\n- result: done, x in, 1 out, $0, 1s\n"))
	s, warns := c.Session()
	if s == nil || s.Status != SessionRunning || s.Result != nil || len(warns) != 3 || warns[0].Line != 3 || warns[1].Line != 5 {
		t.Fatalf("session %+v, warnings %v", s, warns)
	}
}

// What a person writes in the session list stays, word for word and in
// place, through ralph's writes: ralph rewrites only its own items' lines
// (emptying the line of one it no longer writes when something is under
// it) and adds new ones after its last.
func TestSetSessionKeepsPersonsText(t *testing.T) {
	const before = "# Tasks\n\n- [ ] T1: One\n\n## Session\n\n" +
		"- id: 20261122-100312\n" +
		"- status: running\n" +
		"  Ana: I stopped it on purpose, see the chat.\n" +
		"- owner: ana\n" +
		"- child: 4250\n" +
		"A lazy line right under child.\n" +
		"- check the logs before resuming\n" +
		"  - nested detail\n" +
		"- iteration: 3\n"
	s := &Session{ID: "20261122-100312", Status: SessionPaused, Iteration: 4, Reason: "interrupted"}
	out := sessionEdit(t, before, func(e *ChecklistEdit) error { return e.SetSession(s) })
	want := "# Tasks\n\n- [ ] T1: One\n\n## Session\n\n" +
		"- id: 20261122-100312\n" +
		"- status: paused\n" +
		"  Ana: I stopped it on purpose, see the chat.\n" +
		"- owner: ana\n" +
		"- child:\n" +
		"A lazy line right under child.\n" +
		"- check the logs before resuming\n" +
		"  - nested detail\n" +
		"- iteration: 4\n" +
		"- tokens: 0 in, 0 out\n" +
		"- cost: $0.0000\n" +
		"- reason: interrupted\n"
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	c, _ := ParseChecklist(TasksKind, []byte(out))
	got, _ := c.Session()
	if got.Status != SessionPaused || got.Iteration != 4 || got.Reason != "interrupted" || len(got.Extra) != 1 || got.Extra[0].Key != "owner" || got.Extra[0].Value != "ana" {
		t.Fatalf("read back %+v", got)
	}
	// The next write, of the same session, changes nothing.
	if again := sessionEdit(t, out, func(e *ChecklistEdit) error { return e.SetSession(s) }); again != out {
		t.Fatalf("a second write changed the file:\n%s", again)
	}
	// CRLF files keep CRLF, the person's lines included.
	crlf := strings.ReplaceAll(before, "\n", "\r\n")
	if got := sessionEdit(t, crlf, func(e *ChecklistEdit) error { return e.SetSession(s) }); got != strings.ReplaceAll(want, "\n", "\r\n") {
		t.Fatalf("CRLF: got %q", got)
	}
}

// writeSessionTwice writes s into in: the result must be want, and a
// second write of s must change nothing.
func writeSessionTwice(t *testing.T, s *Session, in, want string) {
	t.Helper()
	out := sessionEdit(t, in, func(e *ChecklistEdit) error { return e.SetSession(s) })
	if out != want {
		t.Fatalf("got\n%q\nwant\n%q", out, want)
	}
	if again := sessionEdit(t, out, func(e *ChecklistEdit) error { return e.SetSession(s) }); again != out {
		t.Fatalf("a second write changed the file:\n%q", again)
	}
}

// Cases from a review: each file is written twice with the same session,
// and must keep every line a person wrote, in place, and settle at once.
func TestSetSessionInPlace(t *testing.T) {
	s := &Session{ID: "X1", Status: SessionPaused, Iteration: 4, Reason: "interrupted"}
	for _, tc := range []struct{ name, in, want string }{
		{"a quote's empty last line",
			"## Session\n\n- status: running\n  > quote\n  >\n- owner: ana\n",
			"## Session\n\n- id: X1\n- status: paused\n  > quote\n  >\n- iteration: 4\n- tokens: 0 in, 0 out\n- cost: $0.0000\n- reason: interrupted\n- owner: ana\n"},
		{"a loose list keeps its blank lines",
			"## Session\n\n- status: running\n\n- owner: ana\n\n- iteration: 3\n",
			"## Session\n\n- id: X1\n- status: paused\n\n- owner: ana\n\n- iteration: 4\n- tokens: 0 in, 0 out\n- cost: $0.0000\n- reason: interrupted\n"},
		{"an ordered list",
			"## Session\n\n1. status: running\n2. owner: ana\n",
			"## Session\n\n1. id: X1\n1. status: paused\n1. iteration: 4\n1. tokens: 0 in, 0 out\n1. cost: $0.0000\n1. reason: interrupted\n2. owner: ana\n"},
		{"a second list in the section is not the session's",
			"## Session\n\n- status: running\n\nNotes:\n\n- Task: remember to rebase\n",
			"## Session\n\n- id: X1\n- status: paused\n- iteration: 4\n- tokens: 0 in, 0 out\n- cost: $0.0000\n- reason: interrupted\n\nNotes:\n\n- Task: remember to rebase\n"},
		{"a task added below the session",
			"# Tasks\n\n- [ ] T1: One\n\n## Session\n\n- status: running\n- iteration: 3\n\n- [ ] T2: Write docs\n",
			"# Tasks\n\n- [ ] T1: One\n\n## Session\n\n- id: X1\n- status: paused\n- iteration: 4\n- tokens: 0 in, 0 out\n- cost: $0.0000\n- reason: interrupted\n\n- [ ] T2: Write docs\n"},
	} {
		t.Run(tc.name, func(t *testing.T) { writeSessionTwice(t, s, tc.in, tc.want) })
	}
	// The coordinator's usual write, a task's status with the session, on
	// a task a person added below the session list.
	const in = "# Tasks\n\n- [ ] T1: One\n\n## Session\n\n- status: running\n- iteration: 3\n\n- [ ] Write docs\n"
	out := sessionEdit(t, in, func(e *ChecklistEdit) error {
		if err := e.SetStatus("T2", InProgress); err != nil {
			return err
		}
		return e.SetSession(s)
	})
	if !strings.HasSuffix(out, "- reason: interrupted\n\n- [/] T2: Write docs\n") {
		t.Fatalf("got %q", out)
	}
}

// A line with one of ralph's keys but a value ralph cannot read is a
// person's: it stays, with a warning, and ralph writes its own line.
func TestSetSessionKeepsUnreadableLine(t *testing.T) {
	const in = "## Session\n\n- status: running\n- done: the docs, with Ana\n"
	c, _ := ParseChecklist(TasksKind, []byte(in))
	e := c.Edit()
	if err := e.SetSession(&Session{ID: "X1", Status: SessionPaused, Done: 2}); err != nil {
		t.Fatal(err)
	}
	out, after, err := e.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	want := "## Session\n\n- id: X1\n- status: paused\n- iteration: 0\n- tokens: 0 in, 0 out\n- cost: $0.0000\n- done: 2\n- done: the docs, with Ana\n"
	if string(out) != want {
		t.Fatalf("got\n%q\nwant\n%q", out, want)
	}
	s, warns := after.Session()
	if s.Done != 2 || len(warns) != 1 || !strings.Contains(warns[0].Message, `done "the docs, with Ana" is not a count`) {
		t.Fatalf("session %+v, warnings %v", s, warns)
	}
}

// More cases from a second review: a dropped item with text under it, a
// first item with a nested list, and a person's list above ralph's.
func TestSetSessionDropsSafely(t *testing.T) {
	s := &Session{ID: "X1", Status: SessionRunning, Iteration: 4}
	for _, tc := range []struct{ name, in, want string }{
		{"a dropped item with a lazy line under it, in a loose list",
			"## Session\n\n- id: X1\n\n- reason: interrupted\nsee log\n\n- status: running\n",
			"## Session\n\n- id: X1\n\n- reason:\nsee log\n\n- status: running\n- iteration: 4\n- tokens: 0 in, 0 out\n- cost: $0.0000\n"},
		{"a dropped first item with a nested list",
			"## Session\n\n- result: done, 1 in, 1 out, $0.0000, 1s\n  - status: paused\n- id: X1\n- status: running\n",
			"## Session\n\n- result:\n  - status: paused\n- id: X1\n- status: running\n- iteration: 4\n- tokens: 0 in, 0 out\n- cost: $0.0000\n"},
		{"a person's list above ralph's",
			"## Session\n\nTo check:\n\n- the CI\n\nralph's block:\n\n- id: X1\n- status: paused\n",
			"## Session\n\nTo check:\n\n- the CI\n\nralph's block:\n\n- id: X1\n- status: running\n- iteration: 4\n- tokens: 0 in, 0 out\n- cost: $0.0000\n"},
	} {
		t.Run(tc.name, func(t *testing.T) { writeSessionTwice(t, s, tc.in, tc.want) })
	}
	// The session above a person's list is read from ralph's list.
	c, _ := ParseChecklist(TasksKind, []byte("## Session\n\nTo check:\n\n- the CI\n\n- id: X1\n- status: running\n- task: T1\n"))
	if got, _ := c.Session(); got.ID != "X1" || got.Task != "T1" {
		t.Fatalf("read %+v", got)
	}
}

// A value of ralph's key that ralph cannot read never blocks a write, and
// never changes what ralph reads from its own line.
func TestSetSessionUnreadableValues(t *testing.T) {
	for _, line := range []string{"- cost: ask ana", "- result: see the notes", "- tokens: 5 in, many out", "- iteration: three"} {
		in := "## Session\n\n- id: 1\n- status: running\n" + line + "\n"
		c, _ := ParseChecklist(TasksKind, []byte(in))
		e := c.Edit()
		want := &Session{ID: "1", Status: SessionPaused, Iteration: 7, TokensIn: 3, TokensOut: 2, CostUSD: 0.5, Result: &IterationResult{Outcome: "done", TokensIn: 3, TokensOut: 2}}
		if err := e.SetSession(want); err != nil {
			t.Fatal(err)
		}
		out, after, err := e.Bytes()
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if !strings.Contains(string(out), "\n"+line+"\n") {
			t.Errorf("%q is gone:\n%s", line, out)
		}
		got, _ := after.Session()
		if string(got.render("\n")) != string(want.render("\n")) {
			t.Errorf("%q: read back\n%s", line, got.render("\n"))
		}
	}
}

// Unknown and partial totals are written in words and read back as they
// were: the block of a session whose agents reported nothing, or only
// some of its iterations, reads back byte for byte. Files written before
// partial totals existed read as complete ones.
func TestSessionUnknownAndPartialTotals(t *testing.T) {
	tests := []struct {
		name         string
		s            Session
		tokens, cost string
	}{
		{"reported", Session{ID: "1", TokensIn: 1200, TokensOut: 300, CostUSD: 0.0123}, "1200 in, 300 out", "$0.0123"},
		{"none reported", Session{ID: "1", UsageUnknown: true, CostUnknown: true}, "unknown", "unknown"},
		{"some reported", Session{ID: "1", TokensIn: 1200, TokensOut: 300, CostUSD: 0.0123, UsagePartial: true, CostPartial: true},
			"1200 in, 300 out (not counting iterations that reported none)", "$0.0123 (not counting iterations that reported none)"},
		{"tokens from all, cost from some", Session{ID: "1", TokensIn: 7, TokensOut: 2, CostUSD: 0.5, CostPartial: true},
			"7 in, 2 out", "$0.5000 (not counting iterations that reported none)"},
		{"tokens from some, cost from none", Session{ID: "1", TokensIn: 7, TokensOut: 2, UsagePartial: true, CostUnknown: true},
			"7 in, 2 out (not counting iterations that reported none)", "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := sessionEdit(t, "- [ ] T1: One\n", func(e *ChecklistEdit) error { return e.SetSession(&tt.s) })
			if !strings.Contains(out, "\n- tokens: "+tt.tokens+"\n- cost: "+tt.cost+"\n") {
				t.Fatalf("block:\n%s\nwant tokens %q, cost %q", out, tt.tokens, tt.cost)
			}
			c, _ := ParseChecklist(TasksKind, []byte(out))
			got, warns := c.Session()
			if len(warns) > 0 {
				t.Fatalf("warnings: %v", warns)
			}
			got.Line = 0
			if !reflect.DeepEqual(*got, tt.s) {
				t.Fatalf("read back %+v\nwant %+v", *got, tt.s)
			}
			// Written again, the block is the same bytes.
			again := sessionEdit(t, out, func(e *ChecklistEdit) error { return e.SetSession(got) })
			if again != out {
				t.Fatalf("written again:\n%s\nwas\n%s", again, out)
			}
		})
	}
}

// A block written by an older ralph, before partial totals: its figures
// read as complete.
func TestSessionOldTotalsReadComplete(t *testing.T) {
	c, _ := ParseChecklist(TasksKind, []byte("## Session\n\n- id: 1\n- tokens: 12 in, 3 out\n- cost: $0.42\n"))
	s, warns := c.Session()
	if len(warns) > 0 || s.TokensIn != 12 || s.TokensOut != 3 || s.CostUSD != 0.42 || s.UsagePartial || s.CostPartial || s.UsageUnknown || s.CostUnknown {
		t.Fatalf("session %+v, warnings %v", s, warns)
	}
	// A mark on what does not read is a person's value: a warning, and
	// nothing read from it.
	c, _ = ParseChecklist(TasksKind, []byte("## Session\n\n- id: 1\n- tokens: many (not counting iterations that reported none)\n- cost: unknown (not counting iterations that reported none)\n"))
	s, warns = c.Session()
	if len(warns) != 2 || s.TokensIn != 0 || s.UsagePartial || s.CostPartial || s.CostUnknown {
		t.Fatalf("session %+v, warnings %v", s, warns)
	}
}

// AddUsage and AddCost keep the totals unknown while no iteration has
// reported them, and mark them partial once some have and some have not,
// in either order.
func TestSessionAddUsage(t *testing.T) {
	type iteration struct {
		in, out int64
		usd     float64
		known   bool // tokens and cost both
	}
	claude := iteration{in: 1200, out: 300, usd: 0.25, known: true}
	exec := iteration{}
	tests := []struct {
		name                string
		iterations          []iteration
		known, partial      bool
		in, out             int64
		usd                 float64
		tokens, costWritten string
	}{
		{"no iteration", nil, true, false, 0, 0, 0, "0 in, 0 out", "$0.0000"},
		{"claude", []iteration{claude, claude}, true, false, 2400, 600, 0.5, "2400 in, 600 out", "$0.5000"},
		{"exec", []iteration{exec, exec}, false, false, 0, 0, 0, "unknown", "unknown"},
		{"claude then exec", []iteration{claude, exec}, true, true, 1200, 300, 0.25, "1200 in, 300 out" + partialMark, "$0.2500" + partialMark},
		{"exec then claude", []iteration{exec, claude}, true, true, 1200, 300, 0.25, "1200 in, 300 out" + partialMark, "$0.2500" + partialMark},
		{"exec, claude, claude", []iteration{exec, claude, claude}, true, true, 2400, 600, 0.5, "2400 in, 600 out" + partialMark, "$0.5000" + partialMark},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Session{ID: "1"}
			for _, it := range tt.iterations {
				s.AddUsage(it.in, it.out, it.known)
				s.AddCost(it.usd, it.known)
			}
			if s.KnownUsage() != tt.known || s.KnownCost() != tt.known || s.UsagePartial != tt.partial || s.CostPartial != tt.partial ||
				s.TokensIn != tt.in || s.TokensOut != tt.out || s.CostUSD != tt.usd {
				t.Fatalf("session %+v", s)
			}
			b := string(s.Render("\n"))
			if !strings.Contains(b, "- tokens: "+tt.tokens+"\n- cost: "+tt.costWritten+"\n") {
				t.Fatalf("block:\n%s", b)
			}
		})
	}
}
