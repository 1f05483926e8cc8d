package coordinator

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"slices"
	"strings"

	"github.com/ralph-dev/ralph/coordinator/internal/lazyre"
)

// Redacted is what replaces a secret in everything ralph writes from an
// agent: state files, progress entries, logs, commit messages and events.
// Agents print what they see, and an agent that echoes its environment
// once wrote ANTHROPIC_API_KEY into RALPH_PROGRESS.md, AGENT.md, the logs,
// and with --commit into git.
const Redacted = "[redacted]"

// minSecretLen is the shortest environment value taken for a secret:
// shorter ones ("1", "true", a port) are words ralph would mangle
// everywhere, not keys.
const minSecretLen = 8

// secretNameRe matches the names of variables that hold secrets.
var secretNameRe = lazyre.New(`(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD)`)

// notSecretName matches names that say key or token but hold a path or a
// git configuration key (GIT_CONFIG_KEY_0=init.defaultBranch), not one.
var notSecretName = lazyre.New(`(?i)(_(PATH|FILE|DIR)$|^GIT_CONFIG_KEY_[0-9]+$)`)

// tokenShapes are the shapes of well-known tokens, redacted wherever
// they come from: OpenAI and Anthropic keys (sk-…), GitHub tokens (ghp_…,
// gho_…, github_pat_…), AWS access keys (AKIA…, ASIA…), Slack tokens
// (xox…), GitLab tokens (glpat-…) and Google API keys (AIza…). A shape is
// a prefix at the start of a word ("task-…" is not "sk-…") and a run of at
// least min characters of its class; the whole run is redacted. They are
// matched by hand, not by a regular expression: every byte of an agent's
// output goes through them, and a scan for the prefixes is many times
// faster.
var tokenShapes = []tokenShape{
	{"sk-", 20, alnum | dash | underscore},
	{"ghp_", 30, alnum}, {"gho_", 30, alnum}, {"ghu_", 30, alnum}, {"ghs_", 30, alnum}, {"ghr_", 30, alnum},
	{"github_pat_", 30, alnum | underscore},
	{"AKIA", 16, upperDigit}, {"ASIA", 16, upperDigit},
	{"xoxa-", 10, alnum | dash}, {"xoxb-", 10, alnum | dash}, {"xoxp-", 10, alnum | dash},
	{"xoxo-", 10, alnum | dash}, {"xoxr-", 10, alnum | dash}, {"xoxs-", 10, alnum | dash},
	{"glpat-", 20, alnum | dash | underscore},
	{"AIza", 35, alnum | dash | underscore},
}

type tokenShape struct {
	prefix string
	min    int
	class  charClass
}

// charClass is a set of ASCII character kinds.
type charClass uint8

const (
	alnum charClass = 1 << iota
	upperDigit
	dash
	underscore
)

func (c charClass) has(b byte) bool {
	switch {
	case b >= '0' && b <= '9':
		return c&(alnum|upperDigit) != 0
	case b >= 'A' && b <= 'Z':
		return c&(alnum|upperDigit) != 0
	case b >= 'a' && b <= 'z':
		return c&alnum != 0
	case b == '-':
		return c&dash != 0
	case b == '_':
		return c&underscore != 0
	}
	return false
}

func isWordByte(b byte) bool { return (alnum | underscore).has(b) }

// tokenSpans finds the tokens of a well-known shape in s.
func tokenSpans(s string) []span {
	var out []span
	for _, t := range tokenShapes {
		for from := 0; ; {
			i := strings.Index(s[from:], t.prefix)
			if i < 0 {
				break
			}
			start := from + i
			end := start + len(t.prefix)
			for end < len(s) && t.class.has(s[end]) {
				end++
			}
			if (start == 0 || !isWordByte(s[start-1])) && end-start-len(t.prefix) >= t.min {
				out = append(out, span{start, end})
			}
			from = max(end, start+1)
		}
	}
	return out
}

// SecretsFromEnv returns the values in environ ("NAME=value", as
// os.Environ gives them) of the variables whose names say key, token,
// secret or password, at least minSecretLen bytes long. Only the entry
// point reads the environment; it hands these to Options.Secrets.
func SecretsFromEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || len(value) < minSecretLen || !secretNameRe().MatchString(name) || notSecretName().MatchString(name) {
			continue
		}
		out = append(out, value)
	}
	return out
}

