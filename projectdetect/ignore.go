package projectdetect

import (
	"bytes"
	"path"
	"strings"
)

// This is a small gitignore matcher rather than go-git's
// plumbing/format/gitignore. go-git gets nesting (pattern domains) and
// negation right, but it matches name patterns against every component of
// the path on every call, each through filepath.Match: with a 30-line
// .gitignore, 100,000 paths three deep took about 500ms there (more than
// the whole default budget) against 20ms here. Here patterns are compiled
// once, the common shapes (literal, "*.ext", "prefix*") skip globbing, and
// because the walk never enters an ignored directory only the entry's own
// name (or, for anchored patterns, its path below the .gitignore) has to
// be matched. It also strips the "\r" of CRLF files, which go-git keeps.

// ignoreRule is one compiled pattern line.
type ignoreRule struct {
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
		ok, err := path.Match(s.text, name)
		return err == nil && ok
	}
}

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
	// A malformed pattern (an unclosed "[") can never match; git ignores
	// it too, so drop it rather than fail.
	if _, err := path.Match(s, ""); err != nil {
		return segment{}, false
	}
	return segment{kind: segGlob, text: s}, true
}

// parseIgnore compiles the lines of one .gitignore-style file found depth
// components below the walk root.
func parseIgnore(data []byte, depth int) []ignoreRule {
	var rules []ignoreRule
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		if r, ok := parseIgnoreLine(string(bytes.TrimSuffix(line, []byte{'\r'})), depth); ok {
			rules = append(rules, r)
		}
	}
	return rules
}

func parseIgnoreLine(p string, depth int) (ignoreRule, bool) {
	r := ignoreRule{depth: depth}
	if p == "" || p[0] == '#' {
		return r, false
	}
	// Trailing spaces are dropped unless escaped with a backslash.
	for strings.HasSuffix(p, " ") && !strings.HasSuffix(p, `\ `) {
		p = p[:len(p)-1]
	}
	if p[0] == '!' {
		r.negate = true
		p = p[1:]
	}
	if strings.HasSuffix(p, "/") {
		r.dirOnly = true
		p = strings.TrimRight(p, "/")
	}
	if strings.HasPrefix(p, "/") {
		r.anchored = true
		p = strings.TrimLeft(p, "/")
	}
	if p == "" {
		return r, false
	}
	if strings.Contains(p, "/") {
		r.anchored = true
	}
	for _, s := range strings.Split(p, "/") {
		if s == "" {
			continue // "a//b" means "a/b"
		}
		seg, ok := compileSegment(s)
		if !ok {
			return r, false
		}
		r.segs = append(r.segs, seg)
	}
	return r, len(r.segs) > 0
}

// ignored reports whether the entry at p (root-relative components, the
// entry's own name last) is ignored by rules, which are in increasing order
// of priority: info/exclude, then each .gitignore from the root down.
func ignored(rules []ignoreRule, p []string, isDir bool) bool {
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
