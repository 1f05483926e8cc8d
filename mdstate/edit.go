package mdstate

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Edit replaces the bytes in Span with Text. An empty span inserts.
type Edit struct {
	Span
	Text []byte
}

// ErrVerify reports that a splice did not produce exactly the intended
// change. ralph refuses to write rather than guess; it is a bug to report.
var ErrVerify = errors.New("edit check failed")

// splice applies edits to src. Edits must not overlap; inserts at the same
// offset keep their order.
func splice(src []byte, edits []Edit) ([]byte, error) {
	slices.SortStableFunc(edits, func(a, b Edit) int { return a.Start - b.Start })
	size := len(src)
	for i, e := range edits {
		if e.Start < 0 || e.End < e.Start || e.End > len(src) {
			return nil, fmt.Errorf("%w: edit %d..%d outside the file", ErrVerify, e.Start, e.End)
		}
		if i > 0 && edits[i-1].End > e.Start {
			return nil, fmt.Errorf("%w: overlapping edits at %d", ErrVerify, e.Start)
		}
		size += len(e.Text) - (e.End - e.Start)
	}
	out := make([]byte, 0, size)
	last := 0
	for _, e := range edits {
		out = append(out, src[last:e.Start]...)
		out = append(out, e.Text...)
		last = e.End
	}
	return append(out, src[last:]...), nil
}

// view is what an item means, without where it is: two parses agree when
// their views are equal.
type view struct {
	ID, Title, Body, From, Promoted string
	Status                          Status
	Priority, Attempts, Depth       int
	After, Notes                    []string
}

// view shares the item's slices, capped at their length: a change of a
// view's After or Notes (an append) copies them, and so leaves the item
// as it is. An edit of a 10,000-item file makes a view of each.
func (it *Item) view() view {
	return view{ID: it.ID, Title: it.Title, Body: it.Body, From: it.From, Promoted: it.Promoted,
		Status: it.Status, Priority: it.Priority, Attempts: it.Attempts, Depth: it.Depth,
		After: slices.Clip(it.After), Notes: slices.Clip(it.Notes)}
}

func viewsEqual(a, b view) bool {
	return a.ID == b.ID && a.Title == b.Title && a.Body == b.Body && a.From == b.From &&
		a.Promoted == b.Promoted && a.Status == b.Status && a.Priority == b.Priority &&
		a.Attempts == b.Attempts && a.Depth == b.Depth &&
		slices.Equal(a.After, b.After) && slices.Equal(a.Notes, b.Notes)
}

// ChecklistEdit collects changes to one checklist. Each change is both a
// byte splice and the change in meaning it should make; Bytes splices,
// re-parses and checks that the meaning changed exactly so.
type ChecklistEdit struct {
	c      *Checklist
	want   wants
	edits  []Edit
	nextID int // number for the next added item; 0 until the first Add
	adds   int // items added so far
	// trail is inserted after every other edit at its offset: the blank
	// line that keeps added items apart from text right after the list.
	trail []Edit
	// session is the session section the edit writes, if any.
	session *Session
	// guidance is what the edit does to the guidance section, if anything.
	guidance *guidanceEdit
}

// Edit starts a set of changes. Items without a written ID get theirs
// written as part of it, with the smallest edit: "T7: " after the box.
func (c *Checklist) Edit() *ChecklistEdit {
	e := &ChecklistEdit{c: c, want: wants{c: c}}
	if !c.provisional {
		return e
	}
	for _, it := range c.All() {
		if it.Provisional {
			e.edits = append(e.edits, Edit{Span: it.IDSpan, Text: c.idText(it)})
		}
	}
	return e
}

// idText is what writes an item's provisional ID: "T7: " before the title.
// Without a title it is "T7:" (no trailing blank), after a blank when the
// line ends right after the box: "[ ]T7:" would not be a checkbox.
func (c *Checklist) idText(it *Item) []byte {
	s := c.src
	var b []byte
	if it.IDSpan.Start == it.BoxAt+2 {
		b = append(b, ' ')
	}
	b = append(b, it.ID+":"...)
	if it.IDSpan.End < s.contentEnd(it.BoxAt) {
		b = append(b, ' ')
	}
	return b
}

func (e *ChecklistEdit) index(id string) (int, error) {
	id = normID(id)
	if i := e.c.indexOf(id); i >= 0 {
		return i, nil
	}
	return -1, e.c.notFound(id)
}

