package mdstate

import (
	"bytes"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// blockParser parses block structure only. ralph reads every value it needs
// from the raw bytes that blocks point at (checkboxes, IDs, key: value
// lines), so inline parsing would only cost time: on a 1,000-task file it is
// most of the parse. The paragraph transformer that turns "[x]: url" lines
// into link reference definitions is left out too: it runs after the block
// structure is settled, changes none of it, and costs 5% of a parse.
var blockParser = parser.NewParser(
	parser.WithBlockParsers(parser.DefaultBlockParsers()...),
	parser.WithInlineParsers([]util.PrioritizedValue{}...),
)

// parsed is a goldmark AST over s.src[base:]. Every offset the AST reports
// is relative to base; the helpers below return absolute offsets.
type parsed struct {
	s    *source
	base int // where markdown starts: after a BOM and YAML front matter
	doc  ast.Node
}

func parseMarkdown(s *source) *parsed {
	base := s.bom + frontMatterLen(s.src[s.bom:])
	doc := blockParser.Parse(text.NewReader(s.src[base:]))
	return &parsed{s: s, base: base, doc: doc}
}

// frontMatterLen returns the length of a YAML front matter block at the
// start of b ("---" line … "---" or "..." line), or 0. goldmark would read
// it as a thematic break and a heading, and its YAML lists as list items.
func frontMatterLen(b []byte) int {
	first, rest, ok := cutLine(b)
	if !ok || string(bytes.TrimRight(first, " \t\r\n")) != "---" {
		return 0
	}
	off := len(b) - len(rest)
	for len(rest) > 0 {
		line, next, _ := cutLine(rest)
		t := string(bytes.TrimRight(line, " \t\r\n"))
		off += len(rest) - len(next)
		if t == "---" || t == "..." {
			return off
		}
		rest = next
	}
	return 0 // unclosed: not front matter
}

// cutLine splits b after its first newline. ok is false when b is empty.
func cutLine(b []byte) (line, rest []byte, ok bool) {
	if len(b) == 0 {
		return nil, nil, false
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i+1], b[i+1:], true
	}
	return b, nil, true
}

// pos returns the absolute start offset of a block node. A fenced code
// block's Lines() hold its content only; it starts at its opening fence.
// goldmark may place an empty heading one past the end of the source; pos
// never returns more than len(src).
func (p *parsed) pos(n ast.Node) int {
	if _, fenced := n.(*ast.FencedCodeBlock); fenced && n.Pos() >= 0 {
		return min(p.base+n.Pos(), len(p.s.src))
	}
	if n.Type() == ast.TypeBlock && n.Lines().Len() > 0 {
		return min(p.base+n.Lines().At(0).Start, len(p.s.src))
	}
	if n.Pos() >= 0 {
		return min(p.base+n.Pos(), len(p.s.src))
	}
	if c := n.FirstChild(); c != nil {
		return p.pos(c)
	}
	return -1
}

// end returns the absolute offset just past the last line (including its
// line ending) that belongs to block node n, or -1 if n has no content.
func (p *parsed) end(n ast.Node) int {
	switch b := n.(type) {
	case *ast.FencedCodeBlock:
		last := p.base + b.Pos()
		if b.Lines().Len() > 0 {
			last = p.base + b.Lines().At(b.Lines().Len()-1).Start
		}
		e := p.s.lineEnd(last)
		// The closing fence is not among Lines(); take it if it is there.
		if e < len(p.s.src) {
			next := p.s.src[e:p.s.lineEnd(e)]
			t := bytes.TrimLeft(next, " \t")
			if bytes.HasPrefix(t, []byte("```")) || bytes.HasPrefix(t, []byte("~~~")) {
				e = p.s.lineEnd(e)
			}
		}
		return e
	case *ast.Heading:
		// A setext heading's underline is not among its Lines(); goldmark
		// gives it the position of its text, where an ATX heading has its #.
		if n := b.Lines().Len(); n > 0 && b.Pos() == b.Lines().At(0).Start {
			return p.s.lineEnd(p.s.lineEnd(p.base + b.Lines().At(n-1).Start))
		}
	case *ast.HTMLBlock:
		e := -1
		if b.Lines().Len() > 0 {
			e = p.s.lineEnd(p.base + b.Lines().At(b.Lines().Len()-1).Start)
		}
		if b.HasClosure() {
			e = p.s.lineEnd(p.base + b.ClosureLine.Start)
		}
		return e
	}
	if n.Type() == ast.TypeBlock && n.Lines().Len() > 0 {
		seg := n.Lines().At(n.Lines().Len() - 1)
		return p.s.lineEnd(p.base + seg.Start)
	}
	for c := n.LastChild(); c != nil; c = c.PreviousSibling() {
		if e := p.end(c); e >= 0 {
			return e
		}
	}
	if n.Pos() >= 0 {
		return p.s.lineEnd(p.base + n.Pos())
	}
	return -1
}

// headingText returns the text of an ATX or setext heading, trimmed of
// markers and trailing #s.
func (p *parsed) headingText(h *ast.Heading) string {
	if h.Lines().Len() == 0 {
		return ""
	}
	seg := h.Lines().At(0)
	start, stop := min(p.base+seg.Start, len(p.s.src)), min(p.base+seg.Stop, len(p.s.src))
	return string(bytes.TrimSpace(p.s.src[start:max(start, stop)]))
}

// nextIndent returns the column of the first non-blank line in [from, to),
// or -1 when every line there is blank.
func (s *source) nextIndent(from, to int) int {
	for off := from; off < to; off = s.lineEnd(off) {
		i := off
		for i < to && (s.src[i] == ' ' || s.src[i] == '\t') {
			i++
		}
		if i < to && s.src[i] != '\r' && s.src[i] != '\n' {
			return s.column(i)
		}
	}
	return -1
}

// column returns the visual column of offset off within its line, with
// tabs expanded to multiples of 4 as CommonMark does.
func (s *source) column(off int) int {
	col := 0
	for i := max(s.lineStart(off), s.bom); i < off; i++ { // a BOM takes no column
		if s.src[i] == '\t' {
			col += 4 - col%4
		} else if s.src[i]&0xC0 != 0x80 { // count runes, not bytes
			col++
		}
	}
	return col
}
