package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/mdstate"
)

// StatusJSON is `ralph status --json`: a stable contract. Later versions
// add fields; none is ever renamed or removed. It speaks the vocabulary of
// json.go: the text's words, null for what is unknown or empty.
type StatusJSON struct {
	Root      string                      `json:"root"`
	Files     map[string]mdstate.FileInfo `json:"files"`
	Goals     OpenDone                    `json:"goals"`
	Tasks     TaskCounts                  `json:"tasks"`
	Todos     OpenDone                    `json:"todos"`
	Learnings int                         `json:"learnings"`
	Progress  ProgressJSON                `json:"progress"`
	Session   *SessionJSON                `json:"session"`
	// Queued are the messages waiting for the next agent (RALPH_TASKS.md's
	// Guidance list).
	Queued   []mdstate.Guidance `json:"queued"`
	Warnings []mdstate.Warning  `json:"warnings"`
	Project  *ProjectJSON       `json:"project"`
	Git      *GitJSON           `json:"git"`
}

// OpenDone counts goals or to-dos by ItemStatus.
type OpenDone struct {
	Open    int `json:"open"`
	Done    int `json:"done"`
	Dropped int `json:"dropped"`
}

// TaskCounts counts tasks by status.
type TaskCounts struct {
	Total      int     `json:"total"`
	Pending    int     `json:"pending"`
	InProgress int     `json:"in_progress"`
	Done       int     `json:"done"`
	Blocked    int     `json:"blocked"`
	Skipped    int     `json:"skipped"`
	Next       *string `json:"next"`
}

// ProgressJSON summarises the progress log.
type ProgressJSON struct {
	Entries int        `json:"entries"`
	Last    *EntryJSON `json:"last"`
}

// NewCmdStatus builds `ralph status`.
func NewCmdStatus(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show where the project stands",
		Long: `Show a summary of the five state files: goals, tasks by status and the
task ralph would run next, to-dos, learnings and the last progress entry.
Problems ralph worked around (a malformed line, an unknown dependency) are
listed as warnings with file and line.

--json prints a stable object for scripts; fields are added over time,
never renamed.`,
		Example: "  ralph status\n  ralph status --json | jq .tasks.next",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, _ := f.Project()
			r, err := coordinator.BuildReport(cmd.Context(), p.Root, coordinator.ReportOptions{Progress: 1, NoHistory: true, Git: f.Env.Git, StatusCache: f.statusCache(p.Root)})
			if err != nil {
				return err
			}
			out := statusJSON(r.State)
			out.Session = reportSessionJSON(r)
			out.Project = projectJSON(r.Project)
			out.Git = gitJSON(r.Git, false)
			if asJSON {
				return writeJSON(f.IO.Out, out)
			}
			printStatus(f, r, out)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return cmd
}

// reportSessionJSON is the report's session with, while a coordinator
// runs it, that coordinator's pid: the session block does not keep it
// (docs/state-format.md), the lock's holder does.
func reportSessionJSON(r *coordinator.Report) *SessionJSON {
	j := sessionJSON(r.Session)
	if j != nil && r.Holder != nil && r.Holder.PID > 0 && r.Session.Status == mdstate.SessionRunning {
		pid := r.Holder.PID
		j.PID = &pid
	}
	return j
}

func statusJSON(st *mdstate.State) StatusJSON {
	out := StatusJSON{Root: st.Root, Files: st.Files, Warnings: sortWarnings(st.Warnings)}
	if out.Warnings == nil {
		out.Warnings = []mdstate.Warning{}
	}
	out.Goals = openDone(st.Goals)
	out.Todos = openDone(st.Todos)
	out.Queued = []mdstate.Guidance{}
	if st.Tasks != nil {
		if q := st.Tasks.Guidance(); q != nil {
			out.Queued = q
		}
		c := st.Tasks.Counts()
		out.Tasks = TaskCounts{Total: st.Tasks.Len(), Pending: c[mdstate.Pending], InProgress: c[mdstate.InProgress],
			Done: c[mdstate.Done], Blocked: c[mdstate.Blocked], Skipped: c[mdstate.Skipped]}
		if n := st.Tasks.Next(); n != nil {
			id := n.ID
			out.Tasks.Next = &id
		}
	}
	if st.Agent != nil {
		out.Learnings = len(st.Agent.Learnings)
	}
	if lg := st.Progress; lg != nil {
		out.Progress.Entries = lg.Entries
		if len(lg.Recent) > 0 {
			out.Progress.Last = entryJSON(lg.Recent[len(lg.Recent)-1])
		}
	}
	return out
}

