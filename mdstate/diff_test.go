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
			// T4 went to the top: T4 moved, not the three it passed.
			name:   "one moved up",
			before: "- [ ] T1: One\n- [ ] T2: Two\n- [ ] T3: Three\n- [ ] T4: Four\n",
			after:  "- [ ] T4: Four\n- [ ] T1: One\n- [ ] T2: Two\n- [ ] T3: Three\n",
			want:   []mdstate.ItemChange{{Kind: mdstate.ItemReordered, ID: "T4", Title: "Four", OldPos: 3, Pos: 0}},
		},
		{
			name:   "one moved down",
			before: "- [ ] T1: One\n- [ ] T2: Two\n- [ ] T3: Three\n",
			after:  "- [ ] T2: Two\n- [ ] T3: Three\n- [ ] T1: One\n",
			want:   []mdstate.ItemChange{{Kind: mdstate.ItemReordered, ID: "T1", Title: "One", OldPos: 0, Pos: 2}},
		},
		{
			// Of two swapped neighbours, the one that went up is the move.
			name:   "swap",
			before: "- [ ] T1: One\n- [ ] T2: Two\n- [ ] T3: Three\n",
			after:  "- [ ] T2: Two\n- [ ] T1: One\n- [ ] T3: Three\n",
			want:   []mdstate.ItemChange{{Kind: mdstate.ItemReordered, ID: "T2", Title: "Two", OldPos: 1, Pos: 0}},
		},
		{
			// Items without an ID are matched by title: Two is not new
			// again, and its status change is reported.
			name:   "provisional in both",
			before: "- [ ] T1: One\n- [ ] Two\n- [ ] Same\n",
			after:  "- [ ] T1: One\n- [x] Two\n- [ ] Same\n- [ ] Same\n- [ ] Three\n",
			want: []mdstate.ItemChange{
				{Kind: mdstate.ItemStatusChanged, ID: "T2", Provisional: true, Title: "Two", From: mdstate.Pending, To: mdstate.Done},
				{Kind: mdstate.ItemAdded, ID: "T4", Provisional: true, Title: "Same"},
				{Kind: mdstate.ItemAdded, ID: "T5", Provisional: true, Title: "Three"},
			},
		},
		{
			// Places count the kept items only: T3 was second of them.
			name:   "moved past a removed one",
			before: "- [ ] T1: One\n- [ ] T2: Two\n- [ ] T3: Three\n",
			after:  "- [ ] T3: Three\n- [ ] T1: One\n",
			want: []mdstate.ItemChange{
				{Kind: mdstate.ItemReordered, ID: "T3", Title: "Three", OldPos: 1, Pos: 0},
				{Kind: mdstate.ItemRemoved, ID: "T2", Title: "Two"},
			},
		},
		{
			// Added and removed items do not make the others move.
			name:   "add and remove are not moves",
			before: "- [ ] T1: One\n- [ ] T2: Two\n- [ ] T3: Three\n",
			after:  "- [ ] T5: Five\n- [ ] T1: One\n- [ ] T3: Three\n- [ ] Four\n",
			want: []mdstate.ItemChange{
				{Kind: mdstate.ItemAdded, ID: "T5", Title: "Five"},
				{Kind: mdstate.ItemAdded, ID: "T6", Provisional: true, Title: "Four"},
				{Kind: mdstate.ItemRemoved, ID: "T2", Title: "Two"},
			},
		},
		{
			// A kept item's changes come as status, priority, title, place.
			// Old places 1 3 0 2 in the new order: T1 and T3 (0 2) stay,
			// as the first of the longest runs in order; T2 and T4 moved.
			name:   "priority and more",
			before: "- [ ] T1: One\n  - priority: 2\n- [ ] T2: Two\n- [ ] T3: Three\n  - priority: 1\n- [ ] T4: Four\n",
			after:  "- [ ] T2: Two\n  - priority: 1\n- [x] T4: Four!\n  - priority: 3\n- [ ] T1: One\n  - priority: 1\n- [ ] T3: Three\n",
			want: []mdstate.ItemChange{
				{Kind: mdstate.ItemPriorityChanged, ID: "T2", Title: "Two", FromPriority: 0, ToPriority: 1},
				{Kind: mdstate.ItemReordered, ID: "T2", Title: "Two", OldPos: 1, Pos: 0},
				{Kind: mdstate.ItemStatusChanged, ID: "T4", Title: "Four!", From: mdstate.Pending, To: mdstate.Done},
				{Kind: mdstate.ItemPriorityChanged, ID: "T4", Title: "Four!", FromPriority: 0, ToPriority: 3},
				{Kind: mdstate.ItemRetitled, ID: "T4", Title: "Four!", OldTitle: "Four"},
				{Kind: mdstate.ItemReordered, ID: "T4", Title: "Four!", OldPos: 3, Pos: 1},
				{Kind: mdstate.ItemPriorityChanged, ID: "T1", Title: "One", FromPriority: 2, ToPriority: 1},
				{Kind: mdstate.ItemPriorityChanged, ID: "T3", Title: "Three", FromPriority: 1, ToPriority: 0},
			},
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
			// One text changed, one added: an edit and an addition.
			name:   "learning edited",
			file:   mdstate.AgentFile,
			before: []byte("- one\n- two\n- one\n"),
			after:  []byte("- one\n- two, better\n- one\n- three\n"),
			want:   mdstate.FileDiff{File: mdstate.AgentFile, Learnings: 1, LearningsEdited: 1},
		},
		{
			// The same texts in another order are no edit; a changed
			// count of one repeated text is.
			name:   "learning removed of two alike",
			file:   mdstate.AgentFile,
			before: []byte("- one\n- two\n- one\n"),
			after:  []byte("- two\n- one\n"),
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

func TestDiffFileLearningsReordered(t *testing.T) {
	d, err := mdstate.DiffFile(mdstate.AgentFile, []byte("- one\n- two\n"), []byte("- two\n- one\n"))
	if err != nil || !d.Empty() {
		t.Errorf("DiffFile of reordered learnings = %+v, %v; want an empty diff", d, err)
	}
}

func TestSummary(t *testing.T) {
	tests := []struct {
		name string
		diff mdstate.FileDiff
		want string
	}{
		{
			name: "tasks",
			diff: mdstate.FileDiff{File: mdstate.TasksFile, Items: []mdstate.ItemChange{
				{Kind: mdstate.ItemStatusChanged, ID: "T3", From: mdstate.InProgress, To: mdstate.Done},
				{Kind: mdstate.ItemAdded, ID: "T7", Title: "Write the docs"},
				{Kind: mdstate.ItemReordered, ID: "T2", OldPos: 4, Pos: 1},
			}},
			want: `RALPH_TASKS.md: T3 marked done, T7 added ("Write the docs"), T2 moved up`,
		},
		{
			name: "every item kind",
			diff: mdstate.FileDiff{File: mdstate.TodoFile, Items: []mdstate.ItemChange{
				{Kind: mdstate.ItemAdded, ID: "D4", Provisional: true, Title: `Say "hi"`},
				{Kind: mdstate.ItemStatusChanged, ID: "D1", From: mdstate.Done, To: mdstate.InProgress},
				{Kind: mdstate.ItemRetitled, ID: "D2", Title: "New", OldTitle: "Old"},
				{Kind: mdstate.ItemReordered, ID: "D2", OldPos: 0, Pos: 2},
				{Kind: mdstate.ItemRemoved, ID: "D3", Title: "Gone"},
			}},
			want: `RALPH_TODO.md: added "Say \"hi\"", D1 marked in progress, D2 retitled ("New"), D2 moved down, D3 removed ("Gone")`,
		},
		{
			name: "priorities",
			diff: mdstate.FileDiff{File: mdstate.TasksFile, Items: []mdstate.ItemChange{
				{Kind: mdstate.ItemPriorityChanged, ID: "T1", FromPriority: 0, ToPriority: 2},
				{Kind: mdstate.ItemPriorityChanged, ID: "T2", FromPriority: 3, ToPriority: 1},
				{Kind: mdstate.ItemPriorityChanged, ID: "T3", FromPriority: 1, ToPriority: 3},
				{Kind: mdstate.ItemPriorityChanged, ID: "T4", FromPriority: 1, ToPriority: 0},
			}},
			want: "RALPH_TASKS.md: T1 priority set to 2, T2 priority raised to 1, T3 priority lowered to 3, T4 priority removed",
		},
		{
			name: "more than five",
			diff: mdstate.FileDiff{File: mdstate.GoalsFile, Created: true, Items: []mdstate.ItemChange{
				{Kind: mdstate.ItemAdded, ID: "G1", Title: "A"},
				{Kind: mdstate.ItemAdded, ID: "G2", Title: "B"},
				{Kind: mdstate.ItemAdded, ID: "G3", Title: "C"},
				{Kind: mdstate.ItemAdded, ID: "G4", Title: "D"},
				{Kind: mdstate.ItemAdded, ID: "G5", Title: "E"},
				{Kind: mdstate.ItemAdded, ID: "G6", Title: "F"},
			}},
			want: `RALPH_GOALS.md: created, G1 added ("A"), G2 added ("B"), G3 added ("C"), G4 added ("D"), and 2 more`,
		},
		{
			name: "long title",
			diff: mdstate.FileDiff{File: mdstate.TasksFile, Items: []mdstate.ItemChange{
				{Kind: mdstate.ItemRemoved, ID: "T9", Title: "Écrire la documentation complète du format, avec des exemples"},
			}},
			want: `RALPH_TASKS.md: T9 removed ("Écrire la documentation complète du for…")`,
		},
		{
			name: "learnings",
			diff: mdstate.FileDiff{File: mdstate.AgentFile, Learnings: 2, LearningsEdited: 1},
			want: "AGENT.md: 2 learnings added, 1 learning edited",
		},
		{
			name: "learning removed",
			diff: mdstate.FileDiff{File: mdstate.AgentFile, Learnings: -1},
			want: "AGENT.md: 1 learning removed",
		},
		{
			name: "entries",
			diff: mdstate.FileDiff{File: mdstate.ProgressFile, Entries: 3},
			want: "RALPH_PROGRESS.md: 3 entries added",
		},
		{
			name: "nothing tracked",
			diff: mdstate.FileDiff{File: mdstate.TasksFile},
			want: "RALPH_TASKS.md: edited",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.diff.Summary(); got != tc.want {
				t.Errorf("Summary =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestSummaryOfDiff reads a real edit through DiffFile and Summary.
func TestSummaryOfDiff(t *testing.T) {
	before := []byte("# Tasks\n\n- [ ] T1: One\n- [/] T2: Two\n- [ ] T3: Three\n")
	after := []byte("# Tasks\n\n- [ ] T3: Three\n- [ ] T1: One\n- [-] T2: Two\n- [ ] Write the docs\n")
	d, err := mdstate.DiffFile(mdstate.TasksFile, before, after)
	if err != nil {
		t.Fatal(err)
	}
	want := `RALPH_TASKS.md: T3 moved up, T2 marked skipped, added "Write the docs"`
	if got := d.Summary(); got != want {
		t.Errorf("Summary = %s; want %s", got, want)
	}
}
