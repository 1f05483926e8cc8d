package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/mdstate"
)

// TaskJSON is one task in `ralph task list --json`.
type TaskJSON struct {
	ID       string   `json:"id"`
	Title    string   `json:"title"`
	Status   string   `json:"status"`
	Priority *int     `json:"priority"`
	After    []string `json:"after"`
	Attempts int      `json:"attempts"`
	Notes    []string `json:"notes"`
}

// ItemJSON is one goal or to-do in `ralph goal|todo list --json`, its
// status in the words of the text list (open, done, dropped).
type ItemJSON struct {
	ID       string     `json:"id"`
	Title    string     `json:"title"`
	Status   ItemStatus `json:"status"`
	Notes    []string   `json:"notes"`
	Promoted *string    `json:"promoted"` // the task a to-do became
}

func taskJSON(it *mdstate.Item) TaskJSON {
	j := TaskJSON{ID: it.ID, Title: it.Title, Status: string(it.Status), After: it.After, Attempts: it.Attempts, Notes: it.Notes}
	if it.Priority > 0 {
		p := it.Priority
		j.Priority = &p
	}
	if j.After == nil {
		j.After = []string{}
	}
	if j.Notes == nil {
		j.Notes = []string{}
	}
	return j
}

func itemJSON(it *mdstate.Item) ItemJSON {
	j := ItemJSON{ID: it.ID, Title: it.Title, Status: itemStatus(it.Status), Notes: it.Notes}
	if j.Notes == nil {
		j.Notes = []string{}
	}
	if it.Promoted != "" {
		p := it.Promoted
		j.Promoted = &p
	}
	return j
}

// load reads one checklist, turning a missing file into advice.
func load(f *Factory, kind mdstate.Kind) (*mdstate.Checklist, *mdstate.Project, error) {
	p, _ := f.Project()
	c, err := p.LoadChecklist(kind)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, p, &mdstate.MissingError{File: kind.File, Root: p.Root}
	}
	if err != nil {
		return nil, p, err
	}
	f.warn(c.Warnings)
	return c, p, nil
}

// update changes one checklist and prints its warnings once.
func update(f *Factory, kind mdstate.Kind, fn func(e *mdstate.ChecklistEdit) error) (*mdstate.Checklist, error) {
	p, _ := f.Project()
	c, err := p.UpdateChecklist(kind, fn)
	if c != nil {
		f.warn(c.Warnings)
	}
	return c, err
}

func statusWord(s mdstate.Status) string {
	return strings.ReplaceAll(string(s), "_", " ")
}