// openDone counts goals or to-dos by ItemStatus.
func openDone(c *mdstate.Checklist) OpenDone {
	var od OpenDone
	if c == nil {
		return od
	}
	for _, it := range c.All() {
		switch itemStatus(it.Status) {
		case ItemDone:
			od.Done++
		case ItemDropped:
			od.Dropped++
		default:
			od.Open++
		}
	}
	return od
}

// String is the counts as `ralph status` shows them: "2 open, 1 done",
// and the dropped ones when there are any.
func (od OpenDone) String() string {
	s := fmt.Sprintf("%d %s, %d %s", od.Open, ItemOpen, od.Done, ItemDone)
	if od.Dropped > 0 {
		s += fmt.Sprintf(", %d %s", od.Dropped, ItemDropped)
	}
	return s
}

func printStatus(f *Factory, r *coordinator.Report, s StatusJSON) {
	st := r.State
	w := f.IO.Out
	fmt.Fprintf(w, "ralph · %s\n", st.Root)
	var missing []string
	for _, name := range mdstate.Files {
		if !st.Files[name].Exists {
			missing = append(missing, name)
		}
	}
	if len(missing) == len(mdstate.Files) {
		fmt.Fprintf(w, "\nNo state files here yet. Run `ralph init` to create them.\n")
		return
	}
	fmt.Fprintf(w, "  goals      %s\n", s.Goals)
	t := s.Tasks
	fmt.Fprintf(w, "  tasks      %d: %d pending, %d in progress, %d done, %d blocked, %d skipped\n", t.Total, t.Pending, t.InProgress, t.Done, t.Blocked, t.Skipped)
	if t.Next != nil {
		fmt.Fprintf(w, "  next       %s: %s\n", *t.Next, st.Tasks.Find(*t.Next).Title)
	} else if t.Pending > 0 {
		fmt.Fprintf(w, "  next       none ready: every pending task waits for another\n")
	}
	fmt.Fprintf(w, "  to-dos     %s\n", s.Todos)
	fmt.Fprintf(w, "  learnings  %d\n", s.Learnings)
	fmt.Fprintf(w, "  progress   %s", countOf(s.Progress.Entries, "entry"))
	if l := s.Progress.Last; l != nil {
		fmt.Fprintf(w, "; last: %s", l.Title)
		if l.Time != nil {
			fmt.Fprintf(w, " (%s)", l.Time.Local().Format("2006-01-02 15:04"))
		}
	}
	fmt.Fprintln(w)
	if g := r.Git; g != nil {
		fmt.Fprintf(w, "  git        %s\n", describeGit(g))
	}
	if ses := r.Session; ses != nil {
		fmt.Fprintf(w, "  session    %s %s, iteration %d", ses.ID, ses.Status, ses.Iteration)
		if ses.Task != "" {
			fmt.Fprintf(w, ", task %s", ses.Task)
		}
		if ses.Status == mdstate.SessionInterrupted || ses.Status == mdstate.SessionPaused {
			fmt.Fprintf(w, " · `ralph run` continues it")
		}
		fmt.Fprintln(w)
	}
	if q := s.Queued; len(q) > 0 {
		texts := make([]string, len(q))
		for i, g := range q {
			texts[i] = fmt.Sprintf("%q", g.Text)
		}
		fmt.Fprintf(w, "  queued     %s for the next agent: %s\n", countOf(len(q), "message"), strings.Join(texts, ", "))
	}
	if len(missing) > 0 {
		fmt.Fprintf(w, "  missing    %s (`ralph init` creates them)\n", strings.Join(missing, ", "))
	}
	// A damaged or bare repository costs the git line; say why.
	for _, p := range r.Problems {
		if p != coordinator.NoGitProblem {
			fmt.Fprintf(w, "  note       %s\n", p)
		}
	}
	f.warn(st.Warnings)
}
