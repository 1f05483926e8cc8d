package mdstate

import (
	"fmt"
	"slices"
)

// Removing metadata lines: a task that is done loses the notes ralph wrote
// about its failed attempts and its attempts count (the progress log keeps
// that history), and a repeated failure note is replaced by one with a
// count. A removal takes the whole "- key: value" list item, through its
// line ending, and nothing else, checked like every edit.

// DropNote removes the item's i-th note (Notes[i] of the item as the file
// has it), the whole line. Dropping the same note twice in one edit
// removes it once.
func (e *ChecklistEdit) DropNote(id string, i int) error {
	k, err := e.index(id)
	if err != nil {
		return err
	}
	it := &e.c.Items[k]
	notes := metaLines(it, "note")
	if i < 0 || i >= len(notes) {
		return fmt.Errorf("%s has no note %d", it.ID, i+1)
	}
	m := notes[i]
	if e.drops(m.Span) {
		return nil
	}
	// The note's place among the notes still wanted: those this edit
	// dropped before it are gone already.
	pos := i
	for _, earlier := range notes[:i] {
		if e.drops(earlier.Span) {
			pos--
		}
	}
	w := &e.want[k]
	w.Notes = slices.Delete(slices.Clone(w.Notes), pos, pos+1)
	e.edits = append(e.edits, Edit{Span: m.Span})
	return nil
}

// DropMeta removes every line of a single-valued key (attempts,
// priority) under the item; without one it does nothing. It does not go
// with SetMeta of the same key in one edit.
func (e *ChecklistEdit) DropMeta(id, key string) error {
	k, err := e.index(id)
	if err != nil {
		return err
	}
	w := &e.want[k]
	switch key {
	case "attempts":
		w.Attempts = 0
	case "priority":
		w.Priority = 0
	default:
		return fmt.Errorf("DropMeta: %q is not a single-valued key", key)
	}
	for _, m := range metaLines(&e.c.Items[k], key) {
		if !e.drops(m.Span) {
			e.edits = append(e.edits, Edit{Span: m.Span})
		}
	}
	return nil
}

// metaLines are the item's metadata lines with key, in file order.
func metaLines(it *Item, key string) []Meta {
	var out []Meta
	for _, m := range it.Meta {
		if m.Key == key {
			out = append(out, m)
		}
	}
	return out
}

// drops reports whether the edit removes span already.
func (e *ChecklistEdit) drops(span Span) bool {
	return slices.ContainsFunc(e.edits, func(ed Edit) bool { return ed.Span == span && len(ed.Text) == 0 })
}
