package coordinator

import (
	"os"
	"testing"

	"github.com/ralph-dev/ralph/mdstate"
)

func TestChooseAgent(t *testing.T) {
	session := func(status, agent string) string {
		return "# Tasks\n\n- [/] T1: Work\n\n## Session\n\n- id: 20261122-100312\n- status: " + status + "\n- agent: " + agent + "\n"
	}
	tests := []struct {
		name  string
		tasks string // "" for no RALPH_TASKS.md
		in    AgentChoice
		want  AgentChoice
	}{
		{"continues claude and its model", session("interrupted", "claude (sonnet)"), AgentChoice{},
			AgentChoice{Agent: "claude", Model: "sonnet"}},
		{"a paused one too, without a model", session("paused", "claude"), AgentChoice{},
			AgentChoice{Agent: "claude"}},
		{"the model asked for wins", session("running", "claude (sonnet)"), AgentChoice{Model: "opus"},
			AgentChoice{Agent: "claude", Model: "opus"}},
		{"an ended session", session("ended", "claude (sonnet)"), AgentChoice{}, AgentChoice{}},
		{"a new session", session("paused", "claude (sonnet)"), AgentChoice{NewSession: true}, AgentChoice{NewSession: true}},
		{"an agent asked for", session("paused", "claude (sonnet)"), AgentChoice{Agent: "exec", Command: "x"}, AgentChoice{Agent: "exec", Command: "x"}},
		{"a default agent", session("paused", "claude (sonnet)"), AgentChoice{DefaultAgent: "codex"}, AgentChoice{DefaultAgent: "codex"}},
		{"a command", session("paused", "claude (sonnet)"), AgentChoice{Command: "my-agent"}, AgentChoice{Command: "my-agent"}},
		{"an exec session needs its command again", session("paused", "exec"), AgentChoice{}, AgentChoice{}},
		{"the demo's agent", session("paused", DemoAgentName), AgentChoice{}, AgentChoice{}},
		{"no session", "# Tasks\n\n- [ ] T1: Work\n", AgentChoice{Model: "m"}, AgentChoice{Model: "m"}},
		{"no tasks file", "", AgentChoice{}, AgentChoice{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mdstate.Open(t.TempDir())
			if tc.tasks != "" {
				if err := os.WriteFile(p.Path(mdstate.TasksFile), []byte(tc.tasks), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := ChooseAgent(p, tc.in); got != tc.want {
				t.Errorf("ChooseAgent(%+v) = %+v; want %+v", tc.in, got, tc.want)
			}
		})
	}
}
