package gitconfig

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// query is one section.subsection.key lookup.
type query struct{ section, sub, key string }

// name is the query as git config spells it.
func (q query) name() string {
	if q.sub == "" {
		return q.section + "." + q.key
	}
	return q.section + "." + q.sub + "." + q.key
}

// parseCases are config files, good and bad, covering git-config(1)'s
// syntax rules. Each is checked against the git CLI: whether git refuses
// it and on which line, every variable git lists, in order, and every
// lookup of those variables and of queries.
var parseCases = []struct {
	name    string
	text    string
	bad     bool    // whether git refuses the file
	queries []query // lookups besides those of the variables git lists
	// innerWS marks values with unquoted tabs or carriage returns inside
	// them, which git before 2.45 turned into spaces.
	innerWS bool
}{
	// Sections, subsections and keys.
	{name: "plain", text: "[core]\n\tbare = false\n\trepositoryformatversion = 0\n",
		queries: []query{{"CORE", "", "Bare"}, {"core", "", "missing"}, {"core", "bare", "x"}}},
	{name: "subsection", text: "[remote \"origin\"]\n\turl = https://example.com/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
		queries: []query{{"REMOTE", "origin", "URL"}, {"remote", "Origin", "url"}, {"remote", "", "url"}}},
	{name: "subsection escapes", text: "[a \"q\\\"uo\\\\te\"]\n k = 1\n[a \"x\\yz\"]\n k = 2\n",
		queries: []query{{"a", `q"uo\te`, "k"}, {"a", "xyz", "k"}, {"a", `x\yz`, "k"}}},
	{name: "subsection with spaces dots and non-ASCII", text: "[a \"b c.d ü\"]\n k = häh\n",
		queries: []query{{"a", "b c.d ü", "k"}}},
	{name: "whitespace before the subsection", text: "[a \t \"b\"]\n k = 1\n"},
	{name: "deprecated subsection", text: "[Branch.Main]\n Remote = origin\n",
		queries: []query{{"branch", "main", "remote"}, {"branch", "Main", "remote"}, {"branch", "", "remote"}}},
	{name: "deprecated subsection with dots", text: "[a.B.c]\n k = 1\n[a.b \"C\"]\n k = 2\n",
		queries: []query{{"a", "b.c", "k"}, {"a", "b.C", "k"}, {"a", "B.c", "k"}}},
	{name: "empty quoted subsection", text: "[a \"\"]\n k = 1\n[a]\n k = 2\n",
		queries: []query{{"a", "", "k"}}},
	{name: "trailing dot", text: "[a.]\n k = 1\n", queries: []query{{"a", "", "k"}}},
	{name: "subsection without a section", text: "[ \"b\"]\n k = 1\n", queries: []query{{"", "b", "k"}}},
	{name: "headers and variables on one line", text: "[a] k = 1 [b]\n[c] [d] e = 2\n",
		queries: []query{{"c", "", "e"}}},
	{name: "multi-valued", text: "[remote \"o\"]\n fetch = a\n fetch = b\n[remote \"p\"]\n fetch = c\n[Remote \"o\"]\n FETCH = d\n"},
	{name: "case of sections and keys", text: "[CoRe]\n BaRe = true\n[core]\n bare = false\n",
		queries: []query{{"cOrE", "", "bArE"}}},
	{name: "key characters", text: "[a]\n k-1-x2 = v\n K9 = w\n"},
	{name: "implicit booleans", text: "[a]\n k\n j =\n l = \n m\t\n"},
	{name: "implicit boolean at the end", text: "[a]\n k"},
	{name: "include is not followed", text: "[include]\n path = /nonexistent\n[includeIf \"gitdir:/x/\"]\n path = y\n"},
	{name: "variable before any header", text: "k = 1\n[a]\n k = 2\n", queries: []query{{"a", "", "k"}}},

	// Values.
	{name: "value whitespace", text: "[a]\n k =   lead and  trail   \n j=x\n l\t=\tv\t\n m \t=  v\n"},
	{name: "value inner tabs", text: "[a]\n k = x\t\ty \t \n j = x \t\n", innerWS: true},
	{name: "value lone carriage return", text: "[a]\n k = x\ry\n j = x\r\n", innerWS: true},
	{name: "quotes", text: "[a]\n k = \" lead\"\n j = \"a # not ; comment\"\n l = x\" \"y\n m = \"\"\n n = \"  \"  \n o = a\"b\"c\n p = \"x\" \n q = \"\" x\n r = \" \" x\n"},
	{name: "escapes", text: "[a]\n k = a\\\\b\\\"c\n j = \"\\t\\n\\b\"\n l = x\\ty\\n\n m = \\\"quoted\\\"\n"},
	{name: "continuation", text: "[a]\n k = one \\\n  two\n j = \"in \\\n quote\"\n l = x\\\n m = y\n"},
	{name: "continuation at the end", text: "[a]\n k = x\\"},
	{name: "continuation into a comment", text: "[a]\n k = x \\\n # c\n j = 1\n"},
	{name: "comments", text: "# top\n; top\n[a] # c\n k = v # c\n j = v;c\n l = \"v#\" # c\n\t# indented\n m = \"a\";\"b\"\n"},
	{name: "backslash in a comment", text: "[a]\n k = v # c \\\n j = 1\n"},
	{name: "NUL in a value", text: "[a]\n k = x\x00y\n"},
	{name: "non-ASCII value", text: "[a]\n k = \"naïve — ok\"\n"},

	// Line endings, BOM, blank files.
	{name: "CRLF", text: "[a \"b\"]\r\n k = v \r\n j = \"x\"\r\n l = y\\\r\n z\r\n m\r\n"},
	{name: "BOM", text: "\xef\xbb\xbf[a]\n k = v\n"},
	{name: "BOM alone", text: "\xef\xbb\xbf"},
	{name: "empty", text: ""},
	{name: "comments only", text: "# x\n\n  ; y"},
	{name: "blank lines and indentation", text: "\n\n  [a]\n\n\t\tk = 1\n   \n"},

	// Files git refuses.
	{name: "empty section", text: "[]\n", bad: true},
	{name: "unterminated header", text: "[core\n", bad: true},
	{name: "unterminated header at the end", text: "[core", bad: true},
	{name: "unterminated header after a space", text: "[a ", bad: true},
	{name: "space in a section name", text: "[a b]\n", bad: true},
	{name: "space before a section name", text: "[ a]\n", bad: true},
	{name: "space after a subsection", text: "[a \"b\" ]\n", bad: true},
	{name: "unterminated subsection", text: "[a \"b\n k = 1\n", bad: true},
	{name: "newline escaped in a subsection", text: "[a \"b\\\n\"]\n", bad: true},
	{name: "bad character in a section name", text: "[a]\n[a_b]\n", bad: true},
	{name: "bad character in a key", text: "[a]\n k_x = 1\n", bad: true},
	{name: "key starting with a digit", text: "[a]\n 1k = 1\n", bad: true},
	{name: "key starting with a dash", text: "[a]\n -k = 1\n", bad: true},
	{name: "key then a comment", text: "[a]\n k # c\n", bad: true},
	{name: "key then a word", text: "[a]\n k v\n", bad: true},
	{name: "carriage return after a key", text: "[a]\n k\r= 1\n", bad: true},
	{name: "missing key", text: "[a]\n = 1\n", bad: true},
	{name: "quoted key", text: "[a]\n \"k\" = 1\n", bad: true},
	{name: "unknown escape", text: "[a]\n k = \\q\n", bad: true},
	{name: "unknown escape in quotes", text: "[a]\n k = \"\\x\"\n", bad: true},
	{name: "unterminated quote", text: "[a]\n k = \"abc\n j = 1\n", bad: true},
	{name: "unterminated quote over a continuation", text: "[a]\n k = \"abc\\\n def\n", bad: true},
	{name: "unterminated quote at the end", text: "[a]\n k = \"abc", bad: true},
	{name: "partial BOM", text: "\xef\xbb[a]\n", bad: true},
	{name: "partial BOM at the end", text: "\xef", bad: true},
	{name: "bad line after good ones", text: "[a]\n k = 1\n\n\n j_ = 2\n", bad: true},
	{name: "bad line with CRLF", text: "[a]\r\n k = 1\r\n j = \\q\r\n", bad: true},
}

