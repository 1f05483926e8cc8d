package coordinator

import (
	"encoding/json"
	"math"

	"github.com/ralph-dev/ralph/coordinator/agent"
)

// This file is how the coordinator's results read in JSON (`ralph run
// --json`'s events, the one-shot's result): a figure an agent's CLI did not
// report is null, never a 0 that would read as free, and an empty text is
// null, never "".

// usageKnown and costKnown say whether an agent run's tokens and cost are
// known: its CLI reported them, or gave a figure that is not 0. The exec
// agent reports neither.
func usageKnown(res agent.Result) bool { return res.UsageKnown || res.Usage != (agent.Usage{}) }
func costKnown(res agent.Result) bool  { return res.CostKnown || res.CostUSD != 0 }

// carriesUsage reports whether events of kind k carry an agent's tokens
// and cost in JSON: always, as numbers or null; other kinds leave them out.
func (k EventKind) carriesUsage() bool {
	switch k {
	case EventIterationDone, EventTurnDone, EventUsage:
		return true
	}
	return false
}

// MarshalJSON writes e with its tokens and cost as numbers on the kinds
// that carry usage, null there when the agent's CLI did not report them
// (UsageUnknown, CostUnknown), and absent on other kinds.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event // the struct's own tags, without this method
	carried := e.Kind.carriesUsage()
	return json.Marshal(struct {
		plain
		TokensIn  json.RawMessage `json:"tokens_in,omitempty"`
		TokensOut json.RawMessage `json:"tokens_out,omitempty"`
		CostUSD   json.RawMessage `json:"cost_usd,omitempty"`
	}{
		plain:     plain(e),
		TokensIn:  figure(e.TokensIn, carried, e.UsageUnknown),
		TokensOut: figure(e.TokensOut, carried, e.UsageUnknown),
		CostUSD:   figure(e.CostUSD, carried, e.CostUnknown),
	})
}

// figure is one usage figure of an event: nothing when the event does not
// carry it, null when unknown.
func figure[T int64 | float64](v T, carried, unknown bool) json.RawMessage {
	switch {
	case !carried:
		return nil
	case unknown || math.IsNaN(float64(v)) || math.IsInf(float64(v), 0):
		return json.RawMessage("null")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// oneShotJSON is OneShotResult as --json prints it, field by field: the
// contract scripts read (README.md, "JSON for scripts").
type oneShotJSON struct {
	Status       OneShotStatus `json:"status"`
	Summary      *string       `json:"summary"`
	Agent        string        `json:"agent"`
	Model        *string       `json:"model"`
	SessionID    *string       `json:"session_id"`
	TokensIn     *int64        `json:"tokens_in"`
	TokensOut    *int64        `json:"tokens_out"`
	CostUSD      *float64      `json:"cost_usd"`
	DurationMS   int64         `json:"duration_ms"`
	FilesChanged []string      `json:"files_changed"`
	Learnings    []string      `json:"learnings"`
	Todos        []string      `json:"todos"`
	Commit       *string       `json:"commit"`
	Reason       *string       `json:"reason"`
	Notices      []string      `json:"notices"`
}

// MarshalJSON writes r with null for what is unknown or empty: tokens and
// cost the agent's CLI did not report, no model, session id, summary or
// reason; lists are [] when empty.
func (r OneShotResult) MarshalJSON() ([]byte, error) {
	j := oneShotJSON{Status: r.Status, Summary: nullIfEmpty(r.Summary), Agent: r.Agent, Model: nullIfEmpty(r.Model),
		SessionID: nullIfEmpty(r.SessionID), DurationMS: r.DurationMS, FilesChanged: emptyIfNil(r.FilesChanged),
		Learnings: emptyIfNil(r.Learnings), Todos: emptyIfNil(r.Todos), Commit: r.Commit, Reason: nullIfEmpty(r.Reason),
		Notices: emptyIfNil(r.Notices)}
	if !r.UsageUnknown {
		in, out := r.TokensIn, r.TokensOut
		j.TokensIn, j.TokensOut = &in, &out
	}
	if !r.CostUnknown && !math.IsNaN(r.CostUSD) && !math.IsInf(r.CostUSD, 0) {
		usd := r.CostUSD
		j.CostUSD = &usd
	}
	return json.Marshal(j)
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func emptyIfNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}
