package agentconfig

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/ralph-dev/ralph/coordinator/agent"
)

// blockParser parses block structure only: every value is read from the
// raw lines a block points at, as mdstate does, so inline parsing would
// only cost time.
var blockParser = parser.NewParser(
	parser.WithBlockParsers(parser.DefaultBlockParsers()...),
	parser.WithInlineParsers([]util.PrioritizedValue{}...),
)

// key names a setting, as written before the colon of a bullet.
type key string

// The keys. Default stands above the agents' headings; the others under
// one.
const (
	keyDefault    key = "default"
	keyModel      key = "model"
	keyPermission key = "permission"
	keyArgs       key = "args"
	keyBin        key = "bin"
	keyEnv        key = "env"
)

// agentKeys are the keys under an agent's heading, in the order the docs
// list them.
var agentKeys = []string{string(keyModel), string(keyPermission), string(keyArgs), string(keyBin), string(keyEnv)}

// keyAliases are other spellings taken for a key: the flag's name.
var keyAliases = map[string]key{"permission-mode": keyPermission}

// keyHints suggest a key for words a person might write instead.
var keyHints = map[string]string{
	"path": "bin", "program": "bin", "binary": "bin", "command": "bin", "cmd": "bin",
	"environment": "env", "arguments": "args", "flags": "args", "extra-args": "args",
	"agent": "default", "permissions": "permission", "mode": "permission",
}

// sectionName is the heading of AGENT.md's settings section, and
// learningsName the heading that ends it too (as mdstate reads AGENT.md).
const (
	sectionName   = "agents"
	learningsName = "learnings"
)

// fileParser reads one settings file into f.
type fileParser struct {
	f           *File
	src         []byte // the markdown, after a byte-order mark and front matter
	base        int    // where src starts in the file, for line numbers
	lineStarts  []int  // offsets of the file's lines
	machineFile string // the machine's file as shown, for refused keys
	heading     string // how an agent's heading is written here, e.g. "### claude"
	agent       string // the agent whose heading the parser is under; "" above them
	ignore      bool   // under a heading that names no agent ralph drives
}

// parseFile reads the settings in data into f, whose Scope and Shown are
// set.
func parseFile(f *File, data []byte, machineFile string) {
	f.Agents = map[string]Agent{}
	base := 0
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		base = 3
	}
	base += frontMatterLen(data[base:])
	p := &fileParser{f: f, src: data[base:], base: base, lineStarts: lineStarts(data), machineFile: machineFile}
	doc := blockParser.Parse(text.NewReader(p.src))
	if f.Scope == ScopeMachine {
		f.Found = true
		if !p.hasSection(doc) {
			p.whole(doc)
			return
		}
	}
	p.sections(doc)
}

// hasSection reports whether doc has an Agents heading.
func (p *fileParser) hasSection(doc ast.Node) bool {
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		if h, ok := n.(*ast.Heading); ok && p.headingName(h) == sectionName {
			return true
		}
	}
	return false
}

// whole reads a machine file without an Agents heading: all of it is the
// section, a level-1 heading is its title, and every deeper heading names
// an agent.
func (p *fileParser) whole(doc ast.Node) {
	p.heading = "## claude"
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		switch n := n.(type) {
		case *ast.Heading:
			if n.Level == 1 {
				p.agent, p.ignore = "", false
				continue
			}
			p.agentHeading(n)
		case *ast.List:
			p.list(n)
		}
	}
}

// sections reads the Agents sections of doc: each from its heading to the
// next heading of its level or higher, or a Learnings heading.
func (p *fileParser) sections(doc ast.Node) {
	level := 0 // the section's heading level; 0 outside a section
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		switch n := n.(type) {
		case *ast.Heading:
			name := p.headingName(n)
			if level > 0 && (n.Level <= level || name == learningsName) {
				level = 0
			}
			switch {
			case level == 0 && name == sectionName:
				level, p.agent, p.ignore = n.Level, "", false
				p.heading = strings.Repeat("#", min(n.Level+1, 6)) + " claude"
				p.f.Found = true
			case level > 0:
				p.agentHeading(n)
			}
		case *ast.List:
			if level > 0 {
				p.list(n)
			}
		}
	}
}

