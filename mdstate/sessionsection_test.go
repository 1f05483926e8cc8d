package mdstate

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// The way a person adds a task without ralph: a checkbox line appended at
// the very end of RALPH_TASKS.md, below the Session section, often with no
// blank line, so that markdown reads it as an item of the session's list
// (issue 9, deliverable 7).
var appendedTaskCases = []struct {
	name     string
	eol      string
	appended string // what the person appends at the end of sessionFile
}{
	{name: "no blank line", eol: "\n", appended: "- [ ] New task\n"},
	{name: "blank line", eol: "\n", appended: "\n- [ ] New task\n"},
	{name: "no final line ending", eol: "\n", appended: "- [ ] New task"},
	{name: "other bullet", eol: "\n", appended: "* [ ] New task\n"},
	{name: "CRLF no blank line", eol: "\r\n", appended: "- [ ] New task\r\n"},
	{name: "CRLF blank line", eol: "\r\n", appended: "\r\n- [ ] New task\r\n"},
}

// sessionFile is a tasks file as a session leaves it.
func sessionFile(eol string) string {
	return strings.ReplaceAll("# Tasks\n\n- [x] T1: Model the cart\n- [ ] T2: Price the cart\n\n## Session\n\n"+
		"- id: 20261122-100312\n- status: ended\n- iteration: 2\n- task: T2\n- tokens: 10 in, 5 out\n- cost: $0.0100\n- reason: no task is ready\n", "\n", eol)
}

// taskTitles lists "ID title" of every task, in file order.
func taskTitles(c *Checklist) []string {
	var out []string
	for _, it := range c.Items() {
		out = append(out, it.ID+" "+it.Title)
	}
	return out
}

