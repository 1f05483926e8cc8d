//go:build linux

package agent

import (
	"context"
	"math"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
)

func TestPriceOf(t *testing.T) {
	tests := []struct {
		model string
		want  Price
		ok    bool
	}{
		{"claude-sonnet-4-5-20250929", sonnetPrice, true},
		{"claude-sonnet-4-5", sonnetPrice, true},
		{"claude-opus-4-6[1m]", opus45Price, true},
		// Opus 4 and 4.1 kept the old price; a dated Opus 4 is Opus 4.
		{"claude-opus-4-20250514", opus4Price, true},
		{"claude-opus-4-1-20250805", opus4Price, true},
		{"claude-3-5-haiku-20241022", Price{Input: 0.80, Output: 4, CacheWrite: 1, CacheRead: 0.08}, true},
		// Aliases and cloud names go by family.
		{"sonnet", sonnetPrice, true},
		{"Opus", opus45Price, true},
		{"us.anthropic.claude-haiku-4-5-20251001-v1:0", haiku45Price, true},
		{"claude-fake-1", Price{}, false},
		{"", Price{}, false},
	}
	for _, tt := range tests {
		got, ok := PriceOf(tt.model)
		if got != tt.want || ok != tt.ok {
			t.Errorf("PriceOf(%q) = %+v, %v; want %+v, %v", tt.model, got, ok, tt.want, tt.ok)
		}
	}
	// A million tokens of each kind at Sonnet's price.
	if c := sonnetPrice.Cost(Tokens{Input: 1e6, CacheWrite: 1e6, CacheRead: 1e6, Output: 1e6}); math.Abs(c-(3+3.75+0.30+15)) > 1e-9 {
		t.Errorf("cost %v", c)
	}
}

// The permission mode and the turn cap reach the real argv (the fake
// records it), and IS_SANDBOX=1 goes with the bypass only.
func TestClaudePermissionAndTurns(t *testing.T) {
	tests := []struct {
		perm     Permission
		turns    int
		wantArgs []string
		sandbox  bool
	}{
		{"", 0, []string{"--dangerously-skip-permissions"}, true},
		{PermissionBypass, 12, []string{"--dangerously-skip-permissions", "--max-turns", "12"}, true},
		{PermissionAcceptEdits, 3, []string{"--permission-mode", "acceptEdits", "--max-turns", "3"}, false},
		{PermissionDefault, 0, []string{"--permission-mode", "default"}, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.perm), func(t *testing.T) {
			b, req, f := fakeClaude(t)
			req.Env = slices.DeleteFunc(req.Env, func(kv string) bool { return len(kv) > 11 && kv[:11] == "IS_SANDBOX=" })
			req.Permission, req.MaxTurns = tt.perm, tt.turns
			res, err := b.Run(t.Context(), req, nil)
			if err != nil || res.IsError {
				t.Fatalf("run: %v, %+v", err, res)
			}
			rec, err := agenttest.ReadRecord(f.record)
			if err != nil {
				t.Fatal(err)
			}
			want := append([]string{"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages"}, tt.wantArgs...)
			if !slices.Equal(rec.Args, want) {
				t.Errorf("args %q, want %q", rec.Args, want)
			}
			if got := slices.Contains(rec.Env, "IS_SANDBOX=1"); got != (tt.sandbox && os.Geteuid() == 0) {
				t.Errorf("IS_SANDBOX=1 in the env: %v (root: %v)", got, os.Geteuid() == 0)
			}
		})
	}
}

func TestParsePermission(t *testing.T) {
	for in, want := range map[string]Permission{"": PermissionBypass, "bypass": PermissionBypass, "Accept-Edits": PermissionAcceptEdits, "ask": PermissionDefault, "default": PermissionDefault} {
		if got, err := ParsePermission(in); got != want || err != nil {
			t.Errorf("ParsePermission(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParsePermission("yolo"); err == nil || err.Error() != `unknown permission mode "yolo": use bypass, accept-edits, default` {
		t.Errorf("yolo: %v", err)
	}
}

// Each model call of a claude that never finishes reports its usage as
// the CLI streams it, with its estimated cost: the input and a placeholder
// output at the call's start, the real output at its end. Stopped before
// its result, the run's Result is the sum of what it streamed.
func TestClaudeStoppedKeepsStreamedUsage(t *testing.T) {
	b, req, f := fakeClaude(t, "FAKE_CLAUDE_MODE=endless")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var events int
	var sum Usage
	var cost float64
	onEvent := func(ev Event) {
		if ev.Kind != EventUsage {
			return
		}
		events++
		sum.In += ev.Usage.In
		sum.Out += ev.Usage.Out
		cost += ev.CostUSD
		if events == 10 {
			cancel()
		}
	}
	start := time.Now()
	res, err := b.Run(ctx, req, onEvent)
	if err != nil {
		t.Fatal(err)
	}
	if res.ErrorKind != KindInterrupted || time.Since(start) > 5*time.Second {
		t.Fatalf("got %+v after %s", res, time.Since(start))
	}
	const perCallIn = agenttest.EndlessInput + agenttest.EndlessCacheWrite + agenttest.EndlessCacheRead
	tokens := Tokens{Input: agenttest.EndlessInput, CacheWrite: agenttest.EndlessCacheWrite, CacheRead: agenttest.EndlessCacheRead}
	tokens.Output = agenttest.EndlessOutput
	perCallCost := sonnetPrice.Cost(tokens)
	tokens.Output = 1
	startCost := sonnetPrice.Cost(tokens)
	// calls started; the last may not have reported its end.
	calls := sum.In / perCallIn
	done := calls
	if sum.Out != calls*agenttest.EndlessOutput {
		done--
	}
	if events < 10 || calls < 5 || sum.In != calls*perCallIn || sum.Out != done*agenttest.EndlessOutput+(calls-done) ||
		math.Abs(cost-float64(done)*perCallCost-float64(calls-done)*startCost) > 1e-9 {
		t.Fatalf("%d events streamed %+v, $%v; want %d in, %d out and $%v a call", events, sum, cost, perCallIn, agenttest.EndlessOutput, perCallCost)
	}
	if res.Usage != sum || math.Abs(res.CostUSD-cost) > 1e-12 {
		t.Errorf("result %+v, $%v; the calls streamed %+v, $%v", res.Usage, res.CostUSD, sum, cost)
	}
	assertGone(t, res.PID, readPids(t, f.pids, 1)...)
}