// NotFoundError reports an ID that is not in the file.
type NotFoundError struct {
	Kind Kind
	ID   string
	Have []string
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("no %s %s in %s", e.Kind.Noun, e.ID, e.Kind.File)
	switch len(e.Have) {
	case 0:
		return msg + fmt.Sprintf(" (it has no %ss yet)", e.Kind.Noun)
	case 1:
		return msg + " (it has only " + e.Have[0] + ")"
	}
	return msg + fmt.Sprintf(" (it has %s); see `ralph %s list`", idRanges(e.Kind.Prefix, e.Have), e.Kind.Command)
}

// idRanges writes IDs as runs: "T1 to T3, T7, T9 to T16", in the file's
// order, so that a gap shows (T4 to T6 are not there). An ID that is not
// the kind's prefix and a number stands alone.
func idRanges(prefix string, ids []string) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && idNumber(prefix, ids[j+1]) > 0 && idNumber(prefix, ids[j+1]) == idNumber(prefix, ids[j])+1 {
			j++
		}
		switch {
		case j == i:
			parts = append(parts, ids[i])
		case j == i+1:
			parts = append(parts, ids[i], ids[j])
		default:
			parts = append(parts, ids[i]+" to "+ids[j])
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// idNumber is the number of id ("T12": 12), 0 when id is not prefix and a
// number.
func idNumber(prefix, id string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(id, prefix))
	if err != nil || !strings.HasPrefix(id, prefix) || n <= 0 {
		return 0
	}
	return n
}

func (c *Checklist) notFound(id string) error {
	var have []string
	for i := range c.Len() {
		have = append(have, c.content(i).ID)
	}
	slices.SortFunc(have, func(a, b string) int { return idNum(a) - idNum(b) })
	return &NotFoundError{Kind: c.Kind, ID: id, Have: have}
}

func idNum(id string) int {
	n, _ := strconv.Atoi(id[1:])
	return n
}

// SetStatus changes an item's checkbox: one byte.
func (e *ChecklistEdit) SetStatus(id string, st Status) error {
	i, err := e.index(id)
	if err != nil {
		return err
	}
	it := e.c.Item(i)
	e.wantOf(i).Status = st
	if it.Status == st {
		return nil
	}
	e.edits = append(e.edits, Edit{Span: Span{it.BoxAt, it.BoxAt + 1}, Text: []byte{st.Box()}})
	return nil
}

// SetMeta sets a single-valued key (priority, attempts): the value is
// replaced in place when the line exists, else a line is added.
func (e *ChecklistEdit) SetMeta(id, key, value string) error {
	i, err := e.index(id)
	if err != nil {
		return err
	}
	it := e.c.Item(i)
	value = cleanLine(value)
	if err := e.expect(i, key, value, true); err != nil {
		return err
	}
	for j := len(it.Meta) - 1; j >= 0; j-- {
		if it.Meta[j].Key == key {
			e.edits = append(e.edits, Edit{Span: it.Meta[j].Val, Text: []byte(value)})
			return nil
		}
	}
	e.insertMeta(it, key, value)
	return nil
}

// AddMeta adds a "- key: value" line under the item (a note, a
// dependency), after its other metadata lines.
func (e *ChecklistEdit) AddMeta(id, key, value string) error {
	i, err := e.index(id)
	if err != nil {
		return err
	}
	value = cleanLine(value)
	if err := e.expect(i, key, value, false); err != nil {
		return err
	}
	e.insertMeta(e.c.Item(i), key, value)
	return nil
}

// oneLine folds a value onto one line: a metadata value is one line by
// the format's rules.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func (e *ChecklistEdit) expect(i int, key, value string, replace bool) error {
	w := e.wantOf(i)
	switch key {
	case "priority", "attempts":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 || (key == "priority" && n < 1) {
			return fmt.Errorf("%s must be a whole number%s, not %q", key, map[bool]string{true: " from 1 up", false: ""}[key == "priority"], value)
		}
		if key == "priority" {
			w.Priority = n
		} else {
			w.Attempts = n
		}
	case "note":
		w.Notes = append(w.Notes, value)
	case "after":
		w.After = append(w.After, readMeta(e.c.Kind, key, value).After...)
	case "from":
		w.From = normID(value)
	case "promoted":
		w.Promoted = normID(value)
	default:
		return fmt.Errorf("unknown key %q", key)
	}
	return nil
}

