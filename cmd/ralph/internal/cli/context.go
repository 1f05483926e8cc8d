package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/gitctx"
	"github.com/ralph-dev/ralph/mdstate"
	"github.com/ralph-dev/ralph/projectdetect"
)

// SessionJSON is the session in `status --json` and `context --json`;
// what it does not have (no phase between iterations, no limit, no
// baseline outside git) is null.
type SessionJSON struct {
	ID            string     `json:"id"`
	Status        string     `json:"status"`
	Reason        *string    `json:"reason"` // why it stopped or ended, as the session block has it
	Phase         *string    `json:"phase"`
	Iteration     int        `json:"iteration"`
	MaxIterations *int       `json:"max_iterations"`
	Task          *string    `json:"task"`
	TokensIn      *int64     `json:"tokens_in"` // null while its agents reported none
	TokensOut     *int64     `json:"tokens_out"`
	CostUSD       *float64   `json:"cost_usd"`
	UsagePartial  bool       `json:"usage_partial"` // the tokens leave out iterations whose agents reported none
	CostPartial   bool       `json:"cost_partial"`
	Baseline      *string    `json:"baseline"`
	Agent         *string    `json:"agent"`
	Model         *string    `json:"model"`
	StartedAt     *time.Time `json:"started_at"`
	UpdatedAt     *time.Time `json:"updated_at"`
	PID           *int       `json:"pid"`
}

func sessionJSON(s *mdstate.Session) *SessionJSON {
	if s == nil {
		return nil
	}
	j := &SessionJSON{ID: s.ID, Status: string(s.Status), Reason: nullIfZero(s.Reason), Phase: nullIfZero(string(s.Phase)), Iteration: s.Iteration,
		MaxIterations: nullIfZero(s.MaxIterations),
		Baseline:      nullIfZero(s.Baseline), Agent: nullIfZero(s.Agent), Model: nullIfZero(s.Model), PID: nullIfZero(s.PID)}
	if s.KnownUsage() {
		in, out := s.TokensIn, s.TokensOut
		j.TokensIn, j.TokensOut, j.UsagePartial = &in, &out, s.UsagePartial
	}
	if s.KnownCost() {
		cost := s.CostUSD
		j.CostUSD, j.CostPartial = &cost, s.CostPartial
	}
	if s.Task != "" {
		t := s.Task
		j.Task = &t
	}
	if !s.Started.IsZero() {
		t := s.Started
		j.StartedAt = &t
	}
	if !s.Updated.IsZero() {
		t := s.Updated
		j.UpdatedAt = &t
	}
	return j
}

// ProjectJSON is the "project" object of `status --json`.
type ProjectJSON struct {
	Types     []projectdetect.Type   `json:"types"`
	Commands  projectdetect.Commands `json:"commands"`
	Truncated bool                   `json:"truncated"`
}

// GitJSON is the "git" object of `status --json`; `context --json` adds
// the details.
type GitJSON struct {
	Branch   *string         `json:"branch"` // null when detached
	Head     *string         `json:"head"`   // null before the first commit
	Detached bool            `json:"detached"`
	Dirty    *bool           `json:"dirty"` // null when status was unavailable
	Ahead    *int            `json:"ahead"` // null without an upstream
	Behind   *int            `json:"behind"`
	Unborn   bool            `json:"unborn"`
	Details  *GitDetailsJSON `json:"details,omitempty"`
}

// GitDetailsJSON is what `context --json` adds to the git object.
type GitDetailsJSON struct {
	Status        gitStatusJSON `json:"status"`
	Recent        []commitJSON  `json:"recent"`
	StateCommits  []commitJSON  `json:"state_commits"`
	SinceBaseline *sinceJSON    `json:"since_baseline"`
}

type gitStatusJSON struct {
	Available bool     `json:"available"`
	Source    string   `json:"source"`
	Reason    string   `json:"reason,omitempty"`
	Modified  []string `json:"modified"`
	Added     []string `json:"added"`
	Deleted   []string `json:"deleted"`
	Untracked []string `json:"untracked"`
	Unmerged  []string `json:"unmerged"`
}

type commitJSON struct {
	Hash    string    `json:"hash"`
	Author  string    `json:"author"`
	Time    time.Time `json:"time"`
	Subject string    `json:"subject"`
	Files   []string  `json:"files"`
	// FilesMore: the commit changed more paths than files lists
	// (gitctx.MaxFiles).
	FilesMore bool `json:"files_more,omitempty"`
}

