package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/coordinator/registry"
	"github.com/ralph-dev/ralph/mdstate"
)

// SessionsOptions are `ralph sessions`' flags.
type SessionsOptions struct {
	All   bool // every project on this machine, not this one's sessions
	Prune bool // with All: drop the projects that are gone from the list
	JSON  bool
}

// SessionsJSON is `ralph sessions --all --json`.
type SessionsJSON struct {
	Registry string               `json:"registry"` // the file the list comes from
	Projects []ProjectSessionJSON `json:"projects"` // latest activity first
	Pruned   []string             `json:"pruned"`   // folders --prune dropped; [] without it
}

// ProjectSessionJSON is one project of `ralph sessions --all --json`. A
// value that is not known is null.
type ProjectSessionJSON struct {
	Root string `json:"root"`
	// Status is running, paused, interrupted or ended (the session's, as
	// `ralph status` reports it), or gone; null when the project records
	// no session or its files could not be read (see Error).
	Status  *string      `json:"status"`
	Session *string      `json:"session"` // the session's id
	Task    *TaskRefJSON `json:"task"`    // the task a session that has not ended is on or stopped at
	// LastActivity is the latest of the session's last write, the last
	// progress entry, and ralph's last record of a session there.
	LastActivity *time.Time `json:"last_activity"`
	PID          *int       `json:"pid"`   // the ralph holding the project's lock now
	Error        *string    `json:"error"` // why its state files could not be read
}

// TaskRefJSON names a task; Title is null when the task is no longer in
// RALPH_TASKS.md.
type TaskRefJSON struct {
	ID    string  `json:"id"`
	Title *string `json:"title"`
}

// statusGone is the status of a listed project whose folder, or the
// RALPH_TASKS.md in it, is no longer there (registry.Entry.Gone).
const statusGone mdstate.SessionStatus = "gone"

// listReport is what `ralph sessions` and `ralph resume --list` read of
// this project: the recorded session and the ended ones in the last 200
// progress entries.
var listReport = coordinator.ReportOptions{NoDetect: true, NoStatus: true, Progress: 200, Commits: 1}

// overviewReport is what `ralph sessions --all` reads of each project.
var overviewReport = coordinator.ReportOptions{NoDetect: true, NoStatus: true, Progress: 1, Commits: 1}

// overviewWorkers bounds the projects read at once: each read opens a
// repository, and the machine may be small.
const overviewWorkers = 4

// NewCmdSessions builds `ralph sessions`.
func NewCmdSessions(f *Factory) *cobra.Command {
	var o SessionsOptions
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List this project's sessions, or every project where ralph ran",
		Long: `Without --all: this project's sessions, as 'ralph resume --list' shows them:
the one recorded in RALPH_TASKS.md (with its status as 'ralph status'
reports it: a session that says running while no ralph holds the project
is interrupted) and the ended ones from the progress log.

With --all: every project on this machine where a ralph session started,
latest activity first, with its status (running, paused, interrupted,
ended, or gone when its folder or RALPH_TASKS.md is no longer there), the
task a session that has not ended is on or stopped at, and its last
activity. A project that moved or was deleted stays listed as gone until
--prune drops it; at its new place, its next session lists it again.

The list of projects is kept in projects.json in $XDG_STATE_HOME/ralph
(by default ~/.local/state/ralph), written when a session starts and when
it ends. It only says where to look: what is shown is read from each
project's own files at that moment. It is not one of the state files, and
deleting it loses nothing.

--json prints, with --all, an object:
  registry       the list's file
  projects       latest activity first, each with:
    root           the project's folder
    status         "running", "paused", "interrupted", "ended", "gone"
    session        the session's id
    task           {"id", "title"} of the task a session that has not
                   ended is on (title null when it is no longer listed)
    last_activity  the latest of the session's last write, the last
                   progress entry and ralph's last record of a session
    pid            the ralph that holds the project now
    error          why its state files could not be read
  pruned         the folders --prune dropped
and without --all the object of 'ralph resume --list --json'. null means
unknown or none; fields are added over time, never renamed.`,
		Example: "  ralph sessions\n  ralph sessions --all\n  ralph sessions --all --prune\n  ralph sessions --all --json | jq '.projects[] | select(.status == \"running\")'",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if o.Prune && !o.All {
				return usagef("--prune works with --all: ralph sessions --all --prune")
			}
			if o.All {
				return allSessions(c.Context(), f, o)
			}
			return projectSessions(c.Context(), f, o.JSON)
		},
	}
	cmd.Flags().BoolVar(&o.All, "all", false, "every project on this machine where ralph ran a session")
	cmd.Flags().BoolVar(&o.Prune, "prune", false, "with --all: drop the projects that are gone from the list")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON for scripts")
	return cmd
}

