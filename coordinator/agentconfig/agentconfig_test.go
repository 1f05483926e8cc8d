package agentconfig_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/agentconfig"
	"github.com/ralph-dev/ralph/coordinator/proc"
)

func TestMain(m *testing.M) {
	// Version runs its child contained: this binary is the supervisor.
	proc.Supervise()
	os.Exit(m.Run())
}

const machineFile = `# My agents

Notes for me: the bullets below are ralph's settings.

- default: codex

## codex

- model: gpt-5.5
- permission: accept-edits
- args: -c 'model_reasoning_effort="high"' --search
- bin: /opt/codex/bin/codex
- env: CODEX_HOME=/home/me/.codex
- env: HTTPS_PROXY='http://proxy.local:3128'

## ` + "`claude`" + `

- model: ` + "`sonnet`" + `
- permission-mode: default
`

const projectFile = `# Working in this project

- Run the tests with -race.

## Agents

Settings for the agents that work on this project (docs/agents.md).

- default: claude

### claude

- model: opus
- args: --append-system-prompt "Answer in French"
- bin: /tmp/evil
- env: ANTHROPIC_API_KEY=sk-secret

### gemini

- permission: bypass

## Learnings

- model: not a setting, a learning
`

func TestParseMachine(t *testing.T) {
	f := agentconfig.Parse(agentconfig.ScopeMachine, "~/.config/ralph/agents.md", []byte(machineFile), "")
	if len(f.Warnings) != 0 {
		t.Fatalf("warnings: %v", f.Warnings)
	}
	src := func(line int) agentconfig.Source {
		return agentconfig.Source{Kind: agentconfig.FromMachine, File: "~/.config/ralph/agents.md", Line: line}
	}
	if want := (agentconfig.Setting[string]{Value: "codex", From: src(5)}); f.Default != want {
		t.Errorf("default = %+v, want %+v", f.Default, want)
	}
	want := map[string]agentconfig.Agent{
		"codex": {
			Name:       "codex",
			Model:      agentconfig.Setting[string]{Value: "gpt-5.5", From: src(9)},
			Permission: agentconfig.Setting[agent.Permission]{Value: agent.PermissionAcceptEdits, From: src(10)},
			Args:       agentconfig.Setting[[]string]{Value: []string{"-c", `model_reasoning_effort="high"`, "--search"}, From: src(11)},
			Bin:        agentconfig.Setting[string]{Value: "/opt/codex/bin/codex", From: src(12)},
			Env:        agentconfig.Setting[[]string]{Value: []string{"CODEX_HOME=/home/me/.codex", "HTTPS_PROXY=http://proxy.local:3128"}, From: src(13)},
		},
		"claude": {
			Name:       "claude",
			Model:      agentconfig.Setting[string]{Value: "sonnet", From: src(18)},
			Permission: agentconfig.Setting[agent.Permission]{Value: agent.PermissionDefault, From: src(19)},
		},
	}
	if !reflect.DeepEqual(f.Agents, want) {
		t.Errorf("agents =\n%+v\nwant\n%+v", f.Agents, want)
	}
	if src(5).String() != "~/.config/ralph/agents.md:5" {
		t.Errorf("source shows as %q", src(5))
	}
}