func TestParseMatchesGit(t *testing.T) {
	needGit(t)
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := writeConfig(t, tc.text)
			listed, accepted := compareParse(t, file, []byte(tc.text), tc.innerWS)
			if !accepted {
				if !tc.bad {
					t.Fatal("git refuses the file; the case expects it not to")
				}
				return
			}
			if tc.bad {
				t.Fatal("git accepts the file; the case expects it to refuse it")
			}
			cfg, _ := Parse([]byte(tc.text))
			compareLookups(t, cfg, file, append(listedQueries(listed), tc.queries...), tc.innerWS)
			compareKeys(t, cfg, listed)
		})
	}
}

// FuzzParseMatchesGit checks random files against git: the same verdict,
// the same error line and the same variables.
func FuzzParseMatchesGit(f *testing.F) {
	needGit(f)
	for _, tc := range parseCases {
		f.Add(tc.text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 || strings.Contains(text, "\x00") {
			t.Skip("too long, or a NUL, which git cuts names at")
		}
		compareParse(t, writeConfig(t, text), []byte(text), true)
	})
}

// compareParse parses data, which file holds, and compares the outcome with
// git's listing of file: the same error line when git refuses it, the same
// variables in the same order when it does not. It returns git's listing
// and whether git accepts the file. innerWS allows for git before 2.45.
func compareParse(t *testing.T, file string, data []byte, innerWS bool) (listed []listedVar, accepted bool) {
	t.Helper()
	res := runGit(t, "config", "-f", file, "--null", "--list")
	cfg, err := Parse(data)
	if res.code != 0 {
		compareError(t, res, err)
		return nil, false
	}
	if err != nil {
		t.Fatalf("Parse: %v; git accepts the file", err)
	}
	listed = parseListing(t, res.stdout)
	got := listing(cfg)
	if !slices.EqualFunc(got, listed, func(a, b listedVar) bool {
		return a.name == b.name && sameValue(a.value, b.value, innerWS)
	}) {
		t.Errorf("variables differ\n got: %q\ngit: %q", got, listed)
	}
	return listed, true
}

