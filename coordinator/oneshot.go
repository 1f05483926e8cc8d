package coordinator

import (
	"context"
	"slices"
	"strings"

	"github.com/ralph-dev/ralph/mdstate"
)

// OneShotResult is what `ralph "task" --json` prints.
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
	before := dirtyPaths(ctx, o.Root)

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
	a, err := runAgent(ctx, o, request{Prompt: prompt, LogName: "oneshot-" + started.UTC().Format("20060102-150405.000") + ".log"})
	if err != nil {
		return out, err
	}
	out.DurationMS = a.Took.Milliseconds()
	out.SessionID, out.TokensIn, out.TokensOut, out.CostUSD = a.Result.SessionID, a.Result.Usage.In, a.Result.Usage.Out, a.Result.CostUSD
	out.Summary = a.Report.Summary
	out.Status, out.Reason = oneShotStatus(a)
	after := dirtyPaths(ctx, o.Root)
	for _, f := range after {
		if !slices.Contains(before, f) {
			out.FilesChanged = append(out.FilesChanged, f)
		}
	}
	// What the agent reported lands as in the loop.
	if err := fileReport(p, a.Report, nil); err != nil {
		return out, err
	}
	out.Learnings = append(out.Learnings, a.Report.Learnings...)
	out.Todos = append(out.Todos, a.Report.Todos...)
	if err := p.AppendProgress(redactEntry(oneShotEntry(o.Now(), task, out, o.Model, a.Report), o.redactor())); err != nil {
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
