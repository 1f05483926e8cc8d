package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/gitctx"
	"github.com/ralph-dev/ralph/mdstate"
)

// stateFileArg turns a command-line name into a state file name: the exact
// name in any case, or a short one (tasks, goals, todo, progress, agent).
func stateFileArg(arg string) (string, error) {
	base := filepath.Base(arg)
	for _, name := range mdstate.Files {
		short := stateFileShort(name)
		if strings.EqualFold(base, name) || strings.EqualFold(base, short) {
			return name, nil
		}
	}
	return "", usagef("%q is not a state file; use one of %s (or tasks, goals, todo, progress, agent)", arg, strings.Join(mdstate.Files, ", "))
}

// needsGit turns "not a git repository" into a message that says why the
// command needs one.
func needsGit(err error, root, what string) error {
	if errors.Is(err, gitctx.ErrNotRepo) {
		return fmt.Errorf("%s needs git history, and %s is not in a git repository", what, root)
	}
	return err
}

// HistoryJSON is one commit in `ralph history --json`.
type HistoryJSON struct {
	Hash    string    `json:"hash"`
	Time    time.Time `json:"time"`
	Author  string    `json:"author"`
	Subject string    `json:"subject"`
	Files   []string  `json:"files"`
	Summary []string  `json:"summary"`
}

