//go:build linux

package coordinator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/mdstate"
)

// A failure between a task's status and its report (here AGENT.md turns
// read-only while the agent works, after the check before it started)
// loses nothing: the run stops with the file's message, and the next
// start files the learning and the to-do and writes the entry with the
// summary and decisions, each once.
func TestReportFinishedOnRecovery(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2), "AGENT.md": "# Agent\n\n## Learnings\n\n- Old one.\n", "RALPH_TODO.md": mdstate.Templates[mdstate.TodoFile]})
	agentMD := filepath.Join(dir, mdstate.AgentFile)
	fa := &fakeAgent{
		before: func(n int) {
			if n == 1 {
				if err := os.Chmod(agentMD, 0o444); err != nil {
					t.Error(err)
				}
			}
		},
		reply: func(n int) agent.Result {
			if n > 1 {
				return agent.Result{Final: "<promise>COMPLETE</promise>"}
			}
			return agent.Result{Final: "Built the cart.\n<learning>Run make first.</learning>\n<todo>Price the cart.</todo>\n" +
				"<decision>Kept floats.</decision>\n<promise>COMPLETE</promise>", Usage: agent.Usage{In: 100, Out: 10}, CostUSD: 0.01}
		},
	}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	_, err := co.Run(t.Context())
	co.Close()
	if err == nil || !strings.Contains(err.Error(), "AGENT.md: is read-only") {
		t.Fatalf("Run: %v", err)
	}
	p := mdstate.Open(dir)
	tasks, err := p.LoadChecklist(mdstate.TasksKind)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := tasks.Session()
	// The write of T1's outcome began T2 (ahead.go); the error took it
	// back: T2 pending, never tried, the session in T1's phase "writing".
	if status(t, tasks, "T1") != mdstate.Done || s.Phase != mdstate.PhaseWriting || s.Result == nil || s.Result.Task != "" ||
		s.Iteration != 1 || s.Task != "T1" || status(t, tasks, "T2") != mdstate.Pending || tasks.Find("T2").Attempts != 0 {
		t.Fatalf("after the error: T1 %s, T2 %s, session %+v", status(t, tasks, "T1"), status(t, tasks, "T2"), s)
	}
	// The report is kept in the session block, with the result.
	if r := s.Report; r == nil || r.Summary != "Built the cart." || strings.Join(r.Learnings, "|") != "Run make first." ||
		strings.Join(r.Todos, "|") != "Price the cart." || strings.Join(r.Decisions, "|") != "Kept floats." {
		t.Fatalf("report kept %+v", s.Report)
	}

	if err := os.Chmod(agentMD, 0o644); err != nil {
		t.Fatal(err)
	}
	co = newCoordinator(t, Options{Root: dir, Agent: fa})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
		t.Fatalf("after the fix: %+v", out)
	}
	a, err := p.LoadAgent()
	if err != nil || len(a.Learnings) != 2 || a.Learnings[1].Text != "Run make first." {
		t.Errorf("learnings %+v, %v", a.Learnings, err)
	}
	todos, err := p.LoadChecklist(mdstate.TodoKind)
	if err != nil || len(todos.Items()) != 1 || todos.Items()[0].Title != "Price the cart." {
		t.Errorf("to-dos %+v, %v", todos, err)
	}
	tasks, _, log := loadState(t, dir)
	if it := tasks.Find("T1"); it.Status != mdstate.Done || it.Attempts != 0 {
		t.Errorf("T1 %s, %d attempts", it.Status, it.Attempts)
	}
	var t1 []mdstate.Entry
	for _, e := range log.Recent {
		if strings.HasPrefix(e.Title, "T1: ") {
			t1 = append(t1, e)
		}
	}
	if len(t1) != 1 {
		t.Fatalf("%d entries for T1", len(t1))
	}
	if e := t1[0]; e.Get("summary") != "Built the cart." || strings.Join(fieldList(e, "decisions"), "|") != "Kept floats." ||
		e.Get("tokens") != "100 in, 10 out" || !strings.HasPrefix(e.Get("note"), "written on recovery") {
		t.Errorf("T1's entry %+v", e)
	}
	if _, s, _ := loadState(t, dir); s.Report != nil || s.Result != nil {
		t.Errorf("the kept report outlived its entry: %+v", s)
	}
}

