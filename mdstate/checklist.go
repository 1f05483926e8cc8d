package mdstate

import (
	"bytes"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/yuin/goldmark/ast"
)

// Status is where a task (or goal, or to-do) stands. It is written as the
// character inside the checkbox.
type Status string

// The statuses and their checkboxes. [ ] and [x] are GitHub's; the other
// three follow the convention of Obsidian and other markdown task tools.
const (
	Pending    Status = "pending"     // [ ]
	InProgress Status = "in_progress" // [/]
	Done       Status = "done"        // [x]
	Blocked    Status = "blocked"     // [!]
	Skipped    Status = "skipped"     // [-]
)

// Statuses lists every status in display order.
var Statuses = []Status{Pending, InProgress, Done, Blocked, Skipped}

// Box returns the checkbox character for s.
func (s Status) Box() byte {
	switch s {
	case InProgress:
		return '/'
	case Done:
		return 'x'
	case Blocked:
		return '!'
	case Skipped:
		return '-'
	}
	return ' '
}

// ParseStatus accepts a status name as ralph prints it, or with a space or
// hyphen for the underscore ("in progress").
func ParseStatus(s string) (Status, bool) {
	s = strings.NewReplacer(" ", "_", "-", "_").Replace(strings.ToLower(strings.TrimSpace(s)))
	for _, st := range Statuses {
		if string(st) == s {
			return st, true
		}
	}
	return "", false
}

func statusOfBox(c byte) (Status, bool) {
	switch c {
	case ' ':
		return Pending, true
	case 'x', 'X':
		return Done, true
	case '/':
		return InProgress, true
	case '!':
		return Blocked, true
	case '-':
		return Skipped, true
	}
	return Pending, false
}

// Span is a byte range [Start, End) in a file.
type Span struct{ Start, End int }

// Meta is one "- key: value" line under an item.
type Meta struct {
	Key   string // lower case
	Value string
	Line  int
	Span  Span // the whole list item, through its line ending
	Val   Span // the value, for replacing it
}

// Item is one checkbox line in RALPH_TASKS.md, RALPH_GOALS.md or
// RALPH_TODO.md, with everything under it.
type Item struct {
	ID string // e.g. T3; assigned (provisionally) when the line has none
	// Provisional is true when the ID is not yet written in the file.
	// ralph writes it, with the smallest edit, the next time it writes.
	Provisional bool
	Title       string
	Status      Status
	Priority    int      // 0: none; 1 runs first
	After       []string // IDs this waits for
	Attempts    int
	Notes       []string
	From        string // the to-do a task was promoted from
	Promoted    string // the task a to-do was promoted to
	Body        string // everything else under the item, dedented
	Meta        []Meta
	Depth       int // 0 for a top-level item
	Line        int // 1-based line of the checkbox

	Span       Span // from the start of the checkbox line to the end of the item
	BoxAt      int  // offset of the character inside [ ]
	TextAt     int  // offset where the ID (or title) starts
	IDSpan     Span // "T3: " including the separator; empty when none
	dupID      bool // the written ID repeats an earlier item's
	metaAt     int  // where a new "- key: value" line goes
	metaIndent string
	metaMarker byte
	topList    bool // item is in a list at the top level of the document
	// topTight is, for an item of a top-level list, whether that list is
	// tight (goldmark then makes its items' paragraphs TextBlocks).
	topTight bool
	// paraAtMeta is set when a paragraph starts at metaAt (past its
	// blanks): a line inserted there would run on into it (insertMeta).
	paraAtMeta bool
}

// Kind says which file a checklist is and how its IDs look.
type Kind struct {
	File    string // RALPH_TASKS.md
	Prefix  string // T
	Noun    string // task
	Command string // the ralph command for it: task
}

// The three checklist files.
var (
	TasksKind = Kind{File: TasksFile, Prefix: "T", Noun: "task", Command: "task"}
	GoalsKind = Kind{File: GoalsFile, Prefix: "G", Noun: "goal", Command: "goal"}
	TodoKind  = Kind{File: TodoFile, Prefix: "D", Noun: "to-do", Command: "todo"}
)

