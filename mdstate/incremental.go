package mdstate

import (
	"bytes"
	"slices"
	"sort"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// This file checks an edit of a large checklist without parsing the whole
// file again. A coordinator writes RALPH_TASKS.md twice an iteration: a
// task's checkbox, the lines under that task, the Session section. On a
// 10,000-task file a parse of the whole takes 50 ms; what the edit
// touched takes well under one. reparse builds the checklist of the new
// bytes from the old one and a parse of only the touched parts, and only
// where it can show that a parse of the whole would read exactly that;
// anywhere else the caller parses the whole (it is never an error). The
// checks after an edit (edit.go) are the same either way.
//
// Why the parts are enough. goldmark reads a file line by line, and what
// a line does depends only on the blocks open before it and on the line
// itself. Three kinds of edit keep everything else as it was:
//
//   - A checkbox's character, one of the five statuses for another: the
//     line still starts with the list marker and "[", which no block but
//     a paragraph can start with, and nothing else of any line changes,
//     so every block, offset and line stays; the item's status changes.
//   - Edits inside one top-level item of a top-level list, after its
//     first line (ralph's "- key: value" lines under a task). The item's
//     first line opens it in its list whatever came before, as it did;
//     what the lines under it do depends only on that item and the
//     list's marker and the item's offset, which are the item's own. So
//     the item parsed on its own, from its first line through the first
//     non-blank line after it, reads as it does in the file, provided
//     that line (the next item, the next block, or the end) is read the
//     same way after the old and the new item: then every later line
//     meets the blocks it met before. Neither the old nor the new item
//     may hold a blank line, so the list stays as tight or loose as it
//     was (goldmark makes tight lists' paragraphs TextBlocks, and loose
//     lists' items may not be read apart from each other).
//   - Edits after the first Session or Guidance heading (the session
//     block, the guidance queue). That heading starts a block of the
//     document, so every block before it was closed by its line; with
//     the bytes before it read as before, the file from that heading on
//     parses on its own as it does in the file.
//
// What is not kept: a checklist made here has no parse of the task list
// itself, only of the part from the first Session or Guidance heading on
// (what Session, SetSession and the guidance code read); everything the
// items need later is in them. A file whose IDs, dependencies, numbering
// or merge markers an edit could change, a first write of the session
// block, an added task: parsed whole.

// reparse returns the checklist of out (c's bytes with edits spliced in;
// edits sorted by Start and in c's offsets), or nil when it cannot show
// that it is what parseChecklist would read (or out is not text ralph
// reads: the whole parse says why). fresh lists the items it read anew
// from out; the others are c's, moved.
func (c *Checklist) reparse(out []byte, edits []Edit) (after *Checklist, fresh []int) {
	if reparseHook != nil {
		defer func() { reparseHook(after != nil) }()
	}
	if c.conflict != nil || c.ids == nil || len(edits) == 0 || bytes.Contains(out, conflictStart) {
		return nil, nil
	}
	s, ok := c.src.spliced(out, edits)
	if !ok || c.src.bom != s.bom || c.src.eol != s.eol {
		return nil, nil
	}
	r := &rework{c: c, s: s, edits: edits, boxes: map[int]Status{}}
	if !r.classify() {
		return nil, nil
	}
	return r.build()
}

// reparseHook, set only by tests, hears whether each reparse succeeded.
var reparseHook func(ok bool)

// rework is one reparse: the old checklist, the new source, and what the
// edits touch.
type rework struct {
	c     *Checklist
	s     *source
	edits []Edit
	// cum[i] and cumLines[i] are how much edits[:i] move what follows
	// them, in bytes and in lines.
	cum, cumLines []int
	boxes         map[int]Status // item index → its new checkbox
	tops          []int          // items whose lines the edits change, top-level, in order
	owner         []int          // per edit: index into tops, -1 for a box or the tail
	tail          bool           // an edit after the first Session or Guidance heading
}

// classify sorts each edit into one of the three kinds, or reports false.
func (r *rework) classify() bool {
	c := r.c
	r.cum = make([]int, len(r.edits)+1)
	r.cumLines = make([]int, len(r.edits)+1)
	r.owner = make([]int, len(r.edits))
	for i, ed := range r.edits {
		r.cum[i+1] = r.cum[i] + len(ed.Text) - (ed.End - ed.Start)
		r.cumLines[i+1] = r.cumLines[i] + bytes.Count(ed.Text, []byte{'\n'}) - bytes.Count(c.src.src[ed.Start:ed.End], []byte{'\n'})
		r.owner[i] = -1
		if ed.Start < c.mdBase {
			return false
		}
		if c.quietAt >= 0 && ed.Start >= c.quietEnd {
			r.tail = true
			continue
		}
		if c.quietAt >= 0 && ed.End > c.quietAt {
			return false // the heading the tail starts with
		}
		k := c.itemAt(ed.Start)
		if k < 0 {
			return false
		}
		if r.isBox(k, ed) {
			r.boxes[k] = mustStatus(ed.Text[0])
			continue
		}
		t := c.topOf(k)
		if t < 0 {
			return false
		}
		top := c.Item(t)
		if ed.Start < c.src.lineEnd(top.BoxAt) || ed.End > top.Span.End {
			return false // the first line, or outside the item
		}
		if n := len(r.tops); n == 0 || r.tops[n-1] != t {
			if n > 0 && r.tops[n-1] > t {
				return false
			}
			r.tops = append(r.tops, t)
		}
		r.owner[i] = len(r.tops) - 1
	}
	return true
}

// isBox reports whether ed writes item k's checkbox as another status.
func (r *rework) isBox(k int, ed Edit) bool {
	it := r.c.Item(k)
	if ed.Start != it.BoxAt || ed.End != it.BoxAt+1 || len(ed.Text) != 1 {
		return false
	}
	// From a status to a status: an unknown box has a warning to drop.
	_, was := statusOfBox(r.c.src.src[it.BoxAt])
	_, known := statusOfBox(ed.Text[0])
	return was && known
}

func mustStatus(b byte) Status {
	st, _ := statusOfBox(b)
	return st
}

// itemAt returns the index of the last item that starts at or before
// off, or -1.
func (c *Checklist) itemAt(off int) int {
	return sort.Search(c.Len(), func(i int) bool { return c.itemStart(i) > off }) - 1
}

// topOf returns the index of the item of a top-level list that holds item
// k (k itself, or the one it is nested in), or -1 when k is nested in
// something that is not an item.
func (c *Checklist) topOf(k int) int {
	end := c.Item(k).Span.End
	for j := k; j >= 0; j-- {
		it := c.content(j)
		if it.topList && it.Depth == 0 {
			if c.Item(j).Span.End >= end {
				return j
			}
			return -1
		}
	}
	return -1
}

// shift is how far edits move the old offset off: the edits that start at
// or before it (none starts inside what reparse keeps but a box, which
// keeps its size, and an insertion at an item's end belongs to the item).
func (r *rework) shift(off int) (bytes, lines int) {
	i := sort.Search(len(r.edits), func(i int) bool { return r.edits[i].Start > off })
	return r.cum[i], r.cumLines[i]
}

// piece is the result of parsing one part of the new file on its own.
type piece struct {
	items []Item
	warns []Warning
	first int // index of the first old item it replaces
	n     int // how many old items it replaces
	// lastLine is the part's last line in the old file: the walk's
	// warnings up to it were about the old items it replaces.
	lastLine int
}

func (r *rework) build() (*Checklist, []int) {
	c, s := r.c, r.s
	var pieces []piece
	newLastTopEnd := -1
	for w, t := range r.tops {
		p, end, ok := r.window(w, t)
		if !ok {
			return nil, nil
		}
		if c.lastTopEnd == c.Item(t).Span.End {
			newLastTopEnd = end // the file's last task list ends with this item
		}
		pieces = append(pieces, p)
	}
	after := &Checklist{Kind: c.Kind, src: s, lastTopEnd: -1, quietAt: -1, quietEnd: -1,
		lastTopMarker: c.lastTopMarker, lastTopOrdinal: c.lastTopOrdinal, lastTopIndent: c.lastTopIndent,
		mdBase: c.mdBase, ids: c.ids}
	switch {
	case len(r.tops) == 0 && !r.tail:
		// Checkboxes only: every block and offset is as it was.
		after.md = &parsed{s: s, base: c.md.base, doc: c.md.doc}
		after.quietAt, after.quietEnd = c.quietAt, c.quietEnd
	case c.quietAt < 0:
		after.md = &parsed{s: s, base: len(s.src), doc: ast.NewDocument()}
	default:
		tp, ok := r.reparseTail(after)
		if !ok {
			return nil, nil
		}
		if after.lastTopEnd < 0 && c.lastTopEnd >= c.quietAt {
			return nil, nil // the last task list was there and is not now: which is last?
		}
		pieces = append(pieces, tp)
	}
	switch {
	case after.lastTopEnd >= 0: // the tail holds the last task list
	case newLastTopEnd >= 0:
		after.lastTopEnd = newLastTopEnd
	case c.lastTopEnd >= 0:
		d, _ := r.shift(c.lastTopEnd)
		after.lastTopEnd = c.lastTopEnd + d
	}
	fresh, ok := r.assemble(after, pieces)
	if !ok {
		return nil, nil
	}
	// Ready's and Counts' answers, from c's if c has them: only the tasks
	// read anew and those whose checkbox changed can differ (IDs and
	// dependencies are c's, sameItems says).
	changed := slices.Clone(fresh)
	for k := range r.boxes {
		changed = append(changed, k)
	}
	slices.Sort(changed)
	changed = slices.Compact(changed)
	after.ready.deps = c.ready.deps
	after.ready.follow(&c.ready.versionAnswer, c, changed)
	after.counts.follow(&c.counts, c, changed)
	return after, fresh
}

// window parses top-level item t (the w-th with edits) on its own, old and
// new, and returns what it reads now and where it ends.
func (r *rework) window(w, t int) (piece, int, bool) {
	c, s := r.c, r.s
	top := c.Item(t)
	start, end := top.Span.Start, top.Span.End
	d, _ := r.shift(start)
	nstart := start + d
	nend := nstart + (end - start)
	for i, ed := range r.edits {
		if r.owner[i] == w {
			nend += len(ed.Text) - (ed.End - ed.Start)
		}
	}
	if hasBlankLine(c.src.src[start:end]) || hasBlankLine(s.src[nstart:nend]) {
		return piece{}, 0, false
	}
	oldOut, ok := itemAlone(c.src, start, end)
	if !ok {
		return piece{}, 0, false
	}
	newOut, ok := itemAlone(s, nstart, nend)
	if !ok || newOut.next != oldOut.next {
		return piece{}, 0, false
	}
	// The items of the old window: t and those nested in it.
	n := 1
	for t+n < c.Len() && c.itemStart(t+n) < end {
		n++
	}
	scratch := &Checklist{Kind: c.Kind, src: s, md: newOut.md, lastTopEnd: -1, quietAt: -1, quietEnd: -1, mdBase: c.mdBase}
	scratch.paraStarts = paragraphStarts(newOut.md, &top.topTight)
	scratch.walk(newOut.md.doc, 0, nil)
	items := scratch.items
	for len(items) > 0 && items[len(items)-1].Span.Start >= nend {
		items = items[:len(items)-1] // the next item, read for its start only
	}
	if len(items) != n || !c.sameItems(t, items) {
		return piece{}, 0, false
	}
	items[0].topTight = top.topTight // the list's, which the window cannot see
	lastLine := s.line(max(nend-1, nstart))
	var warns []Warning
	for _, wn := range scratch.Warnings {
		if wn.Line <= lastLine {
			warns = append(warns, wn)
		}
	}
	return piece{items: items, warns: warns, first: t, n: n, lastLine: c.src.line(end - 1)}, nend, true
}

// alone is a top-level item parsed on its own, through the first line
// that is not blank after it.
type alone struct {
	md *parsed
	// next says how that line was read: "item" (the next item of the
	// same list), "end" (the file's end), or the kind of the block it
	// starts.
	next string
}

// itemAlone parses src.src[start:end], one item of a top-level list,
// with the first non-blank line after it. ok is false unless the parse
// reads one item that ends at end, then that line as the next item or a
// block of its own.
func itemAlone(src *source, start, end int) (alone, bool) {
	g := end
	for g < len(src.src) && blankLine(src.src[g:src.lineEnd(g)]) {
		g = src.lineEnd(g)
	}
	stop := len(src.src)
	if g < len(src.src) {
		stop = src.lineEnd(g)
	}
	md := &parsed{s: src, base: start, doc: blockParser.Parse(text.NewReader(src.src[start:stop]))}
	l, ok := md.doc.FirstChild().(*ast.List)
	if !ok || l.FirstChild() == nil || src.lineStart(md.base+l.FirstChild().Pos()) != start || md.end(l.FirstChild()) != end {
		return alone{}, false
	}
	a := alone{md: md}
	switch sib, blk := l.FirstChild().NextSibling(), l.NextSibling(); {
	case g == len(src.src):
		if sib != nil || blk != nil {
			return alone{}, false
		}
		a.next = "end"
	case sib != nil:
		if src.lineStart(md.base+sib.Pos()) != g || sib.NextSibling() != nil || blk != nil {
			return alone{}, false
		}
		a.next = "item"
	case blk != nil:
		if src.lineStart(md.pos(blk)) != g || blk.NextSibling() != nil {
			return alone{}, false
		}
		a.next = blk.Kind().String()
	default:
		return alone{}, false
	}
	return a, true
}

// reparseTail parses the file from the first Session or Guidance heading
// on, sets after's md and the walk's findings there, and returns the
// tail's items to replace the old ones from there on.
func (r *rework) reparseTail(after *Checklist) (piece, bool) {
	c, s := r.c, r.s
	d, _ := r.shift(c.quietAt)
	at := c.quietAt + d
	md := &parsed{s: s, base: at, doc: blockParser.Parse(text.NewReader(s.src[at:]))}
	h, ok := md.doc.FirstChild().(*ast.Heading)
	if !ok || s.lineStart(md.pos(h)) != at || md.end(h) != c.quietEnd+d {
		return piece{}, false
	}
	name := md.headingText(h)
	if !strings.EqualFold(name, SessionHeading) && !strings.EqualFold(name, GuidanceHeading) {
		return piece{}, false
	}
	tw := &Checklist{Kind: c.Kind, src: s, md: md, lastTopEnd: -1, quietAt: -1, quietEnd: -1, mdBase: c.mdBase}
	tw.paraStarts = paragraphStarts(md, nil)
	tw.walk(md.doc, 0, nil)
	first := c.itemAt(c.quietAt - 1)
	first++
	if c.Len()-first != len(tw.items) || !c.sameItems(first, tw.items) {
		return piece{}, false
	}
	after.md = md
	after.quietAt, after.quietEnd = tw.quietAt, tw.quietEnd
	if tw.lastTopEnd >= 0 {
		after.lastTopEnd = tw.lastTopEnd
		after.lastTopMarker, after.lastTopOrdinal, after.lastTopIndent = tw.lastTopMarker, tw.lastTopOrdinal, tw.lastTopIndent
	}
	return piece{items: tw.items, warns: tw.Warnings, first: first, n: c.Len() - first, lastLine: len(c.src.lineStarts) + 1}, true
}

// sameItems reports whether the items a part of the file reads now are
// the old ones from index first on as far as the rest of the file is
// concerned: IDs as written, and dependencies (so IDs, numbering and the
// dependency warnings stay as they were).
func (c *Checklist) sameItems(first int, now []Item) bool {
	for i := range now {
		o, n := c.content(first+i), &now[i]
		if o.Provisional || o.dupID || n.ID != o.ID || n.Depth != o.Depth || n.topList != o.topList || !slices.Equal(n.After, o.After) {
			return false
		}
	}
	return true
}

// assemble puts after's items and warnings together: the old ones where
// nothing changed (moved by the edits before them, a checkbox changed),
// the pieces' where something did. A piece has as many items as it
// replaces, so every item keeps its index. It returns the pieces' items'
// indexes.
func (r *rework) assemble(after *Checklist, pieces []piece) (fresh []int, ok bool) {
	c := r.c
	for _, p := range pieces {
		if p.n != len(p.items) {
			return nil, false
		}
		for i := range p.items {
			fresh = append(fresh, p.first+i)
		}
	}
	if sh := r.shareItems(pieces); len(sh.moves) == 0 && len(sh.own) == 0 {
		after.items = sh.base
	} else {
		after.shared = sh
	}
	var walkWarns []Warning
	oldWalk := c.Warnings[:c.walkWarns]
	wi := 0 // next old walk warning
	for _, p := range pieces {
		firstLine := len(c.src.lineStarts) + 1
		if p.first < c.Len() {
			firstLine = c.Item(p.first).Line
		}
		for wi < len(oldWalk) && oldWalk[wi].Line < firstLine {
			walkWarns = append(walkWarns, r.moveWarning(oldWalk[wi]))
			wi++
		}
		for wi < len(oldWalk) && oldWalk[wi].Line <= p.lastLine {
			wi++ // the piece's own
		}
		walkWarns = append(walkWarns, p.warns...)
	}
	for ; wi < len(oldWalk); wi++ {
		walkWarns = append(walkWarns, r.moveWarning(oldWalk[wi]))
	}
	after.walkWarns = len(walkWarns)
	after.Warnings = walkWarns
	for _, wn := range c.Warnings[c.walkWarns:] {
		after.Warnings = append(after.Warnings, r.moveWarning(wn))
	}
	return fresh, true
}

// shareItems returns after's items as c's, moved by the edits, with
// copies of those whose checkbox changed and the pieces' in place of the
// ones they replace (items.go). Those of a small checklist, or of a
// version past the bounds of sharing, are in an array of their own.
func (r *rework) shareItems(pieces []piece) *sharedItems {
	c := r.c
	old := c.share()
	steps := r.steps()
	now := &sharedItems{base: old.base, moves: addMoves(old.moves, steps), own: make(map[int]*Item, len(old.own)+len(r.boxes))}
	for k, it := range old.own {
		if d, dl := moveAt(steps, k); d != 0 || dl != 0 {
			moved := *it
			moved.move(d, dl)
			it = &moved
		}
		now.own[k] = it
	}
	for k, st := range r.boxes {
		it := *c.Item(k)
		it.Status = st
		it.move(moveAt(steps, k))
		now.own[k] = &it
	}
	for _, p := range pieces {
		for i := range p.items {
			now.own[p.first+i] = &p.items[i]
		}
	}
	if c.Len() < shareItemsFrom || len(now.moves) > moveLimit || len(now.own) > ownLimit {
		return &sharedItems{base: now.flat()}
	}
	return now
}

// steps returns how the edits move c's items: item k by cum[n], n the
// number of edits that start at or before it; so a step at the first item
// that starts at or after each edit's start.
func (r *rework) steps() []itemMove {
	c := r.c
	steps := make([]itemMove, 0, len(r.edits))
	for j, ed := range r.edits {
		k := sort.Search(c.Len(), func(i int) bool { return c.itemStart(i) >= ed.Start })
		if n := len(steps); n > 0 && steps[n-1].from == k {
			steps = steps[:n-1]
		}
		steps = append(steps, itemMove{from: k, d: r.cum[j+1], dl: r.cumLines[j+1]})
	}
	return steps
}

// addMoves returns the moves of a and b together: how far an item is
// moved by both.
func addMoves(a, b []itemMove) []itemMove {
	var out []itemMove
	var ad, adl, bd, bdl int
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		from := 0
		switch {
		case j == len(b) || (i < len(a) && a[i].from < b[j].from):
			from, ad, adl = a[i].from, a[i].d, a[i].dl
			i++
		case i == len(a) || b[j].from < a[i].from:
			from, bd, bdl = b[j].from, b[j].d, b[j].dl
			j++
		default:
			from, ad, adl, bd, bdl = a[i].from, a[i].d, a[i].dl, b[j].d, b[j].dl
			i++
			j++
		}
		m := itemMove{from: from, d: ad + bd, dl: adl + bdl}
		switch n := len(out); {
		case n > 0 && out[n-1].d == m.d && out[n-1].dl == m.dl:
		case n == 0 && m.d == 0 && m.dl == 0:
		default:
			out = append(out, m)
		}
	}
	return out
}

