package mdstate

import (
	"fmt"
	"slices"
	"strings"
)

// ChangeKind says how one checklist item changed between two versions of
// its file.
type ChangeKind string

// The kinds of ItemChange.
const (
	ItemAdded         ChangeKind = "added"
	ItemRemoved       ChangeKind = "removed"
	ItemStatusChanged ChangeKind = "status"   // From → To
	ItemRetitled      ChangeKind = "retitled" // OldTitle → Title
)

// ItemChange is one change to one goal, task or to-do.
type ItemChange struct {
	Kind ChangeKind
	ID   string
	// Provisional is true for an item added without an ID in the file;
	// ID is then the one ralph will give it, and may not last.
	Provisional bool
	Title       string // the title after the change (before, for a removed item)
	OldTitle    string // ItemRetitled: the title before
	From, To    Status // ItemStatusChanged
}

// FileDiff is what changed in one state file between two versions, in the
// terms ralph tracks; anything else is an edit it does not count.
type FileDiff struct {
	File    string
	Created bool // there was no earlier version
	// Entries is the number of progress entries added, less those removed
	// (RALPH_PROGRESS.md); Learnings the same for AGENT.md.
	Entries   int
	Learnings int
	Items     []ItemChange // RALPH_GOALS.md, RALPH_TASKS.md, RALPH_TODO.md
}

// Empty reports whether the diff has nothing ralph tracks.
func (d FileDiff) Empty() bool {
	return !d.Created && d.Entries == 0 && d.Learnings == 0 && len(d.Items) == 0
}

// DiffFile compares two versions of state file name; before is nil when
// there was no earlier version. An after that cannot be read as its file
// is an error; a before that cannot is taken as empty, so everything in
// after counts as added.
func DiffFile(name string, before, after []byte) (FileDiff, error) {
	d := FileDiff{File: name, Created: before == nil}
	switch name {
	case ProgressFile:
		d.Entries = CountEntries(after) - CountEntries(before)
	case AgentFile:
		a, err := ParseAgent(after)
		if err != nil {
			return d, err
		}
		d.Learnings = len(a.Learnings)
		if b, err := ParseAgent(before); err == nil {
			d.Learnings -= len(b.Learnings)
		}
	default:
		kind, ok := KindOf(name)
		if !ok {
			return d, fmt.Errorf("%q is not a state file", name)
		}
		a, err := ParseChecklist(kind, after)
		if err != nil {
			return d, err
		}
		var b *Checklist
		if before != nil {
			b, _ = ParseChecklist(kind, before)
		}
		d.Items = DiffChecklists(b, a)
	}
	return d, nil
}

// KindOf returns the Kind of a checklist file by its name (RALPH_TASKS.md,
// RALPH_GOALS.md, RALPH_TODO.md).
func KindOf(name string) (Kind, bool) {
	for _, k := range []Kind{TasksKind, GoalsKind, TodoKind} {
		if k.File == name {
			return k, true
		}
	}
	return Kind{}, false
}

// DiffChecklists lists how the items changed from before (nil: no earlier
// version) to after. Items are matched by ID; an item without an ID in
// after (a provisional one) is always new, and one without an ID in
// before is not compared, since its ID was only ralph's guess. Additions,
// status changes and new titles come in after's order, an item's status
// change before its new title; removals follow, sorted by ID.
func DiffChecklists(before, after *Checklist) []ItemChange {
	old := map[string]*Item{}
	if before != nil {
		for i := range before.Items {
			if it := &before.Items[i]; !it.Provisional {
				old[it.ID] = it
			}
		}
	}
	var changes []ItemChange
	seen := map[string]bool{}
	for _, it := range after.Items {
		if it.Provisional {
			changes = append(changes, ItemChange{Kind: ItemAdded, ID: it.ID, Provisional: true, Title: it.Title})
			continue
		}
		seen[it.ID] = true
		was, ok := old[it.ID]
		if !ok {
			changes = append(changes, ItemChange{Kind: ItemAdded, ID: it.ID, Title: it.Title})
			continue
		}
		if was.Status != it.Status {
			changes = append(changes, ItemChange{Kind: ItemStatusChanged, ID: it.ID, Title: it.Title, From: was.Status, To: it.Status})
		}
		if was.Title != it.Title {
			changes = append(changes, ItemChange{Kind: ItemRetitled, ID: it.ID, Title: it.Title, OldTitle: was.Title})
		}
	}
	var removed []ItemChange
	for id, it := range old {
		if !seen[id] {
			removed = append(removed, ItemChange{Kind: ItemRemoved, ID: id, Title: it.Title})
		}
	}
	slices.SortFunc(removed, func(a, b ItemChange) int { return strings.Compare(a.ID, b.ID) })
	return append(changes, removed...)
}
