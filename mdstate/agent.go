package mdstate

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/yuin/goldmark/ast"
)

// Learning is one top-level list item of AGENT.md.
type Learning struct {
	Text string
	Line int
	Span Span
}

// Agent is AGENT.md: what ralph has learned about working in the project.
// Every top-level list item in it counts as a learning, wherever a person
// put it, except in an "Agents" section (the project's agent settings);
// `ralph learn` adds new ones under the "Learnings" heading.
type Agent struct {
	Learnings []Learning
	src       *source
	md        *parsed
}

// ParseAgent parses AGENT.md's bytes.
func ParseAgent(data []byte) (*Agent, error) {
	s, err := newSource(AgentFile, data)
	if err != nil {
		return nil, err
	}
	return parseAgent(s), nil
}

func parseAgent(s *source) *Agent {
	a := &Agent{src: s, md: parseMarkdown(s)}
	// An "Agents" section holds the project's agent settings
	// (coordinator/agentconfig), not learnings: it ends at a heading of
	// its level or higher, or at a "Learnings" heading.
	agents := 0
	for n := a.md.doc.FirstChild(); n != nil; n = n.NextSibling() {
		if h, isH := n.(*ast.Heading); isH {
			name := strings.ToLower(strings.TrimRight(a.md.headingText(h), ": "))
			if agents > 0 && (h.Level <= agents || name == "learnings") {
				agents = 0
			}
			if agents == 0 && name == "agents" {
				agents = h.Level
			}
		}
		l, ok := n.(*ast.List)
		if !ok || agents > 0 {
			continue
		}
		for li := l.FirstChild(); li != nil; li = li.NextSibling() {
			start := s.lineStart(a.md.base + li.Pos())
			end := a.md.end(li)
			if end < 0 {
				end = s.lineEnd(start)
			}
			text := ""
			if fc := li.FirstChild(); fc != nil {
				text = normLines(string(s.src[a.md.pos(fc):end]))
			}
			a.Learnings = append(a.Learnings, Learning{Text: text, Line: s.line(start), Span: Span{start, end}})
		}
	}
	return a
}

// learningsSection finds the "Learnings" heading and returns where a new
// item goes: after the section's last list, else after the heading.
func (a *Agent) insertPoint() (at int, ok bool) {
	var heading *ast.Heading
	at = -1
	for n := a.md.doc.FirstChild(); n != nil; n = n.NextSibling() {
		if h, isH := n.(*ast.Heading); isH {
			if heading != nil && h.Level <= heading.Level {
				break
			}
			if heading == nil && strings.EqualFold(strings.TrimRight(a.md.headingText(h), ": "), "learnings") {
				heading = h
				at = a.md.end(h)
			}
			continue
		}
		if heading == nil {
			continue
		}
		if _, isList := n.(*ast.List); isList {
			at = a.md.end(n)
		}
	}
	return at, heading != nil
}

// AddLearning returns AGENT.md with one more learning, checked by
// re-parsing: one more item, with this text, and every other unchanged.
func (a *Agent) AddLearning(text string) ([]byte, error) {
	if ce := FindConflict(AgentFile, a.src.src); ce != nil {
		return nil, ce // a half-merged file is never written
	}
	text = strings.TrimSpace(strings.ReplaceAll(CleanText(text), "\r\n", "\n"))
	if text == "" {
		return nil, errors.New("a learning needs some text")
	}
	s := a.src
	eol := s.eol
	lines := strings.Split(text, "\n")
	var item bytes.Buffer
	item.WriteString("- " + strings.TrimSpace(lines[0]) + eol)
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) != "" {
			item.WriteString("  " + strings.TrimSpace(l) + eol)
		}
	}
	at, found := a.insertPoint()
	wantHeadings := a.headings()
	if !found {
		wantHeadings = append(wantHeadings, "2 Learnings")
	}
	var ins bytes.Buffer
	if !found {
		at = len(s.src)
		if at > 0 && s.src[at-1] != '\n' {
			ins.WriteString(eol)
		}
		if at > 0 && !endsWithBlankLine(s.src) {
			ins.WriteString(eol)
		}
		ins.WriteString("## Learnings" + eol + eol)
	} else {
		if at > 0 && s.src[at-1] != '\n' {
			ins.WriteString(eol)
		}
		// Right after the heading (ATX, or a setext underline), leave a
		// blank line.
		prev := bytes.TrimSpace(s.src[s.lineStart(max(at-1, 0)):at])
		if bytes.HasPrefix(prev, []byte("#")) || (len(prev) > 0 && (len(bytes.Trim(prev, "=")) == 0 || len(bytes.Trim(prev, "-")) == 0)) {
			ins.WriteString(eol)
		}
	}
	ins.Write(item.Bytes())
	// Text right after the insertion point (possible after a heading or a
	// code block) would become part of the new item.
	if !blankLine(s.src[at:s.lineEnd(at)]) {
		ins.WriteString(eol)
	}
	out, err := splice(s.src, []Edit{{Span: Span{at, at}, Text: ins.Bytes()}})
	if err != nil {
		return nil, err
	}
	ns, err := newSource(AgentFile, out)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrVerify, err)
	}
	after := parseAgent(ns)
	if len(after.Learnings) != len(a.Learnings)+1 {
		return nil, fmt.Errorf("%w: %s would have %d learnings instead of %d", ErrVerify, AgentFile, len(after.Learnings), len(a.Learnings)+1)
	}
	found = false
	j := 0
	for _, l := range after.Learnings {
		if j < len(a.Learnings) && l.Text == a.Learnings[j].Text {
			j++
			continue
		}
		if !found && l.Text == normLines(text) {
			found = true
			continue
		}
		return nil, fmt.Errorf("%w: %s line %d would read %q", ErrVerify, AgentFile, l.Line, l.Text)
	}
	if !found || j != len(a.Learnings) {
		return nil, fmt.Errorf("%w: %s would not hold the new learning as written", ErrVerify, AgentFile)
	}
	// Text in the wrong place can also turn a heading into text (a setext
	// heading's underline) and leave every learning as it was.
	if got := after.headings(); !slices.Equal(got, wantHeadings) {
		return nil, fmt.Errorf("%w: %s would have the headings %q instead of %q", ErrVerify, AgentFile, got, wantHeadings)
	}
	return out, nil
}

