//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/mdstate"
)

// TestBudgetStopsRalphRun runs the real ralph binary, `ralph run --agent
// claude --json`, with a claude that never finishes: the fake on PATH
// (TestMain) in its endless mode, one model call of 1,100 tokens every
// 10 ms, priced as Sonnet 4.5. Each of --max-cost, --max-tokens and
// --max-time stops it within a second of being crossed, ralph exits with
// 3, the session's totals are the sum of its entries, and the task is back
// to pending with a note naming the limit. The overshoot is logged.
func TestBudgetStopsRalphRun(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: -short; builds ralph and runs it three times")
	}
	claude, err := proc.LookPath("claude")
	if err != nil || filepath.Dir(claude) == "" {
		t.Fatalf("the fake claude is not on PATH: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(claude), "ralph-holdlock")); err != nil {
		t.Fatalf("claude on PATH (%s) is not this test's fake", claude)
	}
	bin := buildRalph(t)
	cases := []struct {
		flag, value string
		over        func(tokens int64, cost float64) bool // the usage reached the limit
		note        string
	}{
		{"--max-cost", "0.05", func(_ int64, cost float64) bool { return cost >= 0.05 }, "--max-cost $0.05"},
		{"--max-tokens", "20000", func(tokens int64, _ float64) bool { return tokens >= 20000 }, "--max-tokens 20000"},
		{"--max-time", "1s", nil, "--max-time 1s"},
	}
	for _, tc := range cases {
		t.Run(tc.flag, func(t *testing.T) {
			dir := t.TempDir()
			tasks := "# Tasks\n\n- [ ] T1: Loop forever\n- [ ] T2: Never reached\n"
			if err := os.WriteFile(filepath.Join(dir, mdstate.TasksFile), []byte(tasks), 0o644); err != nil {
				t.Fatal(err)
			}
			env := append(os.Environ(), "HOME="+t.TempDir(), "FAKE_CLAUDE_MODE=endless", "GORACE=atexit_sleep_ms=0", "RALPH_NOW=")
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			start := time.Now()
			res, err := proc.Run(ctx, proc.Cmd{Name: bin, Args: []string{"run", "--agent", "claude", "--json", tc.flag, tc.value}, Dir: dir, Env: env})
			if err != nil {
				t.Fatal(err)
			}
			wall := time.Since(start)
			if res.ExitCode != 3 {
				t.Fatalf("exit %d, want 3\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
			}
			if !bytes.Contains(res.Stderr, []byte("ralph: reached "+tc.note)) {
				t.Errorf("stderr does not name the limit:\n%s", res.Stderr)
			}

			// From the limit's crossing (the first usage event past it,
			// or the deadline) to the agent gone (iteration_done).
			crossed, first, done := budgetTimes(t, res.Stdout, tc.over)
			early := crossed
			if tc.over == nil {
				// --max-time counts from the run's start inside ralph,
				// which is after ralph's process started and before its
				// first event: the limit was crossed a second after some
				// moment between the two. Stopped before the earliest
				// is too soon; more than a second after the latest, too
				// late. Process start-up is in neither.
				early, crossed = start.Add(time.Second), first.Add(time.Second)
			}
			late := done.Sub(crossed)
			if late > time.Second || done.Before(early.Add(-50*time.Millisecond)) {
				t.Errorf("the agent was stopped %s after the limit was crossed (%s after the earliest moment it could have been)", late, done.Sub(early))
			}

			cl, err := mdstate.Open(dir).LoadChecklist(mdstate.TasksKind)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := cl.Session()
			if s == nil || s.Status != "ended" || s.Reason != "limit" || s.Iteration != 1 {
				t.Fatalf("session %+v", s)
			}
			t1 := cl.Find("T1")
			note := regexp.MustCompile(`^stopped at \S+ in iteration 1: ` + regexp.QuoteMeta(tc.note) + ` reached$`)
			if t1.Status != mdstate.Pending || t1.Attempts != 0 || len(t1.Notes) != 1 || !note.MatchString(t1.Notes[0]) {
				t.Errorf("T1: %v, %d attempts, notes %q", t1.Status, t1.Attempts, t1.Notes)
			}
			in, out, cost := sumEntries(t, dir)
			if in != s.TokensIn || out != s.TokensOut || fmt.Sprintf("%.4f", cost) != fmt.Sprintf("%.4f", s.CostUSD) || in == 0 {
				t.Errorf("entries sum to %d in, %d out, $%.4f; the session says %d in, %d out, $%.4f", in, out, cost, s.TokensIn, s.TokensOut, s.CostUSD)
			}
			if tc.over != nil && !tc.over(s.TokensIn+s.TokensOut, s.CostUSD) {
				t.Errorf("recorded %d tokens, $%.4f: under the limit that stopped it", s.TokensIn+s.TokensOut, s.CostUSD)
			}
			const perCall = agenttest.EndlessInput + agenttest.EndlessCacheWrite + agenttest.EndlessCacheRead + agenttest.EndlessOutput
			t.Logf("%s %s: exit 3 after %s; agent gone %s after the crossing; recorded %d tokens (%d calls), $%.4f",
				tc.flag, tc.value, wall.Round(time.Millisecond), late.Round(time.Millisecond), s.TokensIn+s.TokensOut, (s.TokensIn+s.TokensOut)/perCall, s.CostUSD)
		})
	}
}

// budgetTimes reads `ralph run --json` output: when the first usage event
// that over accepts came (zero when over is nil), when the first event of
// all came, and when the iteration ended.
func budgetTimes(t *testing.T, stdout []byte, over func(int64, float64) bool) (crossed, first, done time.Time) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct {
			Event     string    `json:"event"`
			Time      time.Time `json:"time"`
			TokensIn  int64     `json:"tokens_in"`
			TokensOut int64     `json:"tokens_out"`
			CostUSD   float64   `json:"cost_usd"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("a --json line that is not JSON: %q", sc.Text())
		}
		if first.IsZero() {
			first = e.Time
		}
		switch {
		case e.Event == "usage" && over != nil && crossed.IsZero() && over(e.TokensIn+e.TokensOut, e.CostUSD):
			crossed = e.Time
		case e.Event == "iteration_done":
			done = e.Time
		}
	}
	if done.IsZero() || (over != nil && crossed.IsZero()) {
		t.Fatalf("no crossing or no iteration_done in:\n%s", stdout)
	}
	return crossed, first, done
}

// sumEntries adds up the tokens and cost of a project's iteration entries.
func sumEntries(t *testing.T, dir string) (in, out int64, cost float64) {
	t.Helper()
	log, err := mdstate.Open(dir).ReadProgress(100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range log.Recent {
		if strings.HasPrefix(e.Title, "session ") {
			continue
		}
		var i, o int64
		var c float64
		if _, err := fmt.Sscanf(e.Get("tokens"), "%d in, %d out", &i, &o); err != nil {
			t.Fatalf("entry %q: tokens %q", e.Title, e.Get("tokens"))
		}
		if _, err := fmt.Sscanf(e.Get("cost"), "$%f", &c); err != nil {
			t.Fatalf("entry %q: cost %q", e.Title, e.Get("cost"))
		}
		in, out, cost = in+i, out+o, cost+c
	}
	return in, out, cost
}
