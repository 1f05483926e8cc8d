package mdstate_test

import (
	"reflect"
	"testing"

	"github.com/ralph-dev/ralph/mdstate"
)

func parseTasks(t *testing.T, src string) *mdstate.Checklist {
	t.Helper()
	c, err := mdstate.ParseChecklist(mdstate.TasksKind, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDiffChecklists(t *testing.T) {
	tests := []struct {
		name          string
		before, after string // before "": no earlier version
		want          []mdstate.ItemChange
	}{
		{
			name:  "new file",
			after: "- [ ] T1: One\n- [x] T2: Two\n- [ ] Three\n",
			want: []mdstate.ItemChange{
				{Kind: mdstate.ItemAdded, ID: "T1", Title: "One"},
				{Kind: mdstate.ItemAdded, ID: "T2", Title: "Two"},
				{Kind: mdstate.ItemAdded, ID: "T3", Provisional: true, Title: "Three"},
			},
		},
		{
			name:   "status, title, removal",
			before: "- [ ] T1: One\n- [ ] T2: Two\n- [ ] T10: Ten\n- [/] T3: Three\n",
			after:  "- [x] T1: One, done\n- [ ] T3: Three\n- [!] T4: Four\n",
			want: []mdstate.ItemChange{
				{Kind: mdstate.ItemStatusChanged, ID: "T1", Title: "One, done", From: mdstate.Pending, To: mdstate.Done},
				{Kind: mdstate.ItemRetitled, ID: "T1", Title: "One, done", OldTitle: "One"},
				{Kind: mdstate.ItemStatusChanged, ID: "T3", Title: "Three", From: mdstate.InProgress, To: mdstate.Pending},
				{Kind: mdstate.ItemAdded, ID: "T4", Title: "Four"},
				{Kind: mdstate.ItemRemoved, ID: "T10", Title: "Ten"},
				{Kind: mdstate.ItemRemoved, ID: "T2", Title: "Two"},
			},
		},
		{
			// An item without an ID before had only ralph's guess at one,
			// so the same item with its ID written is new, not unchanged.
			name:   "provisional before",
			before: "- [ ] T1: One\n- [ ] Two\n",
			after:  "- [ ] T1: One\n- [ ] T2: Two\n",
			want:   []mdstate.ItemChange{{Kind: mdstate.ItemAdded, ID: "T2", Title: "Two"}},
		},
		{
			name:   "nothing tracked",
			before: "# Tasks\n\n- [ ] T1: One\n",
			after:  "# Tasks\n\nSome prose.\n\n- [ ] T1: One\n  - note: more\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before *mdstate.Checklist
			if tc.before != "" {
				before = parseTasks(t, tc.before)
			}
			got := mdstate.DiffChecklists(before, parseTasks(t, tc.after))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("DiffChecklists =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestDiffFile(t *testing.T) {
	tests := []struct {
		name          string
		file          string
		before, after []byte
		want          mdstate.FileDiff
	}{
		{
			name:   "progress",
			file:   mdstate.ProgressFile,
			before: []byte("# Progress\n\n## 2026-11-20 — One\n"),
			after:  []byte("# Progress\n\n## 2026-11-20 — One\n\n## 2026-11-21 — Two\n\n```\n## not an entry\n```\n\n## 2026-11-22 — Three\n"),
			want:   mdstate.FileDiff{File: mdstate.ProgressFile, Entries: 2},
		},
		{
			name:  "new agent file",
			file:  mdstate.AgentFile,
			after: []byte("# Notes\n\n- one\n- two\n"),
			want:  mdstate.FileDiff{File: mdstate.AgentFile, Created: true, Learnings: 2},
		},
		{
			name:   "learning removed",
			file:   mdstate.AgentFile,
			before: []byte("- one\n- two\n"),
			after:  []byte("- two\n"),
			want:   mdstate.FileDiff{File: mdstate.AgentFile, Learnings: -1},
		},
		{
			// A before ralph cannot read counts as empty.
			name:   "unreadable before",
			file:   mdstate.GoalsFile,
			before: []byte("\xff\xfe"),
			after:  []byte("- [ ] G1: Ship\n"),
			want: mdstate.FileDiff{File: mdstate.GoalsFile, Items: []mdstate.ItemChange{
				{Kind: mdstate.ItemAdded, ID: "G1", Title: "Ship"},
			}},
		},
		{
			name:   "todo done",
			file:   mdstate.TodoFile,
			before: []byte("- [ ] D1: Later\n"),
			after:  []byte("- [x] D1: Later\n"),
			want: mdstate.FileDiff{File: mdstate.TodoFile, Items: []mdstate.ItemChange{
				{Kind: mdstate.ItemStatusChanged, ID: "D1", Title: "Later", From: mdstate.Pending, To: mdstate.Done},
			}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mdstate.DiffFile(tc.file, tc.before, tc.after)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("DiffFile = %+v; want %+v", got, tc.want)
			}
			if got.Empty() {
				t.Errorf("%+v is Empty", got)
			}
		})
	}
}

func TestDiffFileEmptyAndErrors(t *testing.T) {
	same := []byte("# Tasks\n\n- [ ] T1: One\n")
	d, err := mdstate.DiffFile(mdstate.TasksFile, same, same)
	if err != nil || !d.Empty() {
		t.Errorf("DiffFile of the same bytes = %+v, %v; want an empty diff", d, err)
	}
	if _, err := mdstate.DiffFile(mdstate.TasksFile, nil, []byte("\x00binary")); err == nil {
		t.Error("DiffFile of a binary RALPH_TASKS.md: no error")
	}
	if _, err := mdstate.DiffFile(mdstate.AgentFile, nil, []byte("bad \xff utf-8")); err == nil {
		t.Error("DiffFile of an AGENT.md with invalid UTF-8: no error")
	}
	if _, err := mdstate.DiffFile("go.mod", nil, []byte("module x\n")); err == nil {
		t.Error("DiffFile of go.mod: no error")
	}
}