// redactor replaces secrets in text: the given values, and anything with
// the shape of a well-known token.
type redactor struct {
	values []string // longest first
	// overlap is how much of an unfinished line a redactWriter holds back:
	// more than the longest value, so that one split across writes is
	// whole when it is looked for.
	overlap int
}

// newRedactor redacts values: each as it is, as it reads inside a JSON
// string (the claude backend's log is JSON lines), and each of its lines
// (a PEM key in a variable spans many).
func newRedactor(values []string) *redactor {
	seen := map[string]bool{}
	r := &redactor{overlap: 256}
	add := func(v string) {
		v = strings.TrimSpace(v)
		if len(v) < minSecretLen || seen[v] {
			return
		}
		seen[v] = true
		r.values = append(r.values, v)
		r.overlap = max(r.overlap, len(v))
	}
	for _, v := range values {
		add(v)
		if q, err := json.Marshal(v); err == nil {
			add(string(q[1 : len(q)-1]))
		}
		if strings.Contains(v, "\n") {
			for _, l := range strings.Split(v, "\n") {
				add(l)
			}
		}
	}
	slices.SortFunc(r.values, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return r
}

// span is a byte range [start, end) to redact.
type span struct{ start, end int }

// spans finds the secrets in s, sorted and merged.
func (r *redactor) spans(s string) []span {
	var out []span
	for _, v := range r.values {
		for from := 0; ; {
			i := strings.Index(s[from:], v)
			if i < 0 {
				break
			}
			out = append(out, span{from + i, from + i + len(v)})
			from += i + len(v)
		}
	}
	out = append(out, tokenSpans(s)...)
	if len(out) < 2 {
		return out
	}
	slices.SortFunc(out, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	merged := out[:1]
	for _, sp := range out[1:] {
		if last := &merged[len(merged)-1]; sp.start <= last.end {
			last.end = max(last.end, sp.end)
		} else {
			merged = append(merged, sp)
		}
	}
	return merged
}

// redact returns s with every secret replaced by Redacted.
func (r *redactor) redact(s string) string {
	sp := r.spans(s)
	if len(sp) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, x := range sp {
		b.WriteString(s[last:x.start])
		b.WriteString(Redacted)
		last = x.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// redactWriter redacts what goes through it, a line at a time: a secret
// split across two writes (a pipe's reads cut anywhere) is whole when it
// is looked for. A line that grows past maxPending is written in parts,
// each cut before a secret that might run on past it. Close writes what
// is held.
type redactWriter struct {
	w       io.Writer
	r       *redactor
	pending []byte
	err     error
}

// maxPending bounds what a redactWriter holds of an unfinished line;
// hardPending is the most it holds even when all of it reads as one
// token still being written.
const (
	maxPending  = 64 << 10
	hardPending = 1 << 20
)

func (rw *redactWriter) Write(p []byte) (int, error) {
	if rw.err != nil {
		return 0, rw.err
	}
	rw.pending = append(rw.pending, p...)
	// Only p can hold a new line end: a scan of all that is held would
	// cost a line's length on every write.
	if i := bytes.LastIndexByte(p, '\n'); i >= 0 {
		rw.flush(len(rw.pending) - len(p) + i + 1)
	}
	if len(rw.pending) > maxPending {
		rw.flush(rw.cut())
	}
	return len(p), rw.err
}

// cut is where an unfinished line may be cut: overlap bytes before its
// end, moved back to the start of a secret that spans that point.
func (rw *redactWriter) cut() int {
	at := len(rw.pending) - rw.r.overlap
	for _, sp := range rw.r.spans(string(rw.pending)) {
		if sp.start < at && at < sp.end {
			at = sp.start
		}
	}
	if at <= 0 && len(rw.pending) > hardPending {
		return len(rw.pending) // one token a megabyte long: redacted as it stands
	}
	return max(at, 0)
}

// flush writes the first n pending bytes, redacted.
func (rw *redactWriter) flush(n int) {
	if n <= 0 {
		return
	}
	if _, err := io.WriteString(rw.w, rw.r.redact(string(rw.pending[:n]))); err != nil && rw.err == nil {
		rw.err = err
	}
	rw.pending = rw.pending[:copy(rw.pending, rw.pending[n:])]
	if cap(rw.pending) > 4*maxPending && len(rw.pending) < maxPending {
		rw.pending = slices.Clone(rw.pending) // let a huge line's buffer go
	}
}

// Close writes the rest of an unfinished line; it does not close w.
func (rw *redactWriter) Close() error {
	rw.flush(len(rw.pending))
	return rw.err
}
