// Package ignore matches paths against gitignore rules, for code that
// walks a work tree itself instead of asking git, such as projectdetect.
//
// It is a small matcher rather than go-git's plumbing/format/gitignore.
// go-git gets nesting (pattern domains) and negation right, but it
// matches name patterns against every component of the path on every
// call, each through filepath.Match: with a 30-line .gitignore, 100,000
// paths three deep took about 500ms there (more than projectdetect's whole
// default budget) against 20ms here (BenchmarkIgnored). Importing it
// would also link go-git's config parser and encoding/gob into every
// program. Here patterns are compiled once, and the common shapes
// (literal, "*.ext", "prefix*") skip globbing. It also strips the "\r" of
// CRLF files, which go-git keeps, and reads git's glob syntax (wildmatch)
// where it differs from path.Match's, in bracket expressions.
//
// Callers must walk the tree from the top and never descend into an
// ignored directory, as git does: nothing below an excluded directory can
// be re-included. Ignored relies on that and matches an unanchored pattern
// against the entry's own name only, never against its parent
// directories' names; for a path below an ignored directory its answer
// means nothing.
package ignore

import (
	"bytes"
	"path"
	"strings"
	"unicode/utf8"
)

// Rule is one compiled pattern line of a gitignore-style file.
type Rule struct {
	depth    int       // path components between the walk root and the ignore file's directory
	segs     []segment // the pattern split on "/"
	anchored bool      // had a "/" before its end: matches the path below depth, not any name
	dirOnly  bool      // had a trailing "/"
	negate   bool      // had a leading "!"
}

type segKind uint8

const (
	segLiteral    segKind = iota // no wildcards
	segAny                       // "*"
	segSuffix                    // "*" then a literal, e.g. "*.log"
	segPrefix                    // a literal then "*", e.g. "tmp*"
	segGlob                      // anything else, via path.Match
	segDoubleStar                // "**": zero or more whole path components
)

type segment struct {
	kind segKind
	text string
}

func (s segment) match(name string) bool {
	switch s.kind {
	case segLiteral:
		return name == s.text
	case segAny, segDoubleStar:
		return true
	case segSuffix:
		return strings.HasSuffix(name, s.text)
	case segPrefix:
		return strings.HasPrefix(name, s.text)
	default:
		ok, err := path.Match(s.text, bytewise(name))
		return err == nil && ok
	}
}

// compileSegment compiles one "/"-separated part of a pattern. It reports
// false for a malformed one (an unclosed "["), which can never match: git
// ignores it too, so it is dropped rather than an error.
func compileSegment(s string) (segment, bool) {
	const meta = `*?[\`
	switch {
	case s == "**":
		return segment{kind: segDoubleStar}, true
	case s == "*":
		return segment{kind: segAny}, true
	case !strings.ContainsAny(s, meta):
		return segment{kind: segLiteral, text: s}, true
	case s[0] == '*' && !strings.ContainsAny(s[1:], meta):
		return segment{kind: segSuffix, text: s[1:]}, true
	case s[len(s)-1] == '*' && !strings.ContainsAny(s[:len(s)-1], meta):
		return segment{kind: segPrefix, text: s[:len(s)-1]}, true
	}
	g, ok := goGlob(s)
	if !ok {
		return segment{}, false
	}
	if _, err := path.Match(g, ""); err != nil {
		return segment{}, false
	}
	return segment{kind: segGlob, text: bytewise(g)}, true
}

// bytewise returns s with each byte made a rune of its own, so that
// path.Match's "?" and classes match one byte, as git's do, even in a name
// that is not ASCII. An ASCII s is returned as it is.
func bytewise(s string) string {
	i := 0
	for i < len(s) && s[i] < utf8.RuneSelf {
		i++
	}
	if i == len(s) {
		return s
	}
	r := make([]rune, len(s))
	for i := range len(s) {
		r[i] = rune(s[i])
	}
	return string(r)
}

// goGlob rewrites a pattern in git's glob syntax (wildmatch) as a
// path.Match pattern. The two differ only in bracket expressions.
func goGlob(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 == len(s) {
				return "", false // git: a trailing backslash never matches
			}
			b.WriteString(s[i : i+2])
			i++
		case '[':
			class, n, ok := goClass(s[i+1:])
			if !ok {
				return "", false
			}
			b.WriteString(class)
			i += n
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), true
}

// goClass rewrites the bracket expression whose text after the "[" starts
// s, and says how many bytes of s it used. Unlike path.Match, wildmatch
// also negates with "!", takes a "]" right after the "[" (or "[!") and a
// "-" at either end as members, and knows "[:alpha:]" and its kind.
func goClass(s string) (string, int, bool) {
	var b strings.Builder
	b.WriteByte('[')
	i := 0
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		b.WriteByte('^')
		i++
	}
	prev := -1 // the last single member, which a "-" can start a range from
	for first := true; ; first = false {
		if i >= len(s) {
			return "", 0, false
		}
		c := s[i]
		switch {
		case c == ']' && !first:
			b.WriteByte(']')
			return b.String(), i + 1, true
		case c == '\\':
			i++
			if i >= len(s) {
				return "", 0, false
			}
			writeMember(&b, s[i])
			prev = int(s[i])
		case c == '-' && prev >= 0 && i+1 < len(s) && s[i+1] != ']':
			i++
			if s[i] == '\\' {
				if i++; i >= len(s) {
					return "", 0, false
				}
			}
			b.WriteByte('-')
			writeMember(&b, s[i])
			prev = -1
		case c == '[' && strings.HasPrefix(s[i+1:], ":"):
			n, ok := posixClass(&b, s[i+2:])
			if !ok {
				return "", 0, false
			}
			if n == 0 { // no ":]": a plain "["
				writeMember(&b, c)
				prev = int(c)
				break
			}
			i += 1 + n
			prev = -1
		default:
			writeMember(&b, c)
			prev = int(c)
		}
		i++
	}
}

// writeMember writes c as a member of a path.Match class, escaped if
// path.Match would give it a meaning there.
func writeMember(b *strings.Builder, c byte) {
	if strings.IndexByte(`\-]^[`, c) >= 0 {
		b.WriteByte('\\')
	}
	b.WriteByte(c)
}

// posixClasses are wildmatch's character classes as path.Match ranges,
// ASCII only as in git.
var posixClasses = map[string]string{
	"alnum":  "0-9A-Za-z",
	"alpha":  "A-Za-z",
	"blank":  " \t",
	"cntrl":  "\x00-\x1f\x7f",
	"digit":  "0-9",
	"graph":  "!-~",
	"lower":  "a-z",
	"print":  " -~",
	"punct":  "!-/:-@\\[-`{-~",
	"space":  "\t\n\r ",
	"upper":  "A-Z",
	"xdigit": "0-9A-Fa-f",
}

// posixClass writes the class named at the start of s, the text after a
// "[:", and says how many bytes of s up to its closing "]" it used. As in
// wildmatch, a "[:" with no ":]" before the next "]" is not a class (0,
// true), and an unknown name makes the whole pattern invalid.
func posixClass(b *strings.Builder, s string) (int, bool) {
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return 0, false
	}
	if end == 0 || s[end-1] != ':' {
		return 0, true
	}
	ranges, ok := posixClasses[s[:end-1]]
	if !ok {
		return 0, false
	}
	b.WriteString(ranges)
	return end + 1, true
}

