package agentconfig

import (
	"context"
	"os"
	"slices"
	"strings"

	"github.com/ralph-dev/ralph/coordinator/agent"
)

// Apply returns b with a's Args and Env added to every Request, in Run
// and in Command alike, so that what a person reads (ralph agents, a
// run's header) is what starts; b itself when a adds neither. The Args
// come after the Request's own; the Env is added to the Request's
// environment (ralph's when it has none), a variable of a's replacing
// one of the same name.
func Apply(b agent.Backend, a Agent) agent.Backend {
	if len(a.Args.Value) == 0 && len(a.Env.Value) == 0 {
		return b
	}
	return applied{Backend: b, args: a.Args.Value, env: a.Env.Value}
}

// applied is a Backend with a person's settings.
type applied struct {
	agent.Backend
	args, env []string
}

func (b applied) Run(ctx context.Context, req agent.Request, onEvent func(agent.Event)) (agent.Result, error) {
	return b.Backend.Run(ctx, b.request(req), onEvent)
}

func (b applied) Command(req agent.Request) []string {
	return b.Backend.Command(b.request(req))
}

// request is req with the settings' arguments and environment.
func (b applied) request(req agent.Request) agent.Request {
	req.Args = append(slices.Clip(req.Args), b.args...)
	if len(b.env) > 0 {
		base := req.Env
		if base == nil {
			base = os.Environ() // nil is ralph's environment, as for proc.Cmd
		}
		req.Env = MergeEnv(base, b.env)
	}
	return req
}

// MergeEnv is base with the KEY=VALUE entries of add, each replacing any
// entry of base with its name.
func MergeEnv(base, add []string) []string {
	names := make(map[string]bool, len(add))
	for _, kv := range add {
		name, _, _ := strings.Cut(kv, "=")
		names[name] = true
	}
	out := make([]string, 0, len(base)+len(add))
	for _, kv := range base {
		if name, _, _ := strings.Cut(kv, "="); !names[name] {
			out = append(out, kv)
		}
	}
	return append(out, add...)
}
