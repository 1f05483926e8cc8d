package mdstate

import (
	"fmt"
	"strings"
)

// The lists fill with copies otherwise: an agent that reports the same
// to-do on every task left 17 of them in RALPH_TODO.md, each fed back into
// every prompt, and `ralph learn` added a second copy of a learning AGENT.md
// had (issue 15). One rule says when two texts are the same, for every
// writer: SameKey.

// SameKey is what a to-do, a learning or a note says, for telling copies
// apart: the text in lower case, its whitespace (line breaks too) folded to
// single spaces, without a trailing period. Two texts with the same key say
// the same thing.
func SameKey(text string) string {
	key := strings.Join(strings.Fields(strings.ToLower(CleanText(text))), " ")
	return strings.TrimSuffix(key, ".")
}

// SameText reports whether a and b say the same thing (SameKey).
func SameText(a, b string) bool { return SameKey(a) == SameKey(b) }

// DuplicateError reports text that a state file already holds, so nothing
// was added: a to-do (AddOnce), a learning (Project.Learn) or a note under
// an item (AddNoteOnce) that says the same as one there. It is no failure;
// a command says so and exits 0.
type DuplicateError struct {
	File string // AGENT.md, RALPH_TODO.md, RALPH_TASKS.md
	Line int    // the line of the text already there; 0 when the same write added it
	ID   string // the to-do's ID, or the item the note is under; "" for a learning
	Note bool   // Text is a note under item ID
	Text string // the text already there, on one line
}

func (e *DuplicateError) Error() string {
	if e.Note {
		s := e.ID + " already has that note"
		if e.Line > 0 {
			s += fmt.Sprintf(" (line %d)", e.Line)
		}
		return s
	}
	where := "already in " + e.File
	if e.ID != "" {
		where += " as " + e.ID
	}
	if e.Line > 0 {
		where += fmt.Sprintf(" (line %d)", e.Line)
	}
	return where
}

// FindSame returns the item whose title says the same as text (SameKey),
// whatever its status, or nil.
func (c *Checklist) FindSame(text string) *Item {
	key := SameKey(text)
	if key == "" {
		return nil
	}
	for i := range c.Len() {
		if SameKey(c.content(i).Title) == key {
			return c.Item(i)
		}
	}
	return nil
}

// AddOnce is Add, unless an item of the file, or one this edit added
// before, says the same as title (SameKey): then nothing is added and the
// error is a *DuplicateError naming that item. In a half-merged file,
// whose items are two versions at once, it is the *ConflictError: the
// conflict is what to fix.
func (e *ChecklistEdit) AddOnce(title string, meta ...MetaKV) (string, error) {
	if e.c.conflict != nil {
		return "", e.c.conflict
	}
	if key := SameKey(title); key != "" {
		for _, w := range e.allWants() {
			if SameKey(w.Title) != key {
				continue
			}
			dup := &DuplicateError{File: e.c.Kind.File, ID: w.ID, Text: oneLine(w.Title)}
			if it := e.c.Find(w.ID); it != nil && SameKey(it.Title) == key {
				dup.Line = it.Line
			}
			return "", dup
		}
	}
	return e.Add(title, meta...)
}

// AddNoteOnce is AddMeta of a note, unless item id, as this edit leaves
// it, has a note that says the same (SameKey): then nothing is added and
// the error is a *DuplicateError naming that note. A person who runs
// `ralph task block T1 --note …` twice means one note. In a half-merged
// file it is the *ConflictError, as for AddOnce.
func (e *ChecklistEdit) AddNoteOnce(id, note string) error {
	if e.c.conflict != nil {
		return e.c.conflict
	}
	i, err := e.index(id)
	if err != nil {
		return err
	}
	if key := SameKey(note); key != "" {
		for _, n := range e.wantNow(i).Notes {
			if SameKey(n) == key {
				return e.noteDuplicate(e.c.Item(i), n)
			}
		}
	}
	return e.AddMeta(id, "note", note)
}

// noteDuplicate is the *DuplicateError for note n under it, with the
// line of the note when the file has it (not when this edit added it).
func (e *ChecklistEdit) noteDuplicate(it *Item, n string) *DuplicateError {
	dup := &DuplicateError{File: e.c.Kind.File, ID: it.ID, Note: true, Text: n}
	for _, m := range metaLines(it, "note") {
		if m.Value == n && !e.drops(m.Span) {
			dup.Line = m.Line
			break
		}
	}
	return dup
}
