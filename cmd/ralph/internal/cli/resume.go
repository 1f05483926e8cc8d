package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/mdstate"
)

// SessionListJSON is `ralph resume --list --json`.
type SessionListJSON struct {
	Current *SessionJSON `json:"current"` // the session in RALPH_TASKS.md, status corrected
	Ended   []*EntryJSON `json:"ended"`   // summaries of ended sessions, newest last
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
	out := SessionListJSON{Current: sessionJSON(r.Session), Ended: []*EntryJSON{}}
	ended := coordinator.EndedSessions(r.State.Progress)
	for _, e := range ended {
		out.Ended = append(out.Ended, entryJSON(e.Entry))
	}
	if asJSON {
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
		fmt.Fprintf(w, ", %d in / %d out tokens, $%.4f\n", s.TokensIn, s.TokensOut, s.CostUSD)
		if s.Status == mdstate.SessionInterrupted || s.Status == mdstate.SessionPaused {
			fmt.Fprintln(f.IO.ErrOut, "`ralph resume` continues it.")
		}
	} else {
		fmt.Fprintln(f.IO.ErrOut, "no session recorded in RALPH_TASKS.md")
	}
	for _, e := range ended {
		fmt.Fprintf(w, "%s  %s: %d iterations, %d done, $%.4f\n", e.ID, e.Outcome, e.Iterations, e.TasksDone, e.CostUSD)
	}
	return nil
}
