//go:build linux

package coordinator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/mdstate"
)

// TestBudgetStopsAgentAtWork: a claude that never finishes and streams the
// usage of one model call every 10 ms is stopped by each budget within a
// second of crossing it (a budget stop is a hard stop: an agent that
// ignores SIGINT too, whatever the grace); what it spent is recorded, the
// session's totals are the sum of the entries, the task is back to pending
// with a note naming the limit, and the run ends with StopLimit.
func TestBudgetStopsAgentAtWork(t *testing.T) {
	cases := []struct {
		name   string
		limit  func(*Options)
		flag   string
		sigint bool // the agent ignores SIGINT
	}{
		{"max-cost", func(o *Options) { o.MaxCost = 0.05 }, "--max-cost $0.05", false},
		{"max-tokens", func(o *Options) { o.MaxTokens = 20000 }, "--max-tokens 20000", false},
		{"max-time", func(o *Options) { o.MaxTime = time.Second }, "--max-time 1s", false},
		{"max-tokens, SIGINT ignored", func(o *Options) { o.MaxTokens = 20000 }, "--max-tokens 20000", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts, pids := fakeClaudeOptions(t, "endless")
			opts.MaxIterations = 0
			// Only a hard stop ends an agent that ignores SIGINT within
			// a second with this grace.
			opts.Grace = 5 * time.Second
			if tc.sigint {
				path := filepath.Join(t.TempDir(), "endless.jsonl")
				os.WriteFile(path, []byte("@ignore_sigint\n@endless\n"), 0o644)
				opts.Env = append(opts.Env, "FAKE_CLAUDE_SCRIPT="+path)
			}
			tc.limit(&opts)
			co := newCoordinator(t, opts)
			start := time.Now()
			out, evs := runAll(t, t.Context(), co)
			tasks, s, log := loadState(t, opts.Root)
			const stopped = "; its agent was stopped and T1 is back to pending"
			if out.Reason != StopLimit || !strings.HasPrefix(out.Detail, "reached "+tc.flag) || !strings.HasSuffix(out.Detail, stopped) || out.Iterations != 1 {
				t.Fatalf("outcome %+v", out)
			}
			checkPidsGone(t, pids)

			// Within a second of crossing the limit, the agent is gone
			// (iteration_done comes after it is).
			over := func(e Event) bool {
				return (opts.MaxCost > 0 && e.CostUSD >= opts.MaxCost) || (opts.MaxTokens > 0 && e.TokensIn+e.TokensOut >= opts.MaxTokens)
			}
			var crossed, done time.Time
			if opts.MaxTime > 0 {
				crossed = start.Add(opts.MaxTime)
			}
			for _, e := range evs {
				if e.Kind == EventUsage && crossed.IsZero() && over(e) {
					crossed = e.Time
				}
				if e.Kind == EventIterationDone {
					done = e.Time
				}
			}
			if crossed.IsZero() || done.IsZero() {
				t.Fatalf("no crossing (%s) or no iteration_done (%s) in the events", crossed, done)
			}
			late := done.Sub(crossed)
			t.Logf("%s: the agent was gone %s after the limit was crossed; recorded %d tokens, $%.4f (limits: %d tokens, $%.2f, %s)",
				tc.name, late.Round(time.Millisecond), s.TokensIn+s.TokensOut, s.CostUSD, opts.MaxTokens, opts.MaxCost, opts.MaxTime)
			if late > time.Second {
				t.Errorf("the agent was stopped %s after crossing the limit", late)
			}

			// What it spent is recorded: the session is the sum of its
			// one entry, and over the limit it crossed.
			e := log.Recent[0]
			if log.Entries != 1 || e.Get("outcome") != "interrupted" ||
				e.Get("tokens") != fmt.Sprintf("%d in, %d out", s.TokensIn, s.TokensOut) || e.Get("cost") != fmt.Sprintf("$%.4f", s.CostUSD) {
				t.Errorf("entries %+v; session %d in, %d out, $%.4f", log.Recent, s.TokensIn, s.TokensOut, s.CostUSD)
			}
			if s.TokensIn == 0 || (opts.MaxTokens > 0 && s.TokensIn+s.TokensOut < opts.MaxTokens) || (opts.MaxCost > 0 && s.CostUSD < opts.MaxCost) {
				t.Errorf("session %d in, %d out, $%.4f: under the limit it crossed", s.TokensIn, s.TokensOut, s.CostUSD)
			}
			if s.Status != "ended" || s.Reason != "limit" {
				t.Errorf("session %+v", s)
			}
			it := tasks.Find("T1")
			note := regexp.MustCompile(`^stopped at \S+ in iteration 1: ` + regexp.QuoteMeta(tc.flag) + ` reached$`)
			if it.Status != mdstate.Pending || it.Attempts != 0 || len(it.Notes) != 1 || !note.MatchString(it.Notes[0]) {
				t.Errorf("T1: %v, %d attempts, notes %q", it.Status, it.Attempts, it.Notes)
			}
		})
	}
}

