package coordinator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/mdstate"
)

// pacing is what a run keeps between iterations about retries and waits.
type pacing struct {
	abort string        // set when a failure stops the run (--on-failure abort)
	wait  time.Duration // backoff before the next iteration
	// again is set when the last iteration failed and its task will be
	// tried again (the failure policy allows another attempt).
	again    bool
	attempts int // the failed attempts of the task tried again
	// limitWait is the last backoff for a rate limit that named no reset.
	limitWait time.Duration
	// retry is the task that goes first next: one a usage or rate limit
	// stopped (once the wait is over), or one an urgent message cut short.
	retry string
	// waited is the end of the last wait this run saw through.
	waited time.Time
	// cut is the limit that stopped an agent at work (on cutTask), or a
	// wait (cutTask ""), this run: the run ends with it once the
	// iteration is recorded.
	cut     limitKind
	cutTask string
}

// breakerState counts iterations in a row without progress.
type breakerState struct {
	stale int
	// tree is the work tree's fingerprint after the last iteration, when
	// treeKnown: after an iteration that completed a task none is taken
	// (it costs a git status, about 2 ms, and a completion is progress
	// whatever the tree).
	tree      string
	treeKnown bool
	// lastTasks is the task file as ralph last wrote it.
	lastTasks []byte
}

// sawTasks starts the count afresh when the task file is not what ralph
// last wrote: a person edited it, and deserves a chance.
func (b *breakerState) sawTasks(cur []byte) {
	if b.lastTasks != nil && !bytes.Equal(cur, b.lastTasks) {
		b.stale = 0
	}
}

func (b *breakerState) wrote(after []byte) { b.lastTasks = after }

// limitReached says whether a limit of the session or the run is reached.
func (c *Coordinator) limitReached() (StopReason, string) {
	s := &c.session
	switch {
	case c.pace.cut != "" && c.pace.cutTask != "":
		return StopLimit, fmt.Sprintf("%s; its agent was stopped and %s is back to pending", c.limitDetail(c.pace.cut), c.pace.cutTask)
	case c.pace.cut != "":
		return StopLimit, c.limitDetail(c.pace.cut)
	case s.MaxIterations > 0 && s.Iteration >= s.MaxIterations:
		return StopLimit, fmt.Sprintf("reached the iteration limit (%d of %d)", s.Iteration, s.MaxIterations)
	case c.opts.MaxCost > 0 && s.CostUSD >= c.opts.MaxCost:
		return StopLimit, c.limitDetail(limitCost)
	case c.opts.MaxTokens > 0 && s.TokensIn+s.TokensOut >= c.opts.MaxTokens:
		return StopLimit, c.limitDetail(limitTokens)
	case c.opts.MaxTime > 0 && c.timeLeft() <= 0:
		return StopLimit, c.limitDetail(limitTime)
	}
	return "", ""
}

// limitKind names a budget: the flag a person set.
type limitKind string

const (
	limitCost   limitKind = "--max-cost"
	limitTokens limitKind = "--max-tokens"
	limitTime   limitKind = "--max-time"
)

// limitFlag names a limit as it was set: "--max-cost $5.00".
func (c *Coordinator) limitFlag(k limitKind) string {
	switch k {
	case limitCost:
		return fmt.Sprintf("%s $%.2f", k, c.opts.MaxCost)
	case limitTokens:
		return fmt.Sprintf("%s %d", k, c.opts.MaxTokens)
	}
	return fmt.Sprintf("%s %s", k, c.opts.MaxTime)
}

// limitDetail says which limit was reached, with the session's figures.
func (c *Coordinator) limitDetail(k limitKind) string {
	s := &c.session
	switch k {
	case limitCost:
		return fmt.Sprintf("reached %s (spent $%.4f)", c.limitFlag(k), s.CostUSD)
	case limitTokens:
		return fmt.Sprintf("reached %s (used %d)", c.limitFlag(k), s.TokensIn+s.TokensOut)
	}
	return "reached " + c.limitFlag(k)
}

// limitHit is the cause of an iteration a budget cut short. It wraps
// proc.ErrStopNow: the agent gets proc.HardGrace, not the usual grace,
// because every second it goes on it spends more.
type limitHit struct{ kind limitKind }

func (l *limitHit) Error() string { return "stopped by " + string(l.kind) }
func (l *limitHit) Unwrap() error { return proc.ErrStopNow }

// limitCause returns the budget that cancelled ctx, if one did.
func limitCause(ctx context.Context) limitKind {
	var hit *limitHit
	if errors.As(context.Cause(ctx), &hit) {
		return hit.kind
	}
	return ""
}

// timeLeft is what remains of --max-time for this run (meaningless when
// it is not set).
func (c *Coordinator) timeLeft() time.Duration {
	return c.opts.MaxTime - c.opts.Now().Sub(c.started)
}

// spending is one iteration's usage as the agent streams it, held against
// the session's budgets. It lives on the agent's reader goroutine.
type spending struct {
	maxTokens int64
	maxCost   float64
	// base is what the session had spent before the iteration.
	baseTokens int64
	baseCost   float64
	// usage and cost are the iteration's so far: the sum of its model
	// calls, then the CLI's own totals once it gives them.
	usage agent.Usage
	cost  float64
}

// newSpending starts an iteration's count from the session's totals.
func (c *Coordinator) newSpending() *spending {
	s := &c.session
	return &spending{maxTokens: c.opts.MaxTokens, maxCost: c.opts.MaxCost,
		baseTokens: s.TokensIn + s.TokensOut, baseCost: s.CostUSD}
}

// add counts usage an agent.EventUsage reports: what was added since the
// last one, never a running total.
func (sp *spending) add(u agent.Usage, cost float64) {
	sp.usage.In += u.In
	sp.usage.Out += u.Out
	sp.cost += cost
}