// Checklist is a parsed checklist file.
type Checklist struct {
	Kind     Kind
	Warnings []Warning

	// items are the items in file order (Len, Item, All, Items), unless
	// the checklist is a version that shares its items with others:
	// then shared has them, and flatItems is their copy once Items asks
	// for it (items.go).
	items     []Item
	shared    *sharedItems
	flatOnce  sync.Once
	flatItems []Item
	// provisional is set when an item has no ID written.
	provisional bool

	src *source
	md  *parsed
	// conflict is the file's merge conflict, if it has one: the file is
	// read, with a warning, and never written.
	conflict *ConflictError
	// lastTopEnd is the end of the last top-level list holding items
	// outside the Session and Guidance sections (the task list): where new
	// items are inserted. -1 when there is none.
	lastTopEnd     int
	lastTopMarker  []byte // "- ", or ". " after a number for ordered lists; as wide as the last item's
	lastTopOrdinal int    // next number of an ordered list; 0 for bullets
	lastTopIndent  string
	// quietAt is the start of the first Session or Guidance heading's
	// line: where new items go when there is no task list. -1 when there
	// is none. quietEnd is the end of that heading.
	quietAt, quietEnd int
	// inQuiet is true while walk is in a Session or Guidance section.
	inQuiet bool
	// mdBase is where the markdown starts: after a BOM and front matter.
	// md.base is the same for a parse of the whole file; a checklist made
	// by reparse keeps only the part from quietAt on (md.base > mdBase).
	mdBase int
	// walkWarns is how many of Warnings walk made (item by item, in file
	// order); those after it are about the file as a whole (IDs,
	// dependencies, a conflict).
	walkWarns int
	// paraStarts holds, while walk runs, where paragraphs start.
	paraStarts map[int]bool
	// ids finds an item by ID; a reparse whose items keep their IDs and
	// order shares it.
	ids *itemIndex
	// ready holds Ready's answer (ready.go), counts Counts'.
	ready  readyList
	counts versionAnswer[map[Status]int]
}

// itemIndex maps each ID to the first item with it, built on first use.
type itemIndex struct {
	once sync.Once
	at   map[string]int
}

// find returns the index of the item of c with the (normalized) ID, or
// -1. The versions that share the index have the same IDs.
func (x *itemIndex) find(c *Checklist, id string) int {
	x.once.Do(func() {
		x.at = make(map[string]int, c.Len())
		for i := range c.Len() {
			id := c.content(i).ID
			if _, dup := x.at[id]; !dup {
				x.at[id] = i
			}
		}
	})
	if i, ok := x.at[id]; ok {
		return i
	}
	return -1
}

// Source returns the bytes the checklist was parsed from.
func (c *Checklist) Source() []byte { return c.src.src }

// Find returns the item with the given ID (case-insensitive), or nil. It
// costs a map lookup: a coordinator looks tasks up in loops, over files of
// 10,000 tasks.
func (c *Checklist) Find(id string) *Item {
	if i := c.indexOf(normID(id)); i >= 0 {
		return c.Item(i)
	}
	return nil
}

// StatusOf returns the status of the item with the given ID (Find's),
// and false when there is none. It copies no item, whatever the version.
func (c *Checklist) StatusOf(id string) (Status, bool) {
	if i := c.indexOf(normID(id)); i >= 0 {
		return c.content(i).Status, true
	}
	return "", false
}

// indexOf returns the index of the first item with the normalized ID, or
// -1. A Checklist built by hand (a test's) has no index: it scans.
func (c *Checklist) indexOf(id string) int {
	if c.ids == nil {
		for i := range c.Len() {
			if c.content(i).ID == id {
				return i
			}
		}
		return -1
	}
	return c.ids.find(c, id)
}

// metaKeys are the keys ralph reads from "- key: value" lines. Other
// "word: text" bullets are a person's prose and stay part of the body.
var metaKeys = map[string]bool{
	"priority": true, "after": true, "attempts": true, "note": true,
	"from": true, "promoted": true,
}

