//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/mdstate"
)

// TestRealClaudeBudget runs `ralph run --agent claude` with a budget and
// the real Claude Code CLI against a fake Messages API that answers every
// request, tool results included, with one more Write call: an agent
// that never finishes. ralph stops it within a second of the usage it
// streams crossing the limit, exits with 3, and records what it spent: no
// less than what the API reported for the calls it finished, the output
// the CLI streams only in its partial messages included. The API gets no
// request after ralph is done.
func TestRealClaudeBudget(t *testing.T) {
	const model = "claude-sonnet-4-5"
	price, ok := agent.PriceOf(model)
	if !ok {
		t.Fatalf("no price for %s", model)
	}
	cases := []struct {
		flag, value string
		over        func(tokens int64, cost float64) bool // nil for --max-time
		limit       time.Duration                         // --max-time's
	}{
		{"--max-tokens", "1500", func(tokens int64, _ float64) bool { return tokens >= 1500 }, 0},
		{"--max-cost", "0.01", func(_ int64, cost float64) bool { return cost >= 0.01 }, 0},
		{"--max-time", "4s", nil, 4 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.flag, func(t *testing.T) {
			project, home, path := realClaudeDirs(t, "# Tasks\n\n- [ ] T1: Write files forever\n")
			api := &agenttest.FakeAPI{Endless: func(n int) (string, string) {
				return filepath.Join(project, fmt.Sprintf("file%03d.txt", n)), "one more\n"
			}}
			url := api.Start(t)
			env := agenttest.FakeAPIEnv(home, url, path)
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()

			ralph := buildRalph(t)
			start := time.Now()
			res, err := proc.Run(ctx, proc.Cmd{Name: ralph, Args: []string{"run", "--agent", "claude", "--model", model, "--json",
				tc.flag, tc.value}, Dir: project, Env: env})
			if err != nil {
				t.Fatal(err)
			}
			wall := time.Since(start)
			if res.ExitCode != 3 || !bytes.Contains(res.Stderr, []byte("ralph: reached "+tc.flag+" ")) {
				t.Fatalf("exit %d after %s\nstdout: %s\nstderr: %s", res.ExitCode, wall, res.Stdout, res.Stderr)
			}
			calls := api.Posts()
			crossed, first, done := budgetTimes(t, res.Stdout, tc.over)
			if tc.limit > 0 {
				// The run's clock starts before its first event.
				crossed = first.Add(tc.limit)
			}
			late := done.Sub(crossed)
			if late > time.Second {
				t.Errorf("the CLI was stopped %s after the limit was crossed", late)
			}
			// Nothing of the CLI's is left asking the API for more.
			time.Sleep(time.Second)
			if n := len(api.Posts()); n != len(calls) {
				t.Errorf("the API got %d more requests after ralph exited", n-len(calls))
			}

			cl, err := mdstate.Open(project).LoadChecklist(mdstate.TasksKind)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := cl.Session()
			// The stop comes when the streamed figures cross the limit;
			// the record is the CLI's own figure at its stop, which may
			// fall short of the estimate by part of a call.
			perCall := agent.Tokens{Input: agenttest.FakeInputTokens, Output: agenttest.FakeToolCallOutput}
			if s == nil || s.Reason != "limit" || (tc.over != nil && !tc.over(s.TokensIn+s.TokensOut+perCall.Input+perCall.Output, s.CostUSD+price.Cost(perCall))) {
				t.Fatalf("session %+v", s)
			}
			if t1 := cl.Find("T1"); t1.Status != mdstate.Pending || t1.Attempts != 0 {
				t.Errorf("T1: %+v", t1)
			}
			in, out, _ := sumEntries(t, project)
			if in != s.TokensIn || out != s.TokensOut {
				t.Errorf("entries sum to %d in, %d out; the session says %d in, %d out", in, out, s.TokensIn, s.TokensOut)
			}

			// What the API reported for the calls it finished, but the
			// last (the CLI may not have passed its end on before it was
			// stopped): the record is no less.
			var finished agent.Tokens
			for _, c := range calls[:max(len(calls)-1, 0)] {
				if c.OutputTokens > 0 {
					finished.Input += c.InputTokens
					finished.Output += c.OutputTokens
				}
			}
			cost := price.Cost(finished)
			if s.TokensIn < finished.Input || s.TokensOut < finished.Output || s.CostUSD < cost-5e-5 {
				t.Errorf("recorded %d in, %d out, $%.4f; the API reported at least %d in, %d out ($%.4f)",
					s.TokensIn, s.TokensOut, s.CostUSD, finished.Input, finished.Output, cost)
			}
			// The CLI's figures at its stop are the record; the stop came
			// within three calls of the crossing, not after the output the
			// assistant lines leave out had doubled the spend.
			if tc.over != nil && tc.over(s.TokensIn+s.TokensOut-3*(perCall.Input+perCall.Output), s.CostUSD-3*price.Cost(perCall)) {
				t.Errorf("recorded %d tokens, $%.4f: more than three calls past %s %s", s.TokensIn+s.TokensOut, s.CostUSD, tc.flag, tc.value)
			}
			t.Logf("real claude, %s %s: exit 3 after %s, %d model calls; the CLI was gone %s after the crossing; recorded %d in, %d out, $%.4f; the API's finished calls %d in, %d out, $%.4f",
				tc.flag, tc.value, wall.Round(time.Millisecond), len(calls), late.Round(time.Millisecond), s.TokensIn, s.TokensOut, s.CostUSD,
				finished.Input, finished.Output, cost)
		})
	}
}
