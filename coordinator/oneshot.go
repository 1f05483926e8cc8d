package coordinator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/mdstate"
)

// OneShotResult is what `ralph "task" --json` prints, through its
// MarshalJSON (jsonform.go): null, not "" or 0, for what is unknown.
type OneShotResult struct {
	Status       OneShotStatus `json:"status"`
	Summary      string        `json:"summary"`
	Agent        string        `json:"agent"`
	Model        string        `json:"model"`
	SessionID    string        `json:"session_id"`
	TokensIn     int64         `json:"tokens_in"`
	TokensOut    int64         `json:"tokens_out"`
	CostUSD      float64       `json:"cost_usd"`
	DurationMS   int64         `json:"duration_ms"`
	FilesChanged []string      `json:"files_changed"`
	Learnings    []string      `json:"learnings"`
	Todos        []string      `json:"todos"`
	Commit       *string       `json:"commit"`
	Reason       string        `json:"reason,omitempty"` // why, when not complete
	// Notices are what a person should know that is not the agent's
	// answer: survivors of an earlier one-shot stopped, a log that could
	// not be written.
	Notices []string `json:"notices,omitempty"`
	// UsageUnknown and CostUnknown say that the agent's CLI did not
	// report the tokens or the cost (the exec agent): --json has null for
	// them, never 0 (MarshalJSON, jsonform.go).
	UsageUnknown, CostUnknown bool `json:"-"`
}

// OneShot runs one free-text task with a minimal context and no loop. It
// does not take the coordinator lock, so it works beside a running session;
// its writes go through the state lock like every other, so neither
// clobbers the other. It appends a progress entry, and learnings and
// to-dos land as in the loop.
//
// Before the agent starts it checks, as the loop does, that the disk has
// room and that the state files its report goes to will take it.
//
// Of o it uses Root, Agent, Model, Env, MaxTurns, Permission, the timeouts,
// Now, Secrets and Resources.
func OneShot(ctx context.Context, o Options, task string) (OneShotResult, error) {
	o = o.withDefaults()
	p := mdstate.Open(o.Root)
	if err := p.Recover(); err != nil {
		return OneShotResult{}, err
	}
	if err := lowDiskError(o.Root, o.Resources); err != nil {
		return OneShotResult{}, err
	}
	if err := checkStateFiles(p, oneShotFiles); err != nil {
		return OneShotResult{}, err
	}
	out := OneShotResult{Agent: o.Agent.Name(), Model: o.Model, FilesChanged: []string{}, Learnings: []string{}, Todos: []string{}}
	tell := func(text string) { out.Notices = append(out.Notices, text) }
	sweepOneShots(o.Root, tell)
	before := DirtyPaths(ctx, o.Root)

	// Minimal context: goals, learnings, the project and git; no task list.
	r, err := BuildReport(ctx, o.Root, ReportOptions{Commits: 3, Progress: 3, Git: o.Git})
	if err != nil {
		return out, err
	}
	r.State.Tasks = nil
	r.State.Todos = nil
	ctxText, _ := r.Prompt(PromptOptions{Budget: 4000})
	prompt := "# Your task\n\n" + strings.TrimSpace(task) + "\n\n" + ctxText + "\n" + Protocol

	started := o.Now()
	a, err := runAgent(ctx, o, request{Prompt: prompt, LogName: "oneshot-" + started.UTC().Format("20060102-150405.000") + ".log",
		Mark: oneShotMark(o.Root), OnNotice: tell})
	if err != nil {
		return out, err
	}
	out.DurationMS = a.Took.Milliseconds()
	out.SessionID, out.TokensIn, out.TokensOut, out.CostUSD = a.Result.SessionID, a.Result.Usage.In, a.Result.Usage.Out, a.Result.CostUSD
	out.UsageUnknown, out.CostUnknown = !usageKnown(a.Result), !costKnown(a.Result)
	out.Model = runModel(o.Model, a.Result) // the CLI's word for it, when it says
	if a.Answered {
		out.Summary = a.Report.Summary // not what a stopped agent printed last
	}
	out.Status, out.Reason = oneShotStatus(a)
	after := DirtyPaths(ctx, o.Root)
	for _, f := range after {
		if !slices.Contains(before, f) {
			out.FilesChanged = append(out.FilesChanged, f)
		}
	}
	// What the agent reported lands as in the loop.
	unfiled, err := fileReport(p, a.Report, nil)
	if err != nil {
		return out, err
	}
	out.Learnings = append(out.Learnings, a.Report.Learnings...)
	out.Todos = append(out.Todos, a.Report.Todos...)
	e := oneShotEntry(o.Now(), task, out, a.Result, a.Report)
	e.Fields = append(e.Fields, unfiled.fields()...)
	if err := p.AppendProgress(redactEntry(e, o.redactor())); err != nil {
		return out, err
	}
	return out, nil
}

