package mdstate

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/yuin/goldmark/ast"
)

// Guidance is one message a person queued for the next agent: a plain
// (non-checkbox) list item under the "## Guidance" heading of
// RALPH_TASKS.md, where the person can see, edit or delete it:
//
//	## Guidance
//
//	- Use the new logger in every package you touch
//
// Text is the item's text on one line. A leading backslash that keeps the
// text from reading as markdown ("\# not a heading", "1\. not a list") is
// not part of it, as markdown does not show it either.
type Guidance struct {
	Text string `json:"text"`
	Line int    `json:"line"` // 1-based line of the item
}

// GuidanceHeading is the heading text that marks the guidance section.
const GuidanceHeading = "Guidance"

// guidanceItem is a guidance message with where its item is.
type guidanceItem struct {
	Guidance
	li *ast.ListItem
}

// Guidance returns the queued messages, in file order: every plain list
// item of the top-level lists under the first "Guidance" heading (any
// level), up to the next heading. Checkbox items there are tasks, as
// everywhere else, and so is an item that holds one; neither is a
// message. Every list counts, not only the first, so that removing the
// last message of one list never turns another into the queue.
func (c *Checklist) Guidance() []Guidance {
	var out []Guidance
	for _, g := range c.guidanceItems() {
		out = append(out, g.Guidance)
	}
	return out
}

// guidanceHeading returns the first "Guidance" heading, or nil.
func (c *Checklist) guidanceHeading() *ast.Heading {
	for n := c.md.doc.FirstChild(); n != nil; n = n.NextSibling() {
		if h, ok := n.(*ast.Heading); ok && strings.EqualFold(c.md.headingText(h), GuidanceHeading) {
			return h
		}
	}
	return nil
}

// guidanceLists returns the top-level lists of the section under h.
func (c *Checklist) guidanceLists(h *ast.Heading) []*ast.List {
	var out []*ast.List
	for b := h.NextSibling(); b != nil; b = b.NextSibling() {
		if _, isH := b.(*ast.Heading); isH {
			break
		}
		if l, ok := b.(*ast.List); ok {
			out = append(out, l)
		}
	}
	return out
}

// guidanceItems returns the messages with their items, in file order.
func (c *Checklist) guidanceItems() []guidanceItem {
	h := c.guidanceHeading()
	if h == nil {
		return nil
	}
	var out []guidanceItem
	for _, l := range c.guidanceLists(h) {
		for n := l.FirstChild(); n != nil; n = n.NextSibling() {
			li, ok := n.(*ast.ListItem)
			if !ok {
				continue
			}
			if text, ok := c.guidanceText(li); ok {
				start := c.src.lineStart(c.md.pos(li))
				out = append(out, guidanceItem{Guidance: Guidance{Text: text, Line: c.src.line(start)}, li: li})
			}
		}
	}
	return out
}

// guidanceText reads a plain item's text: everything after its marker,
// on one line. ok is false for a task, an item holding one, and an empty
// item.
func (c *Checklist) guidanceText(li *ast.ListItem) (string, bool) {
	if c.isItem(li) || len(c.nestedItems(li, nil)) > 0 {
		return "", false
	}
	end := c.md.end(li)
	if end < 0 {
		return "", false
	}
	start := c.markerEnd(c.src.lineStart(c.md.pos(li)))
	if start >= end {
		return "", false
	}
	text := unescapeLead(oneLine(string(c.src.src[start:end])))
	return text, text != ""
}

