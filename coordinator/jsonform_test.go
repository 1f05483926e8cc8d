package coordinator

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/mdstate"
)

// The figures EntryFigures reads back are the ones iterationEntry wrote:
// numbers when the agent's CLI reported them, nil when it did not.
func TestEntryFiguresReadWhatIterationEntryWrote(t *testing.T) {
	task := &mdstate.Item{ID: "T3", Title: "Price the cart"}
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

	known := attempt{Outcome: OutcomeDone, Took: 252 * time.Second,
		Result: agent.Result{Usage: agent.Usage{In: 20311, Out: 1840}, CostUSD: 0.0811, UsageKnown: true, CostKnown: true}}
	f := EntryFigures(iterationEntry(now, task, 2, "claude (sonnet)", known, "", nil))
	if f.Iteration == nil || *f.Iteration != 2 {
		t.Errorf("iteration = %v, want 2", f.Iteration)
	}
	if f.Duration == nil || *f.Duration != 252*time.Second {
		t.Errorf("duration = %v, want 4m12s", f.Duration)
	}
	if f.TokensIn == nil || *f.TokensIn != 20311 || f.TokensOut == nil || *f.TokensOut != 1840 {
		t.Errorf("tokens = %v, %v, want 20311, 1840", f.TokensIn, f.TokensOut)
	}
	if f.CostUSD == nil || *f.CostUSD != 0.0811 {
		t.Errorf("cost = %v, want 0.0811", f.CostUSD)
	}

	// The exec agent: its CLI reports nothing, and 0 is not free.
	unknown := attempt{Outcome: OutcomeDone, Took: time.Second}
	f = EntryFigures(iterationEntry(now, task, 1, "exec", unknown, "", nil))
	if f.TokensIn != nil || f.TokensOut != nil || f.CostUSD != nil {
		t.Errorf("unknown usage read as %v in, %v out, $%v; want nil", f.TokensIn, f.TokensOut, f.CostUSD)
	}
	if f.Iteration == nil || *f.Iteration != 1 {
		t.Errorf("iteration = %v, want 1", f.Iteration)
	}
}

// A session's ended entry: its totals as the session has them, unknown
// when no agent reported them, and marked partial when only some
// iterations did; EntryFigures and EndedSessions read them back so.
func TestEntryFiguresOfASessionSummary(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name          string
		s             mdstate.Session
		tokens, cost  string
		known         bool
		usage, costPt bool
	}{
		{"reported", mdstate.Session{TokensIn: 1200, TokensOut: 300, CostUSD: 0.25}, "1200 in, 300 out", "$0.2500", true, false, false},
		{"none reported", mdstate.Session{UsageUnknown: true, CostUnknown: true}, "unknown", "unknown", false, false, false},
		{"some reported", mdstate.Session{TokensIn: 1200, TokensOut: 300, CostUSD: 0.25, UsagePartial: true, CostPartial: true},
			"1200 in, 300 out (not counting iterations that reported none)", "$0.2500 (not counting iterations that reported none)", true, true, true},
		{"cost from some", mdstate.Session{TokensIn: 1200, TokensOut: 300, CostUSD: 0.25, CostPartial: true},
			"1200 in, 300 out", "$0.2500 (not counting iterations that reported none)", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			s.ID, s.Iteration = "20261121-100000", 2
			e := summaryEntry(now, &s, "all_done", time.Minute, "")
			if e.Get("tokens") != tc.tokens || e.Get("cost") != tc.cost {
				t.Fatalf("tokens %q, cost %q; want %q, %q", e.Get("tokens"), e.Get("cost"), tc.tokens, tc.cost)
			}
			ended := EndedSessions(&mdstate.Log{Recent: []mdstate.Entry{e}})
			if len(ended) != 1 {
				t.Fatalf("ended sessions: %+v", ended)
			}
			f := ended[0].Figures
			if (f.TokensIn != nil) != tc.known || (f.CostUSD != nil) != tc.known || f.UsagePartial != tc.usage || f.CostPartial != tc.costPt {
				t.Fatalf("figures %+v", f)
			}
			if tc.known && (*f.TokensIn != 1200 || *f.TokensOut != 300 || *f.CostUSD != 0.25) {
				t.Fatalf("figures %d in, %d out, $%v", *f.TokensIn, *f.TokensOut, *f.CostUSD)
			}
		})
	}
}

// A person's entry: what ralph cannot read is nil, never 0.
func TestEntryFiguresOfAPersonsEntry(t *testing.T) {
	e := mdstate.Entry{Title: "notes", Fields: []mdstate.Field{
		{Key: "iteration", Value: "third"},
		{Key: "duration", Value: "about an hour"},
		{Key: "tokens", Value: "a lot"},
		{Key: "cost", Value: "$NaN"},
	}}
	if f := EntryFigures(e); f != (Figures{}) {
		t.Errorf("EntryFigures(%v) = %+v, want all nil", e.Fields, f)
	}
	if f := EntryFigures(mdstate.Entry{Fields: []mdstate.Field{{Key: "cost", Value: "0.5"}}}); f.CostUSD != nil {
		t.Errorf("a cost without $ read as %v; ralph writes $", *f.CostUSD)
	}
}

func TestEventJSONUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   Event
		want string // a part of the JSON
		not  string // what must not be in it
	}{
		{"known", Event{Kind: EventIterationDone, TokensIn: 10, TokensOut: 5, CostUSD: 0.25},
			`"tokens_in":10,"tokens_out":5,"cost_usd":0.25`, "null"},
		{"known zero", Event{Kind: EventIterationDone},
			`"tokens_in":0,"tokens_out":0,"cost_usd":0`, "null"},
		{"unknown", Event{Kind: EventIterationDone, UsageUnknown: true, CostUnknown: true},
			`"tokens_in":null,"tokens_out":null,"cost_usd":null`, `"tokens_in":0`},
		{"tokens without a price", Event{Kind: EventIterationDone, TokensIn: 7, TokensOut: 3, CostUnknown: true},
			`"tokens_in":7,"tokens_out":3,"cost_usd":null`, ""},
		{"not a usage event", Event{Kind: EventNotice, Text: "hello"},
			`"text":"hello"`, "tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			got := string(b)
			if !strings.Contains(got, tc.want) || (tc.not != "" && strings.Contains(got, tc.not)) {
				t.Errorf("json = %s, want %s and not %q", got, tc.want, tc.not)
			}
			if !strings.HasPrefix(got, `{"event":"`+string(tc.ev.Kind)+`"`) {
				t.Errorf("json = %s, want the kind first", got)
			}
		})
	}
}

func TestOneShotResultJSON(t *testing.T) {
	b, err := json.Marshal(OneShotResult{Status: OneShotComplete, Agent: "exec", UsageUnknown: true, CostUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"status":"complete","summary":null,"agent":"exec","model":null,"session_id":null,"tokens_in":null,"tokens_out":null,` +
		`"cost_usd":null,"duration_ms":0,"files_changed":[],"learnings":[],"todos":[],"commit":null,"reason":null,"notices":[]}`
	if string(b) != want {
		t.Errorf("json =\n%s\nwant\n%s", b, want)
	}
	b, err = json.Marshal(OneShotResult{Status: OneShotBlocked, Agent: "claude", Model: "sonnet", TokensIn: 12, CostUSD: 0.5, Reason: "needs a key"})
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{`"model":"sonnet"`, `"tokens_in":12,"tokens_out":0,"cost_usd":0.5`, `"reason":"needs a key"`} {
		if !strings.Contains(string(b), part) {
			t.Errorf("json = %s, want %s", b, part)
		}
	}
}
