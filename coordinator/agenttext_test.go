//go:build linux

package coordinator

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/gitctx/gitctxtest"
	"github.com/ralph-dev/ralph/mdstate"
)

// printingAgent prints lines to the raw log a few bytes at a time (so
// that a secret is split across writes), streams each as a text event,
// and ends with final.
type printingAgent struct {
	lines []string
	final string
	err   string // the error text of a failed run
}

func (a *printingAgent) Name() string { return "printer" }

func (a *printingAgent) Run(ctx context.Context, req agent.Request, onEvent func(agent.Event)) (agent.Result, error) {
	for _, l := range append(a.lines, a.final) {
		b := []byte(l + "\n")
		for len(b) > 0 {
			n := min(len(b), 7)
			if _, err := req.RawLog.Write(b[:n]); err != nil {
				return agent.Result{}, err
			}
			b = b[n:]
		}
		onEvent(agent.Event{Kind: agent.EventText, Text: l})
	}
	res := agent.Result{Final: a.final, Usage: agent.Usage{In: 10, Out: 5}}
	if a.err != "" {
		res.IsError, res.ErrorKind, res.ErrorText, res.ExitCode = true, agent.KindCrashed, a.err, 1
	}
	onEvent(agent.Event{Kind: agent.EventResult, Text: res.Final})
	return res, nil
}

// An agent that reports invalid UTF-8 and control characters: the run
// goes on, the text is repaired where it lands, and every file still
// reads.
func TestAgentTextRepaired(t *testing.T) {
	dir := initedProject(t, tasksMD(2))
	pa := &printingAgent{
		lines: []string{"bad \xff\xfe output \x1b[31mred\x1b[0m"},
		final: "Sum\xffmary \x1b[2J\n<learning>bad \xff byte\x00 here</learning>\n<todo>to\xc3do</todo>\n" +
			"<decision>chose \x07 bell</decision>\n<promise>COMPLETE</promise>",
	}
	co := newCoordinator(t, Options{Root: dir, Agent: pa})
	out, evs := runAll(t, t.Context(), co)
	if out.Reason != StopAllDone || out.TasksDone != 2 {
		t.Fatalf("outcome %+v", out)
	}
	_, _, log := loadState(t, dir)
	p := mdstate.Open(dir)
	a, err := p.LoadAgent()
	if err != nil || len(a.Learnings) != 1 || a.Learnings[0].Text != "bad \uFFFD byte\uFFFD here" {
		t.Errorf("AGENT.md: %+v, %v", a, err)
	}
	todos, err := p.LoadChecklist(mdstate.TodoKind)
	if err != nil || len(todos.Items()) != 1 || todos.Items()[0].Title != "to\uFFFDdo" {
		t.Errorf("RALPH_TODO.md: %v", err)
	}
	e := log.Recent[0]
	if got := e.Get("summary"); got != "Sum\uFFFDmary \uFFFD[2J" {
		t.Errorf("summary %q", got)
	}
	if got := fieldList(e, "decisions"); len(got) != 1 || got[0] != "chose \uFFFD bell" {
		t.Errorf("decisions %q", got)
	}
	for _, ev := range evs {
		if !utf8.ValidString(ev.Text) || strings.ContainsAny(ev.Text, "\x00\x07\x1b") {
			t.Errorf("event %s carries %q", ev.Kind, ev.Text)
		}
	}

	// An error text with bad bytes lands in a task's note, repaired.
	dir = projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	co = newCoordinator(t, Options{Root: dir, Agent: &printingAgent{final: "x", err: "crash \xff\x00"}, MaxAttempts: 1})
	runAll(t, t.Context(), co)
	tasks, _, _ := loadState(t, dir)
	if it := tasks.Find("T1"); it.Status != mdstate.Skipped || !strings.Contains(it.Notes[0], "crash \uFFFD\uFFFD") {
		t.Errorf("T1 %s, notes %q", it.Status, it.Notes)
	}
}

// The values of secrets, given and in the children's environment, and
// tokens of a well-known shape never reach a file, a log, an event or a
// commit message, however they are split on the way.
func TestSecretsNeverWritten(t *testing.T) {
	gitctxtest.Isolate(t)
	given := "correct-horse-battery-staple"
	inEnv := "sk-proj-" + strings.Repeat("Zq7", 12)
	shaped := "ghp_" + strings.Repeat("x1", 18)
	secrets := []string{given, inEnv, shaped}
	dir := initedProject(t, tasksMD(1))
	gitctxtest.Git(t, dir, "init", "-q", "-b", "main")
	gitctxtest.Commit(t, dir, "base", 1)
	all := strings.Join(secrets, " and ")
	pa := &printingAgent{
		lines: []string{"env: " + all, `{"json":"` + all + `"}`},
		final: "I used " + all + ".\n<learning>key " + given + "</learning><todo>rotate " + inEnv + "</todo>" +
			"<decision>kept " + shaped + "</decision><promise>COMPLETE</promise>",
	}
	// A task whose title holds a secret (a person pasted it, or an
	// earlier agent wrote it there): the commit message must not carry it.
	gitctxtest.WriteFile(t, dir, mdstate.TasksFile, "# Tasks\n\n- [ ] T1: Task "+shaped+"\n")
	opts := Options{Root: dir, Agent: pa, Secrets: []string{given},
		Env: append(os.Environ(), "OPENAI_API_KEY="+inEnv), Commit: true}
	co := newCoordinator(t, opts)
	out, evs := runAll(t, t.Context(), co)
	if out.Reason != StopAllDone {
		t.Fatalf("outcome %+v", out)
	}
	for _, ev := range evs {
		for _, s := range secrets {
			if strings.Contains(ev.Text+ev.Reason+ev.Tool, s) {
				t.Errorf("event %s carries a secret: %q", ev.Kind, ev.Text)
			}
		}
	}
	redacted := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if d.Name() == mdstate.TasksFile || d.Name() == "spare-"+mdstate.TasksFile {
			return nil // the person's title (the spare is a former version of the file)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if strings.Contains(string(data), s) {
				t.Errorf("%s holds a secret", path)
			}
		}
		if strings.Contains(string(data), Redacted) {
			redacted++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// AGENT.md, RALPH_TODO.md, the progress log and the raw log.
	if redacted < 4 {
		t.Errorf("the placeholder is in %d files", redacted)
	}
	msg := gitctxtest.Git(t, dir, "log", "--format=%B")
	if strings.Contains(msg, shaped) || !strings.Contains(msg, "ralph: T1 Task "+Redacted) {
		t.Errorf("commit messages:\n%s", msg)
	}
}

// Agents' learnings, to-dos and reasons are bounded: a learning of
// megabytes would make AGENT.md a file ralph refuses to read.
func TestReportItemsBounded(t *testing.T) {
	huge := strings.Repeat("é", 600<<10) // 1.2 MB, over mdstate.MaxLineBytes
	dir := initedProject(t, tasksMD(1))
	co := newCoordinator(t, Options{Root: dir, Agent: &printingAgent{final: "<learning>" + huge + "</learning><promise>COMPLETE</promise>"}})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
		t.Fatalf("outcome %+v", out)
	}
	a, err := mdstate.Open(dir).LoadAgent()
	if err != nil || len(a.Learnings) != 1 || len(a.Learnings[0].Text) > maxReportItem || !strings.HasSuffix(a.Learnings[0].Text, "é…") {
		t.Fatalf("AGENT.md: %v", err)
	}
}
