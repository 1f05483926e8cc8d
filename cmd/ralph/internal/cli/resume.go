package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/mdstate"
)

// SessionListJSON is `ralph resume --list --json`.
type SessionListJSON struct {
	Current *SessionJSON        `json:"current"` // the session in RALPH_TASKS.md, status corrected
	Ended   []*EndedSessionJSON `json:"ended"`   // summaries of ended sessions, newest last
}

// EndedSessionJSON is an ended session's summary entry, with whether its
// totals leave out iterations whose agents reported none (as the
// session's usage_partial and cost_partial say).
type EndedSessionJSON struct {
	*EntryJSON
	UsagePartial bool `json:"usage_partial"`
	CostPartial  bool `json:"cost_partial"`
}

// NewCmdResume builds `ralph resume`: `ralph run` that insists on a session
// to continue, and can list them.
func NewCmdResume(f *Factory) *cobra.Command {
	cmd := NewCmdRun(f)
	cmd.Use = "resume"
	cmd.Short = "Continue an interrupted or paused session"
	cmd.Long = `Continue the session recorded in RALPH_TASKS.md where it stopped: the same
session id, iteration counter, token and cost totals and git baseline.

After a crash (the session says running, but no ralph holds the project's
lock), ralph first stops the recorded agent if that very process, or what
is left of its process group, still runs; puts the task it was doing back to
pending with attempts+1 and a note saying when and in which phase it was cut
short; and records a "recovered" entry in RALPH_PROGRESS.md. 'ralph run'
does the same on its own; 'ralph resume' fails when there is nothing to
continue, and --list shows the sessions without starting anything.

--list shows the session recorded in RALPH_TASKS.md and the ended ones in
the progress log, with their tokens and cost: "unknown" when their agents
reported none (the exec agent's CLI reports none), and "(not counting
iterations that reported none)" when only some iterations did. With
--json: {"current": the session as 'ralph status --json' gives it,
"ended": their summary entries as 'ralph log --json' gives them, each with
usage_partial and cost_partial}; null for what is unknown.

It takes every flag of 'ralph run'.`
	cmd.Example = "  ralph resume --list\n  ralph resume --agent claude --max-iterations 5"
	var list, asJSON bool
	cmd.Flags().BoolVar(&list, "list", false, "show the interrupted or paused session and the ended ones, and start nothing")
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		asJSON, _ = c.Flags().GetBool("json")
		p, _ := f.Project()
		r, err := coordinator.BuildReport(c.Context(), p.Root, listReport)
		if err != nil {
			return err
		}
		if list {
			return listSessions(f, r, asJSON)
		}
		if holder, held := coordinator.LockHolder(p.Root); held {
			// The session runs: there is nothing to resume, and a new
			// one would be refused too.
			return &exitError{code: ExitLocked, msg: (&coordinator.ErrLocked{Holder: holder}).Error() +
				"; its session goes on by itself (`ralph status` shows where it stands)"}
		}
		if s := r.Session; s == nil || (s.Status != mdstate.SessionInterrupted && s.Status != mdstate.SessionPaused) {
			what := "no session recorded"
			if s != nil {
				what = "the last session (" + s.ID + ") " + string(s.Status)
			}
			return fmt.Errorf("nothing to resume: %s; `ralph run` starts a new session", what)
		}
		return run(c, args)
	}
	return cmd
}

func listSessions(f *Factory, r *coordinator.Report, asJSON bool) error {
	ended := coordinator.EndedSessions(r.State.Progress)
	if asJSON {
		out := SessionListJSON{Current: reportSessionJSON(r), Ended: []*EndedSessionJSON{}}
		for _, e := range ended {
			out.Ended = append(out.Ended, &EndedSessionJSON{EntryJSON: entryJSON(e.Entry), UsagePartial: e.Figures.UsagePartial, CostPartial: e.Figures.CostPartial})
		}
		return writeJSON(f.IO.Out, out)
	}
	w := f.IO.Out
	if s := r.Session; s != nil {
		fmt.Fprintf(w, "%s  %-11s iteration %d", s.ID, s.Status, s.Iteration)
		if s.Task != "" {
			fmt.Fprintf(w, ", task %s", s.Task)
		}
		if s.Phase != "" && s.Status == mdstate.SessionInterrupted {
			fmt.Fprintf(w, ", phase %s", s.Phase)
		}
		fig := sessionFigures(s)
		fmt.Fprintf(w, ", %s, %s\n", tokensWords(fig), costWords(fig))
		if s.Status == mdstate.SessionInterrupted || s.Status == mdstate.SessionPaused {
			fmt.Fprintln(f.IO.ErrOut, "`ralph resume` continues it.")
		}
	} else {
		fmt.Fprintln(f.IO.ErrOut, "no session recorded in RALPH_TASKS.md")
	}
	for _, e := range ended {
		fmt.Fprintf(w, "%s  %s: %s, %d done, %s\n", e.ID, e.Outcome, countOf(e.Iterations, "iteration"), e.TasksDone, costWords(e.Figures))
	}
	return nil
}

// sessionFigures are a session's totals as an entry's figures: nil for
// what its agents have not reported (Session.KnownUsage, KnownCost).
func sessionFigures(s *mdstate.Session) coordinator.Figures {
	var f coordinator.Figures
	if s.KnownUsage() {
		in, out := s.TokensIn, s.TokensOut
		f.TokensIn, f.TokensOut, f.UsagePartial = &in, &out, s.UsagePartial
	}
	if s.KnownCost() {
		usd := s.CostUSD
		f.CostUSD, f.CostPartial = &usd, s.CostPartial
	}
	return f
}

// tokensWords and costWords are a session's totals in words: unknown when
// its agents reported none, and marked as the session block marks them
// when they leave out iterations that reported none.
func tokensWords(f coordinator.Figures) string {
	if f.TokensIn == nil || f.TokensOut == nil {
		return "tokens unknown"
	}
	return mdstate.MarkPartial(fmt.Sprintf("%d in / %d out tokens", *f.TokensIn, *f.TokensOut), f.UsagePartial)
}

func costWords(f coordinator.Figures) string {
	if f.CostUSD == nil {
		return "cost unknown"
	}
	return mdstate.MarkPartial(fmt.Sprintf("$%.4f", *f.CostUSD), f.CostPartial)
}
