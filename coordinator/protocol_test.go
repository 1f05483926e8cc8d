package coordinator

import (
	"slices"
	"testing"
)

func TestParseReport(t *testing.T) {
	tests := []struct {
		name, final string
		verdict     Verdict
		reason      string
		learnings   []string
		todos       []string
		decisions   []string
		summary     string
	}{
		{name: "complete", final: "Wrote the parser.\n\n<promise>COMPLETE</promise>\n", verdict: VerdictComplete, summary: "Wrote the parser."},
		{name: "blocked with reason", final: "Tried.\n<promise>BLOCKED: the API key is missing</promise>", verdict: VerdictBlocked, reason: "the API key is missing", summary: "Tried."},
		{name: "blocked without reason", final: "<promise>BLOCKED</promise>", verdict: VerdictBlocked, reason: "the agent gave no reason"},
		{name: "no marker", final: "I think it works now.", verdict: VerdictNone, summary: "I think it works now."},
		// A marker quoted in the middle of the message is not a verdict:
		// the agent explaining the protocol back, or quoting a file.
		{name: "marker quoted mid-text", final: "The prompt says to print <promise>COMPLETE</promise> when done, but tests fail.", verdict: VerdictNone},
		{name: "last promise wins", final: "<promise>BLOCKED: x</promise>\nfixed it after all\n<promise>COMPLETE</promise>", verdict: VerdictComplete},
		{name: "tags", final: "Done.\n<learning>Run make gen\nbefore tests</learning>\n<todo>Add retries</todo><todo> </todo>\n<decision>Used goldmark</decision>\n<promise>COMPLETE</promise>",
			verdict: VerdictComplete, learnings: []string{"Run make gen before tests"}, todos: []string{"Add retries"}, decisions: []string{"Used goldmark"}, summary: "Done."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ParseReport(tt.final)
			if r.Verdict != tt.verdict || r.Reason != tt.reason {
				t.Fatalf("verdict %q reason %q, want %q %q", r.Verdict, r.Reason, tt.verdict, tt.reason)
			}
			if !slices.Equal(r.Learnings, tt.learnings) || !slices.Equal(r.Todos, tt.todos) || !slices.Equal(r.Decisions, tt.decisions) {
				t.Fatalf("tags %q %q %q", r.Learnings, r.Todos, r.Decisions)
			}
			if tt.summary != "" && r.Summary != tt.summary {
				t.Fatalf("summary %q, want %q", r.Summary, tt.summary)
			}
		})
	}
}