// Parse compiles the lines of one .gitignore-style file (CRLF accepted)
// whose directory is depth path components below the walk's root.
func Parse(data []byte, depth int) []Rule {
	var rules []Rule
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		if r, ok := parseLine(string(bytes.TrimSuffix(line, []byte{'\r'})), depth); ok {
			rules = append(rules, r)
		}
	}
	return rules
}

// parseLine compiles one line; it reports false for a blank line, a
// comment, or a pattern that can never match.
func parseLine(p string, depth int) (Rule, bool) {
	r := Rule{depth: depth}
	if p == "" || p[0] == '#' {
		return r, false
	}
	p = trimTrailingSpaces(p)
	if p == "" {
		return r, false
	}
	if p[0] == '!' {
		r.negate = true
		p = p[1:]
	}
	// As in git, only one slash is taken off either end: in "foo//",
	// "//foo" and "a//b" an empty part is left that matches no name.
	if strings.HasSuffix(p, "/") {
		r.dirOnly = true
		p = p[:len(p)-1]
	}
	if strings.HasPrefix(p, "/") {
		r.anchored = true
		p = p[1:]
	}
	if p == "" {
		return r, false
	}
	if strings.Contains(p, "/") {
		r.anchored = true
	}
	for _, s := range strings.Split(p, "/") {
		seg, ok := compileSegment(s)
		if !ok {
			return r, false
		}
		r.segs = append(r.segs, seg)
	}
	return r, true
}

// trimTrailingSpaces drops the unescaped spaces that end p, reading
// backslash escapes from the start as git does: "a\\ " ends with an
// escaped backslash and a space to drop, "a\ " with an escaped space.
func trimTrailingSpaces(p string) string {
	end := len(p)
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case ' ':
			if end == len(p) {
				end = i
			}
			continue
		case '\\':
			i++
		}
		end = len(p)
	}
	return p[:end]
}

// Ignored reports whether the entry at p (root-relative path components,
// the entry's own name last) is ignored by rules, given in increasing
// order of priority (as git reads them: the global excludes file,
// .git/info/exclude, then each .gitignore from the root down); the last
// rule that matches decides. Callers never descend into an ignored
// directory, so an unanchored pattern is matched against the entry's own
// name only.
func Ignored(rules []Rule, p []string, isDir bool) bool {
	name := p[len(p)-1]
	for i := len(rules) - 1; i >= 0; i-- {
		r := &rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		var ok bool
		if r.anchored {
			ok = matchSegs(r.segs, p[r.depth:])
		} else {
			ok = r.segs[0].match(name)
		}
		if ok {
			return !r.negate
		}
	}
	return false
}

// matchSegs matches a whole path against an anchored pattern.
func matchSegs(segs []segment, p []string) bool {
	for len(segs) > 0 {
		s := segs[0]
		if s.kind == segDoubleStar {
			rest := segs[1:]
			if len(rest) == 0 {
				// A trailing "/**" matches everything inside, not the
				// directory itself, so "!dir/keep" can still re-include.
				return len(p) > 0
			}
			for i := 0; i <= len(p); i++ {
				if matchSegs(rest, p[i:]) {
					return true
				}
			}
			return false
		}
		if len(p) == 0 || !s.match(p[0]) {
			return false
		}
		segs, p = segs[1:], p[1:]
	}
	return len(p) == 0
}