// settle replaces the running sums with the CLI's totals for the run
// (agent.EventResult): its cost is the figure it bills, the sums an
// estimate.
func (sp *spending) settle(u agent.Usage, cost float64) {
	sp.usage, sp.cost = u, cost
}

// over says which budget the session has reached with this iteration's
// spending, if any.
func (sp *spending) over() limitKind {
	switch {
	case sp.maxCost > 0 && sp.baseCost+sp.cost >= sp.maxCost:
		return limitCost
	case sp.maxTokens > 0 && sp.baseTokens+sp.usage.In+sp.usage.Out >= sp.maxTokens:
		return limitTokens
	}
	return ""
}

// limitUntil is when to try again after a rate limit: the reset the agent
// stated, else a backoff that starts at 30 seconds and doubles up to 30
// minutes.
func (c *Coordinator) limitUntil(reset time.Time) time.Time {
	now := c.opts.Now()
	if reset.After(now) {
		c.pace.limitWait = 0
		return reset
	}
	c.pace.limitWait = min(max(2*c.pace.limitWait, 30*time.Second), 30*time.Minute)
	return now.Add(c.pace.limitWait)
}

// waitLimit waits until the limit resets, with the wait recorded in the
// session so that a restart goes on waiting. It reports false when the run
// was stopped or paused during the wait.
func (c *Coordinator) waitLimit(ctx context.Context, until time.Time) bool {
	d := until.Sub(c.opts.Now())
	if d <= 0 {
		return true
	}
	c.session.Phase = mdstate.PhaseWaiting
	if err := c.saveSession(nil); err != nil {
		c.emit(Event{Kind: EventNotice, Text: "ralph could not record the wait: " + err.Error()})
	}
	c.emit(Event{Kind: EventWaiting, Task: c.session.Task, Until: until})
	return c.waitFor(ctx, d)
}

// backoff waits out the backoff after a failed attempt, when another
// iteration follows; it reports false when the run was stopped or paused
// meanwhile.
func (c *Coordinator) backoff(ctx context.Context, task string) bool {
	w := c.pace.wait
	if w <= 0 {
		return true
	}
	c.pace.wait = 0
	c.emit(Event{Kind: EventRetry, Task: task, Delay: w, Attempt: c.pace.attempts,
		Text: fmt.Sprintf("trying again in %s, after %s", w, CountOf(c.pace.attempts, "failed attempt"))})
	end := c.opts.Now().Add(w)
	if c.waitFor(ctx, w) {
		return true
	}
	// Cut short: a Pause taken back by Resume waits out the rest.
	c.pace.wait = end.Sub(c.opts.Now())
	return false
}

// breaker trips after Breaker iterations in a row without progress. A
// person's edit of RALPH_TASKS.md since ralph's last write starts it afresh
// (here, through Notify, and in saveSession, which reads the file before
// each write): they have steered, so the next iterations deserve a chance.
func (c *Coordinator) breaker() (StopReason, string) {
	if c.opts.Breaker < 0 {
		return "", ""
	}
	if c.edited.Swap(false) {
		c.brk.stale = 0
	}
	// The file is read only when a count runs: a person's edit can only
	// start it afresh (at 10,000 tasks the read is 875 KB an iteration).
	if c.brk.stale > 0 {
		if cur, err := os.ReadFile(c.p.Path(mdstate.TasksFile)); err == nil {
			c.brk.sawTasks(cur)
		}
	}
	if c.brk.stale >= c.opts.Breaker {
		return StopLimit, fmt.Sprintf("circuit breaker: %d iterations in a row completed no task and changed nothing in the work tree; edit RALPH_TASKS.md or run again to retry", c.brk.stale)
	}
	return "", ""
}

// afterIteration updates the breaker: progress is a completed task or any
// change in the work tree. A rate-limited iteration is neither.
// The first iteration after a completion has no fingerprint to compare
// with, and counts as progress: the breaker trips at most one iteration
// later than it would, never sooner.
func (c *Coordinator) afterIteration(ctx context.Context, done bool) {
	if done && c.session.WaitUntil.IsZero() {
		c.brk.stale, c.brk.tree, c.brk.treeKnown = 0, "", false
		return
	}
	tree := treeFingerprint(ctx, c.opts.Root)
	if c.session.WaitUntil.IsZero() {
		if done || !c.brk.treeKnown || tree != c.brk.tree {
			c.brk.stale = 0
		} else {
			c.brk.stale++
		}
	}
	c.brk.tree, c.brk.treeKnown = tree, true
}

// treeFingerprint names the work tree's state: the changed paths with their
// sizes and times, or the top folder's listing without git. The state
// files and .ralph/ are left out: ralph itself writes them every iteration.
func treeFingerprint(ctx context.Context, root string) string {
	paths := DirtyPaths(ctx, root)
	if paths == nil {
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			paths = append(paths, e.Name())
		}
	}
	var b strings.Builder
	for _, p := range paths {
		if slices.Contains(mdstate.Files, filepath.Base(p)) || strings.HasPrefix(p, mdstate.RuntimeDir) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(root, p)); err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
		} else {
			b.WriteString(p + " gone\n")
		}
	}
	return b.String()
}

// iterationLimit is how many iterations this run may make: its own cap
// (StartFor), else the options'; 0 for no limit.
func (c *Coordinator) iterationLimit() int {
	if c.runIterations > 0 {
		return c.runIterations
	}
	return c.opts.MaxIterations
}

// CountOf is n and noun, in the plural when n is not 1: "1 failed
// attempt", "2 failed attempts", "3 entries". The front ends say counts
// with it.
func CountOf(n int, noun string) string {
	switch {
	case n == 1:
		return "1 " + noun
	case strings.HasSuffix(noun, "y"):
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
