package cli

// Shell completion beyond cobra's own (commands and flag names): the IDs in
// the project's checklists with their titles as descriptions, the agent
// names, the permission modes and the state files, for `ralph completion
// bash|zsh|fish`. The shell runs the hidden `ralph __complete` on every
// Tab, so a completion reads only the one file it needs, through the
// project -C names, when it is asked; prints nothing itself (cobra writes
// the candidates); and offers nothing, rather than an error, when the file
// is missing or unreadable: a message would land in the middle of the
// command line being typed.

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/mdstate"
)

// noFiles ends every completion here: none of these values is a path, and
// the shell's file names would only bury the real candidates.
const noFiles = cobra.ShellCompDirectiveNoFileComp

// The flags whose values mean the same on every command that has them.
const (
	agentFlag      = "agent"
	agentCmdFlag   = "agent-cmd"
	permissionFlag = "permission-mode"
	taskFlag       = "task"
	afterFlag      = "after"
	dirFlag        = "dir"
)

// execAgent is the agent that runs any program; it needs --agent-cmd.
const execAgent = "exec"

// itemFilter says which items of a checklist a command can act on.
type itemFilter func(it *mdstate.Item) bool

func anyItem(*mdstate.Item) bool { return true }

// notStatus keeps the items a change to s would change: `task done` offers
// no task that is done already.
func notStatus(s mdstate.Status) itemFilter {
	return func(it *mdstate.Item) bool { return it.Status != s }
}

// promotable keeps the open to-dos not yet promoted to a task.
func promotable(it *mdstate.Item) bool {
	return it.Promoted == "" && it.Status != mdstate.Done && it.Status != mdstate.Skipped
}

// completeItemArg completes a command's one argument, an ID of kind's
// checklist.
func completeItemArg(f *Factory, kind mdstate.Kind, keep itemFilter) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, noFiles
		}
		return itemCandidates(f, kind, keep, typed), noFiles
	}
}

// completeItemFlag completes the flag name of cmd with IDs of kind's
// checklist. It goes before completeFlags, whose default for the flag it
// replaces.
func completeItemFlag(f *Factory, cmd *cobra.Command, name string, kind mdstate.Kind, keep itemFilter) {
	register(cmd, name, func(_ *cobra.Command, _ []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return itemCandidates(f, kind, keep, typed), noFiles
	})
}

// itemCandidates are the IDs of kind's items that keep accepts and that
// start with typed, each with its title; none when the file cannot be
// read. Its warnings are not shown: the command itself shows them.
func itemCandidates(f *Factory, kind mdstate.Kind, keep itemFilter, typed string) []cobra.Completion {
	p, _ := f.Project()
	c, err := p.LoadChecklist(kind)
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	seen := map[string]bool{}
	for _, it := range c.All() {
		if seen[it.ID] || !keep(it) {
			continue
		}
		seen[it.ID] = true // a repeated ID names the first item with it
		if id, ok := completeWord(it.ID, typed); ok {
			out = append(out, cobra.CompletionWithDesc(id, strings.Join(strings.Fields(it.Title), " ")))
		}
	}
	return out
}

// completeWord returns word if it starts with typed, in any case, spelled
// so that it starts with typed exactly: the shells drop a candidate that
// does not, and ralph takes IDs and file names in any case ("t3" is T3).
// A word typed in lower case goes on in lower case.
func completeWord(word, typed string) (string, bool) {
	if len(typed) > len(word) || !strings.EqualFold(word[:len(typed)], typed) {
		return "", false
	}
	rest := word[len(typed):]
	if typed != "" && typed == strings.ToLower(typed) {
		rest = strings.ToLower(rest)
	}
	return typed + rest, true
}

// stateFileAbout says what each state file holds, for the descriptions of
// `ralph history` and `ralph restore`'s argument.
var stateFileAbout = map[string]string{
	mdstate.AgentFile:    "what ralph has learned about working in this project",
	mdstate.GoalsFile:    "current goals",
	mdstate.TasksFile:    "tasks and their status",
	mdstate.ProgressFile: "what was done, when, by which agent, with what result",
	mdstate.TodoFile:     "to-dos and next steps",
}

// stateFileShort is the short name a command takes for a state file:
// tasks for RALPH_TASKS.md, agent for AGENT.md.
func stateFileShort(name string) string {
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(name, "RALPH_"), ".md"))
}

// completeStateFile completes a command's one argument, a state file: its
// name, or its short name once a lower-case word starts it ("ta": tasks).
func completeStateFile(_ *cobra.Command, args []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, noFiles
	}
	var out []cobra.Completion
	for _, name := range mdstate.Files {
		word, ok := "", false
		if typed != "" && typed == strings.ToLower(typed) {
			word, ok = completeWord(stateFileShort(name), typed)
		}
		if !ok {
			word, ok = completeWord(name, typed)
		}
		if ok {
			out = append(out, cobra.CompletionWithDesc(word, stateFileAbout[name]))
		}
	}
	return out, noFiles
}

// permissionAbout says what each permission mode lets an agent do, as
// permissionHelp does at length.
var permissionAbout = map[agent.Permission]string{
	agent.PermissionBypass:      "every tool, no questions (the default)",
	agent.PermissionAcceptEdits: "file edits; other tools as the agent CLI's settings allow",
	agent.PermissionDefault:     "only what the agent CLI's settings allow",
}

func completePermission(_ *cobra.Command, _ []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, p := range agent.Permissions {
		if word, ok := completeWord(string(p), typed); ok {
			out = append(out, cobra.CompletionWithDesc(word, permissionAbout[p]))
		}
	}
	return out, noFiles
}

// completeAgent offers the agent CLIs, and exec where --agent-cmd can give
// it its program: `ralph agents --agent` shows only the CLIs.
func completeAgent(withExec bool) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, name := range agent.CLINames() {
			if word, ok := completeWord(name, typed); ok {
				out = append(out, word)
			}
		}
		if word, ok := completeWord(execAgent, typed); ok && withExec {
			out = append(out, cobra.CompletionWithDesc(word, `any program, with --agent-cmd "PROGRAM ARGS"`))
		}
		return out, noFiles
	}
}

// completeFlags gives the flags that mean the same on every command their
// values, on every command of the tree under root that has them and no
// completion of its own yet: it runs once the tree is built, so a command
// added later gets them without a line of its own.
func completeFlags(f *Factory, root *cobra.Command) {
	register(root, dirFlag, func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	})
	walkCommands(root, func(c *cobra.Command) {
		register(c, agentFlag, completeAgent(c.Flags().Lookup(agentCmdFlag) != nil))
		register(c, permissionFlag, completePermission)
		// A task to work on: one not done (ralph run --task, ralph chat's
		// runs); a command that takes any task registers its own first.
		completeItemFlag(f, c, taskFlag, mdstate.TasksKind, notStatus(mdstate.Done))
		completeItemFlag(f, c, afterFlag, mdstate.TasksKind, anyItem)
	})
}

// register sets fn as the completion of cmd's flag name, unless cmd has
// no such flag or the flag has a completion already.
func register(cmd *cobra.Command, name string, fn cobra.CompletionFunc) {
	if cmd.Flag(name) == nil {
		return
	}
	if _, ok := cmd.GetFlagCompletionFunc(name); ok {
		return
	}
	// It cannot fail: the flag exists and has no completion.
	_ = cmd.RegisterFlagCompletionFunc(name, fn)
}

// walkCommands calls fn for cmd and every command under it.
func walkCommands(cmd *cobra.Command, fn func(*cobra.Command)) {
	fn(cmd)
	for _, c := range cmd.Commands() {
		walkCommands(c, fn)
	}
}
