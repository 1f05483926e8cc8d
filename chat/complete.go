package chat

import (
	"slices"
	"strings"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/mdstate"
)

// completer completes, for readline's Tab, slash commands, the words
// after /task, /goal and /todo, task, goal and to-do IDs, and agent names.
type completer struct {
	p    *mdstate.Project
	cmds []command
}

// taskVerbs are /task's subcommands; those after the first take a task ID.
var taskVerbs = []string{"add", "done", "skip", "block", "reopen", "list"}

// Do returns the candidates' missing tails for the word before the cursor
// (readline's AutoCompleter contract: suffixes, and the length of the
// word they complete).
func (c completer) Do(line []rune, pos int) ([][]rune, int) {
	before := string(line[:pos])
	words := strings.Fields(before)
	if len(words) == 0 || !strings.HasPrefix(words[0], "/") {
		return nil, 0
	}
	word := ""
	if !strings.HasSuffix(before, " ") {
		word = words[len(words)-1]
		words = words[:len(words)-1]
	}
	var cands []string
	switch {
	case len(words) == 0:
		for _, cmd := range c.cmds {
			cands = append(cands, "/"+cmd.name)
		}
	case words[0] == "/task" && len(words) == 1:
		cands = taskVerbs
	case words[0] == "/task" && len(words) == 2 && slices.Contains(taskVerbs[1:5], words[1]):
		cands = c.ids(mdstate.TasksKind)
	case words[0] == "/log" && len(words) == 1:
		cands = c.ids(mdstate.TasksKind)
	case words[0] == "/goal" && len(words) == 1:
		cands = []string{"add", "done", "list"}
	case words[0] == "/goal" && len(words) == 2 && words[1] == "done":
		cands = c.ids(mdstate.GoalsKind)
	case words[0] == "/todo" && len(words) == 1:
		cands = []string{"add", "done", "promote", "list"}
	case words[0] == "/todo" && len(words) == 2 && (words[1] == "done" || words[1] == "promote"):
		cands = c.ids(mdstate.TodoKind)
	case words[0] == "/agent" && len(words) == 1:
		cands = append(agent.CLINames(), "exec")
	}
	var out [][]rune
	for _, cand := range cands {
		if tail, ok := strings.CutPrefix(cand, word); ok {
			out = append(out, []rune(tail+" "))
		}
	}
	return out, len([]rune(word))
}

// ids are the IDs in the checklist of kind k (tasks, goals, to-dos),
// read when Tab is pressed.
func (c completer) ids(k mdstate.Kind) []string {
	list, err := c.p.LoadChecklist(k)
	if err != nil {
		return nil
	}
	ids := make([]string, 0, list.Len())
	for _, it := range list.All() {
		if !it.Provisional {
			ids = append(ids, it.ID)
		}
	}
	return ids
}
