package ignore

import (
	"strings"
	"testing"
)

// TestIgnored checks single-file patterns against answers from
// "git check-ignore --no-index" (git 2.39), recorded in the table.
func TestIgnored(t *testing.T) {
	tests := []struct {
		patterns string
		path     string
		dir      bool
		want     bool
	}{
		{"*.log", "a.log", false, true},
		{"*.log", "dir/a.log", false, true},
		{"*.log\n!keep.log", "keep.log", false, false},
		{"*.log\n!keep.log", "sub/keep.log", false, false},
		{"/build", "build", true, true},
		{"/build", "src/build", true, false},
		{"logs/", "logs", false, false},
		{"logs/", "logs", true, true},
		{"logs/", "a/logs", true, true},
		{"docs/*.md", "docs/a.md", false, true},
		{"docs/*.md", "x/docs/a.md", false, false},
		{"**/gen", "a/b/gen", true, true},
		{"**/gen", "gen", true, true},
		{"a/**/b", "a/b", false, true},
		{"a/**/b", "a/x/y/b", false, true},
		{"a/**/b", "a/x", false, false},
		{"out/**", "out", true, false},
		{"out/**", "out/x", false, true},
		{"# comment", "# comment", false, false},
		{`\#hash`, "#hash", false, true},
		{`\!bang`, "!bang", false, true},
		{"trailing   ", "trailing", false, true},
		{"crlf\r\nother", "crlf", false, true},
		{"[ab].txt", "a.txt", false, true},
		{"[ab].txt", "c.txt", false, false},
		{"?.go", "a.go", false, true},
		{"?.go", "ab.go", false, false},
		{"tmp*", "tmpfile", false, true},
		{"*\n!*.go", "main.go", false, false},
		{"*\n!*.go", "x.txt", false, true},
		{"*\n!*.go", "sub", true, true},
		{"/*\n!/src/", "src", true, false},
		{"/*\n!/src/", "lib", true, true},
		{"/*\n!/src/", "src", false, true},
		{"a/b", "a/b", false, true},
		{"a/b", "x/a/b", false, false},
		{"**", "anything", false, true},
		{"doc/frotz/", "doc/frotz", true, true},
		{"doc/frotz/", "a/doc/frotz", true, false},
		{"foo/*", "foo/bar", false, true},
		{"[unclosed", "[unclosed", false, false},
		{"   \nx", "x", false, true},
		{`bs\\ `, `bs\`, false, true},
		{"[!a]b", "cb", false, true},
		{"[!a]b", "ab", false, false},
		{"[]]r", "]r", false, true},
		{"[a-]s", "-s", false, true},
		{"[[:digit:]]d", "7d", false, true},
		{"[[:bogus:]]d", "bd", false, false},
		{"?.txt", "é.txt", false, false},
		{"foo//", "foo", true, false},
		{"//bar", "bar", false, false},
		{"a//b", "a/b", false, false},
		{`foo\`, `foo\`, false, false},
	}
	for _, tt := range tests {
		rules := Parse([]byte(tt.patterns), 0)
		if got := Ignored(rules, strings.Split(tt.path, "/"), tt.dir); got != tt.want {
			t.Errorf("patterns %q, path %q (dir %v): ignored = %v, want %v", tt.patterns, tt.path, tt.dir, got, tt.want)
		}
	}
}