// NewCmdHistory builds `ralph history`.
func NewCmdHistory(f *Factory) *cobra.Command {
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "history [FILE]",
		Short: "List the commits that changed the state files",
		Long: `List the commits that changed the state files (or one of them), newest
first, each with a one-line summary of what changed: tasks added and
finished, status changes, goals and to-dos added or met, learnings and
progress entries added. 'ralph restore' puts a file back as it was at one of
these commits.`,
		Example: `  ralph history
  ralph history RALPH_TASKS.md --limit 5
  ralph history tasks --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return usagef("--limit must be 1 or more, not %d", limit)
			}
			files := mdstate.Files
			if len(args) == 1 {
				name, err := stateFileArg(args[0])
				if err != nil {
					return err
				}
				files = []string{name}
			}
			p, _ := f.Project()
			h, err := coordinator.StateHistory(cmd.Context(), p, files, limit)
			if err != nil {
				return needsGit(err, p.Root, "ralph history")
			}
			out := []HistoryJSON{}
			for _, c := range h.Commits {
				j := HistoryJSON{Hash: c.Hash, Time: c.Time, Author: c.Author, Subject: c.Subject, Files: []string{}, Summary: []string{}}
				for _, fc := range c.Changes {
					j.Files = append(j.Files, fc.File)
					j.Summary = append(j.Summary, summarizeChange(fc))
				}
				out = append(out, j)
			}
			if asJSON {
				return writeJSON(f.IO.Out, out)
			}
			if len(out) == 0 {
				msg := "no commit has changed " + strings.Join(files, ", ") + " yet"
				if h.Shallow {
					msg = "the commits that changed " + strings.Join(files, ", ") + " are not in this clone (a shallow clone?); `git fetch --unshallow` brings them"
				}
				fmt.Fprintln(f.IO.ErrOut, msg)
				return nil
			}
			for _, j := range out {
				fmt.Fprintf(f.IO.Out, "%s %s %s\n", j.Hash[:7], j.Time.Local().Format("2006-01-02 15:04"), j.Subject)
				for _, s := range j.Summary {
					fmt.Fprintf(f.IO.Out, "        %s\n", s)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array for scripts")
	cmd.Flags().IntVar(&limit, "limit", 20, "show at most `N` commits")
	cmd.ValidArgsFunction = completeStateFile
	return cmd
}

// summarizeChange says in one line what a commit changed in a state file.
func summarizeChange(fc coordinator.FileChange) string {
	switch {
	case fc.Deleted:
		return fc.File + ": deleted"
	case fc.ReadErr != nil:
		return fc.File + ": " + fc.ReadErr.Error()
	case fc.Unreadable != nil:
		return fc.File + ": unreadable at this commit (" + fc.Unreadable.Error() + ")"
	}
	d := fc.Diff
	var parts []string
	if d.Created {
		parts = append(parts, "created")
	}
	parts = append(parts, countChange(d.Entries, "entry", "entries")...)
	parts = append(parts, countChange(d.Learnings, "learning", "learnings")...)
	if kind, ok := mdstate.KindOf(fc.File); ok {
		parts = append(parts, checklistChanges(kind, d.Items)...)
	}
	if len(parts) == 0 {
		return fc.File + ": edited (no change ralph tracks)"
	}
	return fc.File + ": " + strings.Join(parts, "; ")
}

// checklistChanges says "2 tasks added (T3, “Send the invoice”)", "T1
// finished" and "1 task removed (T4)", in that order; new titles are not
// shown.
func checklistChanges(kind mdstate.Kind, changes []mdstate.ItemChange) []string {
	var added, removed []string
	byStatus := map[mdstate.Status][]string{}
	for _, ch := range changes {
		switch ch.Kind {
		case mdstate.ItemAdded:
			if ch.Provisional {
				added = append(added, "“"+ch.Title+"”")
			} else {
				added = append(added, ch.ID)
			}
		case mdstate.ItemRemoved:
			removed = append(removed, ch.ID)
		case mdstate.ItemStatusChanged:
			byStatus[ch.To] = append(byStatus[ch.To], ch.ID)
		}
	}
	var parts []string
	if len(added) > 0 {
		parts = append(parts, fmt.Sprintf("%s added (%s)", countOf(len(added), kind.Noun), strings.Join(added, ", ")))
	}
	words := map[mdstate.Status]string{mdstate.Done: "done", mdstate.InProgress: "started", mdstate.Blocked: "blocked", mdstate.Skipped: "skipped", mdstate.Pending: "reopened"}
	if kind == mdstate.TasksKind {
		words[mdstate.Done] = "finished"
	}
	for _, st := range mdstate.Statuses {
		if ids := byStatus[st]; len(ids) > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", strings.Join(ids, ", "), words[st]))
		}
	}
	if len(removed) > 0 {
		parts = append(parts, fmt.Sprintf("%s removed (%s)", countOf(len(removed), kind.Noun), strings.Join(removed, ", ")))
	}
	return parts
}

// NewCmdRestore builds `ralph restore`.
func NewCmdRestore(f *Factory) *cobra.Command {
	var from string
	var force bool
	cmd := &cobra.Command{
		Use:   "restore FILE",
		Short: "Put a state file back as it was at a commit",
		Long: `Put a state file back as it was at a commit: by default the last commit
that changed it, or the one given with --from (a hash, branch, tag, HEAD~3).
This is the answer to a corrupted or badly edited state file.

The current version is kept as .ralph/backup/FILE.<time> first. If the file
has uncommitted changes, restore refuses unless you pass --force, so that
hand edits are never thrown away by accident. 'ralph history FILE' lists the
commits to choose from.`,
		Example: `  ralph restore RALPH_TASKS.md
  ralph restore tasks --from HEAD~2
  ralph restore RALPH_PROGRESS.md --from 3f9c2e1 --force`,
		Args: exactArgs(1, "the state file to restore, like RALPH_TASKS.md"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := stateFileArg(args[0])
			if err != nil {
				return err
			}
			p, _ := f.Project()
			res, err := coordinator.Restore(cmd.Context(), p, coordinator.RestoreOptions{File: name, From: from, Force: force, Now: f.Env.Now})
			switch {
			case errors.Is(err, gitctx.ErrUnknownRevision):
				return usagef("--from %q is not a commit in this repository", from)
			case errors.Is(err, coordinator.ErrUncommitted):
				return fmt.Errorf("%s has uncommitted changes that restoring would discard; commit them first, or run again with --force (the current version is kept in %s either way)", name, filepath.ToSlash(mdstate.BackupDir)+"/")
			case err != nil:
				return needsGit(err, p.Root, "ralph restore")
			}
			label := res.Rev
			if c := res.Commit; c != nil {
				label = fmt.Sprintf("%s (%s, %q)", c.Hash[:7], c.Time.Local().Format("2006-01-02"), c.Subject)
			}
			if res.Unchanged {
				fmt.Fprintf(f.IO.Out, "%s is already as at %s; nothing to do\n", name, label)
				return nil
			}
			fmt.Fprintf(f.IO.Out, "restored %s from %s\n", name, label)
			if res.Backup != "" {
				rel, _ := filepath.Rel(p.Root, res.Backup)
				fmt.Fprintf(f.IO.Out, "the version it replaced is in %s\n", rel)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "restore the version at `REV` (default: the last commit that changed the file)")
	cmd.Flags().BoolVar(&force, "force", false, "restore even if the file has uncommitted changes")
	cmd.ValidArgsFunction = completeStateFile
	return cmd
}

// countChange says "3 entries added" or "1 learning removed".
func countChange(n int, one, many string) []string {
	word := many
	if n == 1 || n == -1 {
		word = one
	}
	switch {
	case n > 0:
		return []string{fmt.Sprintf("%d %s added", n, word)}
	case n < 0:
		return []string{fmt.Sprintf("%d %s removed", -n, word)}
	}
	return nil
}