// newCmdSetStatus builds `ralph task done|block|skip|reopen ID` and friends.
func newCmdSetStatus(f *Factory, kind mdstate.Kind, verb string, to mdstate.Status, short string) *cobra.Command {
	var note string
	cmd := &cobra.Command{
		Use:   verb + " ID",
		Short: short,
		Args:  exactArgs(1, "one "+kind.Noun+" ID, like "+kind.Prefix+"3"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := strings.ToUpper(args[0])
			var was mdstate.Status
			var title string
			var reset bool
			var dup *mdstate.DuplicateError
			_, err := update(f, kind, func(e *mdstate.ChecklistEdit) error {
				it := e.Checklist().Find(id)
				if it == nil {
					return e.NotFound(id)
				}
				was, title, dup = it.Status, it.Title, nil
				if err := e.SetStatus(id, to); err != nil {
					return err
				}
				var err error
				if reset, err = afterStatus(e, kind, verb, it); err != nil {
					return err
				}
				return addNote(e, id, note, &dup)
			})
			if err != nil {
				return err
			}
			if was == to && (note == "" || dup != nil) && !reset {
				fmt.Fprintf(f.IO.Out, "%s is already %s: %s\n", id, statusWord(to), title)
			} else {
				fmt.Fprintf(f.IO.Out, "%s %s: %s\n", id, statusWord(to), title)
			}
			if reset {
				fmt.Fprintf(f.IO.Out, "its failed attempts start again from 0 (--max-attempts)\n")
			}
			if dup != nil {
				fmt.Fprintf(f.IO.Out, "%s: %s\n", dup, dup.Text)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "add `TEXT` as a note to the "+kind.Noun+" (why, what is left)")
	cmd.ValidArgsFunction = completeItemArg(f, kind, notStatus(to))
	return cmd
}

// afterStatus has e do what goes with a task's new status, as the loop
// does it. Done: ralph's failure notes and the attempts line go, as when
// the agent completes it (coordinator.ClearFailures). Reopened: the failed
// attempts start from 0, or the next failure would skip it again at once,
// and the notes lose the words saying ralph gave up on it; their reasons
// stay. It reports whether a reopened task was reset so.
func afterStatus(e *mdstate.ChecklistEdit, kind mdstate.Kind, verb string, it *mdstate.Item) (bool, error) {
	if kind != mdstate.TasksKind {
		return false, nil
	}
	switch verb {
	case "done":
		return false, coordinator.ClearFailures(e, it.ID)
	case "reopen":
		if it.Attempts > 0 {
			if err := e.SetMeta(it.ID, "attempts", "0"); err != nil {
				return false, err
			}
		}
		cleared, err := coordinator.ClearGaveUp(e, it.ID)
		return cleared || it.Attempts > 0, err
	}
	return false, nil
}

// addNote has e add a person's note under item id, unless it has one
// that says the same already: then *dup names it, and the status change
// is still written.
func addNote(e *mdstate.ChecklistEdit, id, note string, dup **mdstate.DuplicateError) error {
	if note == "" {
		return nil
	}
	err := e.AddNoteOnce(id, note)
	if errors.As(err, dup) {
		return nil
	}
	return err
}

// NewCmdTask builds `ralph task`.
func NewCmdTask(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "task",
		Short: "Add, list and change tasks in RALPH_TASKS.md",
		Long: `Tasks live in RALPH_TASKS.md as checkboxes, one task each:

  - [ ] T4: Write the docs
    - priority: 1
    - after: T2, T3

ralph runs pending tasks whose dependencies are done: priority 1 first, then
2 and so on, then tasks without a priority, in file order. You can edit the
file by hand at any time; these commands make the same edits.`,
	}
	group(cmd)
	cmd.AddCommand(
		newCmdTaskAdd(f),
		newCmdTaskList(f),
		newCmdSetStatus(f, mdstate.TasksKind, "done", mdstate.Done, "Mark a task done"),
		newCmdSetStatus(f, mdstate.TasksKind, "block", mdstate.Blocked, "Mark a task blocked (say why with --note)"),
		newCmdSetStatus(f, mdstate.TasksKind, "skip", mdstate.Skipped, "Mark a task skipped: ralph will not run it"),
		newCmdSetStatus(f, mdstate.TasksKind, "reopen", mdstate.Pending, "Make a task pending again, its failed attempts back to 0"),
	)
	return cmd
}

func newCmdTaskAdd(f *Factory) *cobra.Command {
	var priority int
	var after []string
	var note string
	cmd := &cobra.Command{
		Use:   "add TITLE",
		Short: "Add a task at the end of the task list",
		Example: `  ralph task add "Write the docs"
  ralph task add Fix the login bug --priority 1
  ralph task add "Release v2" --after T3 --after T4 --note "tag from main"`,
		Args: minArgs(1, "a title, like \"Write the docs\""),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("priority") && priority < 1 {
				return usagef("--priority must be 1 or more (1 runs first), not %d", priority)
			}
			title := strings.Join(args, " ")
			var id string
			_, err := update(f, mdstate.TasksKind, func(e *mdstate.ChecklistEdit) error {
				var meta []mdstate.MetaKV
				if priority > 0 {
					meta = append(meta, mdstate.MetaKV{Key: "priority", Value: strconv.Itoa(priority)})
				}
				var deps []string
				for _, a := range after {
					for _, ref := range strings.FieldsFunc(a, func(r rune) bool { return r == ',' || r == ' ' }) {
						ref = strings.ToUpper(ref)
						if e.Checklist().Find(ref) == nil {
							return e.NotFound(ref)
						}
						deps = append(deps, ref)
					}
				}
				if len(deps) > 0 {
					meta = append(meta, mdstate.MetaKV{Key: "after", Value: strings.Join(deps, ", ")})
				}
				if note != "" {
					meta = append(meta, mdstate.MetaKV{Key: "note", Value: note})
				}
				var err error
				id, err = e.Add(title, meta...)
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.Out, "added %s: %s\n", id, strings.Join(strings.Fields(title), " "))
			return nil
		},
	}
	cmd.Flags().IntVar(&priority, "priority", 0, "run before other tasks: `N`=1 runs first")
	cmd.Flags().StringArrayVar(&after, "after", nil, "wait until task `ID` is done (repeatable)")
	cmd.Flags().StringVar(&note, "note", "", "add `TEXT` as a note for the agent that does the task")
	return cmd
}

func newCmdTaskList(f *Factory) *cobra.Command {
	var asJSON bool
	var status string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List tasks in file order",
		Example: `  ralph task list
  ralph task list --status pending --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var want mdstate.Status
			if status != "" {
				st, ok := mdstate.ParseStatus(status)
				if !ok {
					return usagef("--status must be one of pending, in_progress, done, blocked, skipped; not %q", status)
				}
				want = st
			}
			c, _, err := load(f, mdstate.TasksKind)
			if err != nil {
				return err
			}
			var items []*mdstate.Item
			for _, it := range c.All() {
				if want == "" || it.Status == want {
					items = append(items, it)
				}
			}
			if asJSON {
				out := []TaskJSON{}
				for _, it := range items {
					out = append(out, taskJSON(it))
				}
				return writeJSON(f.IO.Out, out)
			}
			if len(items) == 0 {
				fmt.Fprintln(f.IO.ErrOut, "no tasks"+map[bool]string{true: " " + statusWord(want), false: ""}[want != ""])
				return nil
			}
			for _, it := range items {
				var extra []string
				if it.Priority > 0 {
					extra = append(extra, "priority "+strconv.Itoa(it.Priority))
				}
				if len(it.After) > 0 {
					extra = append(extra, "after "+strings.Join(it.After, ", "))
				}
				if it.Attempts > 0 {
					extra = append(extra, countOf(it.Attempts, "attempt"))
				}
				line := fmt.Sprintf("%-5s %-11s %s%s", it.ID, statusWord(it.Status), strings.Repeat("  ", it.Depth), it.Title)
				if len(extra) > 0 {
					line += "  (" + strings.Join(extra, " · ") + ")"
				}
				fmt.Fprintln(f.IO.Out, line)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array for scripts")
	cmd.Flags().StringVar(&status, "status", "", "only tasks with status `S` (pending, in_progress, done, blocked, skipped)")
	return cmd
}

// newCmdItemAdd builds `ralph goal add` and `ralph todo add`.
func newCmdItemAdd(f *Factory, kind mdstate.Kind, example string) *cobra.Command {
	return &cobra.Command{
		Use:     "add TEXT",
		Short:   "Add a " + kind.Noun + " to " + kind.File,
		Example: example,
		Args:    minArgs(1, "some text, like "+strings.Split(example, "add ")[1]),
		RunE: func(cmd *cobra.Command, args []string) error {
			var id string
			_, err := update(f, kind, func(e *mdstate.ChecklistEdit) error {
				var err error
				if kind == mdstate.TodoKind {
					id, err = e.AddOnce(strings.Join(args, " "))
					return err
				}
				id, err = e.Add(strings.Join(args, " "))
				return err
			})
			if dup := (*mdstate.DuplicateError)(nil); errors.As(err, &dup) {
				fmt.Fprintf(f.IO.Out, "%s: %s\n", dup, dup.Text)
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.Out, "added %s: %s\n", id, strings.Join(strings.Fields(strings.Join(args, " ")), " "))
			return nil
		},
	}
}

// newCmdItemList builds `ralph goal list` and `ralph todo list`.
func newCmdItemList(f *Factory, kind mdstate.Kind) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List " + kind.Noun + "s in file order",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := load(f, kind)
			if err != nil {
				return err
			}
			if asJSON {
				out := []ItemJSON{}
				for _, it := range c.All() {
					out = append(out, itemJSON(it))
				}
				return writeJSON(f.IO.Out, out)
			}
			if c.Len() == 0 {
				fmt.Fprintf(f.IO.ErrOut, "no %ss\n", kind.Noun)
			}
			for _, it := range c.All() {
				line := fmt.Sprintf("%-5s %-7s %s", it.ID, itemStatus(it.Status), it.Title)
				if it.Promoted != "" {
					line += "  (→ " + it.Promoted + ")"
				}
				fmt.Fprintln(f.IO.Out, line)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array for scripts")
	return cmd
}

// NewCmdGoal builds `ralph goal`.
func NewCmdGoal(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "goal",
		Short: "Add, list and finish goals in RALPH_GOALS.md",
		Long: `Goals live in RALPH_GOALS.md as checkboxes: "- [ ] G1: Ship a first release".
Every agent ralph starts is told the open goals.`,
	}
	group(cmd)
	cmd.AddCommand(
		newCmdItemAdd(f, mdstate.GoalsKind, `  ralph goal add "Ship a first release"`),
		newCmdSetStatus(f, mdstate.GoalsKind, "done", mdstate.Done, "Mark a goal met"),
		newCmdItemList(f, mdstate.GoalsKind),
	)
	return cmd
}

// NewCmdTodo builds `ralph todo`.
func NewCmdTodo(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "todo",
		Short: "Add, list, finish and promote to-dos in RALPH_TODO.md",
		Long: `To-dos are things to do later and next steps, kept in RALPH_TODO.md as
checkboxes: "- [ ] D1: Check the error messages". Agents report new ones as
they work. 'ralph todo promote D1' turns a to-do into a task.`,
	}
	group(cmd)
	cmd.AddCommand(
		newCmdItemAdd(f, mdstate.TodoKind, `  ralph todo add "Check the error messages"`),
		newCmdSetStatus(f, mdstate.TodoKind, "done", mdstate.Done, "Mark a to-do done"),
		newCmdTodoPromote(f),
		newCmdItemList(f, mdstate.TodoKind),
	)
	return cmd
}

func newCmdTodoPromote(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "promote ID",
		Short: "Turn a to-do into a task",
		Long: `Add a task with the to-do's text to RALPH_TASKS.md (marked "from: D3"), then
tick the to-do and mark it "promoted: T7". Running it again after an
interruption finishes the job without adding a second task.`,
		Example: "  ralph todo promote D3",
		Args:    exactArgs(1, "one to-do ID, like D3"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, _ := f.Project()
			res, err := p.Promote(args[0])
			f.warn(res.Warnings)
			switch {
			case err != nil:
				return err
			case res.Already:
				fmt.Fprintf(f.IO.Out, "%s was already promoted to %s\n", res.TodoID, res.TaskID)
			default:
				fmt.Fprintf(f.IO.Out, "promoted %s to %s: %s\n", res.TodoID, res.TaskID, res.Title)
			}
			return nil
		},
		ValidArgsFunction: completeItemArg(f, mdstate.TodoKind, promotable),
	}
}

// NewCmdLearn builds `ralph learn`.
func NewCmdLearn(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "learn TEXT",
		Short: "Add a learning to AGENT.md",
		Long: `Add one learning (how to build, what to avoid, a convention) as a bullet
under the "Learnings" heading of AGENT.md, creating the heading if needed
(the file itself comes from ` + "`ralph init`" + `). Every agent ralph starts reads
AGENT.md first.`,
		Example: `  ralph learn "Run the tests with -race; the cache hides data races"`,
		Args:    minArgs(1, "the text to learn, like \"Tests need Docker running\""),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, _ := f.Project()
			text := strings.Join(args, " ")
			err := p.Learn(text)
			if dup := (*mdstate.DuplicateError)(nil); errors.As(err, &dup) {
				fmt.Fprintf(f.IO.Out, "%s: %s\n", dup, dup.Text)
				return nil
			}
			if err != nil {
				return err
			}
			a, err := p.LoadAgent()
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.Out, "learned (%s in AGENT.md): %s\n", countOf(len(a.Learnings), "learning"), strings.TrimSpace(text))
			return nil
		},
	}
}