func (e *ChecklistEdit) insertMeta(it *Item, key, value string) {
	var b bytes.Buffer
	s := e.c.src
	if it.metaAt > 0 && s.src[it.metaAt-1] != '\n' {
		b.WriteString(s.eol)
	}
	b.WriteString(it.metaIndent)
	b.WriteByte(it.metaMarker)
	b.WriteString(" " + key + ": " + value + s.eol)
	e.edits = append(e.edits, Edit{Span: Span{it.metaAt, it.metaAt}, Text: b.Bytes()})
	// A paragraph right after the item (possible after a code block)
	// would continue the new line's text: keep them apart.
	if it.paraAtMeta && !slices.ContainsFunc(e.trail, func(t Edit) bool { return t.Start == it.metaAt }) {
		e.trail = append(e.trail, Edit{Span: Span{it.metaAt, it.metaAt}, Text: []byte(s.eol)})
	}
}

// MetaKV is one metadata line for a new item.
type MetaKV struct{ Key, Value string }

// Add appends a new item at the end of the task list (the file's last
// top-level checklist outside the Session and Guidance sections) and
// returns its ID. Without one it goes before those sections, or at the end
// of the file when there are none: never into them.
func (e *ChecklistEdit) Add(title string, meta ...MetaKV) (string, error) {
	title = cleanLine(title)
	if title == "" {
		return "", fmt.Errorf("a %s needs a title", e.c.Kind.Noun)
	}
	if e.nextID == 0 {
		for i := range e.c.Len() {
			e.nextID = maxInt(e.nextID, idNum(e.c.content(i).ID))
		}
		e.nextID++
	}
	id := e.c.Kind.Prefix + strconv.Itoa(e.nextID)
	s := e.c.src
	at, inList := e.c.addAt()
	marker, indent := e.c.lastTopMarker, e.c.lastTopIndent
	if !inList {
		marker, indent = []byte("- "), ""
	}
	var b bytes.Buffer
	if e.adds == 0 { // separators, once per edit
		e.separate(&b, at, inList)
	}
	if inList && e.c.lastTopOrdinal > 0 {
		marker = []byte(strconv.Itoa(e.c.lastTopOrdinal+e.adds) + string(marker))
	}
	b.WriteString(indent)
	b.Write(marker)
	b.WriteString("[ ] " + id + ": " + title + s.eol)
	contentIndent := strings.Repeat(" ", len(indent)+len(marker))
	it := Item{ID: id, Title: title, Status: Pending}
	for _, m := range meta {
		val := cleanLine(m.Value)
		b.WriteString(contentIndent + "- " + m.Key + ": " + val + s.eol)
		it.Meta = append(it.Meta, Meta{Key: strings.ToLower(m.Key), Value: val})
	}
	// What the new lines should read as is what the parser reads from them.
	(&Checklist{Kind: e.c.Kind}).applyMeta(&it)
	v := it.view()
	e.edits = append(e.edits, Edit{Span: Span{at, at}, Text: b.Bytes()})
	// In file order the new item follows every item that starts before it
	// and the items this edit added before it.
	items, pos := e.c.Items(), 0
	for pos < len(items) && items[pos].BoxAt < at {
		pos++
	}
	e.want.added = append(e.want.added, addedView{pos: pos, v: v})
	e.adds++
	e.nextID++
	return id, nil
}

// addAt returns where Add inserts new items: the end of the task list
// (inList), else the start of the Session or Guidance section, else the
// end of the file.
func (c *Checklist) addAt() (at int, inList bool) {
	switch {
	case c.lastTopEnd >= 0:
		return c.lastTopEnd, true
	case c.quietAt >= 0:
		return c.quietAt, false
	}
	return len(c.src.src), false
}

// separate writes what goes before the first new item at offset at: a
// line ending for a last line without one and, for a new list, a blank
// line after the text above. Text right after at gets a blank line too
// (trail), or it would become part of the last new item: text after a list
// (possible after a code block), the heading of a section.
func (e *ChecklistEdit) separate(b *bytes.Buffer, at int, inList bool) {
	s := e.c.src
	if at > 0 && s.src[at-1] != '\n' {
		b.WriteString(s.eol)
	}
	if !inList {
		if at == len(s.src) && at > 0 && !endsWithBlankLine(s.src) {
			b.WriteString(s.eol)
		}
		if at < len(s.src) && at > e.c.mdBase && !blankLine(s.src[s.lineStart(at-1):at]) {
			b.WriteString(s.eol)
		}
	}
	if !blankLine(s.src[at:s.lineEnd(at)]) {
		e.trail = append(e.trail, Edit{Span: Span{at, at}, Text: []byte(s.eol)})
	}
}

