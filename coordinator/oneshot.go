package coordinator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/gitctx"
	"github.com/ralph-dev/ralph/mdstate"
)

// OneShotResult is what `ralph "task" --json` prints.
type OneShotResult struct {
	Status       string   `json:"status"` // complete, incomplete, blocked, failed, interrupted
	Summary      string   `json:"summary"`
	Agent        string   `json:"agent"`
	Model        string   `json:"model"`
	SessionID    string   `json:"session_id"`
	TokensIn     int64    `json:"tokens_in"`
	TokensOut    int64    `json:"tokens_out"`
	CostUSD      float64  `json:"cost_usd"`
	DurationMS   int64    `json:"duration_ms"`
	FilesChanged []string `json:"files_changed"`
	Learnings    []string `json:"learnings"`
	Todos        []string `json:"todos"`
	Commit       *string  `json:"commit"`
	Reason       string   `json:"reason,omitempty"` // why, when not complete
}

// OneShot runs one free-text task with a minimal context and no loop. It
// does not take the coordinator lock, so it works beside a running session;
// its writes go through the state lock like every other, so neither
// clobbers the other. It appends a progress entry, and learnings and
// to-dos land as in the loop.
//
// Of o it uses Root, Agent, Model, Env, the timeouts and Now.
func OneShot(ctx context.Context, o Options, task string) (OneShotResult, error) {
	o = o.withDefaults()
	p := mdstate.Open(o.Root)
	if err := p.Recover(); err != nil {
		return OneShotResult{}, err
	}
	out := OneShotResult{Agent: o.Agent.Name(), Model: o.Model, FilesChanged: []string{}, Learnings: []string{}, Todos: []string{}}
	before := dirtyPaths(ctx, o.Root)

	// Minimal context: goals, learnings, the project and git; no task list.
	r, err := BuildReport(ctx, o.Root, ReportOptions{Commits: 3, Progress: 3})
	if err != nil {
		return out, err
	}
	r.State.Tasks = nil
	r.State.Todos = nil
	ctxText, _ := r.Prompt(PromptOptions{Budget: 4000})
	prompt := "# Your task\n\n" + strings.TrimSpace(task) + "\n\n" + ctxText + "\n" + Protocol

	started := o.Now()
	logPath := filepath.Join(o.Root, mdstate.RuntimeDir, "logs", "oneshot-"+started.UTC().Format("20060102-150405.000")+".log")
	_ = os.MkdirAll(filepath.Dir(logPath), 0o755)
	raw, err := os.Create(logPath)
	if err != nil {
		return out, fmt.Errorf("create the run log: %w", err)
	}
	defer raw.Close()
	res, runErr := o.Agent.Run(ctx, agent.Request{Prompt: prompt, Dir: o.Root, Model: o.Model, Env: o.Env, RawLog: raw,
		NoOutputTimeout: o.NoOutputTimeout, Timeout: o.IterationTimeout, Grace: o.Grace}, func(agent.Event) {})
	out.DurationMS = o.Now().Sub(started).Milliseconds()
	out.SessionID, out.TokensIn, out.TokensOut, out.CostUSD = res.SessionID, res.Usage.In, res.Usage.Out, res.CostUSD
	rep := ParseReport(res.Final)
	out.Summary = rep.Summary
	switch {
	case runErr != nil:
		out.Status, out.Reason = "failed", "the agent could not start: "+runErr.Error()
	case ctx.Err() != nil || res.ErrorKind == "interrupted":
		out.Status, out.Reason = "interrupted", "stopped"
	case res.IsError || res.ErrorKind != "":
		out.Status, out.Reason = "failed", failureNote(res)
	case rep.Verdict == VerdictComplete:
		out.Status = "complete"
	case rep.Verdict == VerdictBlocked:
		out.Status, out.Reason = "blocked", rep.Reason
	default:
		out.Status, out.Reason = "incomplete", "the agent ended without <promise>COMPLETE</promise>"
	}
	after := dirtyPaths(ctx, o.Root)
	for _, f := range after {
		if !slices.Contains(before, f) {
			out.FilesChanged = append(out.FilesChanged, f)
		}
	}

	// What the agent reported lands like in the loop.
	c := &Coordinator{opts: Options{Root: o.Root, Now: o.Now}, p: p, events: make(chan Event, 64)}
	go func() {
		for range c.events {
		}
	}()
	err = c.writeReport(rep)
	close(c.events)
	if err != nil {
		return out, err
	}
	out.Learnings = append(out.Learnings, rep.Learnings...)
	out.Todos = append(out.Todos, rep.Todos...)
	entry := mdstate.Entry{Time: o.Now(), Title: "one-shot: " + oneLineText(task), Fields: []mdstate.Field{
		{Key: "outcome", Value: out.Status},
		{Key: "agent", Value: AgentLabel(out.Agent, o.Model)},
		{Key: "duration", Value: (time.Duration(out.DurationMS) * time.Millisecond).Round(time.Second).String()},
		{Key: "tokens", Value: fmt.Sprintf("%d in, %d out", out.TokensIn, out.TokensOut)},
		{Key: "cost", Value: fmt.Sprintf("$%.4f", out.CostUSD)},
	}}
	if out.Reason != "" {
		entry.Fields = append(entry.Fields, mdstate.Field{Key: "note", Value: out.Reason})
	}
	if out.Summary != "" {
		entry.Fields = append(entry.Fields, mdstate.Field{Key: "summary", Value: out.Summary})
	}
	if len(out.FilesChanged) > 0 {
		entry.Fields = append(entry.Fields, mdstate.Field{Key: "files", Value: strings.Join(out.FilesChanged, ", ")})
	}
	if len(rep.Decisions) > 0 {
		entry.Fields = append(entry.Fields, mdstate.Field{Key: "decisions", List: rep.Decisions})
	}
	if err := p.AppendProgress(entry); err != nil {
		return out, err
	}
	return out, nil
}

// dirtyPaths lists the work tree's changed and untracked paths, or nothing
// without git.
func dirtyPaths(ctx context.Context, root string) []string {
	st, err := gitctx.CLIStatus(ctx, root, 0)
	if err != nil || !st.Available {
		return nil
	}
	var out []string
	for _, l := range [][]string{st.Modified, st.Added, st.Deleted, st.Untracked} {
		out = append(out, l...)
	}
	slices.Sort(out)
	return out
}