func TestParseProject(t *testing.T) {
	f := agentconfig.Parse(agentconfig.ScopeProject, "AGENT.md", []byte(projectFile), "~/.config/ralph/agents.md")
	src := func(line int) agentconfig.Source {
		return agentconfig.Source{Kind: agentconfig.FromProject, File: "AGENT.md", Line: line}
	}
	if !f.Found || f.Default.Value != "claude" || f.Default.From != src(9) {
		t.Errorf("found %v, default %+v", f.Found, f.Default)
	}
	// Only the section's bullets: not the learning above it, nor the
	// "model:" learning below the Learnings heading that ends it.
	want := map[string]agentconfig.Agent{
		"claude": {
			Name:  "claude",
			Model: agentconfig.Setting[string]{Value: "opus", From: src(13)},
			Args:  agentconfig.Setting[[]string]{Value: []string{"--append-system-prompt", "Answer in French"}, From: src(14)},
		},
		"gemini": {
			Name:       "gemini",
			Permission: agentconfig.Setting[agent.Permission]{Value: agent.PermissionBypass, From: src(20)},
		},
	}
	if !reflect.DeepEqual(f.Agents, want) {
		t.Errorf("agents =\n%+v\nwant\n%+v", f.Agents, want)
	}
	// A project file is shared: no program path, no environment (keys).
	wantWarnings := []string{
		"AGENT.md:15: bin is refused in AGENT.md: a project file is shared and versioned, no place for a program to run or an environment (keys); set it in ~/.config/ralph/agents.md",
		"AGENT.md:16: env is refused in AGENT.md: a project file is shared and versioned, no place for a program to run or an environment (keys); set it in ~/.config/ralph/agents.md",
	}
	if got := warningStrings(f.Warnings); !slices.Equal(got, wantWarnings) {
		t.Errorf("warnings =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantWarnings, "\n"))
	}
}

func TestParseProjectWithoutSection(t *testing.T) {
	f := agentconfig.Parse(agentconfig.ScopeProject, "AGENT.md", []byte("# Notes\n\n- default: codex\n\n## codex\n\n- model: x\n"), "")
	if f.Found || f.Default.IsSet() || len(f.Agents) != 0 || len(f.Warnings) != 0 {
		t.Errorf("a project file without an Agents section has settings: %+v", f)
	}
}

// TestParseSections: the section is found at any level, under a title,
// after front matter, with CRLF line ends, and ends at a heading of its
// level.
func TestParseSections(t *testing.T) {
	data := "---\ntitle: x\n---\r\n# Project\r\n\r\n### Agents:\r\n\r\n- default: gemini\r\n\r\n#### Gemini\r\n\r\n- model: gemini-2.5-pro\r\n\r\n### Style\r\n\r\n- model: prose\r\n"
	f := agentconfig.Parse(agentconfig.ScopeProject, "AGENT.md", []byte("\xef\xbb\xbf"+data), "")
	if len(f.Warnings) != 0 {
		t.Fatalf("warnings: %v", f.Warnings)
	}
	if f.Default.Value != "gemini" || f.Default.From.Line != 8 {
		t.Errorf("default = %+v", f.Default)
	}
	if g := f.Agents["gemini"]; g.Model.Value != "gemini-2.5-pro" || g.Model.From.Line != 12 || len(f.Agents) != 1 {
		t.Errorf("agents = %+v", f.Agents)
	}
	// A machine file may have an Agents section too (copied from an
	// AGENT.md): then only it counts.
	m := agentconfig.Parse(agentconfig.ScopeMachine, "agents.md", []byte("# Mine\n\n- default: nobody\n\n## Agents\n\n### codex\n\n- model: m\n"), "")
	if len(m.Warnings) != 0 || m.Default.IsSet() || m.Agents["codex"].Model.Value != "m" {
		t.Errorf("machine file with an Agents section: %+v", m)
	}
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		name, file string
		want       []string // line: message
	}{
		{"unknown key", "## codex\n- modle: o3\n",
			[]string{`2: unknown key "modle"; did you mean model? (an agent takes model, permission, args, bin and env)`}},
		{"a word for a key", "## codex\n- path: /x\n- command: /y\n",
			[]string{`2: unknown key "path"; did you mean bin?`, `3: unknown key "command"; did you mean bin?`}},
		{"unknown key, nothing near", "## codex\n- colour: blue\n",
			[]string{`2: unknown key "colour" (an agent takes model, permission, args, bin and env)`}},
		{"unknown agent", "## cladue\n- model: x\n- nonsense\n## codex\n- model: y\n",
			[]string{`1: unknown agent "cladue"; did you mean claude? (ralph drives `}},
		{"an agent's long name", "## Claude Code\n- model: x\n",
			[]string{`1: unknown agent "Claude Code"; did you mean claude?`}},
		{"unknown default", "- default: gemeni\n",
			[]string{`1: unknown agent "gemeni"; did you mean gemini? (ralph drives claude, codex, `}},
		{"default under a heading", "## codex\n- default: codex\n",
			[]string{`2: default names the agent to run when none is asked for: put it above the agents' headings, not under "codex"`}},
		{"an agent's key above the headings", "- model: o3\n",
			[]string{`1: model is one agent's setting: put it under that agent's heading, e.g. "## claude"`}},
		{"unknown key above the headings", "- defualt: codex\n",
			[]string{`1: unknown key "defualt"; did you mean default?`}},
		{"bad permission", "## codex\n- permission: yolo\n",
			[]string{`2: unknown permission mode "yolo": use bypass, accept-edits, default`}},
		{"bad quoting", "## codex\n- args: --x 'unterminated\n",
			[]string{`2: args: unterminated ' quote: quote them as in a shell`}},
		{"env without =", "## codex\n- env: FOO\n",
			[]string{`2: env: "FOO" is not KEY=VALUE`}},
		{"env with blanks", "## codex\n- env: FOO=a b\n",
			[]string{`2: env: write KEY=VALUE, one a line, and quote a value with blanks: KEY='a b'`}},
		{"empty value", "## codex\n- model:\n- bin: ``\n",
			[]string{"2: model has no value", "3: bin has no value"}},
		{"set twice", "## codex\n- model: a\n- model: b\n",
			[]string{"3: model is set again (first on line 2): this line wins"}},
		{"not a setting", "## codex\n- remember to update codex\n",
			[]string{`2: "remember to update codex" is not a setting: write "- key: value"`}},
		{"nested lines", "## codex\n- model: a\n\n  more text\n",
			[]string{"4: a setting is one line: what stands under its bullet is ignored"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := agentconfig.Parse(agentconfig.ScopeMachine, "agents.md", []byte(tt.file), "")
			got := warningStrings(f.Warnings)
			if len(got) != len(tt.want) {
				t.Fatalf("warnings =\n%s\nwant %d", strings.Join(got, "\n"), len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(got[i], "agents.md:") || !strings.Contains(got[i], w) {
					t.Errorf("warning %q does not hold %q", got[i], w)
				}
			}
		})
	}
	// What is wrong is ignored; the rest applies.
	f := agentconfig.Parse(agentconfig.ScopeMachine, "agents.md", []byte("## codex\n- modle: o3\n- model: o4\n- permission: yolo\n"), "")
	if c := f.Agents["codex"]; c.Model.Value != "o4" || c.Permission.IsSet() {
		t.Errorf("codex = %+v", c)
	}
	if set := f.Agents["codex"].Model; set.From.Line != 3 {
		t.Errorf("model from line %d", set.From.Line)
	}
}

func TestQuote(t *testing.T) {
	args := []string{"codex", "exec", "-c", `model_reasoning_effort="high"`, "it's", "", "a b", "--x=1,2", "PROMPT"}
	s := agentconfig.Quote(args)
	if want := `codex exec -c 'model_reasoning_effort="high"' 'it'\''s' '' 'a b' --x=1,2 PROMPT`; s != want {
		t.Errorf("Quote = %s, want %s", s, want)
	}
	back, err := agent.SplitCommand(s)
	if err != nil || !slices.Equal(back, args) {
		t.Errorf("SplitCommand(Quote(args)) = %q, %v", back, err)
	}
}

// settings is a project's and a machine's settings from their texts.
func settings(project, machine string) *agentconfig.Settings {
	return &agentconfig.Settings{
		Project: agentconfig.Parse(agentconfig.ScopeProject, "AGENT.md", []byte(project), "agents.md"),
		Machine: agentconfig.Parse(agentconfig.ScopeMachine, "agents.md", []byte(machine), ""),
	}
}

// onPath is a LookPath that finds the programs named, in /bin/fake.
func onPath(names ...string) agentconfig.LookPath {
	return func(name string) (string, error) {
		if slices.Contains(names, name) {
			return "/bin/fake/" + name, nil
		}
		return "", proc.ErrNotFound
	}
}

func TestPrecedence(t *testing.T) {
	const (
		project = "## Agents\n- default: gemini\n### codex\n- model: p-model\n- args: --p\n"
		machine = "- default: codex\n## codex\n- model: m-model\n- permission: default\n- args: --m\n"
	)
	tests := []struct {
		name             string
		project, machine string
		asked            agentconfig.Asked
		onPath           []string
		wantAgent        string
		wantFrom         string
	}{
		{"--agent first", project, machine, agentconfig.Asked{Agent: "claude", EnvAgent: "codex"}, nil, "claude", "--agent"},
		{"then RALPH_AGENT", project, machine, agentconfig.Asked{EnvAgent: "opencode"}, nil, "opencode", "RALPH_AGENT"},
		{"then the project", project, machine, agentconfig.Asked{}, nil, "gemini", "AGENT.md:2"},
		{"then the machine", "", machine, agentconfig.Asked{}, nil, "codex", "agents.md:1"},
		{"then the first on PATH", "", "", agentconfig.Asked{}, []string{"gemini", "codex"}, "codex", "first on PATH"},
		{"none", "", "", agentconfig.Asked{}, nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, from, err := settings(tt.project, tt.machine).DefaultAgent(tt.asked, onPath(tt.onPath...))
			if err != nil || name != tt.wantAgent || from.String() != tt.wantFrom {
				t.Errorf("DefaultAgent = %q from %q, %v; want %q from %q", name, from, err, tt.wantAgent, tt.wantFrom)
			}
		})
	}
	// Per key, the command line's, else the project's, else the machine's.
	s := settings(project, machine)
	c, err := s.Choose(agentconfig.Asked{Agent: "codex"}, onPath("codex"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Model.Value != "p-model" || c.Model.From.String() != "AGENT.md:4" ||
		c.Permission.Value != agent.PermissionDefault || c.Permission.From.String() != "agents.md:4" ||
		!slices.Equal(c.Args.Value, []string{"--p"}) || c.Path != "/bin/fake/codex" {
		t.Errorf("choice = %+v", c)
	}
	c, err = s.Choose(agentconfig.Asked{Agent: "codex", Model: "flag-model", Permission: agent.PermissionBypass}, onPath("codex"))
	if err != nil || c.Model.Value != "flag-model" || c.Model.From.String() != "--model" ||
		c.Permission.Value != agent.PermissionBypass || c.Permission.From.String() != "--permission-mode" {
		t.Errorf("choice with flags = %+v, %v", c, err)
	}
	// A name ralph does not drive is left to agent.Find to refuse.
	c, err = s.Choose(agentconfig.Asked{Agent: "aider"}, onPath("aider"))
	if err != nil || c.Name != "aider" || c.Path != "" {
		t.Errorf("choice of aider = %+v, %v", c, err)
	}
}

func TestLoad(t *testing.T) {
	home := t.TempDir()
	root, config := filepath.Join(home, "project"), filepath.Join(home, ".config")
	for _, d := range []string{root, filepath.Join(config, "ralph")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pl := agentconfig.Places{Root: root, ConfigDir: config, Home: home}
	// No files: no settings, no error.
	s, err := agentconfig.Load(pl)
	if err != nil || s.Project.Found || s.Machine.Found || len(s.Warnings()) != 0 {
		t.Fatalf("Load without files = %+v, %v", s, err)
	}
	if s.Machine.Shown != filepath.Join("~", ".config", "ralph", "agents.md") || s.Machine.Path != filepath.Join(config, "ralph", "agents.md") {
		t.Errorf("machine file %q at %q", s.Machine.Shown, s.Machine.Path)
	}
	write(t, filepath.Join(root, "AGENT.md"), projectFile)
	write(t, filepath.Join(config, "ralph", "agents.md"), machineFile)
	s, err = agentconfig.Load(pl)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Project.Found || !s.Machine.Found {
		t.Errorf("found project %v, machine %v", s.Project.Found, s.Machine.Found)
	}
	c := s.Agent("codex")
	if c.Bin.Value != "/opt/codex/bin/codex" || c.Bin.From.String() != "~/.config/ralph/agents.md:12" {
		t.Errorf("codex = %+v", c)
	}
	cl := s.Agent("claude")
	if cl.Model.Value != "opus" || cl.Model.From.String() != "AGENT.md:13" || cl.Permission.From.String() != "~/.config/ralph/agents.md:19" || cl.Bin.IsSet() || cl.Env.IsSet() {
		t.Errorf("claude = %+v", cl)
	}
	if ws := warningStrings(s.Warnings()); len(ws) != 2 || !strings.HasPrefix(ws[0], "AGENT.md:15: bin is refused") || !strings.HasSuffix(ws[0], "set it in ~/.config/ralph/agents.md") {
		t.Errorf("warnings = %q", ws)
	}
	// A file that cannot be read is an error; with no config folder,
	// there is no machine file.
	if err := os.Chmod(filepath.Join(root, "AGENT.md"), 0o000); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		if _, err := agentconfig.Load(pl); err == nil || !errors.Is(err, os.ErrPermission) {
			t.Errorf("Load of an unreadable AGENT.md: %v", err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "AGENT.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = agentconfig.Load(agentconfig.Places{Root: root})
	if err != nil || s.Machine.Found || s.Machine.Path != "" || !s.Project.Found {
		t.Errorf("Load without a config folder = %+v, %v", s.Machine, err)
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func warningStrings(ws []agentconfig.Warning) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.String()
	}
	return out
}
