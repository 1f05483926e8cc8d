package projectdetect

import (
	"bytes"
	"encoding/json"
	"strings"
)

// tomlDoc is what the line-based TOML reader keeps: table headers and
// the single-line values of keys. It is enough to ask "is there a
// [tool.ruff] section" and "what is build-system.build-backend" without a
// TOML parser, and it tracks strings, multi-line strings, multi-line
// arrays and comments so that none of them can pass for a header or key.
type tomlDoc struct {
	headers []string          // table and array-of-tables headers, normalised ("tool.poetry"), in order
	keys    map[string]string // full dotted key -> raw value when it fits on one line
}

// tomlState carries what spans lines: an open multi-line string and the
// nesting depth of arrays and inline tables.
type tomlState struct {
	multi string // `"""` or `'''` while inside one
	depth int
}

func (s tomlState) idle() bool { return s.multi == "" && s.depth <= 0 }

func parseTOML(data []byte) tomlDoc {
	doc := tomlDoc{keys: map[string]string{}}
	var st tomlState
	table := ""
	for _, line := range lines(data) {
		if !st.idle() {
			st.scan(line)
			continue
		}
		t := strings.TrimSpace(line)
		switch {
		case t == "" || t[0] == '#':
			continue
		case t[0] == '[':
			name := t[1:]
			array := strings.HasPrefix(name, "[")
			if array {
				name = name[1:]
			}
			end := closeBracket(name)
			if end < 0 {
				continue // not a header we understand; skip rather than guess
			}
			table = strings.Join(splitKey(name[:end]), ".")
			doc.headers = append(doc.headers, table)
			continue
		}
		eq := keyEnd(t)
		if eq < 0 {
			continue
		}
		key := strings.Join(splitKey(t[:eq]), ".")
		if table != "" {
			key = table + "." + key
		}
		val := st.scan(t[eq+1:])
		if st.idle() {
			doc.keys[key] = strings.TrimSpace(val)
		} else {
			doc.keys[key] = ""
		}
	}
	return doc
}

// scan walks one line of a value, updating the state, and returns the
// part of the line before any comment.
func (s *tomlState) scan(line string) string {
	i := 0
	for i < len(line) {
		if s.multi != "" {
			j := strings.Index(line[i:], s.multi)
			if j < 0 {
				return line
			}
			i += j + 3
			s.multi = ""
			continue
		}
		switch c := line[i]; c {
		case '#':
			return line[:i]
		case '"', '\'':
			q := line[i : i+1]
			if strings.HasPrefix(line[i:], q+q+q) {
				s.multi = q + q + q
				i += 3
				continue
			}
			i = skipString(line, i)
			continue
		case '[', '{':
			s.depth++
		case ']', '}':
			s.depth--
		}
		i++
	}
	return line
}

// skipString returns the index just past the single-line string starting
// at line[i].
func skipString(line string, i int) int {
	q := line[i]
	for j := i + 1; j < len(line); j++ {
		switch line[j] {
		case '\\':
			if q == '"' {
				j++
			}
		case q:
			return j + 1
		}
	}
	return len(line)
}

// closeBracket finds the "]" that ends a header, skipping quoted keys.
func closeBracket(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\'':
			i = skipString(s, i) - 1
		case ']':
			return i
		}
	}
	return -1
}

// keyEnd finds the "=" after a key, skipping quoted keys.
func keyEnd(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\'':
			i = skipString(s, i) - 1
		case '=':
			return i
		}
	}
	return -1
}

