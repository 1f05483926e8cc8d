package chat

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/mdstate"
)

// welcome is what the session prints first: the project and its branch,
// the open goals, the tasks by status, an interrupted or paused session
// and what becomes of it, the last progress entry, the queued messages.
// It reads what `ralph status` reads (coordinator.BuildReport).
func (s *session) welcome(ctx context.Context) string {
	p := s.co.Project()
	r, err := coordinator.BuildReport(ctx, p.Root, coordinator.ReportOptions{Progress: 1, Commits: 1, NoDetect: true, Git: s.o.Git, Project: p})
	if err != nil {
		return fmt.Sprintf("ralph chat · %s\n  ! %v\nType /help for the commands.\n", p.Root, err)
	}
	var b strings.Builder
	b.WriteString("ralph chat · " + r.Root)
	if r.Git != nil && r.Git.Branch != "" {
		b.WriteString(" · branch " + r.Git.Branch)
	}
	b.WriteString("\n")
	writeGoals(&b, r.State.Goals)
	writeTasks(&b, r.State.Tasks)
	writeSession(&b, r)
	if lg := r.State.Progress; lg != nil && len(lg.Recent) > 0 {
		e := lg.Recent[len(lg.Recent)-1]
		fmt.Fprintf(&b, "  last       %s", e.Title)
		if !e.Time.IsZero() {
			fmt.Fprintf(&b, " (%s)", e.Time.Local().Format("2006-01-02 15:04"))
		}
		b.WriteString("\n")
	}
	if q := s.co.Snapshot().Guidance; len(q) > 0 {
		fmt.Fprintf(&b, "  queued     %s for the next agent: %s\n", plural(len(q), "message"), quoteAll(q))
	}
	b.WriteString("Type /help for the commands, /run to start work.\n")
	return b.String()
}

// writeGoals lists the open goals, a few of them.
func writeGoals(b *strings.Builder, goals *mdstate.Checklist) {
	if goals == nil {
		return
	}
	var open []string
	for _, g := range goals.All() {
		if g.Status != mdstate.Done && g.Status != mdstate.Skipped {
			open = append(open, g.Title)
		}
	}
	switch {
	case len(open) == 0:
		b.WriteString("  goals      none open\n")
	case len(open) > 3:
		fmt.Fprintf(b, "  goals      %s, and %d more\n", strings.Join(open[:3], "; "), len(open)-3)
	default:
		fmt.Fprintf(b, "  goals      %s\n", strings.Join(open, "; "))
	}
}

// writeTasks counts the tasks by status and names the next one.
func writeTasks(b *strings.Builder, tasks *mdstate.Checklist) {
	if tasks == nil {
		return
	}
	c := tasks.Counts()
	fmt.Fprintf(b, "  tasks      %d: %d pending, %d in progress, %d done, %d blocked, %d skipped\n", tasks.Len(),
		c[mdstate.Pending], c[mdstate.InProgress], c[mdstate.Done], c[mdstate.Blocked], c[mdstate.Skipped])
	if n := tasks.Next(); n != nil {
		fmt.Fprintf(b, "  next       %s: %s\n", n.ID, n.Title)
	}
}

// writeSession says what became of the last session. The lock is this
// chat's now, so a session the file records as running belonged to a
// ralph that died: it was interrupted.
func writeSession(b *strings.Builder, r *coordinator.Report) {
	ses := r.Session
	if ses == nil {
		return
	}
	interrupted := ses.Status == mdstate.SessionInterrupted ||
		(ses.Status == mdstate.SessionRunning && r.Holder != nil && r.Holder.PID == os.Getpid())
	switch {
	case interrupted:
		fmt.Fprintf(b, "  session    %s was interrupted at iteration %d", ses.ID, ses.Iteration)
		if ses.Task != "" {
			fmt.Fprintf(b, " while %s was in progress", ses.Task)
		}
		b.WriteString(" (ralph stopped without saving)\n")
		b.WriteString("             /run recovers it: what its agent left running is stopped")
		if ses.Task != "" {
			fmt.Fprintf(b, ", %s goes back to pending with a note", ses.Task)
		}
		b.WriteString(", and the session goes on\n")
	case ses.Status == mdstate.SessionPaused:
		fmt.Fprintf(b, "  session    %s paused at iteration %d; /run continues it\n", ses.ID, ses.Iteration)
	}
}