// agentHeading starts the settings of the agent h names.
func (p *fileParser) agentHeading(h *ast.Heading) {
	name := p.headingName(h)
	p.agent, p.ignore = name, false
	if !isCLI(name) {
		p.agent, p.ignore = "", true
		p.warn(p.blockLine(h), unknownAgent(p.headingText(h), "its settings are ignored"))
	}
}

// list reads a list's bullets as settings.
func (p *fileParser) list(l *ast.List) {
	for li := l.FirstChild(); li != nil; li = li.NextSibling() {
		fc := li.FirstChild()
		if fc == nil || fc.Lines().Len() == 0 {
			if !p.ignore {
				p.warn(p.line(li.Pos()), `an empty bullet: write "- key: value"`)
			}
			continue
		}
		line := p.blockLine(fc)
		if p.ignore {
			continue
		}
		if fc.NextSibling() != nil {
			p.warn(p.blockLine(fc.NextSibling()), "a setting is one line: what stands under its bullet is ignored")
		}
		p.item(p.blockText(fc), line)
	}
}

// item reads one "key: value" bullet.
func (p *fileParser) item(s string, line int) {
	k, v, ok := strings.Cut(s, ":")
	if !ok {
		p.warn(line, fmt.Sprintf(`%q is not a setting: write "- key: value"`, shorten(s)))
		return
	}
	name := strings.ToLower(strings.Trim(k, " \t*_`"))
	v = unwrapCode(strings.TrimSpace(v))
	if p.agent == "" {
		p.topItem(name, v, line)
		return
	}
	p.agentItem(name, v, line)
}

// topItem reads a bullet above the agents' headings: only default.
func (p *fileParser) topItem(name, v string, line int) {
	switch {
	case key(name) == keyDefault:
		n := agentName(v)
		if !isCLI(n) {
			p.warn(line, unknownAgent(v, "default ignored"))
			return
		}
		set(p, &p.f.Default, n, keyDefault, line)
	case isAgentKey(name):
		p.warn(line, fmt.Sprintf("%s is one agent's setting: put it under that agent's heading, e.g. %q", name, p.heading))
	default:
		p.warn(line, unknownKey(name, []string{string(keyDefault)}, "above the agents' headings only default, the agent to run when none is asked for"))
	}
}

// agentItem reads a bullet under the heading of p.agent.
func (p *fileParser) agentItem(name, v string, line int) {
	k := key(name)
	if a, ok := keyAliases[name]; ok {
		k = a
	}
	a := p.f.Agents[p.agent]
	a.Name = p.agent
	defer func() { p.f.Agents[p.agent] = a }()
	if (k == keyBin || k == keyEnv) && p.f.Scope == ScopeProject {
		p.warn(line, fmt.Sprintf("%s is refused in %s: a project file is shared and versioned, no place for a program to run or an environment (keys); set it in %s", k, p.f.Shown, p.machineFile))
		return
	}
	if v == "" && k != keyArgs && isAgentKey(string(k)) {
		p.warn(line, fmt.Sprintf("%s has no value", k))
		return
	}
	switch k {
	case keyModel:
		set(p, &a.Model, v, k, line)
	case keyPermission:
		perm, err := agent.ParsePermission(v)
		if err != nil {
			p.warn(line, err.Error())
			return
		}
		set(p, &a.Permission, perm, k, line)
	case keyArgs:
		args, err := agent.SplitCommand(v)
		if err != nil {
			p.warn(line, fmt.Sprintf("args: %v: quote them as in a shell", err))
			return
		}
		set(p, &a.Args, args, k, line)
	case keyBin:
		set(p, &a.Bin, v, k, line)
	case keyEnv:
		kv, err := parseEnv(v)
		if err != nil {
			p.warn(line, "env: "+err.Error())
			return
		}
		if !a.Env.IsSet() {
			a.Env.From = p.source(line)
		}
		a.Env.Value = append(a.Env.Value, kv)
	case keyDefault:
		p.warn(line, fmt.Sprintf("default names the agent to run when none is asked for: put it above the agents' headings, not under %q", p.agent))
	default:
		p.warn(line, unknownKey(name, agentKeys, "an agent takes "+joinAnd(agentKeys)))
	}
}

