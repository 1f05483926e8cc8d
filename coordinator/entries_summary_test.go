package coordinator

import (
	"testing"
	"time"

	"github.com/ralph-dev/ralph/mdstate"
)

// An iteration whose agent was stopped before it answered has no summary
// in its entry: what the agent printed last is not one.
func TestIterationEntryKeepsOnlyAnswers(t *testing.T) {
	task := &mdstate.Item{ID: "T1", Title: "Write hello"}
	rep := AgentReport{Summary: "agent: thinking…", Decisions: []string{"half a thought"}}
	for _, tc := range []struct {
		a    attempt
		want string
	}{
		{attempt{Outcome: OutcomeInterrupted, Report: rep}, ""},
		{attempt{Outcome: OutcomeFailed, Report: rep}, ""},
		{attempt{Outcome: OutcomeDone, Answered: true, Report: AgentReport{Summary: "Wrote hello."}}, "Wrote hello."},
	} {
		e := iterationEntry(time.Now(), task, 1, "exec", tc.a, "", nil)
		if got := e.Get("summary"); got != tc.want {
			t.Errorf("%s: summary %q, want %q", tc.a.Outcome, got, tc.want)
		}
		for _, f := range e.Fields {
			if f.Key == "decisions" && tc.want == "" {
				t.Errorf("%s: decisions kept: %v", tc.a.Outcome, f.List)
			}
		}
	}
}
