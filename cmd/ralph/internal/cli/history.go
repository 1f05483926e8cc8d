package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/gitctx"
	"github.com/ralph-dev/ralph/mdstate"
)

// stateFileArg turns a command-line name into a state file name: the exact
// name in any case, or a short one (tasks, goals, todo, progress, agent).
func stateFileArg(arg string) (string, error) {
	base := filepath.Base(arg)
	for _, name := range mdstate.Files {
		short := strings.TrimSuffix(strings.TrimPrefix(name, "RALPH_"), ".md")
		if strings.EqualFold(base, name) || strings.EqualFold(base, short) {
			return name, nil
		}
	}
	return "", usagef("%q is not a state file; use one of %s (or tasks, goals, todo, progress, agent)", arg, strings.Join(mdstate.Files, ", "))
}

// openRepo opens the project's repository with a message that says why
// the command needs one.
func openRepo(root, what string) (*gitctx.Repo, error) {
	repo, err := gitctx.Open(root)
	switch {
	case errors.Is(err, gitctx.ErrNotRepo):
		return nil, fmt.Errorf("%s needs git history, and %s is not in a git repository", what, root)
	case err != nil:
		return nil, err
	}
	return repo, nil
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
			repo, err := openRepo(p.Root, "ralph history")
			if err != nil {
				return err
			}
			defer repo.Close()
			rel := relToRepo(repo, p.Root)
			var paths []string
			for _, name := range files {
				paths = append(paths, rel+name)
			}
			commits, err := repo.StateCommits(cmd.Context(), paths, limit)
			if err != nil {
				return err
			}
			out := []HistoryJSON{}
			for _, c := range commits {
				h := HistoryJSON{Hash: c.Hash, Time: c.Time, Author: c.Author, Subject: c.Subject, Files: []string{}, Summary: []string{}}
				for _, path := range c.Files {
					if slices.Contains(paths, path) {
						name := strings.TrimPrefix(path, rel)
						h.Files = append(h.Files, name)
						h.Summary = append(h.Summary, summarizeChange(cmd.Context(), repo, c.Hash, path, name))
					}
				}
				out = append(out, h)
			}
			if asJSON {
				return writeJSON(f.IO.Out, out)
			}
			if len(out) == 0 {
				msg := "no commit has changed " + strings.Join(files, ", ") + " yet"
				if slices.ContainsFunc(paths, func(p string) bool { return committedAtHead(cmd.Context(), repo, p) }) {
					// Committed, yet no commit changed it: the history
					// that did is beyond a shallow clone's boundary.
					msg = "the commits that changed " + strings.Join(files, ", ") + " are not in this clone (a shallow clone?); `git fetch --unshallow` brings them"
				}
				fmt.Fprintln(f.IO.ErrOut, msg)
				return nil
			}
			for _, h := range out {
				fmt.Fprintf(f.IO.Out, "%s %s %s\n", h.Hash[:7], h.Time.Local().Format("2006-01-02 15:04"), h.Subject)
				for _, s := range h.Summary {
					fmt.Fprintf(f.IO.Out, "        %s\n", s)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array for scripts")
	cmd.Flags().IntVar(&limit, "limit", 20, "show at most `N` commits")
	return cmd
}

// relToRepo returns the project root relative to the work tree root, with
// a trailing slash ("" when they are the same), for git paths.
func relToRepo(repo *gitctx.Repo, root string) string {
	rel, err := filepath.Rel(repo.Root(), root)
	if err != nil || rel == "." {
		return ""
	}
	return filepath.ToSlash(rel) + "/"
}

// summarizeChange says in one line what a commit changed in a state file.
func summarizeChange(ctx context.Context, repo *gitctx.Repo, hash, path, name string) string {
	after, aerr := repo.FileAt(ctx, hash, path)
	before, berr := repo.FileAt(ctx, hash+"^", path)
	switch {
	case aerr != nil && errors.Is(aerr, fs.ErrNotExist):
		return name + ": deleted"
	case aerr != nil:
		return name + ": " + aerr.Error()
	case berr != nil:
		before = nil // a new file, or the first commit
	}
	var parts []string
	switch name {
	case mdstate.ProgressFile:
		parts = append(parts, countChange(mdstate.CountEntries(after)-mdstate.CountEntries(before), "entry", "entries")...)
	case mdstate.AgentFile:
		a, errA := mdstate.ParseAgent(after)
		b, errB := mdstate.ParseAgent(before)
		if errA != nil {
			return name + ": unreadable at this commit (" + errA.Error() + ")"
		}
		nb := 0
		if errB == nil {
			nb = len(b.Learnings)
		}
		parts = append(parts, countChange(len(a.Learnings)-nb, "learning", "learnings")...)
	default:
		kind := map[string]mdstate.Kind{mdstate.TasksFile: mdstate.TasksKind, mdstate.GoalsFile: mdstate.GoalsKind, mdstate.TodoFile: mdstate.TodoKind}[name]
		a, err := mdstate.ParseChecklist(kind, after)
		if err != nil {
			return name + ": unreadable at this commit (" + err.Error() + ")"
		}
		var b *mdstate.Checklist
		if before != nil {
			b, _ = mdstate.ParseChecklist(kind, before)
		}
		parts = checklistChanges(kind, b, a)
	}
	if before == nil {
		parts = append([]string{"created"}, parts...)
	}
	if len(parts) == 0 {
		return name + ": edited (no change ralph tracks)"
	}
	return name + ": " + strings.Join(parts, "; ")
}

// checklistChanges lists added and removed items and status changes.
func checklistChanges(kind mdstate.Kind, before, after *mdstate.Checklist) []string {
	old := map[string]mdstate.Status{}
	if before != nil {
		for _, it := range before.Items {
			if !it.Provisional {
				old[it.ID] = it.Status
			}
		}
	}
	var added, removed []string
	byStatus := map[mdstate.Status][]string{}
	seen := map[string]bool{}
	for _, it := range after.Items {
		if it.Provisional {
			added = append(added, "“"+it.Title+"”")
			continue
		}
		seen[it.ID] = true
		st, ok := old[it.ID]
		switch {
		case !ok:
			added = append(added, it.ID)
		case st != it.Status:
			byStatus[it.Status] = append(byStatus[it.Status], it.ID)
		}
	}
	for id := range old {
		if !seen[id] {
			removed = append(removed, id)
		}
	}
	slices.Sort(removed)
	var parts []string
	if len(added) > 0 {
		parts = append(parts, fmt.Sprintf("%s added (%s)", plural(len(added), kind.Noun), strings.Join(added, ", ")))
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
		parts = append(parts, fmt.Sprintf("%s removed (%s)", plural(len(removed), kind.Noun), strings.Join(removed, ", ")))
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
			repo, err := openRepo(p.Root, "ralph restore")
			if err != nil {
				return err
			}
			defer repo.Close()
			ctx := cmd.Context()
			path := relToRepo(repo, p.Root) + name
			rev := from
			var label string
			if rev == "" {
				cs, err := repo.StateCommits(ctx, []string{path}, 1)
				if err != nil {
					return err
				}
				switch {
				case len(cs) > 0:
					rev = cs[0].Hash
					label = fmt.Sprintf("%s (%s, %q)", rev[:7], cs[0].Time.Local().Format("2006-01-02"), cs[0].Subject)
				case committedAtHead(ctx, repo, path):
					// A shallow clone: the commit that last changed the
					// file is beyond its boundary, but HEAD has the same
					// version.
					rev, label = "HEAD", "HEAD"
				default:
					return fmt.Errorf("%s has never been committed, so there is no version to restore", name)
				}
			} else {
				label = rev
			}
			data, err := repo.FileAt(ctx, rev, path)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return fmt.Errorf("%s did not exist at %s; see `ralph history %s`", name, rev, name)
			case errors.Is(err, gitctx.ErrUnknownRevision):
				return usagef("--from %q is not a commit in this repository", from)
			case err != nil:
				return err
			}
			target := p.Path(name)
			cur, curErr := os.ReadFile(target)
			mode := fs.FileMode(0o644)
			if fi, err := os.Stat(target); err == nil {
				if fi.IsDir() {
					return fmt.Errorf("%s is a directory; move it out of the way first", name)
				}
				mode = fi.Mode()
			}
			if curErr == nil && string(cur) == string(data) {
				fmt.Fprintf(f.IO.Out, "%s is already as at %s; nothing to do\n", name, label)
				return nil
			}
			if curErr == nil && !force {
				dirty, err := repo.IsDirty(ctx, path)
				if err != nil {
					return err
				}
				if dirty {
					return fmt.Errorf("%s has uncommitted changes that restoring would discard; commit them first, or run again with --force (the current version is kept in %s/backup/ either way)", name, mdstate.RuntimeDir)
				}
			}
			var backup string
			if curErr == nil {
				dir := filepath.Join(p.Root, mdstate.RuntimeDir, "backup")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return fmt.Errorf("create %s: %w", dir, err)
				}
				now := time.Now()
				if !f.Env.Now.IsZero() {
					now = f.Env.Now
				}
				// Two restores in one second must not overwrite the first
				// backup: it may hold the only copy of hand edits.
				backup = filepath.Join(dir, name+"."+now.UTC().Format("20060102T150405Z"))
				for n := 2; ; n++ {
					if _, err := os.Lstat(backup); errors.Is(err, fs.ErrNotExist) {
						break
					}
					backup = filepath.Join(dir, fmt.Sprintf("%s.%s.%d", name, now.UTC().Format("20060102T150405Z"), n))
				}
				if err := mdstate.WriteFileAtomic(backup, cur, 0o644); err != nil {
					return fmt.Errorf("back up %s: %w", name, err)
				}
			}
			if err := mdstate.WriteFileAtomic(target, data, mode); err != nil {
				return fmt.Errorf("write %s: %w", name, err)
			}
			fmt.Fprintf(f.IO.Out, "restored %s from %s\n", name, label)
			if backup != "" {
				rel, _ := filepath.Rel(p.Root, backup)
				fmt.Fprintf(f.IO.Out, "the version it replaced is in %s\n", rel)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "restore the version at `REV` (default: the last commit that changed the file)")
	cmd.Flags().BoolVar(&force, "force", false, "restore even if the file has uncommitted changes")
	return cmd
}

// committedAtHead reports whether path is in HEAD's tree.
func committedAtHead(ctx context.Context, repo *gitctx.Repo, path string) bool {
	_, err := repo.FileAt(ctx, "HEAD", path)
	return err == nil
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
