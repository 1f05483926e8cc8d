package mdstate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ralph-dev/ralph/mdstate"
)

// dropTasks applies fn to a tasks file and returns the checked result.
func dropTasks(t *testing.T, src string, fn func(e *mdstate.ChecklistEdit) error) (string, error) {
	t.Helper()
	c, err := mdstate.ParseChecklist(mdstate.TasksKind, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	e := c.Edit()
	if err := fn(e); err != nil {
		return "", err
	}
	out, _, err := e.Bytes()
	return string(out), err
}

func TestDropNotesAndAttempts(t *testing.T) {
	const src = "# Tasks\n\n" +
		"- [-] T1: Parse the files\n" +
		"  - attempts: 3\n" +
		"  - note: ask Sam about CRLF\n" +
		"  - note: the agent crashed (exit code 3): boom\n" +
		"  - note: a note wrapped\n    onto two lines\n" +
		"  - owner: sam\n" +
		"  - note: failed 2 times, last at 2026-11-21T10:00:00Z: no marker; skipped after 3 failed attempts\n" +
		"\n" +
		"  The description stays.\n" +
		"- [ ] T2: Write the docs\n" +
		"  - attempts: 1\n"
	tests := []struct {
		name string
		fn   func(e *mdstate.ChecklistEdit) error
		want string
	}{
		{"done: failures and attempts go, the rest stays", func(e *mdstate.ChecklistEdit) error {
			return errors.Join(e.SetStatus("T1", mdstate.Done), e.DropNote("T1", 1), e.DropNote("T1", 3),
				e.DropNote("T1", 3), // twice: once
				e.DropMeta("T1", "attempts"))
		}, "# Tasks\n\n" +
			"- [x] T1: Parse the files\n" +
			"  - note: ask Sam about CRLF\n" +
			"  - note: a note wrapped\n    onto two lines\n" +
			"  - owner: sam\n" +
			"\n" +
			"  The description stays.\n" +
			"- [ ] T2: Write the docs\n" +
			"  - attempts: 1\n"},
		{"a wrapped note, the whole item", func(e *mdstate.ChecklistEdit) error {
			return e.DropNote("T1", 2)
		}, strings.Replace(src, "  - note: a note wrapped\n    onto two lines\n", "", 1)},
		{"a repeated failure: the old note out, the merged one last", func(e *mdstate.ChecklistEdit) error {
			return errors.Join(e.DropNote("T1", 3), e.SetMeta("T1", "attempts", "4"),
				e.AddMeta("T1", "note", "failed 3 times, last at 2026-11-22T10:00:00Z: no marker"))
		}, strings.Replace(strings.Replace(src, "attempts: 3", "attempts: 4", 1),
			"  - note: failed 2 times, last at 2026-11-21T10:00:00Z: no marker; skipped after 3 failed attempts\n",
			"  - note: failed 3 times, last at 2026-11-22T10:00:00Z: no marker\n", 1)},
		{"earlier drops shift the later notes", func(e *mdstate.ChecklistEdit) error {
			return errors.Join(e.DropNote("T1", 0), e.DropNote("T1", 1), e.DropNote("T1", 2))
		}, strings.Replace(src, "  - note: ask Sam about CRLF\n  - note: the agent crashed (exit code 3): boom\n  - note: a note wrapped\n    onto two lines\n", "", 1)},
		{"reopened: a note rewritten in place", func(e *mdstate.ChecklistEdit) error {
			return e.ReplaceNote("T1", 3, "failed 2 times, last at 2026-11-21T10:00:00Z: no marker")
		}, strings.Replace(src, "no marker; skipped after 3 failed attempts\n", "no marker\n", 1)},
		{"a wrapped note rewritten onto one line", func(e *mdstate.ChecklistEdit) error {
			return e.ReplaceNote("T1", 2, "a note  wrapped\nonce")
		}, strings.Replace(src, "a note wrapped\n    onto two lines\n", "a note wrapped once\n", 1)},
		{"a rewrite after a drop before it", func(e *mdstate.ChecklistEdit) error {
			return errors.Join(e.DropNote("T1", 0), e.ReplaceNote("T1", 1, "the agent crashed"))
		}, strings.Replace(src, "  - note: ask Sam about CRLF\n  - note: the agent crashed (exit code 3): boom\n", "  - note: the agent crashed\n", 1)},
		{"no priority line: nothing to drop", func(e *mdstate.ChecklistEdit) error {
			return e.DropMeta("T2", "priority")
		}, src},
		{"the last line of the file", func(e *mdstate.ChecklistEdit) error {
			return e.DropMeta("T2", "attempts")
		}, strings.TrimSuffix(src, "  - attempts: 1\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := dropTasks(t, src, tt.fn)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			// CRLF files keep their line endings.
			crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
			got, err = dropTasks(t, crlf(src), tt.fn)
			if err != nil || got != crlf(tt.want) {
				t.Errorf("CRLF: %v\n%q", err, got)
			}
		})
	}
}

func TestDropRefusals(t *testing.T) {
	const src = "# Tasks\n\n- [ ] T1: One\n  - note: only one\n  - priority: 2\n"
	for name, fn := range map[string]func(e *mdstate.ChecklistEdit) error{
		"no such note":      func(e *mdstate.ChecklistEdit) error { return e.DropNote("T1", 1) },
		"a negative index":  func(e *mdstate.ChecklistEdit) error { return e.DropNote("T1", -1) },
		"no such task":      func(e *mdstate.ChecklistEdit) error { return e.DropNote("T9", 0) },
		"a multi-value key": func(e *mdstate.ChecklistEdit) error { return e.DropMeta("T1", "note") },
		"rewrite no note":   func(e *mdstate.ChecklistEdit) error { return e.ReplaceNote("T1", 1, "x") },
		"rewrite to blank":  func(e *mdstate.ChecklistEdit) error { return e.ReplaceNote("T1", 0, " \n ") },
		"rewrite no task":   func(e *mdstate.ChecklistEdit) error { return e.ReplaceNote("T9", 0, "x") },
		"rewrite a dropped": func(e *mdstate.ChecklistEdit) error {
			return errors.Join(e.DropNote("T1", 0), e.ReplaceNote("T1", 0, "x"))
		},
	} {
		if _, err := dropTasks(t, src, fn); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// Dropping a line SetMeta changes is not one change: the check refuses it.
	_, err := dropTasks(t, src, func(e *mdstate.ChecklistEdit) error {
		return errors.Join(e.SetMeta("T1", "priority", "1"), e.DropMeta("T1", "priority"))
	})
	if !errors.Is(err, mdstate.ErrVerify) {
		t.Errorf("SetMeta and DropMeta of one line: %v; want ErrVerify", err)
	}
}