// splitKeyValue reads "key: value" (key letters only; spaces around the
// colon and at the end allowed) and returns the offsets of key and value
// in b, or ok=false.
func splitKeyValue(b []byte) (keyEnd, valStart, valEnd int, ok bool) {
	for keyEnd < len(b) && isLetter(b[keyEnd]) {
		keyEnd++
	}
	if keyEnd == 0 {
		return 0, 0, 0, false
	}
	i := keyEnd
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	if i == len(b) || b[i] != ':' {
		return 0, 0, 0, false
	}
	i++
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	valEnd = len(b)
	for valEnd > i && (b[valEnd-1] == ' ' || b[valEnd-1] == '\t' || b[valEnd-1] == '\r') {
		valEnd--
	}
	return keyEnd, i, valEnd, true
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// normID returns an ID as the parser reads IDs: upper case, the number
// without leading zeros, so that "after: T007" names the task "T007:".
func normID(id string) string {
	id = strings.ToUpper(strings.TrimSpace(id))
	if !isRef(id) {
		return id
	}
	if n := strings.TrimLeft(id[1:], "0"); n != "" {
		if len(n) == len(id)-1 {
			return id // no zeros to drop: no new string
		}
		return id[:1] + n
	}
	return id[:1] + "0"
}

// isRef reports whether s looks like an item ID: a letter and digits.
func isRef(s string) bool {
	if len(s) < 2 || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// splitID reads an ID with its separator at the start of b: the prefix
// letter, digits, a colon, then spaces or the end of the line. It returns
// the offset of the digits' end and of the title, or ok=false.
func splitID(b []byte, prefix byte) (digitsEnd, titleAt int, ok bool) {
	if len(b) < 3 || b[0] != prefix || !isDigit(b[1]) {
		return 0, 0, false
	}
	i := 1
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	if i == len(b) || b[i] != ':' {
		return 0, 0, false
	}
	digitsEnd = i
	i++
	if i < len(b) && b[i] != ' ' && b[i] != '\t' {
		return 0, 0, false
	}
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return digitsEnd, i, true
}

// ParseChecklist parses one checklist file's bytes.
func ParseChecklist(kind Kind, data []byte) (*Checklist, error) {
	s, err := newSource(kind.File, data)
	if err != nil {
		return nil, err
	}
	return parseChecklist(kind, s), nil
}

func parseChecklist(kind Kind, s *source) *Checklist {
	c := &Checklist{Kind: kind, src: s, md: parseMarkdown(s), lastTopEnd: -1, quietAt: -1, quietEnd: -1, ids: &itemIndex{}}
	c.ready.deps = &dependents{}
	c.mdBase = c.md.base
	// Every checkbox holds a '[': enough room, and no regrowing of a slice
	// of large Items on a 1,000-task file.
	c.items = make([]Item, 0, bytes.Count(s.src, []byte{'['}))
	c.paraStarts = paragraphStarts(c.md, nil)
	c.walk(c.md.doc, 0, nil)
	c.paraStarts = nil
	c.walkWarns = len(c.Warnings)
	c.assignIDs()
	if kind == TasksKind {
		c.checkDeps()
	}
	if c.conflict = findConflict(c.md); c.conflict != nil {
		c.Warnings = append(c.Warnings, c.conflict.warning())
	}
	return c
}

func (c *Checklist) warn(line int, format string, args ...any) {
	c.Warnings = append(c.Warnings, Warning{File: c.Kind.File, Line: line, Message: fmt.Sprintf(format, args...)})
}

// walk visits lists in document order. Quotes are not entered: a task
// quoted in a note is not a task. Code and HTML blocks are leaves. A
// checkbox is a task wherever it stands, in the Session and Guidance
// sections too (a person appends a task at the end of the file, below the
// session); only the place for new ones skips those sections.
func (c *Checklist) walk(n ast.Node, depth int, parent *ast.ListItem) {
	for ch := n.FirstChild(); ch != nil; ch = ch.NextSibling() {
		switch ch := ch.(type) {
		case *ast.Blockquote:
			continue
		case *ast.Heading:
			if n.Kind() == ast.KindDocument {
				c.enterSection(ch)
			}
		case *ast.List:
			topLevel := n.Kind() == ast.KindDocument
			sawItem := false
			for li := ch.FirstChild(); li != nil; li = li.NextSibling() {
				item, ok := li.(*ast.ListItem)
				if !ok {
					continue
				}
				if c.item(item, depth, topLevel) {
					sawItem = true
					c.walk(item, depth+1, item)
				} else {
					c.walk(item, depth, parent)
				}
			}
			if topLevel && sawItem && !c.inQuiet {
				c.lastTopEnd = c.md.end(ch)
				c.rememberMarker(ch)
			}
		default:
			c.walk(ch, depth, parent)
		}
	}
}

// enterSection notes whether the top-level heading h starts a Session or
// Guidance section, which runs to the next heading, as Session and
// Guidance read them: new tasks never go there.
func (c *Checklist) enterSection(h *ast.Heading) {
	text := c.md.headingText(h)
	c.inQuiet = strings.EqualFold(text, SessionHeading) || strings.EqualFold(text, GuidanceHeading)
	if c.inQuiet && c.quietAt < 0 {
		c.quietAt = max(c.src.lineStart(c.md.pos(h)), c.md.base)
		c.quietEnd = c.md.end(h)
	}
}

// rememberMarker records how the last top-level checklist writes its items,
// so that added items look like their neighbours.
func (c *Checklist) rememberMarker(l *ast.List) {
	last := l.LastChild()
	if last == nil {
		return
	}
	start := c.md.base + last.Pos()
	ls := max(c.src.lineStart(start), c.md.base) // not the BOM, if any
	// A top-level item is indented by at most 3 spaces.
	ms := ls
	for ms < start && c.src.src[ms] == ' ' {
		ms++
	}
	c.lastTopIndent = string(c.src.src[ls:ms])
	c.lastTopOrdinal = 0
	c.lastTopMarker = []byte{l.Marker, ' '}
	if l.IsOrdered() {
		c.lastTopOrdinal = l.Start + l.ChildCount()
	}
	// The blanks after the marker set the column of the item's text: a
	// new item keeps it, or text indented under the list after a blank
	// line could become part of it. Tabs become spaces.
	if fc := last.FirstChild(); fc != nil {
		cs := c.md.pos(fc)
		i := ms
		for i < cs && isDigit(c.src.src[i]) {
			i++
		}
		if cs > i && cs <= c.src.contentEnd(ms) && c.src.src[i] == l.Marker {
			if w := c.src.column(cs) - c.src.column(i+1); w >= 1 && w <= 4 {
				c.lastTopMarker = append([]byte{l.Marker}, strings.Repeat(" ", w)...)
			}
		}
	}
}

// checkbox reports whether the list item starts with "[c]" followed by a
// space, a tab or the end of the line, and returns the offset of c.
func (c *Checklist) checkbox(li *ast.ListItem) (box int, ok bool) {
	fc := li.FirstChild()
	if fc == nil || fc.Type() != ast.TypeBlock || fc.Lines().Len() == 0 {
		return 0, false
	}
	if _, isPara := fc.(*ast.Paragraph); !isPara {
		if _, isText := fc.(*ast.TextBlock); !isText {
			return 0, false
		}
	}
	start := c.md.base + fc.Lines().At(0).Start
	b := c.src.src[start:c.src.contentEnd(start)]
	if len(b) < 3 || b[0] != '[' || b[2] != ']' {
		return 0, false
	}
	if len(b) > 3 && b[3] != ' ' && b[3] != '\t' {
		return 0, false
	}
	// "[a]" could be a reference link; only single punctuation, space or
	// x counts, and anything else gets a warning below if it looks meant.
	return start + 1, true
}

func (c *Checklist) item(li *ast.ListItem, depth int, topLevel bool) bool {
	box, ok := c.checkbox(li)
	if !ok {
		return false
	}
	s := c.src
	line := s.line(box)
	st, known := statusOfBox(s.src[box])
	if !known {
		if !isBoxLike(s.src[box]) {
			return false // "[a] ..." reads as text, not a checkbox
		}
		c.warn(line, "unknown checkbox [%c]; use [ ] pending, [/] in progress, [x] done, [!] blocked or [-] skipped (read as pending)", s.src[box])
	}
	it := Item{Status: st, Depth: depth, Line: line, BoxAt: box, topList: topLevel}
	if l, ok := li.Parent().(*ast.List); ok && topLevel {
		it.topTight = l.IsTight
	}
	it.Span.Start = s.lineStart(c.md.base + li.Pos())
	it.Span.End = c.md.end(li)

	// Text after "] ".
	t := box + 2
	eol := s.contentEnd(box)
	for t < eol && (s.src[t] == ' ' || s.src[t] == '\t') {
		t++
	}
	it.TextAt = t
	if de, ta, ok := splitID(s.src[t:eol], c.Kind.Prefix[0]); ok {
		it.ID = c.Kind.Prefix + strings.TrimLeft(string(s.src[t+1:t+de]), "0")
		if it.ID == c.Kind.Prefix {
			it.ID += "0"
		}
		it.IDSpan = Span{t, t + ta}
		t += ta
	} else {
		it.IDSpan = Span{t, t}
	}
	it.Title = strings.TrimSpace(string(s.src[t:eol]))
	if it.Title == "" {
		c.warn(line, "%s has no title; write what is to be done after the checkbox", c.Kind.Noun)
	}

	indent := strings.Repeat(" ", s.column(c.md.pos(li.FirstChild())))
	it.metaIndent = indent
	it.metaMarker = '-'
	first := li.FirstChild()
	it.metaAt = c.md.end(first)

	// Body and metadata: everything in the item but its first line and
	// the items nested in it, at any depth (each is an item of its own,
	// and changing its status must not change this one's description).
	excluded := c.nestedItems(li, []Span{{it.Span.Start, s.lineEnd(box)}})
	for ch := first.NextSibling(); ch != nil; ch = ch.NextSibling() {
		l, isList := ch.(*ast.List)
		if !isList {
			continue
		}
		for sub := l.FirstChild(); sub != nil; sub = sub.NextSibling() {
			sli, ok := sub.(*ast.ListItem)
			if !ok || c.isItem(sli) {
				continue
			}
			if m, ok := c.meta(sli); ok {
				it.Meta = append(it.Meta, m)
				excluded = append(excluded, m.Span)
				// A new line goes after this one and looks like it:
				// the same indentation, tabs and all, and the same
				// bullet (a number would need renumbering: "-" then).
				it.metaAt = m.Span.End
				ws := m.Span.Start
				for ws < len(s.src) && (s.src[ws] == ' ' || s.src[ws] == '\t') {
					ws++
				}
				it.metaIndent = string(s.src[m.Span.Start:ws])
				if !l.IsOrdered() {
					it.metaMarker = l.Marker
				}
			}
		}
	}
	// A first metadata line goes under the first line, unless what follows
	// there is indented as deep as the new line's text (a nested list, a
	// paragraph after a blank line): it would become part of the new line.
	// Then it goes at the end of the item, where nothing follows that is.
	if len(it.Meta) == 0 && s.nextIndent(it.metaAt, it.Span.End) >= len(indent)+2 {
		it.metaAt = it.Span.End
	}
	it.paraAtMeta = c.paraStarts[s.skipBlanks(it.metaAt)]
	it.Body = c.body(it.Span, excluded, len(indent))
	c.applyMeta(&it)
	c.items = append(c.items, it)
	return true
}

// isItem reports whether a list item is a checklist item, as item reads
// it: a checkbox with a status or a box-like character.
func (c *Checklist) isItem(li *ast.ListItem) bool {
	box, ok := c.checkbox(li)
	return ok && (isBoxLike(c.src.src[box]) || c.src.src[box] == 'x' || c.src.src[box] == 'X')
}

// nestedItems appends the spans of the items nested in n to spans: in its
// lists and theirs, wherever walk finds them (not in quotes).
func (c *Checklist) nestedItems(n ast.Node, spans []Span) []Span {
	for ch := n.FirstChild(); ch != nil; ch = ch.NextSibling() {
		switch ch := ch.(type) {
		case *ast.Blockquote:
			continue
		case *ast.ListItem:
			if c.isItem(ch) {
				spans = append(spans, Span{c.src.lineStart(c.md.base + ch.Pos()), c.md.end(ch)})
				continue
			}
		}
		spans = c.nestedItems(ch, spans)
	}
	return spans
}

func isBoxLike(b byte) bool {
	return b < 'A' || (b > 'Z' && b < 'a') || b > 'z'
}

// meta reads a "key: value" list item with a key ralph knows and nothing
// else under it.
func (c *Checklist) meta(li *ast.ListItem) (Meta, bool) {
	fc := li.FirstChild()
	if fc == nil || fc.NextSibling() != nil || fc.Lines().Len() == 0 {
		return Meta{}, false
	}
	seg := fc.Lines().At(0)
	start := c.md.base + seg.Start
	end := c.src.contentEnd(start)
	ke, vs, ve, ok := splitKeyValue(c.src.src[start:end])
	if !ok {
		return Meta{}, false
	}
	m := []int{0, 0, 0, ke, vs, ve}
	key := strings.ToLower(string(c.src.src[start : start+ke]))
	// A note may wrap onto more lines; every other value is one line.
	if !metaKeys[key] || (fc.Lines().Len() > 1 && key != "note") {
		return Meta{}, false
	}
	value := string(c.src.src[start+m[4] : start+m[5]])
	for i := 1; i < fc.Lines().Len(); i++ {
		seg := fc.Lines().At(i)
		value += " " + strings.TrimSpace(string(c.src.src[c.md.base+seg.Start:c.md.base+seg.Stop]))
	}
	return Meta{
		Key:   key,
		Value: strings.TrimSpace(value),
		Line:  c.src.line(start),
		Span:  Span{c.src.lineStart(c.md.base + li.Pos()), c.md.end(li)},
		Val:   Span{start + m[4], start + m[5]},
	}, true
}

// body returns the item's lines outside the excluded spans, with the
// item's content indentation removed.
func (c *Checklist) body(item Span, excluded []Span, indent int) string {
	var b strings.Builder
	s := c.src
	for off := item.Start; off < item.End; {
		end := s.lineEnd(off)
		skip := false
		for _, e := range excluded {
			if off >= e.Start && off < e.End {
				skip = true
				break
			}
		}
		if !skip {
			line := s.src[off:min(end, item.End)]
			line = bytes.TrimRight(line, "\r\n")
			n := 0
			for n < indent && n < len(line) && line[n] == ' ' {
				n++
			}
			b.Write(line[n:])
			b.WriteByte('\n')
		}
		off = end
	}
	return strings.Trim(b.String(), "\n")
}

func (c *Checklist) applyMeta(it *Item) {
	for _, m := range it.Meta {
		switch m.Key {
		case "priority":
			n, err := strconv.Atoi(m.Value)
			if err != nil || n < 1 {
				c.warn(m.Line, "priority %q is not a whole number from 1 up; 1 runs first (ignored)", m.Value)
				continue
			}
			it.Priority = n
		case "attempts":
			n, err := strconv.Atoi(m.Value)
			if err != nil || n < 0 {
				c.warn(m.Line, "attempts %q is not a whole number (ignored)", m.Value)
				continue
			}
			it.Attempts = n
		case "after":
			for _, ref := range strings.FieldsFunc(m.Value, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
				ref = normID(ref)
				if !isRef(ref) {
					c.warn(m.Line, "after: %q is not a task ID like T3 (ignored)", ref)
					continue
				}
				it.After = append(it.After, ref)
			}
		case "note":
			it.Notes = append(it.Notes, m.Value)
		case "from":
			it.From = normID(m.Value)
		case "promoted":
			it.Promoted = normID(m.Value)
		}
	}
}

// assignIDs gives every item without an ID (or with a duplicate one) the
// next free number, in file order. The same file always yields the same
// IDs, so an ID shown by `ralph task list` can be used before it is written.
func (c *Checklist) assignIDs() {
	next := 1
	seen := map[string]int{}
	for i := range c.items {
		it := &c.items[i]
		if it.ID == "" {
			continue
		}
		if n, _ := strconv.Atoi(it.ID[len(c.Kind.Prefix):]); n >= next {
			next = n + 1
		}
	}
	for i := range c.items {
		it := &c.items[i]
		if it.ID != "" {
			if first, dup := seen[it.ID]; dup {
				c.warn(it.Line, "%s repeats the ID of line %d; ralph will renumber this one to %s%d", it.ID, first, c.Kind.Prefix, next)
				it.dupID = true
				it.ID = ""
			} else {
				seen[it.ID] = it.Line
				continue
			}
		}
		it.ID = c.Kind.Prefix + strconv.Itoa(next)
		it.Provisional = true
		c.provisional = true
		seen[it.ID] = it.Line
		next++
	}
}

// checkDeps warns about dependencies on unknown tasks and about cycles.
func (c *Checklist) checkDeps() {
	idx := map[string]int{}
	for i, it := range c.items {
		idx[it.ID] = i
	}
	for _, it := range c.items {
		for _, ref := range it.After {
			if _, ok := idx[ref]; !ok {
				c.warn(it.Line, "%s waits for %s, which is not in this file; fix or remove the `after:` line (until then %s will not run)", it.ID, ref, it.ID)
			}
		}
	}
	// Colour-marking DFS; report each cycle once, at its first task.
	const (
		white = iota
		grey
		black
	)
	colour := make([]int, len(c.items))
	var stack []int
	var visit func(i int)
	visit = func(i int) {
		colour[i] = grey
		stack = append(stack, i)
		for _, ref := range c.items[i].After {
			j, ok := idx[ref]
			if !ok {
				continue
			}
			switch colour[j] {
			case white:
				visit(j)
			case grey:
				k := slices.Index(stack, j)
				var path []string
				for _, s := range stack[k:] {
					path = append(path, c.items[s].ID)
				}
				path = append(path, c.items[j].ID)
				c.warn(c.items[j].Line, "dependency cycle %s; remove one of these `after:` lines (none of them can run until then)", strings.Join(path, " → "))
			}
		}
		stack = stack[:len(stack)-1]
		colour[i] = black
	}
	for i := range c.items {
		if colour[i] == white {
			visit(i)
		}
	}
}

// Ready returns the tasks that can run now, in the order ralph runs them:
// pending, every dependency done; priority 1 first, then 2, …, then tasks
// without a priority; ties in file order.
func (c *Checklist) Ready() []*Item {
	idx := c.readyIndexes()
	out := make([]*Item, len(idx))
	for k, i := range idx {
		out[k] = c.Item(i)
	}
	return out
}

// EachReady yields what Ready returns, one at a time: a look at the first
// few costs nothing for the rest.
func (c *Checklist) EachReady() iter.Seq[*Item] {
	return func(yield func(*Item) bool) {
		for _, i := range c.readyIndexes() {
			if !yield(c.Item(i)) {
				return
			}
		}
	}
}

// EachReadyTitle yields the ID and title of each task EachReady yields,
// in its order: what a list of them needs. On a version that shares its
// items with the one before (items.go) it copies none, where EachReady
// copies each item an edit moved.
func (c *Checklist) EachReadyTitle() iter.Seq2[string, string] {
	return func(yield func(id, title string) bool) {
		for _, i := range c.readyIndexes() {
			it := c.content(i)
			if !yield(it.ID, it.Title) {
				return
			}
		}
	}
}

// depsDone reports whether every task it waits for is done. Of two items
// with one ID (the later is renumbered) the first counts, as it is the
// one the ID names.
func (c *Checklist) depsDone(it *Item) bool {
	for _, ref := range it.After {
		if i := c.indexOf(ref); i < 0 || c.content(i).Status != Done {
			return false
		}
	}
	return true
}

// Next returns the task ralph would run next, or nil.
func (c *Checklist) Next() *Item {
	if r := c.readyIndexes(); len(r) > 0 {
		return c.Item(r[0])
	}
	return nil
}

// Counts returns how many items have each status.
func (c *Checklist) Counts() map[Status]int { return maps.Clone(c.tally()) }

// tally is Counts' answer: from the last version's, the items an edit
// changed counted again.
func (c *Checklist) tally() map[Status]int {
	return c.counts.get(c.countAll, func(from *Checklist, prev map[Status]int, changed []int) map[Status]int {
		n := maps.Clone(prev)
		for _, i := range changed {
			n[from.content(i).Status]--
			n[c.content(i).Status]++
		}
		maps.DeleteFunc(n, func(_ Status, k int) bool { return k == 0 })
		return n
	})
}

// countAll counts every item's status.
func (c *Checklist) countAll() map[Status]int {
	var n [len(boxOrder)]int
	other := map[Status]int{}
	for i := range c.Len() {
		st := c.content(i).Status
		if k := statusIndex(st); k >= 0 {
			n[k]++
		} else {
			other[st]++
		}
	}
	for k, st := range boxOrder {
		if n[k] > 0 {
			other[st] = n[k]
		}
	}
	return other
}

// boxOrder is Statuses as an array, for Counts' tally.
var boxOrder = [...]Status{Pending, InProgress, Done, Blocked, Skipped}

// statusIndex returns st's index in boxOrder, or -1.
func statusIndex(st Status) int {
	switch st {
	case Pending:
		return 0
	case InProgress:
		return 1
	case Done:
		return 2
	case Blocked:
		return 3
	case Skipped:
		return 4
	}
	return -1
}