// registry is the machine's list of projects; nil without a state folder.
func (f *Factory) registry() *registry.Registry { return registry.Open(f.Env.StateDir) }

// projectSessions is `ralph sessions` without --all: the same list as
// `ralph resume --list`.
func projectSessions(ctx context.Context, f *Factory, asJSON bool) error {
	p, _ := f.Project()
	r, err := coordinator.BuildReport(ctx, p.Root, listReport)
	if err != nil {
		return err
	}
	return listSessions(f, r, asJSON)
}

// allSessions is `ralph sessions --all`.
func allSessions(ctx context.Context, f *Factory, o SessionsOptions) error {
	reg := f.registry()
	if reg == nil {
		return errors.New("no folder to keep the list of projects in: set HOME, or XDG_STATE_HOME")
	}
	var pruned []registry.Entry
	if o.Prune {
		var err error
		if pruned, err = reg.Prune(); err != nil {
			return err
		}
	}
	entries, err := reg.Entries()
	if err != nil {
		return err
	}
	list := readProjects(ctx, entries)
	if o.JSON {
		return writeJSON(f.IO.Out, sessionsJSON(reg.Path(), list, pruned))
	}
	printProjects(f, list)
	tellProjects(f, list, pruned)
	return nil
}

// projectSession is where one listed project stands.
type projectSession struct {
	root      string
	status    mdstate.SessionStatus // "": no session recorded, or unreadable
	session   string
	taskID    string
	taskTitle string // "": the task is no longer in RALPH_TASKS.md
	last      time.Time
	pid       int // the lock holder's; 0: none
	err       error
}

// readProjects reads where each project stands, a few at a time, latest
// activity first.
func readProjects(ctx context.Context, entries []registry.Entry) []projectSession {
	out := make([]projectSession, len(entries))
	sem := make(chan struct{}, overviewWorkers)
	var wg sync.WaitGroup
	for i, e := range entries {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = readProject(ctx, e)
		})
	}
	wg.Wait()
	slices.SortStableFunc(out, func(a, b projectSession) int {
		if c := b.last.Compare(a.last); c != 0 {
			return c
		}
		return cmp.Compare(a.root, b.root)
	})
	return out
}

// readProject reads one project's session from its own files, through
// the same report as `ralph status`. The registry's record only says when
// ralph last saw a session there, and which, for a project that is gone.
func readProject(ctx context.Context, e registry.Entry) projectSession {
	ps := projectSession{root: e.Root, last: e.Seen}
	if e.Gone() {
		ps.status, ps.session = statusGone, e.Session
		return ps
	}
	r, err := coordinator.BuildReport(ctx, e.Root, overviewReport)
	if err != nil {
		ps.err = err
		return ps
	}
	if r.Holder != nil {
		ps.pid = r.Holder.PID
	}
	if lg := r.State.Progress; lg != nil && len(lg.Recent) > 0 {
		ps.last = latestOf(ps.last, lg.Recent[len(lg.Recent)-1].Time)
	}
	s := r.Session
	if s == nil {
		return ps
	}
	ps.status, ps.session, ps.last = s.Status, s.ID, latestOf(ps.last, s.Updated)
	// An ended session's task line names the last task it ran: history,
	// not where the project stands.
	if s.Task != "" && s.Status != mdstate.SessionEnded {
		ps.taskID = s.Task
		if t := r.State.Tasks.Find(s.Task); t != nil {
			ps.taskTitle = t.Title
		}
	}
	return ps
}

func latestOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func sessionsJSON(path string, list []projectSession, pruned []registry.Entry) SessionsJSON {
	out := SessionsJSON{Registry: path, Projects: []ProjectSessionJSON{}, Pruned: []string{}}
	for _, e := range pruned {
		out.Pruned = append(out.Pruned, e.Root)
	}
	for _, ps := range list {
		out.Projects = append(out.Projects, ps.json())
	}
	return out
}

func (ps projectSession) json() ProjectSessionJSON {
	j := ProjectSessionJSON{Root: ps.root, Status: nullIfEmpty(string(ps.status)), Session: nullIfEmpty(ps.session)}
	if ps.taskID != "" {
		j.Task = &TaskRefJSON{ID: ps.taskID, Title: nullIfEmpty(ps.taskTitle)}
	}
	if !ps.last.IsZero() {
		t := ps.last
		j.LastActivity = &t
	}
	if ps.pid != 0 {
		pid := ps.pid
		j.PID = &pid
	}
	if ps.err != nil {
		j.Error = nullIfEmpty(ps.err.Error())
	}
	return j
}

// nullIfEmpty is s, or nil (JSON null) when it is "".
func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// printProjects prints the list as a table on Out; an unknown value is "-".
func printProjects(f *Factory, list []projectSession) {
	if len(list) == 0 {
		return
	}
	w := tabwriter.NewWriter(f.IO.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "PROJECT\tSTATUS\tTASK\tLAST ACTIVITY")
	for _, ps := range list {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", shownRoot(ps.root, f.Env.Home), dashIfEmpty(string(ps.status)), ps.task(), ps.lastShown())
	}
	w.Flush()
}

// titleWidth keeps a long task title from stretching the whole table.
const titleWidth = 40

func (ps projectSession) task() string {
	if ps.taskID == "" {
		return "-"
	}
	if ps.taskTitle == "" {
		return ps.taskID
	}
	title := []rune(ps.taskTitle)
	if len(title) > titleWidth {
		title = append(title[:titleWidth-1], '…')
	}
	return ps.taskID + ": " + string(title)
}

func (ps projectSession) lastShown() string {
	if ps.last.IsZero() {
		return "-"
	}
	return ps.last.Local().Format("2006-01-02 15:04")
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// tellProjects says on ErrOut what the table leaves out: why a project
// could not be read, what was pruned, and what to do next.
func tellProjects(f *Factory, list []projectSession, pruned []registry.Entry) {
	w, home := f.IO.ErrOut, f.Env.Home
	for _, e := range pruned {
		fmt.Fprintf(w, "dropped %s from the list: it is gone\n", shownRoot(e.Root, home))
	}
	if len(list) == 0 {
		fmt.Fprintln(w, "no projects listed: ralph lists a project when a session starts in it")
		return
	}
	var gone, resumable int
	for _, ps := range list {
		switch ps.status {
		case statusGone:
			gone++
		case mdstate.SessionPaused, mdstate.SessionInterrupted:
			resumable++
		}
		if ps.err != nil {
			fmt.Fprintf(w, "warning: %s: %v\n", shownRoot(ps.root, home), ps.err)
		}
	}
	switch {
	case gone == 1:
		fmt.Fprintln(w, "1 project was moved or deleted; `ralph sessions --all --prune` drops it from the list.")
	case gone > 1:
		fmt.Fprintf(w, "%d projects were moved or deleted; `ralph sessions --all --prune` drops them from the list.\n", gone)
	}
	if resumable > 0 {
		fmt.Fprintln(w, "`ralph -C FOLDER resume` continues a paused or interrupted session.")
	}
}

// shownRoot writes a folder under the home folder as ~/…, as a person
// would type it.
func shownRoot(root, home string) string {
	if home == "" {
		return root
	}
	if real, err := filepath.EvalSymlinks(home); err == nil {
		home = real // the registry holds folders with symlinks resolved
	}
	rel, err := filepath.Rel(home, root)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return root
	}
	if rel == "." {
		return "~"
	}
	return filepath.Join("~", rel)
}