// compareError checks that Parse failed, on the line git names.
func compareError(t *testing.T, res gitResult, err error) {
	t.Helper()
	m := regexp.MustCompile(`bad config line (\d+)`).FindStringSubmatch(res.stderr)
	if res.code != 128 || m == nil {
		t.Fatalf("git config --list: exit %d: %s", res.code, res.stderr)
	}
	if err == nil {
		t.Fatalf("Parse accepts a file git refuses: %s", res.stderr)
	}
	var line int
	if _, scanErr := fmt.Sscanf(err.Error(), "line %d:", &line); scanErr != nil || strconv.Itoa(line) != m[1] {
		t.Errorf("Parse: %v; git: %s", err, strings.TrimSpace(res.stderr))
	}
}

// compareLookups compares Get and GetAll with git config --get-all for
// every query.
func compareLookups(t *testing.T, cfg *Config, file string, queries []query, innerWS bool) {
	t.Helper()
	for _, q := range queries {
		res := runGit(t, "config", "-f", file, "--null", "--get-all", q.name())
		var want []string
		switch res.code {
		case 0:
			want = strings.Split(strings.TrimSuffix(res.stdout, "\x00"), "\x00")
		case 1:
		default:
			t.Fatalf("git config --get-all %q: exit %d: %s", q.name(), res.code, res.stderr)
		}
		all := cfg.GetAll(q.section, q.sub, q.key)
		if !slices.EqualFunc(all, want, func(a, b string) bool { return sameValue(a, b, innerWS) }) {
			t.Errorf("GetAll(%q, %q, %q) = %q; git: %q", q.section, q.sub, q.key, all, want)
		}
		value, ok := cfg.Get(q.section, q.sub, q.key)
		if ok != (len(want) > 0) || ok && !sameValue(value, want[len(want)-1], innerWS) {
			t.Errorf("Get(%q, %q, %q) = %q, %v; git: %q", q.section, q.sub, q.key, value, ok, want)
		}
	}
}

// compareKeys checks Keys and HasSection for every section and
// subsection git lists variables of, in upper case for the section.
func compareKeys(t *testing.T, cfg *Config, listed []listedVar) {
	t.Helper()
	want := map[query][]string{}
	for _, q := range listedQueries(listed) {
		at := query{q.section, q.sub, ""}
		if !slices.Contains(want[at], q.key) {
			want[at] = append(want[at], q.key)
		}
	}
	for at, keys := range want {
		section := strings.ToUpper(at.section)
		if got := cfg.Keys(section, at.sub); !slices.Equal(got, keys) {
			t.Errorf("Keys(%q, %q) = %q; git lists %q", section, at.sub, got, keys)
		}
		if !cfg.HasSection(section) {
			t.Errorf("HasSection(%q) = false; git lists variables of it", section)
		}
	}
}

