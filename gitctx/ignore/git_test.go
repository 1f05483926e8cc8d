package ignore

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitCase is a tree of .gitignore files and the paths to check in it.
type gitCase struct {
	name    string
	ignores map[string]string // .gitignore contents by directory, "" for the root
	paths   []string          // created, then checked; a trailing "/" makes a directory
}

var gitCases = []gitCase{
	{"negation", map[string]string{"": "*.log\n!keep.log\n"},
		[]string{"a.log", "keep.log", "sub/a.log", "sub/keep.log", "x.txt", "A.LOG"}},
	{"re-include a directory", map[string]string{"": "/*\n!/src/\n!/README.md\n"},
		[]string{"src/", "src/main.go", "lib/", "lib/x.go", "README.md", "other.txt"}},
	{"no re-include below an excluded directory", map[string]string{"": "build/\n!build/keep.txt\n"},
		[]string{"build/keep.txt", "x/build/", "y/build"}},
	{"directory only", map[string]string{"": "foo/\n"},
		[]string{"foo/", "foo/x", "bar/foo/", "bar/foo/y", "file/foo"}},
	{"anchored", map[string]string{"": "/foo\na/b\ndocs/*.md\n"},
		[]string{"foo", "x/foo", "a/b/", "x/a/b", "a/b/c", "a/bc", "docs/a.md", "docs/sub/a.md", "x/docs/a.md"}},
	{"leading **", map[string]string{"": "**/gen\n**/cache/\n"},
		[]string{"gen/", "a/gen/", "a/b/gen", "a/gene", "cache/", "a/cache/", "b/cache"}},
	{"trailing **", map[string]string{"": "out/**\n!out/keep\n"},
		[]string{"out/", "out/x", "out/keep", "out/sub/", "out/sub/y", "x/out/z"}},
	{"inner **", map[string]string{"": "a/**/b\n"},
		[]string{"a/b", "a/x/b", "a/x/y/b", "a/x/c", "x/a/b"}},
	{"trailing **/", map[string]string{"": "a/**/\n"},
		[]string{"a/", "a/b/", "a/c", "a/b/d"}},
	{"only **", map[string]string{"": "**\n!*.go\n"},
		[]string{"a.go", "a.txt", "d/", "d/b.go"}},
	{"root **", map[string]string{"": "/**\n!/keep\n"},
		[]string{"x", "keep", "d/"}},
	{"suffix and prefix", map[string]string{"": "*.log\ntmp*\n"},
		[]string{"a.log", "d/b.log", ".log", "tmp", "tmpdir/", "d/tmpfile", "atmp"}},
	{"character classes", map[string]string{"": "[abc].txt\n?.go\nfile[0-9]\n[^m]n\n"},
		[]string{"a.txt", "d.txt", "x.go", "xx.go", "file5", "filex", "an", "mn"}},
	{"wildmatch classes", map[string]string{"": "[!x]y\n[]]r\n[a-]s\n[-b]t\n[[:digit:]]d\n[[:alpha:]_]u\n[!]]v\n"},
		[]string{"ay", "xy", "]r", "ar", "-s", "as", "bs", "-t", "bt", "at", "7d", "xd", "zu", "_u", "9u", "av", "]v"}},
	{"odd classes", map[string]string{"": "[a-c-e]1\n[[:alpha:]2\n[[:bogus:]]3\n[[:x]4\n[[:]5\n[\\]]6\n[z-a]7\n"},
		[]string{"a1", "-1", "d1", "e1", "[:alpha:]2", "a2", "[2", "]2", "x3", "[4", ":4", "x4", "[5", "]5", "]6", `\6`, "m7"}},
	{"bytes, not runes", map[string]string{"": "?.txt\n[é]x\n"},
		[]string{"é.txt", "a.txt", "éx", "ex"}},
	{"escapes and spaces", map[string]string{"": "\\#hash\n\\!bang\n# comment\nsp\\ \ntrail   \nbs\\\\ \n \n\\*.c\nq\\?\nfoo\\\n"},
		[]string{"#hash", "!bang", "# comment", "sp ", "sp", "trail", "trail ", `bs\`, `bs\ `, "*.c", "a.c", "q?", "qx", `foo\`, "foo"}},
	{"empty patterns", map[string]string{"": "!\n/\n**/\n!x/\n"},
		[]string{"d/", "x/", "y"}},
	{"CRLF", map[string]string{"": "crlf\r\n*.o\r\n!keep.o\r\n"},
		[]string{"crlf", "crlf\r", "a.o", "a.o\r", "keep.o"}},
	{"nested domains", map[string]string{"": "*.tmp\n", "sub": "/only\nx.log\n!keep.tmp\nd/e\n", "sub/a": "!x.log\n"},
		[]string{"only", "sub/only", "sub/deeper/only", "x.log", "sub/x.log", "sub/b/x.log", "sub/a/x.log",
			"keep.tmp", "sub/keep.tmp", "sub/b/keep.tmp", "d/e", "sub/d/e", "sub/b/d/e"}},
	{"nested directory rules", map[string]string{"sub": "gen/\n**/cache\n"},
		[]string{"gen/", "sub/gen/", "sub/x/gen/", "sub/x/gen/f", "cache/", "sub/cache/", "sub/x/cache"}},
	{"deeply nested", map[string]string{"a": "b/x\n", "a/b": "**/c\n/d/e\n"},
		[]string{"a/b/c", "a/b/q/c", "c", "a/c", "a/b/d/e", "a/b/x", "a/x"}},
	{"doubled slashes", map[string]string{"": "foo//\n//bar\nx//y\n"},
		[]string{"foo/", "bar", "x/y"}},
}

// TestMatchesGit checks Ignored against "git check-ignore --no-index" in a
// real repository. A path below an ignored directory is judged as the walk
// judges it, by its first ignored ancestor, which is what git reports for
// it too.
func TestMatchesGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, c := range gitCases {
		t.Run(c.name, func(t *testing.T) {
			dir := c.write(t)
			byGit := gitIgnored(t, dir, c.paths)
			files := c.rules()
			for _, p := range c.paths {
				isDir := strings.HasSuffix(p, "/")
				p = strings.TrimSuffix(p, "/")
				got := walkIgnored(files, strings.Split(p, "/"), isDir)
				if want := byGit[p]; got != want {
					t.Errorf("%q: Ignored = %v, git says %v\nignore files: %q", p, got, want, c.ignores)
				}
			}
		})
	}
}

// write creates the case's tree in a new git repository.
func (c gitCase) write(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, nil, "init", "-q")
	for d, data := range c.ignores {
		mkfile(t, filepath.Join(dir, filepath.FromSlash(d), ".gitignore"), data)
	}
	for _, p := range c.paths {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mkfile(t, full, "")
	}
	return dir
}

// rules parses the case's ignore files, by directory.
func (c gitCase) rules() map[string][]Rule {
	m := map[string][]Rule{}
	for d, data := range c.ignores {
		depth := 0
		if d != "" {
			depth = strings.Count(d, "/") + 1
		}
		m[d] = Parse([]byte(data), depth)
	}
	return m
}

// walkIgnored judges p as a walk from the root does: each ancestor in
// turn, with the rules of the ignore files above it, stopping at the first
// one ignored.
func walkIgnored(files map[string][]Rule, p []string, isDir bool) bool {
	var rules []Rule
	for i := range p {
		rules = append(rules, files[strings.Join(p[:i], "/")]...)
		if Ignored(rules, p[:i+1], isDir || i < len(p)-1) {
			return true
		}
	}
	return false
}

// gitIgnored asks git which of paths are ignored in the repository at dir.
func gitIgnored(t *testing.T, dir string, paths []string) map[string]bool {
	t.Helper()
	// "./" first, or ":x" would be read as pathspec magic (check-ignore
	// refuses --literal-pathspecs).
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString("./" + strings.TrimSuffix(p, "/") + "\x00")
	}
	out := git(t, dir, &in, "check-ignore", "--no-index", "--stdin", "-z")
	m := map[string]bool{}
	for p := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		m[strings.TrimPrefix(p, "./")] = true
	}
	return m
}

// git runs git in dir with no system, global or user configuration. Exit
// status 1 is check-ignore's "nothing ignored", not a failure.
func git(t *testing.T, dir string, stdin *bytes.Buffer, args ...string) []byte {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "XDG_CONFIG_HOME=") || strings.HasPrefix(kv, "HOME=")
	}), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "HOME="+home, "XDG_CONFIG_HOME="+home)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 && stderr.Len() == 0 {
		return out
	}
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

func mkfile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
