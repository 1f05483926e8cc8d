package mdstate

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/yuin/goldmark/ast"
)

// ConflictError reports a state file that holds an unresolved git merge
// conflict: a "<<<<<<<" line, later a "=======" line (after a diff3
// "|||||||" line, possibly), then a ">>>>>>>" line. Such a file is
// half-merged: its tasks are two versions at once, and an ID ralph wrote
// into one side would be written into a file no one meant. ralph reads it
// (so that `ralph status` can show it, with a warning) but never writes it,
// and does not run its tasks.
type ConflictError struct {
	File  string // base name, e.g. RALPH_TASKS.md
	Lines []int  // 1-based lines of every marker of every conflict, in order
	n     int    // conflicts; 0 reads as 1
}

// maxShownLines is how many marker lines the message lists: a file merged
// badly can hold hundreds, and the first few say where to look.
const maxShownLines = 9

func (e *ConflictError) Error() string {
	what := "an unresolved merge conflict"
	if e.n > 1 {
		what = strconv.Itoa(e.n) + " unresolved merge conflicts"
	}
	refuse := "ralph will not write it"
	if e.File == TasksFile {
		refuse += " or run its tasks"
	}
	return fmt.Sprintf("%s has %s (%s); %s until it is resolved: edit the file to keep one side and delete the markers, or take one side with `git checkout --ours %s`",
		e.File, what, e.lineList(), refuse, e.File)
}

// lineList is "lines 12, 15, 19", shortened with "…" past maxShownLines.
func (e *ConflictError) lineList() string {
	shown := e.Lines[:min(len(e.Lines), maxShownLines)]
	parts := make([]string, 0, len(shown)+1)
	for _, l := range shown {
		parts = append(parts, strconv.Itoa(l))
	}
	if len(e.Lines) > len(shown) {
		parts = append(parts, "…")
	}
	return "lines " + strings.Join(parts, ", ")
}

// warning is the conflict as a Warning of a checklist that was read
// anyway: at its first marker.
func (e *ConflictError) warning() Warning {
	return Warning{File: e.File, Line: e.Lines[0], Message: fmt.Sprintf(
		"unresolved merge conflict (%s); ralph will not write this file until it is resolved: keep one side and delete the markers", e.lineList())}
}

// conflictStart is the marker every conflict starts with: a file without
// it costs one bytes.Index.
var conflictStart = []byte("<<<<<<<")

// FindConflict reports the merge conflicts in a state file's bytes, or nil
// when there are none. Markers count at the start of a line outside code
// blocks, as markdown reads the file: a conflict shown as an example in a
// fenced block is text, and so is a lone "=======" (a setext heading's
// underline) or a ">>>>>>>" line (a deep block quote) that is not part of
// a whole conflict.
func FindConflict(name string, data []byte) *ConflictError {
	if !bytes.Contains(data, conflictStart) {
		return nil
	}
	var code []Span
	// A file ralph cannot parse (a NUL byte, a huge line) is refused for
	// that; its markers are found all the same, as if no code were there.
	if s, err := newSource(name, data); err == nil {
		code = codeSpans(parseMarkdown(s))
	}
	return scanConflicts(name, data, code)
}

// findConflict is FindConflict over a file already parsed.
func findConflict(md *parsed) *ConflictError {
	if !bytes.Contains(md.s.src, conflictStart) {
		return nil
	}
	return scanConflicts(md.s.name, md.s.src, codeSpans(md))
}

// codeSpans returns the lines of every code block, fences included, in
// document order.
func codeSpans(md *parsed) []Span {
	var out []Span
	_ = ast.Walk(md.doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n.(type) {
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			if start, end := md.pos(n), md.end(n); start >= 0 && end > start {
				out = append(out, Span{md.s.lineStart(start), end})
			}
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return out
}

// conflictMarker is one of the lines git writes around a conflict.
type conflictMarker int

const (
	noMarker     conflictMarker = iota
	oursMarker                  // <<<<<<< HEAD
	baseMarker                  // ||||||| base (diff3 and zdiff3 styles)
	splitMarker                 // =======
	theirsMarker                // >>>>>>> branch
)

// markerOf reads a line as a conflict marker: seven of the marker's
// character at the start, then, for all but "=======", a blank and a
// label or the line's end; "=======" stands alone.
func markerOf(line []byte) conflictMarker {
	if len(line) < 7 {
		return noMarker
	}
	var m conflictMarker
	switch line[0] {
	case '<':
		m = oursMarker
	case '|':
		m = baseMarker
	case '=':
		m = splitMarker
	case '>':
		m = theirsMarker
	default:
		return noMarker
	}
	for _, c := range line[1:7] {
		if c != line[0] {
			return noMarker
		}
	}
	rest := line[7:]
	if m == splitMarker {
		if len(bytes.TrimSpace(rest)) > 0 {
			return noMarker
		}
		return m
	}
	if len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '\r' && rest[0] != '\n' {
		return noMarker // eight or more, or text right after: not git's
	}
	return m
}

// openConflict is a conflict whose "<<<<<<<" has been read.
type openConflict struct {
	lines []int
	split bool // its "=======" has been read
}

// scanConflicts finds the whole conflicts among the lines of data that
// start outside the code spans. Conflicts may nest (a recursive merge
// writes them so): each ">>>>>>>" closes the innermost open one, which
// counts if its "=======" came first.
func scanConflicts(name string, data []byte, code []Span) *ConflictError {
	var open []openConflict
	var lines []int
	n := 0
	line := 0
	for off := 0; off < len(data); {
		end := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			end = off + i + 1
		}
		line++
		m := noMarker
		if !inSpans(code, off) {
			m = markerOf(data[off:end])
		}
		off = end
		switch {
		case m == oursMarker:
			open = append(open, openConflict{lines: []int{line}})
		case m == noMarker || len(open) == 0:
		case m == theirsMarker:
			c := open[len(open)-1]
			open = open[:len(open)-1]
			if c.split {
				lines = append(lines, append(c.lines, line)...)
				n++
			}
		default: // the base or the split of the innermost conflict
			c := &open[len(open)-1]
			c.lines = append(c.lines, line)
			c.split = c.split || m == splitMarker
		}
	}
	if n == 0 {
		return nil
	}
	slices.Sort(lines)
	return &ConflictError{File: name, Lines: lines, n: n}
}

// inSpans reports whether off is inside one of spans, which are sorted
// and do not overlap.
func inSpans(spans []Span, off int) bool {
	i, _ := slices.BinarySearchFunc(spans, off, func(s Span, off int) int {
		switch {
		case s.End <= off:
			return -1
		case s.Start > off:
			return 1
		}
		return 0
	})
	return i < len(spans) && spans[i].Start <= off && off < spans[i].End
}

// CheckConflicts reports the merge conflicts in the state files ralph
// parses and writes whole: AGENT.md, RALPH_GOALS.md, RALPH_TASKS.md and
// RALPH_TODO.md. The progress log is not among them: it is scanned for its
// entries and appended to, never parsed or rewritten, so a conflict there
// misleads no edit. It returns one *ConflictError per file that has one,
// joined (errors.As finds the first), or nil. A missing file is fine, and
// a file that cannot be read is left to the check that reads it.
func (p *Project) CheckConflicts() error {
	var errs []error
	for _, name := range []string{AgentFile, GoalsFile, TasksFile, TodoFile} {
		data, _, err := readChecked(p.Path(name), name)
		if err != nil {
			continue
		}
		if ce := FindConflict(name, data); ce != nil {
			errs = append(errs, ce)
		}
	}
	return errors.Join(errs...)
}