// set sets s to v from line, with a warning when the file set it already.
func set[T any](p *fileParser, s *Setting[T], v T, k key, line int) {
	if s.IsSet() {
		p.warn(line, fmt.Sprintf("%s is set again (first on line %d): this line wins", k, s.From.Line))
	}
	*s = Setting[T]{Value: v, From: p.source(line)}
}

// parseEnv reads KEY=VALUE, the value quoted as in a shell when it holds
// blanks.
func parseEnv(v string) (string, error) {
	words, err := agent.SplitCommand(v)
	if err != nil || len(words) != 1 {
		return "", fmt.Errorf("write KEY=VALUE, one a line, and quote a value with blanks: KEY='a b'")
	}
	name, value, ok := strings.Cut(words[0], "=")
	if !ok || !isEnvName(name) {
		return "", fmt.Errorf("%q is not KEY=VALUE with a name of letters, digits and _", words[0])
	}
	return name + "=" + value, nil
}

func isEnvName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

func isAgentKey(name string) bool {
	_, alias := keyAliases[name]
	return alias || slices.Contains(agentKeys, name)
}

// source is where line of this file is.
func (p *fileParser) source(line int) Source {
	k := FromMachine
	if p.f.Scope == ScopeProject {
		k = FromProject
	}
	return Source{Kind: k, File: p.f.Shown, Line: line}
}

func (p *fileParser) warn(line int, msg string) {
	p.f.Warnings = append(p.f.Warnings, Warning{File: p.f.Shown, Line: line, Message: msg})
}

// headingText is a heading's text as written.
func (p *fileParser) headingText(h *ast.Heading) string {
	if h.Lines().Len() == 0 {
		return ""
	}
	seg := h.Lines().At(0)
	return strings.TrimSpace(string(seg.Value(p.src)))
}

// headingName is a heading's text as a name: lower case, without a
// trailing colon or code quotes.
func (p *fileParser) headingName(h *ast.Heading) string {
	return agentName(strings.TrimRight(p.headingText(h), ": "))
}

// agentName is how a name is compared: lower case, without code quotes.
func agentName(s string) string {
	return strings.ToLower(strings.TrimSpace(unwrapCode(strings.TrimSpace(s))))
}

// blockText is a block's lines, each trimmed, joined by spaces.
func (p *fileParser) blockText(n ast.Node) string {
	var parts []string
	for i := 0; i < n.Lines().Len(); i++ {
		seg := n.Lines().At(i)
		if s := strings.TrimSpace(string(seg.Value(p.src))); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " ")
}

// blockLine is the line a block starts on.
func (p *fileParser) blockLine(n ast.Node) int {
	if n.Lines().Len() > 0 {
		return p.line(n.Lines().At(0).Start)
	}
	return p.line(n.Pos())
}

// line is the 1-based line of offset off in src.
func (p *fileParser) line(off int) int {
	if off < 0 {
		off = 0
	}
	abs := p.base + off
	return sort.Search(len(p.lineStarts), func(i int) bool { return p.lineStarts[i] > abs })
}

// lineStarts are the offsets at which data's lines start.
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, b := range data {
		if b == '\n' && i+1 < len(data) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// frontMatterLen is the length of a YAML front matter block at the start
// of b ("---" line … "---" or "..." line), or 0: goldmark would read it as
// a thematic break and a heading (as mdstate does).
func frontMatterLen(b []byte) int {
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) == 0 || string(bytes.TrimRight(lines[0], " \t\r\n")) != "---" {
		return 0
	}
	off := len(lines[0])
	for _, l := range lines[1:] {
		off += len(l)
		if t := string(bytes.TrimRight(l, " \t\r\n")); t == "---" || t == "..." {
			return off
		}
	}
	return 0 // unclosed: not front matter
}

// unwrapCode is s without the backticks of a code span around all of it.
func unwrapCode(s string) string {
	if len(s) >= 2 && s[0] == '`' && s[len(s)-1] == '`' && !strings.Contains(s[1:len(s)-1], "`") {
		return strings.TrimSpace(s[1 : len(s)-1])
	}
	return s
}

// shorten cuts s for a message.
func shorten(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}
