package agentconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/proc"
)

// Status is what ralph knows of one agent CLI.
type Status struct {
	Agent // the settings that apply to it
	// Path is its program, found; "" when it is not installed, or when
	// its bin is not there (PathErr).
	Path    string
	PathErr error
	// Version is the first line `PROGRAM --version` printed; VersionErr
	// why there is none (not for a CLI that is not installed).
	Version    string
	VersionErr error
	Default    bool     // it is the agent a run starts when none is asked for
	Command    []string // what a run starts, program first (Backend.Command); a prompt argument shows as "PROMPT"
	Install    string   // how to install it
}

// Report is what ralph knows of every agent CLI it drives.
type Report struct {
	Default     string // the agent a run starts; "" when none is installed or DefaultErr
	DefaultFrom Source // why
	DefaultErr  error  // a bin that is not there, met while choosing
	Agents      []Status
}

// VersionTimeout bounds `PROGRAM --version`: the node CLIs answer in 0.2
// to 3 s.
const VersionTimeout = 10 * time.Second

// Inspect reports on every agent CLI ralph drives, in agent.CLINames()
// order: its program, its version (the CLIs asked at the same time), its
// settings, whether it is the default and why, and the command a run
// starts with maxTurns (ralph run's --max-turns). Asked's model and
// permission apply to the default agent only, as in a run.
func (s *Settings) Inspect(ctx context.Context, asked Asked, look LookPath, maxTurns int) Report {
	var r Report
	choice, err := s.Choose(asked, look)
	if err != nil {
		r.DefaultErr = err
	} else if isCLI(choice.Name) {
		r.Default, r.DefaultFrom = choice.Name, choice.From
	}
	var wg sync.WaitGroup
	for _, name := range agent.CLINames() {
		st := Status{Agent: s.Agent(name), Install: agent.InstallHint(name), Default: name == r.Default}
		if st.Default {
			st.Agent = choice.Agent
		}
		st.Path, st.PathErr = s.Path(name, look)
		st.Command = command(st.Agent, st.Path, maxTurns)
		r.Agents = append(r.Agents, st)
	}
	for i := range r.Agents {
		st := &r.Agents[i]
		if st.Path == "" {
			continue
		}
		wg.Go(func() {
			st.Version, st.VersionErr = Version(ctx, st.Path, childEnv(st.Env.Value))
		})
	}
	wg.Wait()
	return r
}

// command is what a run of the CLI a starts, at path (its name when it is
// not installed).
func command(a Agent, path string, maxTurns int) []string {
	prog := path
	if prog == "" {
		prog = a.Name
	}
	b, err := agent.Find(a.Name, func(string) (string, error) { return prog, nil })
	if err != nil {
		return nil
	}
	return Apply(b, a).Command(agent.Request{Model: a.Model.Value, Permission: a.Permission.Value, MaxTurns: maxTurns})
}

// childEnv is ralph's environment with env added; nil (ralph's) when env
// is empty.
func childEnv(env []string) []string {
	if len(env) == 0 {
		return nil
	}
	return MergeEnv(os.Environ(), env)
}

// Version runs `bin --version` contained (coordinator/proc), with env (nil:
// ralph's), for at most VersionTimeout, and returns the first line it
// printed.
func Version(ctx context.Context, bin string, env []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, VersionTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	p, err := proc.Start(ctx, proc.Cmd{Name: bin, Args: []string{"--version"}, Env: env, Contain: true, Grace: proc.HardGrace}, &stdout, &stderr)
	if err != nil {
		return "", err
	}
	<-p.Done()
	switch code := p.ExitCode(); {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "", fmt.Errorf("--version gave no answer within %s", VersionTimeout)
	case ctx.Err() != nil:
		return "", ctx.Err()
	case code != 0:
		msg := firstLine(stderr.String())
		if msg == "" {
			msg = firstLine(stdout.String())
		}
		if msg != "" {
			return "", fmt.Errorf("--version exited with %d: %s", code, msg)
		}
		return "", fmt.Errorf("--version exited with %d", code)
	}
	v := firstLine(stdout.String())
	if v == "" {
		return "", errors.New("--version printed nothing")
	}
	return v, nil
}

// firstLine is the first non-blank line of s, trimmed and cut to 200
// characters.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if r := []rune(l); len(r) > 200 {
				l = string(r[:200]) + "…"
			}
			return l
		}
	}
	return ""
}
