package gitconfig

import (
	"bytes"
	"fmt"
	"strings"
)

// Parse reads a config file's bytes as git does. A line git refuses
// ("bad config line N") is an error naming the line.
func Parse(data []byte) (*Config, error) {
	p := parser{src: string(data), line: 1, current: -1, cfg: &Config{
		headers: make([]header, 0, bytes.Count(data, []byte("["))),
		vars:    make([]variable, 0, bytes.Count(data, []byte("\n"))+1),
	}}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return p.cfg, nil
}

// parser walks a file the way git's config.c does, one character at a
// time (skipping ahead only over comments and runs of ordinary characters
// in a value), so that it accepts, refuses and counts lines as git does.
type parser struct {
	cfg     *Config
	src     string
	pos     int      // offset of the next byte of src
	line    int      // git's line counter, for errors
	eof     bool     // whether next has run past the end
	current int      // index of the current header in cfg.headers, or -1
	val     valueBuf // the value or subsection being decoded
}

// utf8BOM is the byte order mark git skips at the start of a file.
const utf8BOM = "\xef\xbb\xbf"

// parse reads the whole file: blank lines, comments, section headers and
// variables.
func (p *parser) parse() error {
	if err := p.skipBOM(); err != nil {
		return err
	}
	for {
		c := p.next()
		switch {
		case c == '\n' && p.eof:
			return nil
		case isSpace(c):
		case c == '#' || c == ';':
			p.skipComment()
		case c == '[':
			if err := p.header(); err != nil {
				return err
			}
		case isAlpha(c):
			if err := p.variable(); err != nil {
				return err
			}
		default:
			return p.errorf("unexpected %q", c)
		}
	}
}

// next returns the next character as git's get_next_char does: CRLF reads
// as '\n', and the end of the file reads as '\n' with eof set. Every '\n'
// read, the end of the file included, counts a line.
func (p *parser) next() byte {
	if p.pos >= len(p.src) {
		p.eof = true
		p.line++
		return '\n'
	}
	c := p.src[p.pos]
	p.pos++
	if c == '\r' && p.pos < len(p.src) && p.src[p.pos] == '\n' {
		p.pos++
		c = '\n'
	}
	if c == '\n' {
		p.line++
	}
	return c
}

// skipComment skips the rest of a comment, up to the newline that ends it.
func (p *parser) skipComment() {
	if i := strings.IndexByte(p.src[p.pos:], '\n'); i >= 0 {
		p.pos += i
	} else {
		p.pos = len(p.src)
	}
}

// skipBOM skips a UTF-8 byte order mark at the start of the file; git
// refuses a partial one.
func (p *parser) skipBOM() error {
	for i := 0; i < len(utf8BOM); i++ {
		if p.pos < len(p.src) && p.src[p.pos] == utf8BOM[i] {
			p.pos++
			continue
		}
		if i == 0 {
			return nil
		}
		p.next() // git reads the stray byte before it gives up
		return p.errorf("partial byte order mark")
	}
	return nil
}

// errorf is a parse error at the current line.
func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("line %d: %s", p.line, fmt.Sprintf(format, args...))
}

// header reads a section header after its '[': a name of key characters
// and dots, then ']' or whitespace and a quoted subsection.
func (p *parser) header() error {
	start := p.pos
	for {
		c := p.next()
		switch {
		case p.eof:
			return p.errorf("unterminated section header")
		case c == ']':
			return p.addHeader(p.src[start:p.pos-1], "", false)
		case isSpace(c):
			return p.quotedHeader(p.src[start:p.pos-1], c)
		case !isKeyChar(c) && c != '.':
			return p.errorf("bad section name character %q", c)
		}
	}
}

// quotedHeader reads the rest of a [name "sub"] header after the first
// whitespace character c following the name.
func (p *parser) quotedHeader(name string, c byte) error {
	for isSpace(c) {
		if c == '\n' {
			p.line-- // git names the header's line, not the next
			return p.errorf("unterminated section header")
		}
		c = p.next()
	}
	if c != '"' {
		return p.errorf("bad section header: want a quoted subsection")
	}
	sub, err := p.subsection()
	if err != nil {
		return err
	}
	if p.next() != ']' {
		return p.errorf("bad section header: want ']' after the subsection")
	}
	return p.addHeader(name, sub, true)
}

// subsection reads a quoted subsection after its opening quote, through
// its closing one. A backslash escapes any character but a newline. (A NUL
// byte stays in the subsection; git would cut the whole variable name
// there.)
func (p *parser) subsection() (string, error) {
	v := &p.val
	v.reset(p.src)
	for {
		c := p.next()
		if c == '\n' {
			p.line--
			return "", p.errorf("unterminated subsection")
		}
		if c == '"' {
			return v.String(), nil
		}
		if c != '\\' {
			v.addRaw(p.pos-1, p.pos)
			continue
		}
		if c = p.next(); c == '\n' {
			p.line--
			return "", p.errorf("unterminated subsection")
		}
		v.addByte(c)
	}
}

// addHeader records a header whose name (as written, perhaps dotted) and
// quoted subsection have been read, and makes it the current one. As in
// git, the name before its first dot is the section and the rest, joined
// to any quoted subsection, the subsection.
func (p *parser) addHeader(name, quoted string, hasQuoted bool) error {
	if name == "" && !hasQuoted {
		return p.errorf("empty section name")
	}
	h := header{section: strings.ToLower(name), sub: quoted, hasSub: hasQuoted}
	if dot := strings.IndexByte(h.section, '.'); dot >= 0 {
		h.section, h.sub, h.hasSub = h.section[:dot], h.section[dot+1:], true
		if hasQuoted {
			h.sub += "." + quoted
		}
	}
	p.cfg.headers = append(p.cfg.headers, h)
	p.current = len(p.cfg.headers) - 1
	return nil
}

