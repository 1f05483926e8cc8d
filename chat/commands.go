package chat

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// command is one slash command. Those that match a CLI command name it in
// cli: the session runs `ralph CLI… ARGS…` in-process, with that command's
// effect and output. The others drive the engine (run).
type command struct {
	name string
	args string // how its arguments are written, for /help
	help string
	cli  func(args []string) []string
	run  func(s *session, args []string) error
}

// cliArgs prefixes a command's arguments with the CLI words it maps to.
func cliArgs(words ...string) func([]string) []string {
	return func(args []string) []string { return append(slices.Clone(words), args...) }
}

// commands is the table of slash commands, in /help's order.
func commands() []command {
	return []command{
		{name: "help", help: "this list", run: (*session).cmdHelp},
		{name: "status", help: "goals, tasks by status, the next task (ralph status)", cli: cliArgs("status")},
		{name: "tasks", help: "the tasks (ralph task list)", cli: cliArgs("task", "list")},
		{name: "task", args: "add|done|skip|block|reopen …", help: "add a task or change its status (ralph task …)", cli: cliArgs("task")},
		{name: "goals", help: "the goals (ralph goal list)", cli: cliArgs("goal", "list")},
		{name: "goal", args: "add|done …", help: "add or finish a goal (ralph goal …)", cli: cliArgs("goal")},
		{name: "todo", args: "[TEXT]", help: "the to-dos, or add one (ralph todo list | add)", cli: todoArgs},
		{name: "learn", args: "TEXT", help: "add a learning to AGENT.md (ralph learn)", cli: cliArgs("learn")},
		{name: "context", help: "what ralph reconstructs on start (ralph context)", cli: cliArgs("context")},
		{name: "history", args: "[FILE]", help: "commits that changed the state files (ralph history)", cli: cliArgs("history")},
		{name: "log", args: "[TASK]", help: "the last progress entries, or a task's (ralph log)", cli: cliArgs("log")},
		{name: "agents", help: "the agent CLIs installed, and the command ralph runs (ralph agents)", cli: cliArgs("agents")},
		{name: "agent", args: "[NAME [MODEL]]", help: "the agent in use, or switch to another for what starts next", run: (*session).cmdAgent},
		{name: "run", args: "[N]", help: "work through the tasks in the background (N: at most N iterations)", run: (*session).cmdRun},
		{name: "pause", help: "pause after the current iteration", run: (*session).cmdPause},
		{name: "resume", help: "take back a pause, or continue the session", run: (*session).cmdResume},
		{name: "stop", help: "stop the work now: the agent stopped, its task back to pending (also Ctrl-C)", run: (*session).cmdStop},
		{name: "queue", args: "[drop N|all]", help: "the queued messages for the agents, or drop some", run: (*session).cmdQueue},
		{name: "quit", help: "stop the work, save and leave (also Ctrl-D)", run: (*session).cmdQuit},
	}
}

// todoArgs: /todo lists, /todo TEXT adds, /todo done|promote|list … is
// the CLI's own subcommand.
func todoArgs(args []string) []string {
	if len(args) == 0 {
		return []string{"todo", "list"}
	}
	switch args[0] {
	case "add", "done", "promote", "list":
		return append([]string{"todo"}, args...)
	}
	return []string{"todo", "add", strings.Join(args, " ")}
}

// findCommand returns the command named name.
func findCommand(cmds []command, name string) (command, bool) {
	for _, c := range cmds {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// suggest returns the commands a mistyped name may mean: those it
// starts, or else those within two edits.
func suggest(cmds []command, name string) []string {
	var prefixed, near []string
	for _, c := range cmds {
		switch {
		case strings.HasPrefix(c.name, name):
			prefixed = append(prefixed, "/"+c.name)
		case levenshtein(c.name, name) <= 2:
			near = append(near, "/"+c.name)
		}
	}
	if len(prefixed) > 0 {
		return prefixed
	}
	return near
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur := make([]int, len(rb)+1)
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(rb)]
}

// errUnclosedQuote is splitArgs' answer to a quote left open.
var errUnclosedQuote = errors.New("a quote is not closed")

// splitArgs splits a command line into words the way a shell does for
// the simple cases: blanks separate, single and double quotes group (a
// backslash escapes the next character outside single quotes).
func splitArgs(line string) ([]string, error) {
	var (
		args  []string
		cur   strings.Builder
		in    bool // inside a word
		quote rune
		esc   bool
	)
	for _, r := range line {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case r == '\\' && quote != '\'':
			esc, in = true, true
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				args = append(args, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, errUnclosedQuote
	}
	if in {
		args = append(args, cur.String())
	}
	return args, nil
}

// helpText is /help's list.
func helpText(cmds []command) string {
	var b strings.Builder
	b.WriteString("Commands:\n")
	for _, c := range cmds {
		name := "/" + c.name
		if c.args != "" {
			name += " " + c.args
		}
		fmt.Fprintf(&b, "  %-36s %s\n", name, c.help)
	}
	b.WriteString(`At an idle prompt, a plain line is a message to the agent, who answers
with the project's context. While work runs, a plain line is a message for
the next agent, and a line starting with ! pauses the work to answer it, and
the work then goes on. Ctrl-C stops the work or the answer; at an empty
prompt, Ctrl-C twice or Ctrl-D leaves.
`)
	return b.String()
}