// splitKey splits a dotted TOML key, unquoting quoted parts.
func splitKey(s string) []string {
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'':
			end := skipString(s, i)
			inner := s[i+1 : max(end-1, i+1)]
			if c == '"' {
				inner = strings.ReplaceAll(inner, `\"`, `"`)
			}
			cur.WriteString(inner)
			i = end - 1
		case '.':
			parts = append(parts, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(parts, strings.TrimSpace(cur.String()))
}

// table returns the first header that is name or inside it, or name itself
// when only a dotted key implies the table; "" when neither.
func (d tomlDoc) table(name string) string {
	for _, h := range d.headers {
		if h == name || strings.HasPrefix(h, name+".") {
			return h
		}
	}
	for k := range d.keys {
		if strings.HasPrefix(k, name+".") {
			return name
		}
	}
	return ""
}

// str returns the value of key as a string when it is a one-line string.
func (d tomlDoc) str(key string) string {
	v := d.keys[key]
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return ""
}

// iniSections lists the section names of an INI file (setup.cfg, tox.ini,
// pytest.ini). Indented lines are continuations, never headers.
func iniSections(data []byte) []string {
	var out []string
	for _, line := range lines(data) {
		if !strings.HasPrefix(line, "[") {
			continue
		}
		if end := strings.IndexByte(line, ']'); end > 0 {
			out = append(out, strings.TrimSpace(line[1:end]))
		}
	}
	return out
}

// makeTargets lists the explicit targets of a Makefile in file order,
// skipping recipes, comments, define blocks, variable assignments, pattern
// rules and special targets.
func makeTargets(data []byte) []string {
	var out []string
	seen := map[string]bool{}
	inDefine := false
	for _, line := range logicalLines(data) {
		if strings.HasPrefix(line, "\t") {
			continue // recipe
		}
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		t := strings.TrimSpace(line)
		if inDefine {
			if t == "endef" {
				inDefine = false
			}
			continue
		}
		if strings.HasPrefix(t, "define ") || t == "define" {
			inDefine = true
			continue
		}
		colon := strings.IndexByte(t, ':')
		if colon <= 0 {
			continue
		}
		// "X = a:b" and "X := y" are assignments, not rules.
		if eq := strings.IndexByte(t, '='); eq >= 0 && eq < colon {
			continue
		}
		if strings.HasPrefix(t[colon:], ":=") || strings.HasPrefix(t[colon:], "::=") {
			continue
		}
		for _, name := range strings.Fields(t[:colon]) {
			if strings.ContainsAny(name, "%$()") || strings.HasPrefix(name, ".") || seen[name] {
				continue
			}
			seen[name] = true
			out = append(out, name)
		}
	}
	return out
}

// justRecipes lists the recipe names of a justfile in file order.
func justRecipes(data []byte) []string {
	var out []string
	for _, line := range lines(data) {
		if line == "" || line[0] == ' ' || line[0] == '\t' || line[0] == '#' || line[0] == '[' {
			continue
		}
		t := strings.TrimPrefix(line, "@")
		end := 0
		for end < len(t) && (isAlnum(t[end]) || t[end] == '_' || t[end] == '-') {
			end++
		}
		if end == 0 {
			continue
		}
		name, rest := t[:end], t[end:]
		if name == "set" || name == "alias" || name == "import" || name == "mod" || name == "export" {
			continue
		}
		// A recipe is "name params...:", not "name := value".
		if tr := strings.TrimLeft(rest, " \t"); strings.HasPrefix(tr, "=") || strings.HasPrefix(tr, ":=") {
			continue
		}
		if colon := strings.IndexByte(rest, ':'); colon < 0 || strings.HasPrefix(rest[colon:], ":=") {
			continue
		}
		out = append(out, name)
	}
	return out
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// lines splits data into lines without their "\n" or "\r\n".
func lines(data []byte) []string {
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	return strings.Split(s, "\n")
}

// logicalLines joins backslash-continued lines, as make does.
func logicalLines(data []byte) []string {
	var out []string
	var cur strings.Builder
	for _, line := range lines(data) {
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(line[:len(line)-1])
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(line)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

// jsonManifest is the part of package.json, composer.json and deno.json
// that detection uses.
type jsonManifest struct {
	PackageManager  string            `json:"packageManager"`
	Scripts         map[string]any    `json:"scripts"` // composer allows arrays
	Tasks           map[string]any    `json:"tasks"`   // deno: string or object
	Workspaces      json.RawMessage   `json:"workspaces"`
	Dependencies    map[string]string `json:"dependencies"`
	DevDependencies map[string]string `json:"devDependencies"`
}

func parseJSONManifest(data []byte) jsonManifest {
	var m jsonManifest
	if json.Unmarshal(data, &m) != nil {
		// deno.jsonc and some hand-written manifests carry comments and
		// trailing commas; retry once without them.
		m = jsonManifest{}
		_ = json.Unmarshal(stripJSONC(data), &m)
	}
	return m
}

// stripJSONC removes // and /* */ comments and trailing commas outside
// strings.
func stripJSONC(data []byte) []byte {
	var out bytes.Buffer
	inStr := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inStr {
			out.WriteByte(c)
			if c == '\\' && i+1 < len(data) {
				i++
				out.WriteByte(data[i])
			} else if c == '"' {
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
		case c == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			i--
			continue
		case c == '/' && i+1 < len(data) && data[i+1] == '*':
			end := bytes.Index(data[i+2:], []byte("*/"))
			if end < 0 {
				return out.Bytes()
			}
			i += end + 3
			continue
		case c == ',':
			j := i + 1
			for j < len(data) && (data[j] == ' ' || data[j] == '\t' || data[j] == '\n' || data[j] == '\r') {
				j++
			}
			if j < len(data) && (data[j] == '}' || data[j] == ']') {
				continue
			}
		}
		out.WriteByte(c)
	}
	return out.Bytes()
}

// hasWorkspaces reports whether a package.json "workspaces" field declares
// any: an array of globs, or yarn's {"packages": [...]}.
func (m jsonManifest) hasWorkspaces() bool {
	w := bytes.TrimSpace(m.Workspaces)
	return len(w) > 0 && !bytes.Equal(w, []byte("null")) && !bytes.Equal(w, []byte("[]")) && !bytes.Equal(w, []byte("{}"))
}