// markerEnd returns where the text of the list item on the line at ls
// starts: past the indentation, the marker ("-", "*", "+", "1.", "1)")
// and the blanks after it.
func (c *Checklist) markerEnd(ls int) int {
	s := c.src.src
	i := max(ls, c.md.base)
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i < len(s) && strings.IndexByte("-*+.)", s[i]) >= 0 {
		i++
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// backOverBlank returns the start of the blank lines that end just before
// offset end (a line start), or end when there are none.
func (c *Checklist) backOverBlank(end int) int {
	s := c.src
	for end > 0 {
		ls := s.lineStart(end - 1)
		if len(bytes.TrimSpace(s.src[ls:end])) > 0 {
			break
		}
		end = ls
	}
	return end
}

// escapeLead keeps a message from reading as markdown when written after
// "- ": a leading punctuation character ("# x", "[ ] x", "> x", "---")
// gets a backslash, and so does what follows a leading number ("1. x").
// Past its start, a line in a list item reads as plain text.
func escapeLead(text string) string {
	if text != "" && isASCIIPunct(text[0]) {
		return `\` + text
	}
	i := leadDigits(text)
	if i > 0 && i < len(text) && (text[i] == '.' || text[i] == ')' || text[i] == '\\') {
		return text[:i] + `\` + text[i:]
	}
	return text
}

// unescapeLead undoes escapeLead: a backslash before punctuation at the
// start, or right after a leading number, is dropped, as markdown does
// not show it either (so a person's "\# x" reads "# x").
func unescapeLead(text string) string {
	i := leadDigits(text)
	if i+1 < len(text) && text[i] == '\\' && isASCIIPunct(text[i+1]) {
		return text[:i] + text[i+1:]
	}
	return text
}

// leadDigits returns how many digits text starts with.
func leadDigits(text string) int {
	i := 0
	for i < len(text) && isDigit(text[i]) {
		i++
	}
	return i
}

func isASCIIPunct(b byte) bool {
	return b > ' ' && b < 0x7f && !isLetter(b) && !isDigit(b)
}

// guidanceEdit is what one ChecklistEdit does to the guidance section.
type guidanceEdit struct {
	items   []guidanceItem // as read
	dropped []bool         // per item: removed by this edit
	queued  []string       // messages added, in order
	ins     int            // index in edits of the insertion of the queued items; -1 before the first
	at      int            // where that insertion is
	pre     []byte         // written before the new items: separators, a new heading
	post    []byte         // written after them: a blank line before what follows
	indent  string         // of a new item, as the list's last
	marker  byte           // of a new item: '-', '*', '+', or '.' or ')' after a number
	next    int            // the number of the next new item of an ordered list; 0 for bullets
}

// itemPrefix is how the i-th new item starts.
func (g *guidanceEdit) itemPrefix(i int) string {
	num := ""
	if g.next > 0 {
		num = strconv.Itoa(g.next + i)
	}
	return g.indent + num + string(g.marker) + " "
}

// want is what Guidance should return after the edit.
func (g *guidanceEdit) want() []string {
	var out []string
	for i, it := range g.items {
		if !g.dropped[i] {
			out = append(out, it.Text)
		}
	}
	return append(out, g.queued...)
}

func (e *ChecklistEdit) guidanceState() *guidanceEdit {
	if e.guidance == nil {
		items := e.c.guidanceItems()
		e.guidance = &guidanceEdit{items: items, dropped: make([]bool, len(items)), ins: -1}
	}
	return e.guidance
}

// QueueGuidance appends one message (made one line) as "- text", creating
// the section when missing (placed just before "## Session" when that
// exists, else at the end of the file).
func (e *ChecklistEdit) QueueGuidance(text string) error {
	text = messageText(text)
	if text == "" {
		return errors.New("a message needs some text")
	}
	g := e.guidanceState()
	if g.ins < 0 {
		at := e.guidancePlace(g)
		g.ins, g.at = len(e.edits), at
		e.edits = append(e.edits, Edit{Span: Span{at, at}})
	}
	g.queued = append(g.queued, text)
	var b bytes.Buffer
	b.Write(g.pre)
	for i, q := range g.queued {
		b.WriteString(g.itemPrefix(i) + escapeLead(q) + e.c.src.eol)
	}
	b.Write(g.post)
	e.edits[g.ins].Text = b.Bytes()
	return nil
}

// messageText is a message as the file can hold it: on one line, valid
// UTF-8 without NUL bytes (each bad byte becomes U+FFFD), so that what a
// terminal passes on never makes the file one ralph refuses to read.
func messageText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return oneLine(strings.ReplaceAll(s, "\x00", "\uFFFD"))
}

// guidancePlace returns where queued items go and sets the separators and
// marker around them: after the last list holding a message, else right
// under the heading, else in a new section before the session's heading or
// at the end of the file.
func (e *ChecklistEdit) guidancePlace(g *guidanceEdit) int {
	c, s := e.c, e.c.src
	eol := []byte(s.eol)
	g.marker = '-'
	var at int
	switch h := c.guidanceHeading(); {
	case h != nil && len(g.items) > 0:
		last := g.items[len(g.items)-1].li
		l := last.Parent().(*ast.List)
		at = c.md.end(l)
		g.indent, g.marker, g.next = c.newItemMarker(l)
		if at > 0 && s.src[at-1] != '\n' {
			g.pre = eol // a last line without a line ending
		}
	case h != nil:
		at = c.md.end(h)
		if at > 0 && s.src[at-1] != '\n' {
			g.pre = eol
		}
		g.pre = append(g.pre, eol...)
	default:
		at = len(s.src)
		if sh := c.sessionHeading(); sh != nil {
			at = s.lineStart(c.md.pos(sh))
		}
		if at > 0 && s.src[at-1] != '\n' {
			g.pre = append(g.pre, eol...)
		}
		if at > 0 && !blankLine(s.src[s.lineStart(at-1):at]) {
			g.pre = append(g.pre, eol...)
		}
		g.pre = append(g.pre, "## "+GuidanceHeading+s.eol+s.eol...)
	}
	// A blank line keeps what follows apart from the new items: a
	// paragraph right below would run on into the last one.
	if at < len(s.src) && !blankLine(s.src[at:s.lineEnd(at)]) {
		g.post = eol
	}
	return at
}

// newItemMarker returns how a new item of list l starts: the indentation
// and marker of its last item and, for an ordered list, its number.
func (c *Checklist) newItemMarker(l *ast.List) (indent string, marker byte, next int) {
	s := c.src
	ls := max(s.lineStart(c.md.pos(l.LastChild())), c.md.base) // not the BOM
	i := ls
	for i < len(s.src) && s.src[i] == ' ' {
		i++
	}
	if l.IsOrdered() {
		next = l.Start + l.ChildCount()
	}
	return string(s.src[ls:i]), l.Marker, next
}

// sessionHeading returns the first "Session" heading, or nil.
func (c *Checklist) sessionHeading() *ast.Heading {
	for n := c.md.doc.FirstChild(); n != nil; n = n.NextSibling() {
		if h, ok := n.(*ast.Heading); ok && strings.EqualFold(c.md.headingText(h), SessionHeading) {
			return h
		}
	}
	return nil
}

// DropGuidance removes the items whose text equals one of texts (each text
// removes one item); an item a person edited since (other text) stays; it
// is no error when none matches.
func (e *ChecklistEdit) DropGuidance(texts []string) error {
	g := e.guidanceState()
	for _, t := range texts {
		t = messageText(t)
		for i, it := range g.items {
			if !g.dropped[i] && it.Text == t {
				g.dropped[i] = true
				break
			}
		}
	}
	return nil
}

// drops returns the deletions of the dropped items, one per run of
// neighbours: their lines with the blank lines after them; at the end of
// a list, the blank lines before them instead, and when the whole list
// goes (and no new item takes its place), those after it if a blank line
// stays before it. So no gap is left, and what follows starts after a
// blank line as it did.
func (g *guidanceEdit) drops(c *Checklist) []Edit {
	dropped := map[ast.Node]bool{}
	for i, it := range g.items {
		if g.dropped[i] {
			dropped[it.li] = true
		}
	}
	s := c.src
	var out []Edit
	for _, it := range g.items {
		first := ast.Node(it.li)
		if !dropped[first] || dropped[first.PreviousSibling()] {
			continue // not dropped, or not the first of its run
		}
		last := first
		for last.NextSibling() != nil && dropped[last.NextSibling()] {
			last = last.NextSibling()
		}
		start := s.lineStart(c.md.pos(first))
		if next := last.NextSibling(); next != nil {
			out = append(out, Edit{Span: Span{start, s.lineStart(c.md.pos(next))}})
			continue
		}
		end := max(c.md.end(last), s.lineEnd(s.lineStart(c.md.pos(last))))
		switch {
		case first.PreviousSibling() != nil:
			start = c.backOverBlank(start)
		case g.ins >= 0 && g.at == end:
			// New items take the list's place.
		case start > 0 && blankLine(s.src[s.lineStart(start-1):start]):
			for end < len(s.src) && blankLine(s.src[end:s.lineEnd(end)]) {
				end = s.lineEnd(end)
			}
		}
		out = append(out, Edit{Span: Span{start, end}})
	}
	return out
}

// changed reports whether the edit changes the section.
func (g *guidanceEdit) changed() bool {
	return g != nil && (len(g.queued) > 0 || slices.Contains(g.dropped, true))
}
