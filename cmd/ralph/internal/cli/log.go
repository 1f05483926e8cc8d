package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/mdstate"
)

// LogEntryJSON is one entry in `ralph log --json`: the entry as every
// --json output gives it (EntryJSON), and the text under its heading that
// is not a field (a person's notes).
type LogEntryJSON struct {
	*EntryJSON
	Body *string `json:"body"`
}

// NewCmdLog builds `ralph log`.
func NewCmdLog(f *Factory) *cobra.Command {
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "log [TASK]",
		Short: "Show the last entries of the progress log",
		Long: `Show the last entries of RALPH_PROGRESS.md, oldest first: every iteration,
one-shot, chat turn and session summary ralph wrote, and the entries people
added. With a task ID, only the entries about that task.

It reads the log from its end, so it is quick on a log of any size.

--json prints a list of entries, oldest first, each as 'ralph status
--json' gives the last one: time, title, line, its numbers typed
(iteration, duration_ms, tokens_in, tokens_out, cost_usd; null when it has
none or they are unknown), its fields as an object of key to text (a list
of texts for a field with nested items), and body, the text under its
heading that is not a field (null when none).`,
		Example: `  ralph log
  ralph log T3
  ralph log --limit 50 --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return usagef("--limit must be 1 or more, not %d", limit)
			}
			p, _ := f.Project()
			scan := limit
			id := ""
			if len(args) == 1 {
				id = strings.ToUpper(args[0])
				scan = max(limit, 500) // a task's entries are among many
			}
			lg, err := p.ReadProgress(scan)
			if err != nil {
				if isNotExist(err) {
					return &mdstate.MissingError{File: mdstate.ProgressFile, Root: p.Root}
				}
				return err
			}
			entries := pickEntries(lg.Recent, id, limit)
			if asJSON {
				return writeJSON(f.IO.Out, logJSON(entries))
			}
			if len(entries) == 0 {
				if id != "" {
					fmt.Fprintf(f.IO.ErrOut, "no entry about %s in the last %d of %s\n", id, scan, mdstate.ProgressFile)
				} else {
					fmt.Fprintf(f.IO.ErrOut, "%s has no entry yet\n", mdstate.ProgressFile)
				}
				return nil
			}
			for i, e := range entries {
				if i > 0 {
					fmt.Fprintln(f.IO.Out)
				}
				fmt.Fprint(f.IO.Out, string(e.Render("\n")))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the entries as JSON")
	cmd.Flags().IntVarP(&limit, "limit", "n", 10, "show at most `N` entries")
	cmd.ValidArgsFunction = completeItemArg(f, mdstate.TasksKind, anyItem)
	return cmd
}

// pickEntries keeps the last limit entries, those about task id when id
// is set.
func pickEntries(all []mdstate.Entry, id string, limit int) []mdstate.Entry {
	var out []mdstate.Entry
	for _, e := range all {
		if id == "" || coordinator.EntryIsAbout(e, id) {
			out = append(out, e)
		}
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// logJSON is entries as `ralph log --json` prints them.
func logJSON(entries []mdstate.Entry) []LogEntryJSON {
	out := []LogEntryJSON{}
	for _, e := range entries {
		j := LogEntryJSON{EntryJSON: entryJSON(e)}
		if b := strings.TrimSpace(e.Body); b != "" {
			j.Body = &b
		}
		out = append(out, j)
	}
	return out
}