// moveWarning returns a warning about an old line that the edits did not
// touch, at its line now.
func (r *rework) moveWarning(w Warning) Warning {
	if w.Line < 1 || w.Line > len(r.c.src.lineStarts) {
		return w
	}
	_, dl := r.shift(r.c.src.lineStarts[w.Line-1])
	w.Line += dl
	return w
}

// move moves the item by d bytes and dl lines: the edits before it.
func (it *Item) move(d, dl int) {
	it.Line += dl
	it.Span.Start += d
	it.Span.End += d
	it.BoxAt += d
	it.TextAt += d
	it.IDSpan.Start += d
	it.IDSpan.End += d
	it.metaAt += d
	if len(it.Meta) > 0 {
		meta := slices.Clone(it.Meta)
		for i := range meta {
			meta[i].Line += dl
			meta[i].Span.Start += d
			meta[i].Span.End += d
			meta[i].Val.Start += d
			meta[i].Val.End += d
		}
		it.Meta = meta
	}
}

// hasBlankLine reports whether b, whole lines, holds a blank one.
func hasBlankLine(b []byte) bool {
	for len(b) > 0 {
		line, rest, _ := cutLine(b)
		if blankLine(line) {
			return true
		}
		b = rest
	}
	return false
}

// paragraphStarts returns where the paragraphs of md start (their first
// line's text). With tight set, md is an item of a top-level list parsed
// on its own, and *tight is whether that list is tight in the file: the
// blocks right under its items are paragraphs then only when it is not
// (goldmark makes them TextBlocks in a tight list).
func paragraphStarts(md *parsed, tight *bool) map[int]bool {
	starts := map[int]bool{}
	_ = ast.Walk(md.doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		_, para := n.(*ast.Paragraph)
		_, textBlock := n.(*ast.TextBlock)
		if !para && !textBlock {
			return ast.WalkContinue, nil
		}
		if tight != nil && underTopItem(n) {
			para = !*tight
		}
		if para && n.Lines().Len() > 0 {
			starts[md.base+n.Lines().At(0).Start] = true
		}
		return ast.WalkSkipChildren, nil
	})
	return starts
}

// underTopItem reports whether block n is right under an item of a list
// at the top of its document.
func underTopItem(n ast.Node) bool {
	li, ok := n.Parent().(*ast.ListItem)
	if !ok {
		return false
	}
	l := li.Parent()
	return l != nil && l.Parent() != nil && l.Parent().Kind() == ast.KindDocument
}

// skipBlanks returns the offset of the first byte at or after off that is
// not a blank or a tab.
func (s *source) skipBlanks(off int) int {
	for off < len(s.src) && (s.src[off] == ' ' || s.src[off] == '\t') {
		off++
	}
	return off
}
