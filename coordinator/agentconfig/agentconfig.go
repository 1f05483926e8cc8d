// Package agentconfig is a person's settings for the agent CLIs ralph
// drives: which one to run, and with what model, permission mode, extra
// arguments, program path and environment.
//
// Settings live in two markdown files with the same syntax
// (docs/agents.md), parsed with goldmark, never with patterns over raw text:
//
//   - per machine, agents.md in ralph's folder of the user's configuration
//     folder (MachinePath): anything, including bin (the program's path)
//     and env (its environment, which may hold keys);
//   - per project, the "Agents" section of AGENT.md, versioned with the
//     project and read by people: the default agent, model, permission and
//     args. A project file is shared, so bin and env are refused there,
//     each with a warning naming its line: a secret never goes into one,
//     and a cloned repository cannot make ralph run another program.
//
// The contract:
//
//   - reading never fails on what a file says: what cannot be used is a
//     Warning with file and line (an unknown key or agent, with a
//     suggestion; a bad value; a refused key), and the rest applies. Only
//     a file that exists and cannot be read is an error;
//   - precedence, highest first: the command line (--agent, --model,
//     --permission-mode), RALPH_AGENT, the project's settings, the
//     machine's, then detection: the first of agent.CLINames() that has a
//     bin set or is on PATH. Every value chosen carries its Source, so
//     that `ralph agents` can say why;
//   - a bin that is set but is not there is an error naming the file and
//     line, never a silent fall back to PATH: the person meant that one;
//   - Args and Env reach the child through Apply, a Backend that adds them
//     to each Request: the coordinator knows nothing of settings.
package agentconfig

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/ralph-dev/ralph/coordinator/agent"
)

// Scope says which settings file a value comes from.
type Scope string

// The settings files.
const (
	ScopeProject Scope = "project" // AGENT.md's Agents section
	ScopeMachine Scope = "machine" // agents.md in the user's config folder
)

// Kind says where a chosen value comes from.
type Kind string

// The kinds of Source, in order of precedence.
const (
	FromFlag    Kind = "flag"    // the command line: Source.Name is the flag
	FromEnv     Kind = "env"     // the environment: Source.Name is the variable
	FromProject Kind = "project" // AGENT.md: Source.File and Line
	FromMachine Kind = "machine" // the machine's agents.md: Source.File and Line
	// FromDetect is the first agent CLI found: on PATH, or through its bin
	// (Source.File and Line then name the bin's line).
	FromDetect Kind = "detected"
)

// Source is where a value comes from.
type Source struct {
	Kind Kind
	Name string // the flag (--agent) or variable (RALPH_AGENT)
	File string // the settings file, as shown (AGENT.md, ~/.config/ralph/agents.md)
	Line int    // its line, 1-based
}

// String is the source for a person: "--agent", "RALPH_AGENT",
// "AGENT.md:12", "~/.config/ralph/agents.md:3", "first on PATH".
func (s Source) String() string {
	switch s.Kind {
	case FromFlag, FromEnv:
		return s.Name
	case FromDetect:
		if s.File != "" {
			return fmt.Sprintf("first installed (bin at %s:%d)", s.File, s.Line)
		}
		return "first on PATH"
	case "":
		return ""
	}
	return fmt.Sprintf("%s:%d", s.File, s.Line)
}

// Setting is one value and where it comes from; the zero Setting is unset.
type Setting[T any] struct {
	Value T
	From  Source
}

// IsSet reports whether the setting was given anywhere.
func (s Setting[T]) IsSet() bool { return s.From.Kind != "" }

// Agent is what applies to one agent CLI: each setting with its source,
// the project's over the machine's.
type Agent struct {
	Name       string
	Model      Setting[string]
	Permission Setting[agent.Permission]
	Args       Setting[[]string] // extra CLI arguments, after ralph's own
	Bin        Setting[string]   // the program, as written: a path or a name on PATH
	Env        Setting[[]string] // KEY=VALUE, added to the child's environment
}

// Warning is something in a settings file that ralph ignored, and why.
type Warning struct {
	File    string `json:"file"` // as shown
	Line    int    `json:"line"`
	Message string `json:"message"`
}

func (w Warning) String() string { return fmt.Sprintf("%s:%d: %s", w.File, w.Line, w.Message) }

// File is one settings file, read.
type File struct {
	Scope Scope
	Path  string // where it is read from; "" when there is no place for it
	Shown string // how it is shown: "AGENT.md", "~/.config/ralph/agents.md"
	// Found is true when the file exists (for AGENT.md: with an Agents
	// section).
	Found    bool
	Default  Setting[string] // the agent to run when none is asked for
	Agents   map[string]Agent
	Warnings []Warning
}

// Settings are a project's and a machine's agent settings.
type Settings struct {
	Project, Machine File
}

// MachineFile is the machine's settings file, in ralph's folder of the
// user's configuration folder.
const MachineFile = "agents.md"

// MachinePath is the machine's settings file under configDir
// (os.UserConfigDir: $XDG_CONFIG_HOME or ~/.config on Linux,
// ~/Library/Application Support on macOS); "" when configDir is.
func MachinePath(configDir string) string {
	if configDir == "" {
		return ""
	}
	return filepath.Join(configDir, "ralph", MachineFile)
}

// Warnings are both files' warnings, the project's first, each in line
// order.
func (s *Settings) Warnings() []Warning {
	return append(slices.Clone(s.Project.Warnings), s.Machine.Warnings...)
}

// Agent is the settings that apply to the CLI named name: for each key,
// the project's, else the machine's.
func (s *Settings) Agent(name string) Agent {
	p, m := s.Project.Agents[name], s.Machine.Agents[name]
	return Agent{
		Name:       name,
		Model:      first(p.Model, m.Model),
		Permission: first(p.Permission, m.Permission),
		Args:       first(p.Args, m.Args),
		Bin:        first(p.Bin, m.Bin), // a project's is refused when read
		Env:        first(p.Env, m.Env),
	}
}

// first is the first setting that is set.
func first[T any](settings ...Setting[T]) Setting[T] {
	for _, s := range settings {
		if s.IsSet() {
			return s
		}
	}
	return Setting[T]{}
}

// isCLI reports whether name is an agent CLI ralph drives.
func isCLI(name string) bool { return slices.Contains(agent.CLINames(), name) }
