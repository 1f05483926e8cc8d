package mdstate

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// guidanceTexts returns the queued messages of a tasks file.
func guidanceTexts(t *testing.T, src string) []string {
	t.Helper()
	c, err := ParseChecklist(TasksKind, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range c.Guidance() {
		out = append(out, g.Text)
	}
	return out
}

// editTasks applies fn to src and returns the checked result.
func editTasks(t *testing.T, src string, fn func(e *ChecklistEdit) error) string {
	t.Helper()
	c, err := ParseChecklist(TasksKind, []byte(src))
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

func queue(texts ...string) func(e *ChecklistEdit) error {
	return func(e *ChecklistEdit) error {
		for _, s := range texts {
			if err := e.QueueGuidance(s); err != nil {
				return err
			}
		}
		return nil
	}
}

func drop(texts ...string) func(e *ChecklistEdit) error {
	return func(e *ChecklistEdit) error { return e.DropGuidance(texts) }
}

func TestGuidanceRead(t *testing.T) {
	const src = "# Tasks\n\n- [ ] T1: One\n\n" +
		"## Guidance\n\n" +
		"- Use the new logger\n" +
		"- [ ] T2: A task written here stays a task\n" +
		"- A message on\n  two lines\n" +
		"- \\# not a heading\n" +
		"-\n" + // empty: not a message
		"- Holds a task\n  - [ ] T3: Nested task\n" +
		"\nProse between lists.\n\n" +
		"* A second list counts too\n\n" +
		"## Session\n\n- status: running\n\n" +
		"- not guidance: another section\n"
	c, err := ParseChecklist(TasksKind, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []Guidance{
		{Text: "Use the new logger", Line: 7},
		{Text: "A message on two lines", Line: 9},
		{Text: "# not a heading", Line: 11},
		{Text: "A second list counts too", Line: 18},
	}
	if got := c.Guidance(); !slices.Equal(got, want) {
		t.Fatalf("Guidance() = %+v\nwant %+v", got, want)
	}
	var ids []string
	for _, it := range c.Items() {
		ids = append(ids, it.ID)
	}
	if !slices.Equal(ids, []string{"T1", "T2", "T3"}) {
		t.Fatalf("tasks %v", ids)
	}
	if got := guidanceTexts(t, "# Tasks\n\n- Not under the heading\n"); got != nil {
		t.Fatalf("no section: %q", got)
	}
}

func TestQueueGuidance(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{{
		name: "new section at the end",
		src:  "# Tasks\n\n- [ ] T1: One\n",
		want: "# Tasks\n\n- [ ] T1: One\n\n## Guidance\n\n- Use the logger\n",
	}, {
		name: "new section before the session",
		src:  "# Tasks\n\n- [ ] T1: One\n\n## Session\n\n- status: running\n",
		want: "# Tasks\n\n- [ ] T1: One\n\n## Guidance\n\n- Use the logger\n\n## Session\n\n- status: running\n",
	}, {
		name: "new section before a session right below the tasks",
		src:  "# Tasks\n\n- [ ] T1: One\n## Session\n- status: running\n",
		want: "# Tasks\n\n- [ ] T1: One\n\n## Guidance\n\n- Use the logger\n\n## Session\n- status: running\n",
	}, {
		name: "no line ending at the end",
		src:  "# Tasks\n\n- [ ] T1: One",
		want: "# Tasks\n\n- [ ] T1: One\n\n## Guidance\n\n- Use the logger\n",
	}, {
		name: "appended to the list",
		src:  "# Tasks\n\n## Guidance\n\n- First\n\n## Session\n",
		want: "# Tasks\n\n## Guidance\n\n- First\n- Use the logger\n\n## Session\n",
	}, {
		name: "appended to an ordered list, with its marker",
		src:  "## Guidance\n\n3) First\n1) Second\n",
		want: "## Guidance\n\n3) First\n1) Second\n5) Use the logger\n",
	}, {
		name: "appended to the last list holding a message",
		src:  "## Guidance\n\n- First\n\nProse.\n\n1. Second\n\n- [ ] T1: A task\n",
		want: "## Guidance\n\n- First\n\nProse.\n\n1. Second\n2. Use the logger\n\n- [ ] T1: A task\n",
	}, {
		name: "a heading without a list",
		src:  "## Guidance\nKeep these short.\n",
		want: "## Guidance\n\n- Use the logger\n\nKeep these short.\n",
	}, {
		name: "after a task a person wrote below the messages",
		src:  "## Guidance\n\n- First\n- [ ] T1: Typed here\n",
		want: "## Guidance\n\n- First\n- [ ] T1: Typed here\n- Use the logger\n",
	}, {
		name: "CRLF stays CRLF",
		src:  "# Tasks\r\n\r\n- [ ] T1: One\r\n\r\n## Session\r\n\r\n- status: running\r\n",
		want: "# Tasks\r\n\r\n- [ ] T1: One\r\n\r\n## Guidance\r\n\r\n- Use the logger\r\n\r\n## Session\r\n\r\n- status: running\r\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := editTasks(t, tc.src, queue("Use   the\nlogger "))
			if got != tc.want {
				t.Fatalf("got\n%q\nwant\n%q", got, tc.want)
			}
			want := append(guidanceTexts(t, tc.src), "Use the logger")
			if texts := guidanceTexts(t, got); !slices.Equal(texts, want) {
				t.Fatalf("reads back %q, want %q", texts, want)
			}
		})
	}
}

// Messages that would read as markdown after "- " are escaped, and read
// back as queued.
func TestQueueGuidanceEscapes(t *testing.T) {
	texts := []string{
		"# a heading?", "[ ] a task?", "[x] done?", "[!] blocked?", "> a quote?", "---", "- - -", "***",
		"- a list?", "* a list?", "+ a list?", "1. a number", "12) another", "1\\. escaped", "1\\a", "\\ a backslash",
		"\\# escaped by hand", "<!-- a comment?", "```go", "~~~", "| a | table |", "=", "[ref]: http://x",
		"    indented", "T9: looks like an ID", "note: a key", "<div>", "2026-11-22 a date",
	}
	src := "# Tasks\n\n- [ ] T1: One\n"
	out := editTasks(t, src, queue(texts...))
	var want []string
	for _, s := range texts {
		want = append(want, oneLine(s))
	}
	if got := guidanceTexts(t, out); !slices.Equal(got, want) {
		t.Fatalf("reads back\n%q\nwant\n%q\nfile:\n%s", got, want, out)
	}
	c, _ := ParseChecklist(TasksKind, []byte(out))
	if len(c.Items()) != 1 {
		t.Fatalf("the messages made tasks:\n%s", out)
	}
	// Dropping them all leaves the section empty, the rest as it was.
	got := editTasks(t, out, drop(want...))
	if got != src+"\n## Guidance\n\n" {
		t.Fatalf("after dropping all:\n%q", got)
	}
}

func TestQueueGuidanceEmpty(t *testing.T) {
	c, _ := ParseChecklist(TasksKind, []byte("# Tasks\n"))
	if err := c.Edit().QueueGuidance(" \n\t"); err == nil {
		t.Fatal("an empty message was queued")
	}
}

func TestDropGuidance(t *testing.T) {
	const src = "# Tasks\n\n- [ ] T1: One\n\n## Guidance\n\n- First\n- Second\n- First\n- Third\n\n## Session\n\n- status: running\n"
	for _, tc := range []struct {
		name string
		drop []string
		want string
	}{
		{"the first", []string{"First"}, "- Second\n- First\n- Third\n"},
		{"each text removes one", []string{"First", "First"}, "- Second\n- Third\n"},
		{"the last", []string{"Third"}, "- First\n- Second\n- First\n"},
		{"the last two", []string{"Third", "First", "First"}, "- Second\n"},
		{"all", []string{"Third", "Second", "First", "First"}, ""},
		{"the first two and the last", []string{"First", "Second", "Third"}, "- First\n"},
		{"none matches", []string{"Fourth", "first"}, "- First\n- Second\n- First\n- Third\n"},
		{"folded to one line", []string{" Second\n"}, "- First\n- First\n- Third\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := editTasks(t, src, drop(tc.drop...))
			want := strings.Replace(src, "- First\n- Second\n- First\n- Third\n", tc.want, 1)
			if tc.want == "" { // the list goes with the blank line after it
				want = strings.Replace(src, "- First\n- Second\n- First\n- Third\n\n", "", 1)
			}
			if got != want {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestDropGuidanceLooseList(t *testing.T) {
	const src = "## Guidance\n\n- First\n\n- Second\n\n- Third\n\n## Session\n"
	for _, tc := range []struct {
		drop []string
		want string
	}{
		{[]string{"First"}, "## Guidance\n\n- Second\n\n- Third\n\n## Session\n"},
		{[]string{"Second"}, "## Guidance\n\n- First\n\n- Third\n\n## Session\n"},
		{[]string{"Third"}, "## Guidance\n\n- First\n\n- Second\n\n## Session\n"},
		{[]string{"Second", "Third"}, "## Guidance\n\n- First\n\n## Session\n"},
		{[]string{"First", "Second", "Third"}, "## Guidance\n\n## Session\n"},
	} {
		if got := editTasks(t, src, drop(tc.drop...)); got != tc.want {
			t.Errorf("drop %q: got\n%q\nwant\n%q", tc.drop, got, tc.want)
		}
	}
}

// A message a person edited after an agent received it is theirs: it
// stays, and the others go.
func TestDropGuidanceKeepsEditedMessage(t *testing.T) {
	const given = "# Tasks\n\n- [/] T1: One\n\n## Guidance\n\n- Use the logger\n- Keep it short\n"
	received := guidanceTexts(t, given)
	edited := strings.Replace(given, "Use the logger", "Use the new logger, not log.Printf", 1)
	got := editTasks(t, edited, drop(received...))
	if want := "# Tasks\n\n- [/] T1: One\n\n## Guidance\n\n- Use the new logger, not log.Printf\n"; got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// The coordinator's save: messages delivered go, a new one is queued, the
// session is written, and a task's status changes, in one checked edit.
func TestGuidanceWithSessionAndTasks(t *testing.T) {
	const src = "# Tasks\n\n- [/] T1: One\n\n## Guidance\n\n- Delivered\n\n## Session\n\n- status: running\n"
	s := &Session{ID: "20261122-100312", Status: SessionRunning, Phase: PhaseWriting, Iteration: 1, Task: "T1"}
	got := editTasks(t, src, func(e *ChecklistEdit) error {
		if err := e.DropGuidance([]string{"Delivered"}); err != nil {
			return err
		}
		if err := e.QueueGuidance("Queued meanwhile"); err != nil {
			return err
		}
		if err := e.SetStatus("T1", Done); err != nil {
			return err
		}
		return e.SetSession(s)
	})
	want := "# Tasks\n\n- [x] T1: One\n\n## Guidance\n\n- Queued meanwhile\n\n## Session\n\n" + string(s.render("\n"))
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// A task added while messages are queued goes to the task list, not among
// the messages; a task a person wrote after the messages stays a task.
func TestGuidanceAndAddedTasks(t *testing.T) {
	const src = "# Tasks\n\n- [ ] T1: One\n\n## Guidance\n\n- A message\n"
	got := editTasks(t, src, func(e *ChecklistEdit) error {
		_, err := e.Add("Two")
		return err
	})
	if want := "# Tasks\n\n- [ ] T1: One\n- [ ] T2: Two\n\n## Guidance\n\n- A message\n"; got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// A task written by hand right after the message list.
	hand := got + "\n- [ ] Typed after the messages\n"
	out := editTasks(t, hand, func(e *ChecklistEdit) error {
		if _, err := e.Add("Three"); err != nil {
			return err
		}
		return e.QueueGuidance("Another message")
	})
	c, _ := ParseChecklist(TasksKind, []byte(out))
	var titles []string
	for _, it := range c.Items() {
		titles = append(titles, it.ID+" "+it.Title)
	}
	// Three goes to the task list too, above the Guidance section (issue 9).
	if want := []string{"T1 One", "T2 Two", "T4 Three", "T3 Typed after the messages"}; !slices.Equal(titles, want) {
		t.Fatalf("tasks %q, want %q\n%s", titles, want, out)
	}
	if got, want := guidanceTexts(t, out), []string{"A message", "Another message"}; !slices.Equal(got, want) {
		t.Fatalf("guidance %q, want %q\n%s", got, want, out)
	}
}

// Through a project, as the engine's Queue writes it: the rest of the file
// keeps its bytes, and ralph knows the write as its own.
func TestQueueGuidanceThroughProject(t *testing.T) {
	dir := t.TempDir()
	const src = "# Tasks\r\n\r\nSome prose  \r\n\r\n- [ ] T1: One\r\n"
	writeFile(t, filepath.Join(dir, TasksFile), src, 0o600)
	p := Open(dir)
	after, err := p.UpdateChecklist(TasksKind, queue("Prefer small commits"))
	if err != nil {
		t.Fatal(err)
	}
	if g := after.Guidance(); len(g) != 1 || g[0].Text != "Prefer small commits" || g[0].Line != 9 {
		t.Fatalf("Guidance() = %+v", g)
	}
	data, err := os.ReadFile(filepath.Join(dir, TasksFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := src + "\r\n## Guidance\r\n\r\n- Prefer small commits\r\n"; string(data) != want {
		t.Fatalf("got %q\nwant %q", data, want)
	}
	checkOwn(t, p, TasksFile, false, true)
}

// A file that ends inside a code block cannot take a new section: the
// edit is refused, not written wrong.
func TestQueueGuidanceRefusedInOpenBlock(t *testing.T) {
	c, _ := ParseChecklist(TasksKind, []byte("# Tasks\n\n```\n- [ ] not a task\n"))
	e := c.Edit()
	if err := e.QueueGuidance("A message"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Bytes(); !errors.Is(err, ErrVerify) {
		t.Fatalf("Bytes() = %v, want ErrVerify", err)
	}
}

// FuzzGuidance queues a message in any tasks file, and drops one: the
// result reads back with exactly that change (or the edit is refused with
// ErrVerify), no line of the file is lost, and dropping the queued
// message again gives back the messages there were.
func FuzzGuidance(f *testing.F) {
	addCorpusSeeds(f, func(data []byte) {
		for i, text := range []string{"Use the logger", "# a heading?", "[ ] a task?", "1. a number"} {
			f.Add(data, text, uint8(i))
		}
	})
	f.Add([]byte("## Guidance\n\n- a\n\n- b\n\n## Session\n"), "b", uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, text string, variant uint8) {
		c, err := ParseChecklist(TasksKind, data)
		if err != nil {
			return
		}
		base, bc, err := c.Edit().Bytes()
		if err != nil {
			return // writing IDs is FuzzEdits' business
		}
		var before []string
		for _, g := range bc.Guidance() {
			before = append(before, g.Text)
		}
		e := bc.Edit()
		if err := e.QueueGuidance(text); err != nil {
			if messageText(text) != "" {
				t.Fatalf("QueueGuidance(%q): %v", text, err)
			}
			return
		}
		want := append(slices.Clone(before), messageText(text))
		dropping := variant%2 == 1 && len(before) > 0
		if dropping {
			if err := e.DropGuidance(before[:1]); err != nil {
				t.Fatal(err)
			}
			want = want[1:]
		}
		out, after, err := e.Bytes()
		if err != nil {
			if !errors.Is(err, ErrVerify) || (strictVerify && !knownRefusal(base)) {
				t.Fatalf("the edit fails: %v", err)
			}
			return
		}
		var got []string
		for _, g := range after.Guidance() {
			got = append(got, g.Text)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("guidance %q, want %q", got, want)
		}
		if !dropping {
			have := map[string]int{}
			for _, l := range strings.Split(string(out), "\n") {
				have[strings.TrimRight(l, "\r")]++
			}
			for _, l := range strings.Split(string(base), "\n") {
				l = strings.TrimRight(l, "\r")
				if strings.TrimSpace(l) == "" {
					continue
				}
				if have[l] == 0 {
					t.Fatalf("line %q was lost:\n%s", l, lineDiff(base, out))
				}
				have[l]--
			}
		}
		e = after.Edit()
		if err := e.DropGuidance([]string{text}); err != nil {
			t.Fatal(err)
		}
		_, again, err := e.Bytes()
		if err != nil {
			t.Fatalf("dropping the queued message fails: %v", err)
		}
		got = got[:0]
		for _, g := range again.Guidance() {
			got = append(got, g.Text)
		}
		// Dropping removes the first message with the text, which may be
		// an older one equal to it.
		i := slices.Index(want, messageText(text))
		if w := slices.Delete(slices.Clone(want), i, i+1); !slices.Equal(got, w) {
			t.Fatalf("after dropping %q: guidance %q, want %q", text, got, w)
		}
	})
}