type sinceJSON struct {
	Baseline   string       `json:"baseline"`
	Commits    []commitJSON `json:"commits"`
	Files      int          `json:"files"`
	Insertions int          `json:"insertions"`
	Deletions  int          `json:"deletions"`
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func commitsJSON(cs []gitctx.Commit) []commitJSON {
	out := []commitJSON{}
	for _, c := range cs {
		out = append(out, commitJSON{Hash: c.Hash, Author: c.Author, Time: c.Time, Subject: c.Subject, Files: nonNil(c.Files), FilesMore: c.FilesMore})
	}
	return out
}

func gitJSON(g *coordinator.GitInfo, details bool) *GitJSON {
	if g == nil {
		return nil
	}
	j := &GitJSON{Branch: nullIfZero(g.Branch), Head: nullIfZero(g.Head), Detached: g.Detached, Unborn: g.Unborn}
	if g.Status.Available {
		d := g.Dirty()
		j.Dirty = &d
	}
	if g.UpstreamKnown {
		a, b := g.Ahead, g.Behind
		j.Ahead, j.Behind = &a, &b
	}
	if details {
		s := g.Status
		d := &GitDetailsJSON{
			Status: gitStatusJSON{Available: s.Available, Source: s.Source, Reason: s.Reason, Modified: nonNil(s.Modified),
				Added: nonNil(s.Added), Deleted: nonNil(s.Deleted), Untracked: nonNil(s.Untracked), Unmerged: nonNil(s.Unmerged)},
			Recent:       commitsJSON(g.Recent),
			StateCommits: commitsJSON(g.StateCommits),
		}
		if sb := g.SinceBaseline; sb != nil {
			d.SinceBaseline = &sinceJSON{Baseline: sb.Baseline, Commits: commitsJSON(sb.Commits), Files: sb.Stat.Files, Insertions: sb.Stat.Insertions, Deletions: sb.Stat.Deletions}
		}
		j.Details = d
	}
	return j
}

func projectJSON(p *projectdetect.Project) *ProjectJSON {
	if p == nil {
		return nil
	}
	return &ProjectJSON{Types: p.Types, Commands: p.Commands, Truncated: p.Truncated}
}

// ContextJSON is `ralph context --json`: the status object plus the full
// project scan, git details and the recovery verdict.
type ContextJSON struct {
	StatusJSON
	ProjectScan *projectdetect.Project `json:"project_scan"`
	Recent      []*EntryJSON           `json:"recent_progress"`
	Interrupted bool                   `json:"interrupted"`
	Holder      *coordinator.LockInfo  `json:"lock_holder"`
	Problems    []string               `json:"problems"`
}

// NewCmdContext builds `ralph context`.
func NewCmdContext(f *Factory) *cobra.Command {
	var asJSON, prompt bool
	var budget int
	var task string
	cmd := &cobra.Command{
		Use:   "context",
		Short: "Show what ralph reconstructs on start",
		Long: `Show what ralph rebuilds from the state files and git alone when it starts,
and after a crash: the project (its kind and its build, test and lint
commands), git (branch, work tree, recent commits, which commits changed the
state files), the state (goals, tasks, recent progress, to-dos, learnings),
and any interrupted work: a session recorded as running whose coordinator
no longer holds the project's lock was interrupted, and ralph resumes it.

--prompt prints the exact context block a child agent receives. It fits a
token budget (--budget, estimated at four bytes a token): goals, the current
task, what it builds on and the learnings come first; the oldest progress and
the least relevant items are left out first, and the block says what it left
out.`,
		Example: `  ralph context
  ralph context --json | jq .git
  ralph context --prompt --budget 4000 --task T7`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if budget < 100 {
				return usagef("--budget must be at least 100 tokens, not %d", budget)
			}
			p, _ := f.Project()
			r, err := coordinator.BuildReport(cmd.Context(), p.Root, coordinator.ReportOptions{Git: f.Env.Git})
			if err != nil {
				return err
			}
			if task != "" && (r.State.Tasks == nil || r.State.Tasks.Find(task) == nil) {
				if r.State.Tasks == nil {
					return &mdstate.MissingError{File: mdstate.TasksFile, Root: p.Root}
				}
				return r.State.Tasks.Edit().NotFound(task)
			}
			if prompt {
				text, _ := r.Prompt(coordinator.PromptOptions{Budget: budget, Task: task})
				fmt.Fprint(f.IO.Out, text)
				return nil
			}
			if asJSON {
				return writeJSON(f.IO.Out, contextJSON(r))
			}
			printContext(f, r)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	cmd.Flags().BoolVar(&prompt, "prompt", false, "print the context block a child agent receives")
	cmd.Flags().IntVar(&budget, "budget", coordinator.DefaultBudget, "with --prompt: fit in `N` estimated tokens")
	cmd.Flags().StringVar(&task, "task", "", "with --prompt: the task `ID` the block is about (default: the interrupted one, else the next)")
	completeItemFlag(f, cmd, taskFlag, mdstate.TasksKind, anyItem)
	return cmd
}

func contextJSON(r *coordinator.Report) ContextJSON {
	j := ContextJSON{StatusJSON: statusJSON(r.State), ProjectScan: r.Project, Interrupted: r.Interrupted(), Holder: r.Holder, Problems: r.Problems}
	j.Session = reportSessionJSON(r)
	j.Project = projectJSON(r.Project)
	j.Git = gitJSON(r.Git, true)
	j.Recent = []*EntryJSON{}
	if lg := r.State.Progress; lg != nil {
		for _, e := range lg.Recent {
			j.Recent = append(j.Recent, entryJSON(e))
		}
	}
	if j.Problems == nil {
		j.Problems = []string{}
	}
	return j
}

func printContext(f *Factory, r *coordinator.Report) {
	w := f.IO.Out
	fmt.Fprintf(w, "ralph context · %s\n", r.Root)
	if p := r.Project; p != nil {
		var kinds []string
		for _, t := range p.Types {
			k := t.Name
			if t.Dir != "." {
				k += " in " + t.Dir
			}
			kinds = append(kinds, k)
		}
		if len(kinds) == 0 {
			kinds = []string{"no known project type"}
		}
		fmt.Fprintf(w, "  project    %s\n", strings.Join(kinds, ", "))
		for _, group := range []struct {
			name string
			cmds []projectdetect.Command
		}{{"build", p.Commands.Build}, {"test", p.Commands.Test}, {"lint", p.Commands.Lint}} {
			if len(group.cmds) > 0 {
				c := group.cmds[0]
				where := ""
				if c.Dir != "." {
					where = " (in " + c.Dir + ")"
				}
				fmt.Fprintf(w, "  %-10s %s%s\n", group.name, c.Run, where)
			}
		}
		if p.Truncated {
			fmt.Fprintf(w, "  scan       %s\n", p.TruncatedReason)
		}
	}
	if g := r.Git; g != nil {
		head := describeGit(g)
		fmt.Fprintf(w, "  git        %s\n", head)
		if len(g.Recent) > 0 {
			c := g.Recent[0]
			fmt.Fprintf(w, "  last       %s %s (%s)\n", c.Hash[:min(7, len(c.Hash))], c.Subject, c.Time.Format("2006-01-02"))
		}
		if sb := g.SinceBaseline; sb != nil {
			fmt.Fprintf(w, "  since      %s: %s, %s changed, +%d -%d\n", sb.Baseline[:min(7, len(sb.Baseline))], countOf(len(sb.Commits), "commit"), countOf(sb.Stat.Files, "file"), sb.Stat.Insertions, sb.Stat.Deletions)
		}
	}
	s := statusJSON(r.State)
	t := s.Tasks
	fmt.Fprintf(w, "  tasks      %d: %d pending, %d in progress, %d done, %d blocked, %d skipped\n", t.Total, t.Pending, t.InProgress, t.Done, t.Blocked, t.Skipped)
	if t.Next != nil {
		fmt.Fprintf(w, "  next       %s: %s\n", *t.Next, r.State.Tasks.Find(*t.Next).Title)
	}
	fmt.Fprintf(w, "  goals      %d open, %d done · to-dos %d open · learnings %d · progress %s\n", s.Goals.Open, s.Goals.Done, s.Todos.Open, s.Learnings, countOf(s.Progress.Entries, "entry"))
	if ses := r.Session; ses != nil {
		line := ses.Status
		if r.Interrupted() {
			line = "interrupted (recorded as running, but no coordinator holds the lock)"
		}
		fmt.Fprintf(w, "  session    %s %s: iteration %d", ses.ID, line, ses.Iteration)
		if ses.MaxIterations > 0 {
			fmt.Fprintf(w, " of %d", ses.MaxIterations)
		}
		if ses.Task != "" {
			fmt.Fprintf(w, ", task %s", ses.Task)
		}
		if ses.Phase != "" {
			fmt.Fprintf(w, ", phase %s", ses.Phase)
		}
		fmt.Fprintln(w)
		if r.Interrupted() {
			fmt.Fprintf(w, "             `ralph resume` continues it\n")
		}
	}
	if h := r.Holder; h != nil {
		fmt.Fprintf(w, "  running    pid %d, %q, since %s\n", h.PID, h.Command, h.Since.Local().Format("15:04"))
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  note       %s\n", p)
	}
	f.warn(r.State.Warnings)
}

func describeGit(g *coordinator.GitInfo) string {
	var s string
	switch {
	case g.Unborn:
		s = "branch " + g.Branch + ", no commits yet"
	case g.Detached:
		s = "detached HEAD at " + g.Head[:7]
	default:
		s = "branch " + g.Branch + " at " + g.Head[:7]
	}
	switch {
	case !g.Status.Available && g.Status.Reason == "":
		s += "; status unavailable"
	case !g.Status.Available:
		// The reason reads "status unavailable: why".
		s += "; " + g.Status.Reason
	case g.Status.Clean():
		s += ", clean"
	default:
		st := g.Status
		s += fmt.Sprintf(", %d modified, %d added, %d deleted, %d untracked", len(st.Modified), len(st.Added), len(st.Deleted), len(st.Untracked))
	}
	if g.UpstreamKnown {
		s += fmt.Sprintf("; %d ahead, %d behind", g.Ahead, g.Behind)
	}
	return s
}