func TestHasSectionAndKeys(t *testing.T) {
	cfg, err := Parse([]byte("[core]\n[remote \"origin\"]\n url = x\n[Empty]\n[a.b]\n k = 1\n K = 2\n j\n[a \"b\"]\n l\n"))
	if err != nil {
		t.Fatal(err)
	}
	for section, want := range map[string]bool{
		"core": true, "REMOTE": true, "empty": true, "a": true,
		"b": false, "remote.origin": false, "origin": false, "": false,
	} {
		if got := cfg.HasSection(section); got != want {
			t.Errorf("HasSection(%q) = %v, want %v", section, got, want)
		}
	}
	for _, tc := range []struct {
		section, sub string
		want         []string
	}{
		{"A", "b", []string{"k", "j", "l"}},
		{"remote", "origin", []string{"url"}},
		{"core", "", nil},
		{"remote", "", nil},
		{"a", "B", nil},
	} {
		if got := cfg.Keys(tc.section, tc.sub); !slices.Equal(got, tc.want) {
			t.Errorf("Keys(%q, %q) = %q, want %q", tc.section, tc.sub, got, tc.want)
		}
	}
}

func TestParseCopiesData(t *testing.T) {
	data := []byte("[a]\n k = value\n")
	cfg, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	copy(data, bytes.Repeat([]byte("x"), len(data)))
	if v, _ := cfg.Get("a", "", "k"); v != "value" {
		t.Errorf("after the caller reuses its bytes, a.k = %q", v)
	}
}

// boolValues are values for Bool to read as git does. Left out: "" written
// as "k =" (git: false; Get cannot tell it from an implicit true), and
// values at git's int minimum, which git 2.50 accepts and older git not.
var boolValues = []string{
	"true", "TRUE", "Yes", "on", "oN", "false", "No", "OFF",
	"1", "0", "-1", "2", "00", "-0", "+0", "+7",
	"0x10", "0X0", "-0x1", "010", "08", "0x", "0xg",
	"1k", "0k", "1K", "1m", "1g", "2g", "0g", "1kb", "1kk", "1 k",
	"2147483647", "2147483648", "-2147483647", "-2147483649", "99999999999999999999999",
	"+", "-", "- 1", " 1", "\t1", "\r0", "1 ", "\v1", "\f0",
	"yes ", " yes", "y", "t", "truex", "0b1", "1e3", "1.0", "١",
}

func TestBoolMatchesGit(t *testing.T) {
	needGit(t)
	for _, value := range boolValues {
		text := "[t]\n\tv = \"" + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(value) + "\"\n"
		compareBool(t, text, value)
	}
	compareBool(t, "[t]\n\tv\n", "")
}

// compareBool checks Bool against git config --type=bool on t.v in text,
// which must hold value.
func compareBool(t *testing.T, text, value string) {
	t.Helper()
	cfg, err := Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := cfg.Get("t", "", "v"); got != value {
		t.Fatalf("the test wrote t.v = %q, Get reads %q", value, got)
	}
	res := runGit(t, "config", "-f", writeConfig(t, text), "--type=bool", "t.v")
	want, wantOK := strings.TrimSpace(res.stdout) == "true", res.code == 0
	if res.code != 0 && !strings.Contains(res.stderr, "bad boolean config value") {
		t.Fatalf("git config --type=bool: exit %d: %s", res.code, res.stderr)
	}
	if b, ok := Bool(value); b != want || ok != wantOK {
		t.Errorf("Bool(%q) = %v, %v; git: %v, %v", value, b, ok, want, wantOK)
	}
}