func TestAppendedTaskBelowSessionIsATask(t *testing.T) {
	for _, tc := range appendedTaskCases {
		t.Run(tc.name, func(t *testing.T) {
			src := sessionFile(tc.eol) + tc.appended
			c, err := ParseChecklist(TasksKind, []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := taskTitles(c), []string{"T1 Model the cart", "T2 Price the cart", "T3 New task"}; !slices.Equal(got, want) {
				t.Fatalf("tasks %q, want %q", got, want)
			}
			if it := c.Find("T3"); !it.Provisional || it.Status != Pending {
				t.Fatalf("the appended task reads as %+v", it)
			}
			if s, warns := c.Session(); s == nil || s.Status != SessionEnded || len(warns) > 0 {
				t.Fatalf("session %+v, warnings %v", s, warns)
			}
			if next := c.Next(); next == nil || next.ID != "T2" {
				t.Fatalf("next is %+v, want T2", next)
			}
		})
	}
}

// Two writes of the session, the second dropping items the first wrote
// and adding others, leave the person's task as it was (with its ID
// written), where it was.
func TestSetSessionKeepsAppendedTask(t *testing.T) {
	running := &Session{ID: "20261122-100312", Status: SessionRunning, Phase: PhaseAgent, Iteration: 3, Task: "T3",
		TokensIn: 20, TokensOut: 9, CostUSD: 0.02, Agent: "claude", PID: 4242, Child: 4250,
		Updated: time.Date(2026, 11, 22, 10, 15, 40, 0, time.UTC)}
	ended := &Session{ID: "20261122-100312", Status: SessionEnded, Iteration: 3, Done: 1, Reason: "no task is ready",
		Result: &IterationResult{Outcome: "done", TokensIn: 1, TokensOut: 1, CostUSD: 0.0001, Duration: time.Second}}
	for _, tc := range appendedTaskCases {
		t.Run(tc.name, func(t *testing.T) {
			src := sessionFile(tc.eol) + tc.appended
			// Only the ID is inserted into the person's line.
			wantTask := strings.Replace(strings.TrimLeft(tc.appended, "\r\n"), "[ ] ", "[ ] T3: ", 1)
			out := []byte(src)
			for _, s := range []*Session{running, ended, running} {
				out = []byte(sessionEdit(t, string(out), func(e *ChecklistEdit) error { return e.SetSession(s) }))
				if !bytes.HasSuffix(out, []byte(wantTask)) {
					t.Fatalf("the appended task is not kept at the end:\n%q", out)
				}
				c, err := ParseChecklist(TasksKind, out)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := taskTitles(c), []string{"T1 Model the cart", "T2 Price the cart", "T3 New task"}; !slices.Equal(got, want) {
					t.Fatalf("tasks %q, want %q\n%s", got, want, out)
				}
				if it := c.Find("T3"); it.Provisional || it.Status != Pending || it.Body != "" || len(it.Meta) != 0 {
					t.Fatalf("the appended task reads as %+v\n%s", it, out)
				}
				if tc.eol == "\r\n" && bytes.Contains(bytes.ReplaceAll(out, []byte("\r\n"), nil), []byte("\n")) {
					t.Fatalf("a bare LF crept into a CRLF file: %q", out)
				}
			}
		})
	}
}

// After a person's task below the session, `ralph task add` puts the new
// task in the task list, above the Session section, and so does every add
// after it.
func TestAddAfterAppendedTaskGoesToTaskList(t *testing.T) {
	for _, tc := range appendedTaskCases {
		t.Run(tc.name, func(t *testing.T) {
			eol := tc.eol
			src := sessionFile(eol) + tc.appended
			out := editTasks(t, src, func(e *ChecklistEdit) error {
				_, err := e.Add("Ship it", MetaKV{Key: "priority", Value: "1"})
				return err
			})
			want := strings.Replace(src, "- [ ] T2: Price the cart"+eol, "- [ ] T2: Price the cart"+eol+"- [ ] T4: Ship it"+eol+"  - priority: 1"+eol, 1)
			want = strings.Replace(want, "[ ] New task", "[ ] T3: New task", 1)
			if out != want {
				t.Fatalf("got\n%q\nwant\n%q", out, want)
			}
			out = editTasks(t, out, func(e *ChecklistEdit) error {
				_, err := e.Add("And test it")
				return err
			})
			c, err := ParseChecklist(TasksKind, []byte(out))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := taskTitles(c), []string{"T1 Model the cart", "T2 Price the cart", "T4 Ship it", "T5 And test it", "T3 New task"}; !slices.Equal(got, want) {
				t.Fatalf("tasks %q, want %q\n%s", got, want, out)
			}
			if s, _ := c.Session(); s == nil || s.Reason != "no task is ready" {
				t.Fatalf("session %+v\n%s", s, out)
			}
		})
	}
}

// The whole cycle on a real file, as ralph and a person take turns: the
// coordinator writes its session, the person appends a task with their
// editor, the coordinator writes again, and `ralph task add` adds one.
func TestAppendedTaskThroughProject(t *testing.T) {
	p := projectWith(t, TasksFile, []byte("# Tasks\r\n\r\n- [ ] T1: One\r\n"))
	s := &Session{ID: "20261122-100312", Status: SessionRunning, Iteration: 1, Task: "T1"}
	setSession := func(e *ChecklistEdit) error { return e.SetSession(s) }
	if _, err := p.UpdateChecklist(TasksKind, setSession); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p.Path(TasksFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("- [ ] Typed by hand\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	s.Iteration, s.Task = 2, "T2"
	if _, err := p.UpdateChecklist(TasksKind, setSession); err != nil {
		t.Fatal(err)
	}
	c, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error {
		_, err := e.Add("Added by ralph")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "# Tasks\r\n\r\n- [ ] T1: One\r\n- [ ] T3: Added by ralph\r\n\r\n## Session\r\n\r\n" +
		"- id: 20261122-100312\r\n- status: running\r\n- iteration: 2\r\n- task: T2\r\n- tokens: 0 in, 0 out\r\n- cost: $0.0000\r\n" +
		"- [ ] T2: Typed by hand\r\n"
	if got := readFile(t, p.Path(TasksFile)); got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	if got, want := taskTitles(c), []string{"T1 One", "T3 Added by ralph", "T2 Typed by hand"}; !slices.Equal(got, want) {
		t.Fatalf("tasks %q, want %q", got, want)
	}
}

// With no task list, a new task goes before the Session and Guidance
// sections, apart from the text above and the heading below.
func TestAddWithoutTaskList(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{
			name: "only a task below the session",
			src:  "# Tasks\n\n## Session\n\n- status: ended\n- [ ] Hand\n",
			want: "# Tasks\n\n- [ ] T2: New\n\n## Session\n\n- status: ended\n- [ ] T1: Hand\n",
		},
		{
			name: "prose right above",
			src:  "# Tasks\nSome prose.\n## Guidance\n\n- A message\n- [ ] Hand\n\n## Session\n\n- status: ended\n",
			want: "# Tasks\nSome prose.\n\n- [ ] T2: New\n\n## Guidance\n\n- A message\n- [ ] T1: Hand\n\n## Session\n\n- status: ended\n",
		},
		{
			name: "setext session heading",
			src:  "Session\n-------\n\n- status: ended\n",
			want: "- [ ] T1: New\n\nSession\n-------\n\n- status: ended\n",
		},
		{
			name: "CRLF",
			src:  "# Tasks\r\n\r\n## Session\r\n\r\n- status: ended\r\n",
			want: "# Tasks\r\n\r\n- [ ] T1: New\r\n\r\n## Session\r\n\r\n- status: ended\r\n",
		},
		{
			name: "no section",
			src:  "# Tasks\n\nNothing yet.\n",
			want: "# Tasks\n\nNothing yet.\n\n- [ ] T1: New\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := editTasks(t, tc.src, func(e *ChecklistEdit) error {
				_, err := e.Add("New")
				return err
			})
			if got != tc.want {
				t.Fatalf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// A numbered task list goes on counting when tasks below the session are
// numbered by another list.
func TestAddKeepsTaskListNumbering(t *testing.T) {
	const src = "# Tasks\n\n1. [ ] T1: One\n2. [ ] T2: Two\n\n## Session\n\n- status: ended\n\n1. [ ] Hand\n"
	got := editTasks(t, src, func(e *ChecklistEdit) error {
		for _, title := range []string{"Three", "Four"} {
			if _, err := e.Add(title); err != nil {
				return err
			}
		}
		return nil
	})
	want := "# Tasks\n\n1. [ ] T1: One\n2. [ ] T2: Two\n3. [ ] T4: Three\n4. [ ] T5: Four\n\n## Session\n\n- status: ended\n\n1. [ ] T3: Hand\n"
	if got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}
