package chat

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-dev/ralph/mdstate"
)

func TestSplitArgs(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
		err  bool
	}{
		{line: "task add Write the docs", want: []string{"task", "add", "Write", "the", "docs"}},
		{line: `task add "Write the docs" --priority 1`, want: []string{"task", "add", "Write the docs", "--priority", "1"}},
		{line: `todo 'it''s' x`, want: []string{"todo", "its", "x"}},
		{line: `learn a\ b "c \"d\""`, want: []string{"learn", "a b", `c "d"`}},
		{line: `task add ""`, want: []string{"task", "add", ""}},
		{line: "  status  ", want: []string{"status"}},
		{line: `task add "open`, err: true},
	} {
		got, err := splitArgs(tc.line)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("splitArgs(%q) = %q, %v; want %q, error %v", tc.line, got, err, tc.want, tc.err)
		}
	}
}

func TestSuggest(t *testing.T) {
	cmds := commands()
	for _, tc := range []struct {
		name string
		want []string
	}{
		{name: "stauts", want: []string{"/status"}},
		{name: "tsk", want: []string{"/tasks", "/task"}},
		{name: "rn", want: []string{"/run"}},
		{name: "que", want: []string{"/queue"}},
		{name: "xyzzy", want: nil},
	} {
		if got := suggest(cmds, tc.name); !slices.Equal(got, tc.want) {
			t.Errorf("suggest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestTodoArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{args: nil, want: []string{"todo", "list"}},
		{args: []string{"call", "the", "bank"}, want: []string{"todo", "add", "call the bank"}},
		{args: []string{"done", "D2"}, want: []string{"todo", "done", "D2"}},
		{args: []string{"promote", "D1"}, want: []string{"todo", "promote", "D1"}},
	} {
		if got := todoArgs(tc.args); !slices.Equal(got, tc.want) {
			t.Errorf("todoArgs(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestPickQueued(t *testing.T) {
	q := []string{"a", "b", "c"}
	for _, tc := range []struct {
		which string
		want  []string
		err   bool
	}{
		{which: "2", want: []string{"b"}},
		{which: "all", want: q},
		{which: "0", err: true},
		{which: "4", err: true},
		{which: "x", err: true},
	} {
		got, err := pickQueued(q, tc.which)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("pickQueued(%q) = %q, %v; want %q, error %v", tc.which, got, err, tc.want, tc.err)
		}
	}
}

func TestComplete(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		mdstate.TasksFile: "# Tasks\n\n- [ ] T1: One\n- [ ] T12: Twelve\n- [ ] T2: Two\n",
		mdstate.GoalsFile: "# Goals\n\n- [ ] G1: Ship it\n- [ ] G2: Fast\n",
		mdstate.TodoFile:  "# To-do\n\n- [ ] D1: Docs\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := completer{p: mdstate.Open(dir), cmds: commands()}
	for _, tc := range []struct {
		line string
		want []string
		n    int
	}{
		{line: "/sta", want: []string{"tus "}, n: 4},
		{line: "/t", want: []string{"asks ", "ask ", "odo "}, n: 2},
		{line: "/a", want: []string{"gents ", "gent "}, n: 2},
		{line: "/task d", want: []string{"one "}, n: 1},
		{line: "/task done T1", want: []string{" ", "2 "}, n: 2},
		{line: "/task skip ", want: []string{"T1 ", "T12 ", "T2 "}, n: 0},
		{line: "/task add T", want: nil, n: 1},
		{line: "/goal done G", want: []string{"1 ", "2 "}, n: 1},
		{line: "/todo promote ", want: []string{"D1 "}, n: 0},
		{line: "/log T1", want: []string{" ", "2 "}, n: 2},
		{line: "/agent cl", want: []string{"aude "}, n: 2},
		{line: "/agent ex", want: []string{"ec "}, n: 2},
		{line: "hello", want: nil, n: 0},
	} {
		got, n := c.Do([]rune(tc.line), len([]rune(tc.line)))
		var tails []string
		for _, r := range got {
			tails = append(tails, string(r))
		}
		if !slices.Equal(tails, tc.want) || n != tc.n {
			t.Errorf("complete %q = %q, %d; want %q, %d", tc.line, tails, n, tc.want, tc.n)
		}
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	help := helpText(commands())
	for _, c := range commands() {
		if !strings.Contains(help, "/"+c.name) {
			t.Errorf("/help lacks /%s", c.name)
		}
	}
}

func TestLevenshtein(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"status", "status", 0}, {"stauts", "status", 2}, {"", "abc", 3}, {"kitten", "sitting", 3},
	} {
		if got := levenshtein(tc.a, tc.b); got != tc.want {
			t.Errorf("levenshtein(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
