package coordinator

import (
	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/mdstate"
)

// continuedAgent is the one agent a continued session keeps: Claude Code,
// by its backend's own name, as the session block records it.
var continuedAgent = agent.Claude("").Name()

// AgentChoice is what a front end was told about the agent to run.
type AgentChoice struct {
	Agent string // the agent asked for by name (--agent); "" for none
	// DefaultAgent is the agent to use when Agent is "" ($RALPH_AGENT);
	// "" for the first one installed.
	DefaultAgent string
	Command      string // the program an exec agent runs (--agent-cmd)
	Model        string // "" for the agent's own default
	NewSession   bool   // the run starts a new session
}

// ChooseAgent returns the choice to run with. A run that continues the
// project's session (one not ended, and not NewSession) without being told
// any agent keeps the agent that session used, and its model unless
// another was asked for, so that a resumed session does not switch agents
// behind the person's back. Only a Claude Code session is continued so: an
// exec agent needs its command again, and the demo's scripted agent is
// not one a run can pick. Anything else is returned as it came.
func ChooseAgent(p *mdstate.Project, c AgentChoice) AgentChoice {
	if c.NewSession || c.Agent != "" || c.DefaultAgent != "" || c.Command != "" {
		return c
	}
	tasks, err := p.LoadChecklist(mdstate.TasksKind)
	if err != nil {
		return c
	}
	s, _ := tasks.Session()
	if s == nil || s.Status == mdstate.SessionEnded || s.Agent != continuedAgent {
		return c
	}
	c.Agent = s.Agent
	if c.Model == "" {
		c.Model = s.Model
	}
	return c
}
