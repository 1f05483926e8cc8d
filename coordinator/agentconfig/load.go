package agentconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ralph-dev/ralph/mdstate"
)

// Places says where the settings files are.
type Places struct {
	Root      string // the project root, which holds AGENT.md
	ConfigDir string // the user's configuration folder; "" when unknown
	// Home is the user's home folder, shown as ~ in file names; "" shows
	// them whole.
	Home string
}

// Load reads the project's settings (the Agents section of AGENT.md in
// Root) and the machine's (MachinePath(ConfigDir)). A missing file has no
// settings; one that exists and cannot be read is an error.
func Load(pl Places) (*Settings, error) {
	machine := File{Scope: ScopeMachine, Path: MachinePath(pl.ConfigDir)}
	machine.Shown = shownPath(machine.Path, pl.Home)
	if machine.Shown == "" {
		machine.Shown = filepath.Join("$XDG_CONFIG_HOME", "ralph", MachineFile)
	}
	project := File{Scope: ScopeProject, Path: filepath.Join(pl.Root, mdstate.AgentFile), Shown: mdstate.AgentFile}
	for _, f := range []*File{&project, &machine} {
		if f.Path == "" {
			continue
		}
		data, err := os.ReadFile(f.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read the agent settings in %s: %w", f.Shown, err)
		}
		parseFile(f, data, machine.Shown)
	}
	return &Settings{Project: project, Machine: machine}, nil
}

// Parse reads the settings in data, a file of scope sc shown as shown;
// machineFile names the machine's file in the warnings of a project's.
func Parse(sc Scope, shown string, data []byte, machineFile string) File {
	f := File{Scope: sc, Shown: shown}
	parseFile(&f, data, machineFile)
	return f
}

// shownPath is path with the home folder written as ~.
func shownPath(path, home string) string {
	if home == "" || path == "" {
		return path
	}
	rel, err := filepath.Rel(home, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return path
	}
	return filepath.Join("~", rel)
}
