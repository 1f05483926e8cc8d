package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ralph-dev/ralph/chat"
	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/gitctx"
	"github.com/ralph-dev/ralph/mdstate"
)

// A run ends with a summary a person reads: what happened in plain words,
// what this run did (the tasks done by ID and title, the files it
// changed, what it spent), what is left, and the session's totals as its
// block in RALPH_TASKS.md has them.

// runTally is what a run's display saw of it, for the summary.
type runTally struct {
	iterations     int
	done           []string // "T1 Write hello", in order
	tokensIn       int64
	tokensOut      int64
	costUSD        float64
	usageUnknown   bool // an iteration's agent did not report its usage
	costUnknown    bool
	someUsageKnown bool
}

// count adds an event to the tally.
func (t *runTally) count(ev coordinator.Event) {
	switch ev.Kind {
	case coordinator.EventTaskStarted:
		t.iterations++
	case coordinator.EventIterationDone:
		if ev.Outcome == coordinator.OutcomeDone {
			t.done = append(t.done, ev.Task+" "+ev.Title)
		}
		t.tokensIn += ev.TokensIn
		t.tokensOut += ev.TokensOut
		t.costUSD += ev.CostUSD
		t.usageUnknown = t.usageUnknown || ev.UsageUnknown
		t.costUnknown = t.costUnknown || ev.CostUnknown
		t.someUsageKnown = t.someUsageKnown || !ev.UsageUnknown
	}
}

// runSummary is the summary's text.
func runSummary(out coordinator.Outcome, t runTally, left, skipped, files []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s.\n", chat.Headline(out.Reason), strings.TrimSuffix(out.Detail, "."))
	if t.iterations > 0 {
		fmt.Fprintf(&b, "This run: %s, %s", countOf(t.iterations, "iteration"), countOf(len(t.done), "task")+" done")
		if len(t.done) > 0 {
			b.WriteString(" (" + strings.Join(t.done, "; ") + ")") // titles may hold commas
		}
		b.WriteString(", " + spent(t) + ".\n")
	}
	if len(files) > 0 {
		fmt.Fprintf(&b, "Files changed: %s.\n", listSome(files, 10, ", "))
	}
	if len(left) > 0 {
		fmt.Fprintf(&b, "Left: %s.\n", listSome(left, 10, "; "))
	}
	if len(skipped) > 0 {
		fmt.Fprintf(&b, "Skipped: %s (`ralph task reopen ID` tries one again).\n", listSome(skipped, 10, "; "))
	}
	if s := out.Session; s.ID != "" {
		fmt.Fprintf(&b, "Session %s: %s, %s done", s.ID, countOf(s.Iteration, "iteration"), countOf(s.Done, "task"))
		if s.Commits > 0 {
			b.WriteString(", " + countOf(s.Commits, "commit"))
		}
		b.WriteString(", " + sessionSpent(s) + ".\n")
	}
	return b.String()
}

// sessionSpent is a session's totals as its block has them: unknown while
// its agents reported none, and marked when some iterations reported none.
func sessionSpent(s mdstate.Session) string {
	if !s.KnownUsage() && !s.KnownCost() {
		return "tokens and cost unknown" // its agents report none
	}
	tokens, cost := "tokens unknown", "cost unknown"
	if s.KnownUsage() {
		tokens = mdstate.MarkPartial(fmt.Sprintf("%d tokens in, %d out", s.TokensIn, s.TokensOut), s.UsagePartial)
	}
	if s.KnownCost() {
		cost = mdstate.MarkPartial(fmt.Sprintf("$%.4f", s.CostUSD), s.CostPartial)
	}
	return tokens + ", " + cost
}

// spent is a run's tokens and cost, "unknown" where the agent's CLI did
// not report them.
func spent(t runTally) string {
	tokens := fmt.Sprintf("%d tokens in, %d out", t.tokensIn, t.tokensOut)
	switch {
	case t.usageUnknown && !t.someUsageKnown:
		tokens = "tokens unknown"
	case t.usageUnknown:
		tokens += " (some unknown)"
	}
	if t.costUnknown && t.costUSD == 0 {
		return tokens + ", cost unknown"
	}
	return tokens + fmt.Sprintf(", $%.4f", t.costUSD)
}

// listSome joins items with sep, the first max of them, saying how many
// more.
func listSome(items []string, max int, sep string) string {
	if len(items) <= max {
		return strings.Join(items, sep)
	}
	return strings.Join(items[:max], sep) + fmt.Sprintf("%sand %d more", sep, len(items)-max)
}

// countOf is "1 task", "2 tasks", "3 entries".
func countOf(n int, noun string) string { return coordinator.CountOf(n, noun) }

// openTasks are the tasks not done or skipped, and those skipped, by ID
// and title.
func openTasks(p *mdstate.Project) (left, skipped []string) {
	tasks, err := p.LoadChecklist(mdstate.TasksKind)
	if err != nil {
		return nil, nil
	}
	for _, it := range tasks.All() {
		switch it.Status {
		case mdstate.Done:
		case mdstate.Skipped:
			skipped = append(skipped, it.ID+" "+it.Title)
		default:
			left = append(left, it.ID+" "+it.Title)
		}
	}
	return left, skipped
}

// dirtyFiles are the files git sees changed in root, state files and
// ralph's runtime folder left out; nil outside a repository.
func dirtyFiles(ctx context.Context, root string) []string {
	var files []string
	for _, f := range coordinator.DirtyPaths(ctx, root) {
		if !ralphsOwn(f) {
			files = append(files, f)
		}
	}
	return files
}

// ralphsOwn reports whether path is a state file or in ralph's runtime
// folder: what a run writes, not what its agents changed.
func ralphsOwn(path string) bool {
	return slices.Contains(mdstate.Files, path) || strings.HasPrefix(path, mdstate.RuntimeDir+"/")
}

// newlyChanged are the files in after that were not in before.
func newlyChanged(before, after []string) []string {
	var out []string
	for _, f := range after {
		if !slices.Contains(before, f) {
			out = append(out, f)
		}
	}
	return out
}

// worktree is what git shows of a run's work at one moment: the changed
// files (dirtyFiles) and the commit HEAD names ("" outside a repository
// or before the first commit).
type worktree struct {
	dirty []string
	head  string
}

// readWorktree reads root's worktree: its status from the git CLI, HEAD
// in process.
func readWorktree(ctx context.Context, root string) worktree {
	w := worktree{dirty: dirtyFiles(ctx, root)}
	if repo, err := gitctx.Open(root, proc.Runner{}); err == nil {
		if h, err := repo.Head(); err == nil && !h.Unborn {
			w.head = h.Hash
		}
		repo.Close()
	}
	return w
}

// changedSince are the files the run changed between before and after:
// those it left changed, and those in the commits it made (--commit),
// state files and ralph's runtime folder left out.
func changedSince(ctx context.Context, root string, before, after worktree) []string {
	files := newlyChanged(before.dirty, after.dirty)
	add := func(f string) {
		if !slices.Contains(files, f) && !ralphsOwn(f) {
			files = append(files, f)
		}
	}
	if before.head != "" && after.head != "" && before.head != after.head {
		if repo, err := gitctx.Open(root, proc.Runner{}); err == nil {
			changed, _ := repo.Changed(ctx, before.head, after.head)
			for _, f := range changed {
				add(f)
			}
			repo.Close()
		}
	}
	slices.Sort(files)
	return files
}
