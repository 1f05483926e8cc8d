package mdstate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ChangeKind says how one checklist item changed between two versions of
// its file.
type ChangeKind string

// The kinds of ItemChange.
const (
	ItemAdded           ChangeKind = "added"
	ItemRemoved         ChangeKind = "removed"
	ItemStatusChanged   ChangeKind = "status"    // From → To
	ItemPriorityChanged ChangeKind = "priority"  // FromPriority → ToPriority
	ItemRetitled        ChangeKind = "retitled"  // OldTitle → Title
	ItemReordered       ChangeKind = "reordered" // OldPos → Pos
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
	// ItemPriorityChanged: the priority before and after, as Item holds
	// it (0: none; 1 runs first).
	FromPriority, ToPriority int
	// ItemReordered: the item's place (0-based) among the items that both
	// versions hold, before and after; Pos < OldPos means it moved up.
	OldPos, Pos int
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
	// LearningsEdited counts the learnings of AGENT.md whose text changed:
	// as many as there are both texts that are new and texts that are
	// gone (one new text and one gone is one edit; a new text alone is an
	// addition, counted in Learnings).
	LearningsEdited int
	Items           []ItemChange // RALPH_GOALS.md, RALPH_TASKS.md, RALPH_TODO.md
}

// Empty reports whether the diff has nothing ralph tracks.
func (d FileDiff) Empty() bool {
	return !d.Created && d.Entries == 0 && d.Learnings == 0 && d.LearningsEdited == 0 && len(d.Items) == 0
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
		var was []Learning
		if b, err := ParseAgent(before); err == nil {
			was = b.Learnings
		}
		d.Learnings = len(a.Learnings) - len(was)
		d.LearningsEdited = editedLearnings(was, a.Learnings)
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

// editedLearnings counts the learnings whose text changed between before
// and after: texts are compared as multisets, and each new text that can
// be paired with a gone one is an edit.
func editedLearnings(before, after []Learning) int {
	gone := map[string]int{}
	for _, l := range before {
		gone[l.Text]++
	}
	added := 0
	for _, l := range after {
		if gone[l.Text] > 0 {
			gone[l.Text]--
			continue
		}
		added++
	}
	removed := 0
	for _, n := range gone {
		removed += n
	}
	return min(added, removed)
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
// version) to after. Items are matched by ID. An item without an ID in
// after (a provisional one) is matched by title with one without an ID in
// before, and is new if there is none; an item without an ID in before is
// not compared with one that has an ID in after, since its ID was only
// ralph's guess (nor is it reported removed). Additions
// and the changes of kept items come in after's order, an item's changes
// as status, priority, title, place; removals follow, sorted by ID.
//
// A kept item is reordered when its place among the kept items changed
// relative to the others: the largest set of kept items that are still in
// their old relative order stays put, and only the rest count as moved.
// Moving one task to the top reports that task, not every task it passed;
// of two swapped neighbours, the one that went up is reported.
func DiffChecklists(before, after *Checklist) []ItemChange {
	old := map[string]*Item{}
	if before != nil {
		for _, it := range before.All() {
			if !it.Provisional {
				old[it.ID] = it
			}
		}
	}
	moves := reorders(before, after, old)
	unnumbered := provisionals(before)
	var changes []ItemChange
	seen := map[string]bool{}
	for _, it := range after.All() {
		if it.Provisional {
			changes = append(changes, unnumbered.changes(it)...)
			continue
		}
		seen[it.ID] = true
		was, ok := old[it.ID]
		if !ok {
			changes = append(changes, ItemChange{Kind: ItemAdded, ID: it.ID, Title: it.Title})
			continue
		}
		changes = append(changes, itemChanges(was, it)...)
		if mv, ok := moves[it.ID]; ok {
			changes = append(changes, mv)
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

// provisionalItems are the items of a version without a written ID, by
// title, in file order.
type provisionalItems map[string][]*Item

func provisionals(c *Checklist) provisionalItems {
	m := provisionalItems{}
	if c == nil {
		return m
	}
	for _, it := range c.All() {
		if it.Provisional {
			m[it.Title] = append(m[it.Title], it)
		}
	}
	return m
}

// changes lists how a provisional item of the new version changed: an
// item without an ID under the same title in the old version (the first
// not yet matched) is the same item, so a task a person wrote without an
// ID is added once, not again at each later change of the file. Any other
// is new.
func (m provisionalItems) changes(it *Item) []ItemChange {
	was := m[it.Title]
	if len(was) == 0 {
		return []ItemChange{{Kind: ItemAdded, ID: it.ID, Provisional: true, Title: it.Title}}
	}
	m[it.Title] = was[1:]
	changes := itemChanges(was[0], it)
	for i := range changes {
		changes[i].Provisional = true
	}
	return changes
}

// itemChanges lists how one kept item's fields changed: status, priority,
// title, in that order.
func itemChanges(was, it *Item) []ItemChange {
	var changes []ItemChange
	if was.Status != it.Status {
		changes = append(changes, ItemChange{Kind: ItemStatusChanged, ID: it.ID, Title: it.Title, From: was.Status, To: it.Status})
	}
	if was.Priority != it.Priority {
		changes = append(changes, ItemChange{Kind: ItemPriorityChanged, ID: it.ID, Title: it.Title, FromPriority: was.Priority, ToPriority: it.Priority})
	}
	if was.Title != it.Title {
		changes = append(changes, ItemChange{Kind: ItemRetitled, ID: it.ID, Title: it.Title, OldTitle: was.Title})
	}
	return changes
}

// reorders finds the kept items (in both versions, with a written ID) that
// moved, by ID. The kept items' old places, read in their new order, are a
// sequence; its longest increasing subsequence is the largest set still in
// order, and every other kept item moved.
func reorders(before, after *Checklist, old map[string]*Item) map[string]ItemChange {
	if before == nil {
		return nil
	}
	inAfter := map[string]bool{}
	for _, it := range after.All() {
		if !it.Provisional {
			inAfter[it.ID] = true
		}
	}
	oldPos := map[string]int{}
	for _, it := range before.All() {
		if _, ok := old[it.ID]; ok && !it.Provisional && inAfter[it.ID] {
			oldPos[it.ID] = len(oldPos)
		}
	}
	var kept []*Item // in after's order
	var seq []int    // their old places
	for _, it := range after.All() {
		if p, ok := oldPos[it.ID]; ok && !it.Provisional {
			kept = append(kept, it)
			seq = append(seq, p)
		}
	}
	stay := increasingRun(seq)
	moves := map[string]ItemChange{}
	for pos, it := range kept {
		if !stay[pos] {
			moves[it.ID] = ItemChange{Kind: ItemReordered, ID: it.ID, Title: it.Title, OldPos: seq[pos], Pos: pos}
		}
	}
	return moves
}

// increasingRun marks the indexes of one longest strictly increasing
// subsequence of seq (patience sorting, O(n log n)). Of equally long ones
// it keeps the smallest values, so that of two swapped neighbours the one
// that was first stays and the one that went up is the move.
func increasingRun(seq []int) []bool {
	var tails []int // tails[k]: index in seq of the last value of the best run of length k+1
	prev := make([]int, len(seq))
	for i, v := range seq {
		k, _ := slices.BinarySearchFunc(tails, v, func(t, v int) int { return seq[t] - v })
		if k > 0 {
			prev[i] = tails[k-1]
		} else {
			prev[i] = -1
		}
		if k == len(tails) {
			tails = append(tails, i)
		} else {
			tails[k] = i
		}
	}
	in := make([]bool, len(seq))
	if len(tails) == 0 {
		return in
	}
	for i := tails[len(tails)-1]; i >= 0; i = prev[i] {
		in[i] = true
	}
	return in
}

// summaryItems is how many changes a Summary names before it counts the
// rest, so that pasting fifty tasks still makes one readable line.
const summaryItems = 5

// summaryTitle is how many characters of a title a Summary quotes.
const summaryTitle = 40

// Summary is the one-line notice a front end prints for the diff, e.g.
// `RALPH_TASKS.md: T3 marked done, T7 added ("Write the docs"), T2 moved up`.
// It names at most five changes and counts the rest ("and 3 more"); a diff
// with nothing ralph tracks reads "RALPH_TASKS.md: edited". The wording is
// stable: front ends and tests may rely on it.
func (d FileDiff) Summary() string {
	parts := d.summaryParts()
	if len(parts) == 0 {
		parts = []string{"edited"}
	}
	if n := len(parts) - summaryItems; n > 0 {
		parts = append(parts[:summaryItems], "and "+strconv.Itoa(n)+" more")
	}
	return d.File + ": " + strings.Join(parts, ", ")
}

// summaryParts lists one phrase per change, in the diff's order.
func (d FileDiff) summaryParts() []string {
	var parts []string
	if d.Created {
		parts = append(parts, "created")
	}
	parts = appendCount(parts, d.Entries, "entry", "entries")
	parts = appendCount(parts, d.Learnings, "learning", "learnings")
	if d.LearningsEdited > 0 {
		parts = append(parts, plural(d.LearningsEdited, "learning", "learnings")+" edited")
	}
	for _, c := range d.Items {
		parts = append(parts, c.phrase())
	}
	return parts
}

// appendCount adds "2 entries added" or "1 entry removed" for a net count.
func appendCount(parts []string, n int, one, many string) []string {
	switch {
	case n > 0:
		return append(parts, plural(n, one, many)+" added")
	case n < 0:
		return append(parts, plural(-n, one, many)+" removed")
	}
	return parts
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// phrase says what happened to one item, as Summary writes it.
func (c ItemChange) phrase() string {
	switch c.Kind {
	case ItemAdded:
		if c.Provisional {
			return "added " + quoteTitle(c.Title)
		}
		return c.ID + " added (" + quoteTitle(c.Title) + ")"
	case ItemRemoved:
		return c.ID + " removed (" + quoteTitle(c.Title) + ")"
	case ItemStatusChanged:
		return c.ID + " marked " + strings.ReplaceAll(string(c.To), "_", " ")
	case ItemPriorityChanged:
		return c.ID + " " + priorityPhrase(c.FromPriority, c.ToPriority)
	case ItemRetitled:
		return c.ID + " retitled (" + quoteTitle(c.Title) + ")"
	case ItemReordered:
		if c.Pos < c.OldPos {
			return c.ID + " moved up"
		}
		return c.ID + " moved down"
	}
	return c.ID + " " + string(c.Kind)
}

// priorityPhrase says how a priority changed; a smaller number is a higher
// priority, and 0 is none.
func priorityPhrase(from, to int) string {
	switch {
	case to == 0:
		return "priority removed"
	case from == 0:
		return "priority set to " + strconv.Itoa(to)
	case to < from:
		return "priority raised to " + strconv.Itoa(to)
	}
	return "priority lowered to " + strconv.Itoa(to)
}

// quoteTitle quotes a title for a one-line notice, cut to summaryTitle
// characters.
func quoteTitle(t string) string {
	if utf8.RuneCountInString(t) > summaryTitle {
		r := []rune(t)
		t = string(r[:summaryTitle-1]) + "…"
	}
	return strconv.Quote(t)
}