// OneShotStatus is how a one-shot run ended.
type OneShotStatus string

// The statuses of a one-shot run, as --json prints them.
const (
	OneShotComplete    OneShotStatus = "complete"
	OneShotIncomplete  OneShotStatus = "incomplete" // the agent answered without COMPLETE
	OneShotBlocked     OneShotStatus = "blocked"
	OneShotFailed      OneShotStatus = "failed"
	OneShotInterrupted OneShotStatus = "interrupted"
)

// oneShotStatus names how a one-shot run ended, and why when it is not
// complete.
func oneShotStatus(a attempt) (OneShotStatus, string) {
	switch {
	case a.Outcome == OutcomeDone:
		return OneShotComplete, ""
	case a.Outcome == OutcomeBlocked:
		return OneShotBlocked, a.Note
	case a.Outcome == OutcomeInterrupted:
		return OneShotInterrupted, "stopped"
	case a.Answered:
		return OneShotIncomplete, a.Note
	}
	return OneShotFailed, a.Note
}

// A one-shot has no session to recover, so its agent's processes carry a
// mark of their own: "oneshot-<pid>-<start>@<root>", the pid and start
// time (proc.StartTime) of the ralph that runs it. While that ralph runs,
// its supervisor contains them; when ralph and its supervisor were both
// killed (kill -9 of every ralph process), what the agent left running
// keeps the mark, and the next start in the project, a `ralph run` or
// another one-shot, stops it (sweepOneShots). One-shots run beside a
// session and beside each other: a mark whose ralph still runs is left
// alone.

// oneShotMarkPrefix begins every one-shot's mark.
const oneShotMarkPrefix = "oneshot-"

// oneShotMark is the mark on the processes of a one-shot this ralph runs
// in root.
func oneShotMark(root string) string {
	pid := os.Getpid()
	start, _ := proc.StartTime(pid) // 0 where it cannot be read: no sweep there either
	return fmt.Sprintf("%s%d-%d@%s", oneShotMarkPrefix, pid, start, root)
}

// orphanedOneShot reports whether mark is that of a one-shot in root whose
// ralph no longer runs: its pid is gone, or taken by a process that
// started at another time.
func orphanedOneShot(root, mark string) bool {
	rest, ok := strings.CutSuffix(mark, "@"+root)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, oneShotMarkPrefix)
	if !ok {
		return false
	}
	pidText, startText, ok := strings.Cut(rest, "-")
	pid, perr := strconv.Atoi(pidText)
	start, serr := strconv.ParseUint(startText, 10, 64)
	if !ok || perr != nil || serr != nil || pid <= 0 || start == 0 {
		return false // not a mark this ralph writes: not ours to judge
	}
	got, err := proc.StartTime(pid)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) // gone; unreadable is not proof
	}
	return got != start
}

// sweepOneShots stops what the agents of earlier one-shots in root left
// running after their ralph died, and tells of it. Failing to stop one is
// told, not fatal: the work can go on beside it.
func sweepOneShots(root string, tell func(string)) {
	n, err := proc.KillMarkedIf(func(mark string) bool { return orphanedOneShot(root, mark) })
	switch {
	case err != nil:
		tell("ralph could not stop every process an earlier one-shot's agent left running: " + err.Error())
	case n > 0:
		tell(fmt.Sprintf("stopped %d processes an earlier one-shot's agent left running", n))
	}
}