// benchConfig is a realistic repository config of 40 lines.
const benchConfig = `[core]
	repositoryformatversion = 0
	filemode = true
	bare = false
	logallrefupdates = true
	ignorecase = false
	precomposeunicode = true
	hooksPath = .githooks
[remote "origin"]
	url = git@github.com:ralph-dev/ralph.git
	fetch = +refs/heads/*:refs/remotes/origin/*
	pushurl = git@github.com:ralph-dev/ralph.git
[remote "upstream"]
	url = https://github.com/upstream/ralph.git
	fetch = +refs/heads/*:refs/remotes/upstream/*
	tagOpt = --no-tags
[branch "main"]
	remote = origin
	merge = refs/heads/main
	rebase = true
[branch "feature/parser"]
	remote = origin
	merge = refs/heads/feature/parser
[user]
	name = Ralph Developer
	email = "dev@example.com" ; work address
[pull]
	rebase = true
[fetch]
	prune = true
# LFS
[lfs]
	repositoryformatversion = 0
[filter "lfs"]
	clean = git-lfs clean -- %f
	smudge = git-lfs smudge -- %f
	process = git-lfs filter-process
	required
[submodule "vendor/lib"]
	url = ../lib.git
	active = true
`

func BenchmarkParse(b *testing.B) {
	data := []byte(benchConfig)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseAllocations(t *testing.T) {
	data := []byte(benchConfig)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Parse(data); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 6 {
		t.Errorf("Parse of a 40-line config allocates %v times, want at most 6", allocs)
	}
}

// listedVar is one variable as git config --list shows it.
type listedVar struct{ name, value string }

// listing is cfg's variables as git config --list shows them.
func listing(cfg *Config) []listedVar {
	var vars []listedVar
	for _, v := range cfg.vars {
		name := v.key
		if v.header >= 0 {
			h := cfg.headers[v.header]
			name = h.section + "." + v.key
			if h.hasSub {
				name = h.section + "." + h.sub + "." + v.key
			}
		}
		vars = append(vars, listedVar{name, v.value})
	}
	return vars
}

// parseListing reads git config --null --list output: each variable's
// name, then a newline and its value unless it is an implicit boolean,
// then a NUL.
func parseListing(t *testing.T, out string) []listedVar {
	t.Helper()
	var vars []listedVar
	for _, entry := range strings.SplitAfter(out, "\x00") {
		if entry == "" {
			continue
		}
		name, value, _ := strings.Cut(strings.TrimSuffix(entry, "\x00"), "\n")
		vars = append(vars, listedVar{name, value})
	}
	return vars
}

// listedQueries are the lookups of the variables git lists that the API
// can name: not those before any header, nor those of an empty but
// present subsection ("a..k").
func listedQueries(listed []listedVar) []query {
	var queries []query
	for _, v := range listed {
		first, last := strings.IndexByte(v.name, '.'), strings.LastIndexByte(v.name, '.')
		if first < 0 || first+1 == last {
			continue
		}
		q := query{section: v.name[:first], key: v.name[last+1:]}
		if first < last {
			q.sub = v.name[first+1 : last]
		}
		queries = append(queries, q)
	}
	return queries
}

// sameValue compares a value of Parse's with git's. With innerWS and a git
// older than 2.45, which wrote every unquoted whitespace character inside
// a value as a space, tabs and carriage returns count as spaces.
func sameValue(ours, theirs string, innerWS bool) bool {
	if innerWS && gitBefore245() {
		spaces := strings.NewReplacer("\t", " ", "\r", " ")
		return spaces.Replace(ours) == spaces.Replace(theirs)
	}
	return ours == theirs
}

var gitVersion = sync.OnceValues(func() (major, minor int) {
	out, err := exec.Command("git", "version").Output()
	if err != nil {
		return 0, 0
	}
	fmt.Sscanf(string(out), "git version %d.%d", &major, &minor)
	return major, minor
})

// gitBefore245 reports whether the git CLI is older than 2.45.
func gitBefore245() bool {
	major, minor := gitVersion()
	return major < 2 || major == 2 && minor < 45
}

// needGit skips tb when the git CLI is not installed.
func needGit(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		tb.Skip("git is not installed:", err)
	}
}

// writeConfig writes text to a new file and returns its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// gitResult is how a git command ended.
type gitResult struct {
	stdout, stderr string
	code           int
}

// runGit runs git with args, out of reach of the machine's and the user's
// configuration and in the C locale, so that its messages are English.
func runGit(t *testing.T, args ...string) gitResult {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + cmd.Dir,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"LC_ALL=C",
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return gitResult{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}