// variable reads a variable whose first letter has just been read: the
// rest of its key, then nothing (an implicit boolean) or '=' and a value.
func (p *parser) variable() error {
	start, end := p.pos-1, p.pos
	c := p.next()
	for !p.eof && isKeyChar(c) {
		end = p.pos
		c = p.next()
	}
	for c == ' ' || c == '\t' {
		c = p.next()
	}
	value := ""
	if c != '\n' {
		if c != '=' {
			return p.errorf("bad variable name or missing '='")
		}
		var err error
		if value, err = p.value(); err != nil {
			return err
		}
	}
	key := strings.ToLower(p.src[start:end]) // itself when already lower
	p.cfg.vars = append(p.cfg.vars, variable{header: p.current, key: key, value: value})
	return nil
}

// value reads a value after its '=', through the end of its last line:
// quotes, escapes, continuations and comments decoded, leading and
// trailing unquoted whitespace dropped.
func (p *parser) value() (string, error) {
	v := &p.val
	v.reset(p.src)
	quoted := false
	// Unquoted whitespace after the value's start, src[space:spaceEnd],
	// is added only once more of the value follows it.
	space, spaceEnd := 0, 0
	for {
		c := p.next()
		switch {
		case c == '\n':
			if quoted {
				p.line--
				return "", p.errorf("unterminated quote")
			}
			return cutNUL(v.String()), nil
		case isSpace(c) && !quoted && v.len() == 0: // leading whitespace
		case isSpace(c) && !quoted:
			if space == spaceEnd {
				space = p.pos - 1
			}
			spaceEnd = p.pos
		case (c == '#' || c == ';') && !quoted:
			p.skipComment()
		default:
			v.addRaw(space, spaceEnd)
			space = spaceEnd
			if err := p.valueChar(v, c, &quoted); err != nil {
				return "", err
			}
		}
	}
}

// valueChar adds a value's character c to v: a quote toggles quoted, a
// backslash starts an escape or a continuation, anything else is itself.
func (p *parser) valueChar(v *valueBuf, c byte, quoted *bool) error {
	switch c {
	case '"':
		*quoted = !*quoted
	case '\\':
		return p.escape(v)
	default:
		p.plainRun(v)
	}
	return nil
}

// plainRun adds to v the character just read and the run of characters
// after it that stand for themselves in or out of quotes.
func (p *parser) plainRun(v *valueBuf) {
	start := p.pos - 1
	for p.pos < len(p.src) && isPlain(p.src[p.pos]) {
		p.pos++
	}
	v.addRaw(start, p.pos)
}

// escape decodes the character after a backslash in a value into v; a
// newline there continues the value on the next line.
func (p *parser) escape(v *valueBuf) error {
	switch c := p.next(); c {
	case '\n':
	case 't':
		v.addByte('\t')
	case 'b':
		v.addByte('\b')
	case 'n':
		v.addByte('\n')
	case '\\', '"':
		v.addByte(c)
	default:
		return p.errorf("unknown escape %q", []byte{'\\', c})
	}
	return nil
}

// valueBuf builds a decoded string. While every byte added is the next
// byte of src it only tracks a slice of src; the first byte that is not
// copies what it has into buf and carries on there.
type valueBuf struct {
	src        string
	start, end int // the value, while verbatim: src[start:end]
	verbatim   bool
	buf        []byte // the value, once not verbatim
}

// reset empties v for a new string read from src, keeping buf's memory.
func (v *valueBuf) reset(src string) {
	*v = valueBuf{src: src, verbatim: true, buf: v.buf[:0]}
}

// addRaw adds src[i:j], characters read verbatim.
func (v *valueBuf) addRaw(i, j int) {
	if i == j {
		return
	}
	if v.verbatim {
		if v.start == v.end {
			v.start, v.end = i, i
		}
		if i == v.end {
			v.end = j
			return
		}
		v.copyOut()
	}
	v.buf = append(v.buf, v.src[i:j]...)
}

// addByte adds c, a decoded character that src does not hold there.
func (v *valueBuf) addByte(c byte) {
	if v.verbatim {
		v.copyOut()
	}
	v.buf = append(v.buf, c)
}

// copyOut moves the value from its slice of src into buf.
func (v *valueBuf) copyOut() {
	v.buf = append(v.buf[:0], v.src[v.start:v.end]...)
	v.verbatim = false
}

// len is the value's length so far.
func (v *valueBuf) len() int {
	if v.verbatim {
		return v.end - v.start
	}
	return len(v.buf)
}

// String is the value: a slice of src, or a copy of buf.
func (v *valueBuf) String() string {
	if v.verbatim {
		return v.src[v.start:v.end]
	}
	return string(v.buf)
}

// cutNUL cuts s at its first NUL byte: git keeps values as C strings.
func cutNUL(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// toLower is c in ASCII lower case.
func toLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// isSpace reports whether git's isspace holds for c: git's own ctype
// table counts space, tab, newline and carriage return, not \v or \f.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// isPlain reports whether c stands for itself in a value, in or out of
// quotes.
func isPlain(c byte) bool {
	return !isSpace(c) && c != '"' && c != '\\' && c != '#' && c != ';'
}

// isAlpha reports whether c is an ASCII letter.
func isAlpha(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// isKeyChar reports whether c may appear in a key or section name.
func isKeyChar(c byte) bool {
	return isAlpha(c) || '0' <= c && c <= '9' || c == '-'
}
