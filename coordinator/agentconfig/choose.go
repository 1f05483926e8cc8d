package agentconfig

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ralph-dev/ralph/coordinator/agent"
)

// Asked is what the command line and the environment ask for; "" is not
// asked.
type Asked struct {
	Agent      string           // --agent
	EnvAgent   string           // $RALPH_AGENT
	Model      string           // --model
	Permission agent.Permission // --permission-mode
}

// The sources of Asked's values.
var (
	agentFlag      = Source{Kind: FromFlag, Name: "--agent"}
	agentEnv       = Source{Kind: FromEnv, Name: "RALPH_AGENT"}
	modelFlag      = Source{Kind: FromFlag, Name: "--model"}
	permissionFlag = Source{Kind: FromFlag, Name: "--permission-mode"}
)

// LookPath finds a program, by name on PATH or by path (proc.LookPath).
type LookPath func(name string) (string, error)

// Choice is the agent a run starts, and how.
type Choice struct {
	Agent        // its settings, with the command line's model and permission over them
	From  Source // why this agent
	// Path is its program, found: its bin, or on PATH; "" when it is not
	// installed, or for a name that is no CLI ralph drives (agent.Find
	// says what is wrong with either).
	Path string
}

// Choose is the agent to run (DefaultAgent) and its settings, with the
// command line's model and permission over the files'. An error is a bin
// that is not there.
func (s *Settings) Choose(asked Asked, look LookPath) (Choice, error) {
	name, from, err := s.DefaultAgent(asked, look)
	if err != nil || name == "" {
		return Choice{}, err
	}
	c := Choice{Agent: s.Agent(name), From: from}
	if asked.Model != "" {
		c.Model = Setting[string]{Value: asked.Model, From: modelFlag}
	}
	if asked.Permission != "" {
		c.Permission = Setting[agent.Permission]{Value: asked.Permission, From: permissionFlag}
	}
	if !isCLI(name) {
		return c, nil
	}
	c.Path, err = s.Path(name, look)
	return c, err
}

// DefaultAgent is the agent to run: asked.Agent, else asked.EnvAgent,
// else the project's default, else the machine's, else the first of
// agent.CLINames() that has a bin set or is on PATH; "" when none is. An
// error is a bin that is not there, met on the way.
func (s *Settings) DefaultAgent(asked Asked, look LookPath) (name string, from Source, err error) {
	switch {
	case asked.Agent != "":
		return asked.Agent, agentFlag, nil
	case asked.EnvAgent != "":
		return asked.EnvAgent, agentEnv, nil
	case s.Project.Default.IsSet():
		return s.Project.Default.Value, s.Project.Default.From, nil
	case s.Machine.Default.IsSet():
		return s.Machine.Default.Value, s.Machine.Default.From, nil
	}
	for _, n := range agent.CLINames() {
		bin := s.Agent(n).Bin
		p, err := s.Path(n, look)
		switch {
		case err != nil:
			return "", Source{}, err
		case p == "":
			continue
		case bin.IsSet():
			return n, Source{Kind: FromDetect, File: bin.From.File, Line: bin.From.Line}, nil
		}
		return n, Source{Kind: FromDetect}, nil
	}
	return "", Source{}, nil
}

// Path is the program of the agent CLI name: its bin, which must be
// there, else the program of that name on PATH; "" when neither is set
// nor found.
func (s *Settings) Path(name string, look LookPath) (string, error) {
	bin := s.Agent(name).Bin
	if !bin.IsSet() {
		p, err := look(name)
		if err != nil {
			return "", nil
		}
		return p, nil
	}
	b := bin.Value
	fix := fmt.Sprintf("fix the path there, or remove the line to use %s from PATH", name)
	switch {
	case strings.HasPrefix(b, "~"):
		return "", fmt.Errorf("%s: bin %s: ~ is not expanded; write the full path of %s", bin.From, b, name)
	case strings.ContainsRune(b, filepath.Separator) && !filepath.IsAbs(b):
		return "", fmt.Errorf("%s: bin %s is a relative path; write the full path of %s", bin.From, b, name)
	}
	p, err := look(b)
	if err != nil {
		return "", fmt.Errorf("%s: bin %s for %s does not exist or cannot be run: %s", bin.From, b, name, fix)
	}
	return p, nil
}
