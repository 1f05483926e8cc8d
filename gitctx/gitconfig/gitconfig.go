// Package gitconfig reads git's configuration file format the way git
// itself does (git-config(1), "CONFIGURATION FILE"), with the standard
// library alone, so that reading a repository's config at start-up costs
// neither go-git's config packages nor their gcfg and encoding/gob
// dependencies.
//
// Parse follows git's own parser (config.c) character for character:
// section names and keys are case-insensitive, a quoted subsection is
// case-sensitive and a deprecated [section.sub] one is lowercased; values
// lose their leading and trailing whitespace and their comments, keep
// their inner whitespace verbatim (as git 2.45 and later do), and decode
// quotes, the escapes \\ \" \n \t \b and backslash-newline continuations.
// A file git refuses ("bad config line N") is an error naming the same
// line. Include directives are not followed: [include] and [includeIf]
// are ordinary sections here. Like git, Parse accepts a variable written
// before any section header, but no lookup can name it.
//
// A Config keeps the file's text and slices its names and values from it
// where they appear verbatim, so that parsing a typical file allocates a
// handful of times whatever its length.
package gitconfig

// Config is a parsed git config file.
type Config struct {
	headers []header   // every section header, in file order
	vars    []variable // every variable, in file order
}

// header is one [section], [section "sub"] or [section.sub] line.
type header struct {
	section string // lowercased; empty only for the odd [ "sub"]
	sub     string // the subsection, when hasSub
	hasSub  bool   // whether the header names a subsection, even ""
}

// variable is one key, with the header it belongs to.
type variable struct {
	header int    // index into Config.headers; -1 before any header
	key    string // lowercased
	value  string // "" for an implicit boolean
}

// Get returns the last value of section.subsection.key (subsection "" for
// none), as `git config --get` does; ok is false when it is not set. A key
// written without "=" (an implicit boolean) has the value "" and ok true.
func (c *Config) Get(section, subsection, key string) (value string, ok bool) {
	for i := len(c.vars) - 1; i >= 0; i-- {
		if c.matches(&c.vars[i], section, subsection, key) {
			return c.vars[i].value, true
		}
	}
	return "", false
}

// GetAll returns every value of the variable, in file order.
func (c *Config) GetAll(section, subsection, key string) []string {
	var values []string
	for i := range c.vars {
		if c.matches(&c.vars[i], section, subsection, key) {
			values = append(values, c.vars[i].value)
		}
	}
	return values
}

// HasSection reports whether any [section] or [section "sub"] header or
// variable of that section appears.
func (c *Config) HasSection(section string) bool {
	for i := range c.headers {
		if equalFold(c.headers[i].section, section) {
			return true
		}
	}
	return false
}

// Keys lists the distinct keys (lowercased) set in section.subsection, in
// the order they first appear.
func (c *Config) Keys(section, subsection string) []string {
	var keys []string
	for i := range c.vars {
		v := &c.vars[i]
		if v.header >= 0 && c.headers[v.header].is(section, subsection) && !contains(keys, v.key) {
			keys = append(keys, v.key)
		}
	}
	return keys
}

// matches reports whether v is section.subsection.key.
func (c *Config) matches(v *variable, section, subsection, key string) bool {
	return v.header >= 0 && equalFold(v.key, key) && c.headers[v.header].is(section, subsection)
}

// is reports whether h is the section and subsection git would look up for
// that pair: the section in any case, the subsection exactly, and "" for
// no subsection at all.
func (h *header) is(section, subsection string) bool {
	if subsection == "" {
		return !h.hasSub && equalFold(h.section, section)
	}
	return h.hasSub && h.sub == subsection && equalFold(h.section, section)
}

// equalFold reports whether lower, already lowercased, is s in any ASCII
// case, which is how git compares section names and keys.
func equalFold(lower, s string) bool {
	if len(lower) != len(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if lower[i] != toLower(s[i]) {
			return false
		}
	}
	return true
}

// contains reports whether list holds s.
func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
