package coordinator

import "github.com/ralph-dev/ralph/mdstate"

// IterationOutcome is how one iteration (or one one-shot run) ended.
type IterationOutcome string

// The outcomes, as the progress log and the events name them.
const (
	OutcomeDone        IterationOutcome = "done"
	OutcomeBlocked     IterationOutcome = "blocked"
	OutcomeFailed      IterationOutcome = "failed"       // counts an attempt
	OutcomeInterrupted IterationOutcome = "interrupted"  // stopped by ralph or a person: no attempt counted
	OutcomeRateLimited IterationOutcome = "rate_limited" // wait and try the same task again: no attempt counted
	OutcomeRecovered   IterationOutcome = "recovered"    // the "session … recovered" entry
)

// StopReason says why a run ended.
type StopReason string

// The reasons, each with its exit code in cmd/ralph.
const (
	StopAllDone     StopReason = "all_done"    // every task done: exit 0
	StopNoneReady   StopReason = "none_ready"  // tasks left, none can run: exit 1
	StopLimit       StopReason = "limit"       // iterations, cost or time: exit 3
	StopInterrupted StopReason = "interrupted" // stopped by the user: exit 130
	StopPaused      StopReason = "paused"      // paused after an iteration: exit 0
	StopFailed      StopReason = "failed"      // a task failed under --on-failure abort: exit 1
	// StopReplaced ends a session that a --new-session run replaces; no
	// run returns it.
	StopReplaced StopReason = "new_session"
	// StopError is the reason of the stopped event of a run that ended in
	// an error (a state file ralph cannot write, say); Run returns the
	// error, and the session stays recoverable.
	StopError StopReason = "error"
	// StopLowDisk ends a run whose project disk has less free space than
	// Resources.MinDiskFree before an agent would start: the session is
	// paused, for `ralph run` to continue once there is room. Exit 3, as
	// for a limit.
	StopLowDisk StopReason = "low_disk"
)

// pauses reports whether a run that stops for r leaves its session
// paused (to be continued) rather than ended.
func (r StopReason) pauses() bool {
	return r == StopInterrupted || r == StopPaused || r == StopLowDisk
}

// Outcome is how a run ended.
type Outcome struct {
	Reason     StopReason
	Detail     string
	Iterations int
	TasksDone  int // in this run
	Session    mdstate.Session
}

// FailurePolicy is what a failed attempt leads to.
type FailurePolicy string

// The policies of --on-failure.
const (
	// RetryOnFailure tries again after Backoff, doubling up to a minute,
	// until MaxAttempts, then skips the task with the reason.
	RetryOnFailure FailurePolicy = "retry"
	SkipOnFailure  FailurePolicy = "skip"  // skip the task at once
	AbortOnFailure FailurePolicy = "abort" // stop the run, the task back to pending
)