// readMeta reads one metadata value as the parser does.
func readMeta(kind Kind, key, value string) Item {
	it := Item{Meta: []Meta{{Key: key, Value: value}}}
	(&Checklist{Kind: kind}).applyMeta(&it)
	return it
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// blankLine reports whether a line holds only blanks (or nothing: the end
// of the file).
func blankLine(b []byte) bool {
	return len(bytes.TrimSpace(b)) == 0
}

func endsWithBlankLine(b []byte) bool {
	b = bytes.TrimRight(b, "\r\n")
	t := bytes.TrimRight(b, " \t")
	return len(t) < len(b) || len(b) == 0
}

// Changed reports whether the edit changes any byte.
func (e *ChecklistEdit) Changed() bool { return len(e.edits) > 0 || e.guidance.changed() }

// Bytes splices the edits, re-parses the result and checks that every item
// means what it should. It never returns bytes that fail that check, nor
// changed bytes of a file with a merge conflict: that is a *ConflictError.
func (e *ChecklistEdit) Bytes() ([]byte, *Checklist, error) {
	if e.c.conflict != nil && e.Changed() {
		return nil, nil, e.c.conflict
	}
	out, after, err := e.bytes()
	if err != nil && errors.Is(err, ErrVerify) {
		// The usual reason a correct splice reads wrong: the file ends
		// inside a block, so whatever ralph adds becomes part of it.
		if what, line := unclosedBlock(e.c.src.src); line > 0 {
			return nil, nil, &FileError{File: e.c.Kind.File, Line: line, Msg: what + " opened here is never closed, so anything added below it would be part of it", Hint: "close it, then run again", Err: err}
		}
	}
	return out, after, err
}

func (e *ChecklistEdit) bytes() ([]byte, *Checklist, error) {
	edits := append(slices.Clone(e.edits), e.trail...)
	if e.guidance != nil {
		edits = append(edits, e.guidance.drops(e.c)...)
	}
	out, err := splice(e.c.src.src, edits)
	if err != nil {
		return nil, nil, err
	}
	// The parts of the file the edits leave alone read as they did
	// (reparse says when that is proven, and which items it read anew):
	// only those read anew and those the edit changes can differ from
	// what they should be. Otherwise the whole is parsed and checked.
	var after *Checklist
	var check []int
	if len(e.want.added) == 0 {
		after, check = e.c.reparse(out, edits)
	}
	if after == nil {
		s, err := newSource(e.c.Kind.File, out)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrVerify, err)
		}
		after = parseChecklist(e.c.Kind, s)
		if err := e.checkItems(after); err != nil {
			return nil, nil, err
		}
	} else {
		for i := range e.want.changed {
			check = append(check, i)
		}
		for _, i := range check {
			if err := e.checkItem(after, i, e.wantNow(i)); err != nil {
				return nil, nil, err
			}
		}
	}
	if e.session != nil {
		got, _ := after.Session()
		eol := e.c.src.eol
		// ralph's own items only: the others in the list are a person's,
		// kept from the file (SetSession).
		if got == nil || !bytes.Equal(got.render(eol), e.session.render(eol)) {
			return nil, nil, fmt.Errorf("%w: %s would not hold the session as written", ErrVerify, e.c.Kind.File)
		}
	}
	if e.guidance != nil {
		var got []string
		for _, g := range after.Guidance() {
			got = append(got, g.Text)
		}
		if want := e.guidance.want(); !slices.Equal(got, want) {
			return nil, nil, fmt.Errorf("%w: %s would queue the guidance %q instead of %q", ErrVerify, e.c.Kind.File, got, want)
		}
	}
	return out, after, nil
}

// checkItems checks that after has exactly the items the edit wants.
func (e *ChecklistEdit) checkItems(after *Checklist) error {
	want := e.allWants()
	if after.Len() != len(want) {
		return fmt.Errorf("%w: %s would have %d %ss instead of %d", ErrVerify, e.c.Kind.File, after.Len(), e.c.Kind.Noun, len(want))
	}
	for i := range after.Len() {
		if err := e.checkItem(after, i, want[i]); err != nil {
			return err
		}
	}
	return nil
}

// checkItem checks that item i of after reads as want.
func (e *ChecklistEdit) checkItem(after *Checklist, i int, want view) error {
	it := after.Item(i)
	if got := it.view(); !viewsEqual(got, want) {
		return fmt.Errorf("%w: %s line %d would read as %+v, want %+v", ErrVerify, e.c.Kind.File, it.Line, got, want)
	}
	if it.Provisional {
		return fmt.Errorf("%w: %s line %d still has no ID", ErrVerify, e.c.Kind.File, it.Line)
	}
	return nil
}

// Checklist returns the checklist being edited, as it was read.
func (e *ChecklistEdit) Checklist() *Checklist { return e.c }

// NotFound returns the error for an ID that is not in the checklist.
func (e *ChecklistEdit) NotFound(id string) error {
	return e.c.notFound(normID(id))
}
