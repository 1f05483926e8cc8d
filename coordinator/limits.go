package coordinator

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

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
}

// breakerState counts iterations in a row without progress.
type breakerState struct {
	stale int
	// tree is the work tree's fingerprint after the last iteration.
	tree string
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
	case s.MaxIterations > 0 && s.Iteration >= s.MaxIterations:
		return StopLimit, fmt.Sprintf("reached the iteration limit (%d of %d)", s.Iteration, s.MaxIterations)
	case c.opts.MaxCost > 0 && s.CostUSD >= c.opts.MaxCost:
		return StopLimit, fmt.Sprintf("reached --max-cost $%.2f (spent $%.4f)", c.opts.MaxCost, s.CostUSD)
	case c.opts.MaxTime > 0 && c.opts.Now().Sub(c.started) >= c.opts.MaxTime:
		return StopLimit, fmt.Sprintf("reached --max-time %s", c.opts.MaxTime)
	}
	return "", ""
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
		Text: fmt.Sprintf("trying again in %s", w)})
	return c.waitFor(ctx, w)
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
	if cur, err := os.ReadFile(c.p.Path(mdstate.TasksFile)); err == nil {
		c.brk.sawTasks(cur)
	}
	if c.brk.stale >= c.opts.Breaker {
		return StopLimit, fmt.Sprintf("circuit breaker: %d iterations in a row completed no task and changed nothing in the work tree; edit RALPH_TASKS.md or run again to retry", c.brk.stale)
	}
	return "", ""
}

// afterIteration updates the breaker: progress is a completed task or any
// change in the work tree. A rate-limited iteration is neither.
func (c *Coordinator) afterIteration(ctx context.Context, done bool) {
	tree := treeFingerprint(ctx, c.opts.Root)
	if c.session.WaitUntil.IsZero() {
		if done || tree != c.brk.tree {
			c.brk.stale = 0
		} else {
			c.brk.stale++
		}
	}
	c.brk.tree = tree
}

// treeFingerprint names the work tree's state: the changed paths with their
// sizes and times, or the top folder's listing without git. The state
// files and .ralph/ are left out: ralph itself writes them every iteration.
func treeFingerprint(ctx context.Context, root string) string {
	paths := dirtyPaths(ctx, root)
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