// A report an older ralph kept in .ralph/report.json is read for the
// iteration it names, and for no other; the session's own comes first.
func TestReportKeptForOtherIteration(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Dir(keptReportPath(dir)), 0o755); err != nil {
		t.Fatal(err)
	}
	rec := `{"session":"s1","iteration":3,"task":"T2","summary":"old","learnings":["stale"],"guidance":["use tabs"]}`
	if err := os.WriteFile(keptReportPath(dir), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, s := range []mdstate.Session{{ID: "s1", Iteration: 4, Task: "T2"}, {ID: "s2", Iteration: 3, Task: "T2"}, {ID: "s1", Iteration: 3, Task: "T3"}} {
		if k := reportKeptFor(dir, &s); k.Summary != "" || len(k.Learnings) != 0 || k.Guidance != nil {
			t.Errorf("%+v: got %+v", s, k)
		}
	}
	if k := reportKeptFor(dir, &mdstate.Session{ID: "s1", Iteration: 3, Task: "T2"}); k.Summary != "old" || len(k.Learnings) != 1 || len(k.Guidance) != 1 {
		t.Errorf("its own iteration: %+v", k)
	}
	own := &mdstate.IterationReport{Summary: "new"}
	if k := reportKeptFor(dir, &mdstate.Session{ID: "s1", Iteration: 3, Task: "T2", Report: own}); k != own {
		t.Errorf("with the session's own: %+v", k)
	}
}

// Filing the same report twice adds nothing the second time.
func TestFileReportTwice(t *testing.T) {
	dir := initedProject(t, tasksMD(1))
	p := mdstate.Open(dir)
	rep := AgentReport{Learnings: []string{"One.", "Two."}, Todos: []string{"Do this.", "do THIS.", "And that."}}
	for range 2 {
		if _, err := fileReport(p, rep, nil); err != nil {
			t.Fatal(err)
		}
	}
	a, err := p.LoadAgent()
	if err != nil || len(a.Learnings) != 2 {
		t.Errorf("learnings %+v, %v", a, err)
	}
	todos, err := p.LoadChecklist(mdstate.TodoKind)
	if err != nil || len(todos.Items()) != 2 {
		t.Errorf("to-dos %+v, %v", todos.Items(), err)
	}
}

// The report kept in the session block is redacted as the progress entry
// is: a secret in the agent's answer or in a person's guidance it
// answered is not copied into RALPH_TASKS.md. (AGENT.md turns read-only
// while the agent works, so the run stops with the report kept.)
func TestKeptReportRedacted(t *testing.T) {
	const secret = "correct-horse-battery-staple"
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1), "AGENT.md": "# Agent\n\n## Learnings\n"})
	p := mdstate.Open(dir)
	if _, err := p.UpdateChecklist(mdstate.TasksKind, func(e *mdstate.ChecklistEdit) error {
		return e.QueueGuidance("the staging key is " + secret)
	}); err != nil {
		t.Fatal(err)
	}
	fa := &fakeAgent{
		before: func(int) {
			if err := os.Chmod(filepath.Join(dir, mdstate.AgentFile), 0o444); err != nil {
				t.Error(err)
			}
		},
		reply: func(int) agent.Result {
			return agent.Result{Final: "Used " + secret + ".\n<learning>key " + secret + "</learning><promise>COMPLETE</promise>"}
		},
	}
	co := newCoordinator(t, Options{Root: dir, Agent: fa, Secrets: []string{secret}})
	if _, err := co.Run(t.Context()); err == nil {
		t.Fatal("Run succeeded with AGENT.md read-only")
	}
	co.Close()
	data, err := os.ReadFile(filepath.Join(dir, mdstate.TasksFile))
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := p.LoadChecklist(mdstate.TasksKind)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := tasks.Session()
	if strings.Contains(string(data), secret) || s.Report == nil || !strings.Contains(s.Report.Summary, Redacted) ||
		len(s.Report.Guidance) != 1 || !strings.Contains(s.Report.Guidance[0], Redacted) {
		t.Fatalf("RALPH_TASKS.md:\n%s", data)
	}
}