// headings lists the top-level headings as "level text".
func (a *Agent) headings() []string {
	var out []string
	for n := a.md.doc.FirstChild(); n != nil; n = n.NextSibling() {
		if h, ok := n.(*ast.Heading); ok {
			out = append(out, fmt.Sprintf("%d %s", h.Level, a.md.headingText(h)))
		}
	}
	return out
}

// LoadAgent reads AGENT.md; a missing file is an error wrapping
// fs.ErrNotExist (after the save grace, if this Project saw it).
func (p *Project) LoadAgent() (*Agent, error) {
	s, _, err := p.readStateSource(AgentFile)
	if err != nil {
		return nil, err
	}
	return parseAgent(s), nil
}

// FindSame returns the learning that says the same as text (SameKey), or
// nil.
func (a *Agent) FindSame(text string) *Learning {
	key := SameKey(text)
	if key == "" {
		return nil
	}
	for i := range a.Learnings {
		if SameKey(a.Learnings[i].Text) == key {
			return &a.Learnings[i]
		}
	}
	return nil
}

// Learn adds a learning to AGENT.md, unless one there says the same
// (SameKey): that is a *DuplicateError naming its line, and nothing is
// written. A missing file is a *MissingError (only `ralph init` creates
// state files), once it has stayed missing for the save grace if this
// Project saw it: an editor's save is not a missing file. Like
// UpdateChecklist, it is made again on a person's version saved
// meanwhile, and checked against it.
func (p *Project) Learn(text string) error {
	learn := func(cur []byte) ([]byte, error) {
		a, err := parseAgentToEdit(cur)
		if err != nil {
			return nil, err
		}
		if l := a.FindSame(text); l != nil {
			return nil, &DuplicateError{File: AgentFile, Line: l.Line, Text: oneLine(l.Text)}
		}
		return a.AddLearning(text)
	}
	return p.updateAgent(learn)
}

// LearnAll adds the learnings texts to AGENT.md in one write, as Learn
// adds one: those the file has already (SameKey) are left out and
// returned, as texts has them, as known. The same write first adds back
// those lost returns of the file as the write finds it (each time the
// save makes its edit, on the version it makes it on), unless one there
// says the same: ralph's own that an older copy of the file dropped, so
// that a stale save just before cannot hide their loss behind the new
// ones. lost may be nil. With nothing to add, nothing is written.
func (p *Project) LearnAll(texts []string, lost func(*Agent) []string) (added, known, readded []string, err error) {
	learn := func(cur []byte) ([]byte, error) {
		added, known, readded = nil, nil, nil
		a, err := parseAgentToEdit(cur)
		if err != nil {
			return nil, err
		}
		out := cur
		add := func(text string) error {
			if out, err = a.AddLearning(text); err != nil {
				return err
			}
			a, err = parseAgentToEdit(out)
			return err
		}
		if lost != nil {
			for _, text := range lost(a) {
				if a.FindSame(text) != nil {
					continue // a person wrote it again
				}
				if err := add(text); err != nil {
					return nil, err
				}
				readded = append(readded, text)
			}
		}
		for _, text := range texts {
			if a.FindSame(text) != nil {
				known = append(known, text)
				continue
			}
			if err := add(text); err != nil {
				return nil, err
			}
			added = append(added, text)
		}
		return out, nil
	}
	return added, known, readded, p.updateAgent(learn)
}

// parseAgentToEdit parses AGENT.md's bytes for an edit: a half-merged
// file is a *ConflictError, since its learnings are two versions.
func parseAgentToEdit(cur []byte) (*Agent, error) {
	s, err := newSource(AgentFile, cur)
	if err != nil {
		return nil, err
	}
	if ce := FindConflict(AgentFile, cur); ce != nil {
		return nil, ce
	}
	return parseAgent(s), nil
}

// updateAgent saves the edit of AGENT.md that learn makes of its bytes,
// as Learn documents.
func (p *Project) updateAgent(learn func(cur []byte) ([]byte, error)) error {
	unlock, err := p.lockForWrite()
	if err != nil {
		return err
	}
	defer unlock()
	data, fi, err := p.readState(AgentFile)
	if errors.Is(err, fs.ErrNotExist) {
		// Only `ralph init` creates a state file.
		return &MissingError{File: AgentFile, Root: p.Root}
	}
	if err != nil {
		return err
	}
	if err := checkWritable(AgentFile, fi); err != nil {
		return err
	}
	out, err := learn(data)
	if err != nil || bytes.Equal(out, data) {
		return err // an error, or nothing to write
	}
	s := p.newSave(AgentFile, p.Path(AgentFile), fi.Mode(), learn)
	if err := p.runSave(s, data, out); err != nil {
		return err
	}
	return s.editErr
}

// normLines trims every line and drops blank ones: how a learning's text
// compares, whatever its indentation.
func normLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
