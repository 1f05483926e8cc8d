package mdstate

import (
	"bytes"
	"fmt"
	"slices"
)

// Removing and rewriting metadata lines: a task that is done loses the
// notes ralph wrote about its failed attempts and its attempts count (the
// progress log keeps that history), a repeated note of ralph's is replaced
// by one with a count, and a reopened task's notes lose the words saying
// ralph gave up on it. A removal takes the whole "- key: value" list item,
// through its line ending, and nothing else; a rewrite takes the note's
// text and nothing else; both are checked like every edit.

// DropNote removes the item's i-th note (Notes[i] of the item as the file
// has it), the whole line. Dropping the same note twice in one edit
// removes it once.
func (e *ChecklistEdit) DropNote(id string, i int) error {
	k, _, notes, err := e.noteAt(id, i)
	if err != nil {
		return err
	}
	m := notes[i]
	if e.drops(m.Span) {
		return nil
	}
	w := e.wantOf(k)
	w.Notes = slices.Delete(slices.Clone(w.Notes), e.notePos(notes, i), e.notePos(notes, i)+1)
	e.edits = append(e.edits, Edit{Span: m.Span})
	return nil
}

// noteAt finds the item id and its note lines, and checks that it has an
// i-th note.
func (e *ChecklistEdit) noteAt(id string, i int) (k int, it *Item, notes []Meta, err error) {
	if k, err = e.index(id); err != nil {
		return 0, nil, nil, err
	}
	it = e.c.Item(k)
	notes = metaLines(it, "note")
	if i < 0 || i >= len(notes) {
		return 0, nil, nil, fmt.Errorf("%s has no note %d", it.ID, i+1)
	}
	return k, it, notes, nil
}

// ReplaceNote rewrites the item's i-th note (Notes[i] of the item as the
// file has it) in place with text: the note's words, on one line, and
// nothing else of its line. It does not go with DropNote of the same note,
// nor with a second ReplaceNote of it, in one edit.
func (e *ChecklistEdit) ReplaceNote(id string, i int, text string) error {
	k, it, notes, err := e.noteAt(id, i)
	if err != nil {
		return err
	}
	text = cleanLine(text)
	m := notes[i]
	switch {
	case text == "":
		return fmt.Errorf("%s's note %d would have no text; DropNote removes a note", it.ID, i+1)
	case e.drops(m.Span):
		return fmt.Errorf("%s's note %d is removed in this edit", it.ID, i+1)
	}
	// A note wrapped onto more lines is rewritten to its last word; the
	// line ending and any blank line after it stay.
	end := m.Val.End
	if rest := bytes.TrimRight(e.c.src.src[m.Val.End:m.Span.End], " \t\r\n"); len(rest) > 0 {
		end += len(rest)
	}
	w := e.wantOf(k)
	w.Notes = slices.Clone(w.Notes)
	w.Notes[e.notePos(notes, i)] = text
	e.edits = append(e.edits, Edit{Span: Span{m.Val.Start, end}, Text: []byte(text)})
	return nil
}

// notePos is the place of the i-th of the item's notes among the notes
// this edit still wants: those it dropped before it are gone already.
func (e *ChecklistEdit) notePos(notes []Meta, i int) int {
	pos := i
	for _, earlier := range notes[:i] {
		if e.drops(earlier.Span) {
			pos--
		}
	}
	return pos
}

// DropMeta removes every line of a single-valued key (attempts,
// priority) under the item; without one it does nothing. It does not go
// with SetMeta of the same key in one edit.
func (e *ChecklistEdit) DropMeta(id, key string) error {
	k, err := e.index(id)
	if err != nil {
		return err
	}
	w := e.wantOf(k)
	switch key {
	case "attempts":
		w.Attempts = 0
	case "priority":
		w.Priority = 0
	default:
		return fmt.Errorf("DropMeta: %q is not a single-valued key", key)
	}
	for _, m := range metaLines(e.c.Item(k), key) {
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