// streamingAgent is an in-process agent. Its first run completes its task
// with 1000 in, 100 out, $0.01; every later one reports one model call of
// 100 in, 10 out, $0.01 every millisecond until it is stopped, then
// returns what it streamed, as the claude backend does. It keeps the cause
// of its stop.
type streamingAgent struct {
	runs  int
	cause error
}

func (*streamingAgent) Name() string { return "streaming" }

func (a *streamingAgent) Run(ctx context.Context, req agent.Request, onEvent func(agent.Event)) (agent.Result, error) {
	if a.runs++; a.runs == 1 {
		res := agent.Result{Final: "<promise>COMPLETE</promise>", Usage: agent.Usage{In: 1000, Out: 100}, CostUSD: 0.01}
		onEvent(agent.Event{Kind: agent.EventResult, Usage: res.Usage, CostUSD: res.CostUSD})
		return res, nil
	}
	var sum agent.Usage
	var cost float64
	for ctx.Err() == nil {
		u := agent.Usage{In: 100, Out: 10}
		sum.In, sum.Out, cost = sum.In+u.In, sum.Out+u.Out, cost+0.01
		onEvent(agent.Event{Kind: agent.EventUsage, Usage: u, CostUSD: 0.01})
		time.Sleep(time.Millisecond)
	}
	a.cause = context.Cause(ctx)
	return agent.Result{IsError: true, ErrorKind: agent.KindInterrupted, Usage: sum, CostUSD: cost}, nil
}

// TestBudgetCountsTheSession: the budget is the session's: what earlier
// iterations spent counts, the stop is a hard one (proc.ErrStopNow), and
// the usage events a front end sees are the iteration's running totals.
func TestBudgetCountsTheSession(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(3)})
	sa := &streamingAgent{}
	// T1 spends 1100 tokens; T2 is stopped at its fifth call.
	co := newCoordinator(t, Options{Root: dir, Agent: sa, MaxTokens: 1100 + 5*110})
	out, evs := runAll(t, t.Context(), co)
	if out.Reason != StopLimit || out.Detail != "reached --max-tokens 1650 (used 1650); its agent was stopped and T2 is back to pending" {
		t.Fatalf("outcome %+v", out)
	}
	if !errors.Is(sa.cause, proc.ErrStopNow) {
		t.Errorf("the stop's cause %v is not a hard stop", sa.cause)
	}
	var totals []int64
	for _, e := range evs {
		if e.Kind == EventUsage && e.Task == "T2" {
			totals = append(totals, e.TokensIn)
		}
	}
	if fmt.Sprint(totals) != "[100 200 300 400 500]" {
		t.Errorf("T2's usage events' input tokens %v, want running totals 100 to 500", totals)
	}
	_, s, log := loadState(t, dir)
	if s.TokensIn != 1500 || s.TokensOut != 150 || math.Abs(s.CostUSD-0.06) > 1e-9 || log.Recent[1].Get("tokens") != "500 in, 50 out" {
		t.Errorf("session %d in, %d out, $%v; entries %+v", s.TokensIn, s.TokensOut, s.CostUSD, log.Recent)
	}
}

// TestBudgetFinalFigureStopsBetweenIterations: an agent that reports no
// usage until its result is not cut short; the result's figure ends the
// run before the next task.
func TestBudgetFinalFigureStopsBetweenIterations(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(5)})
	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}, MaxTokens: 250})
	out, _ := runAll(t, t.Context(), co)
	if out.Reason != StopLimit || out.Detail != "reached --max-tokens 250 (used 330)" || out.TasksDone != 3 {
		t.Fatalf("outcome %+v", out)
	}
}

// TestMaxTimeCutsWait: --max-time ends a wait for a usage limit's reset,
// not only an iteration.
func TestMaxTimeCutsWait(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	fa := &fakeAgent{reply: func(int) agent.Result {
		return agent.Result{IsError: true, ErrorKind: agent.KindRateLimit, APIStatus: 429, ErrorText: "slow down", ResetAt: time.Now().Add(time.Hour)}
	}}
	co := newCoordinator(t, Options{Root: dir, Agent: fa, MaxTime: 300 * time.Millisecond})
	start := time.Now()
	out, _ := runAll(t, t.Context(), co)
	if took := time.Since(start); out.Reason != StopLimit || out.Detail != "reached --max-time 300ms" || took > 2*time.Second {
		t.Fatalf("outcome %+v after %s", out, took)
	}
	if fa.calls() != 1 {
		t.Errorf("%d calls", fa.calls())
	}
}
