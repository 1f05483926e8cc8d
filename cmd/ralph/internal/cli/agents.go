package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/agentconfig"
	"github.com/ralph-dev/ralph/coordinator/proc"
)

// AgentsOptions are `ralph agents`' flags.
type AgentsOptions struct {
	Agent string
	JSON  bool
}

// NewCmdAgents builds `ralph agents`.
func NewCmdAgents(f *Factory) *cobra.Command {
	var o AgentsOptions
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "The agent CLIs: installed, versions, the default, the command ralph runs",
		Long: `List the agent CLIs ralph drives, in the order it looks for them: for each,
whether it is installed and where, its version (PROGRAM --version), whether
it is the one a run starts when none is asked for and why, the exact
command ralph runs, the settings that apply and where each comes from, and
for a missing one how to install it.

The agent a run starts: --agent, else $RALPH_AGENT, else the default in the
project's AGENT.md, else the one in your machine's settings, else the first
of ` + strings.Join(agent.CLINames(), ", ") + ` that is installed (on PATH, or with a
bin set). A run that continues a paused session keeps that session's
agent unless --agent or $RALPH_AGENT says otherwise.

Per project, in an "Agents" section of AGENT.md (versioned with the
project and read by people, so no bin and no env there: never secrets):

  ## Agents

  - default: codex

  ### codex

  - model: gpt-5.5
  - permission: accept-edits
  - args: -c model_reasoning_effort=high

Per machine, in agents.md in ralph's folder of your configuration folder
(~/.config/ralph/agents.md on Linux, or $XDG_CONFIG_HOME/ralph/agents.md;
~/Library/Application Support/ralph/agents.md on macOS):

  - default: claude

  ## claude

  - model: sonnet
  - bin: /opt/claude/bin/claude
  - env: HTTPS_PROXY=http://proxy.internal:3128

Keys: default (above the agents' headings: the agent to run when none is
asked for), and under an agent's heading model, permission (bypass,
accept-edits or default), args (extra arguments, quoted as in a shell),
bin (the program's full path) and env (KEY=VALUE, one a line); bin and env
in the machine's file only. For each key the project's value wins over the
machine's, and --model and --permission-mode over both. What ralph cannot
use is a warning naming the file and line. docs/agents.md has the details
and the schema of --json.

Exit codes: 0, even when no agent CLI is installed; 1 a settings file
that cannot be read; 2 usage.`,
		Example: `  ralph agents
  ralph agents --agent codex
  ralph agents --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Agent != "" && !slices.Contains(agent.CLINames(), o.Agent) {
				return usagef("--agent %q: ralph agents shows %s", o.Agent, strings.Join(agent.CLINames(), ", "))
			}
			return runAgents(f, cmd, o)
		},
	}
	cmd.Flags().StringVar(&o.Agent, "agent", "", "show the agent CLI `NAME` as the one a run starts, as ralph run --agent would")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the report as JSON (schema in docs/agents.md)")
	return cmd
}

// runAgents reports on every agent CLI.
func runAgents(f *Factory, cmd *cobra.Command, o AgentsOptions) error {
	p, _ := f.Project()
	s, err := agentconfig.Load(f.agentPlaces(p.Root))
	if err != nil {
		return err
	}
	r := s.Inspect(cmd.Context(), agentconfig.Asked{Agent: o.Agent, EnvAgent: f.Env.Agent}, proc.LookPath, DefaultMaxTurns)
	if o.JSON {
		return writeJSON(f.IO.Out, agentsJSON(s, r))
	}
	for _, w := range s.Warnings() {
		fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", w)
	}
	writeAgents(f.IO.Out, s, r, f.Env.Agent)
	return nil
}

// agentPlaces is where the agent settings are for the project at root.
func (f *Factory) agentPlaces(root string) agentconfig.Places {
	return agentconfig.Places{Root: root, ConfigDir: f.Env.ConfigDir, Home: f.Env.Home}
}

// chooseAgent is the agent CLI to run for asked, with the project's and
// the machine's settings applied (their warnings printed first).
func chooseAgent(f *Factory, root string, asked agentconfig.Asked) (coordinator.Agent, agentconfig.Choice, error) {
	s, err := agentconfig.Load(f.agentPlaces(root))
	if err != nil {
		return nil, agentconfig.Choice{}, err
	}
	for _, w := range s.Warnings() {
		fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", w)
	}
	c, err := s.Choose(asked, proc.LookPath)
	if err != nil {
		return nil, agentconfig.Choice{}, err
	}
	look := proc.LookPath
	if c.Path != "" {
		look = func(string) (string, error) { return c.Path, nil }
	}
	b, err := agent.Find(c.Name, look)
	if err != nil {
		if k := c.From.Kind; k == agentconfig.FromProject || k == agentconfig.FromMachine {
			err = fmt.Errorf("%s names %s as the default agent: %w", c.From, c.Name, err)
		}
		return nil, agentconfig.Choice{}, err
	}
	return agentconfig.Apply(b, c.Agent), c, nil
}

// askedPermission reads --permission-mode: "" when it is not given, so
// that the agent's settings apply.
func askedPermission(mode string) (agent.Permission, error) {
	if strings.TrimSpace(mode) == "" {
		return "", nil
	}
	return agent.ParsePermission(mode)
}

// withAgentSecrets is secrets and the values of c's settings' environment
// that look like secrets: redacted from what ralph writes, as the
// environment's are.
func withAgentSecrets(secrets []string, c agentconfig.Choice) []string {
	return append(slices.Clip(secrets), coordinator.SecretsFromEnv(c.Env.Value)...)
}

// writeAgents prints the report for people: one block per CLI, then where
// the settings are.
func writeAgents(w io.Writer, s *agentconfig.Settings, r agentconfig.Report, envAgent string) {
	installed := 0
	for _, st := range r.Agents {
		head := st.Name
		if st.Default {
			head += " — the default (" + r.DefaultFrom.String() + ")"
		}
		fmt.Fprintln(w, head)
		for _, l := range agentLines(st) {
			fmt.Fprintf(w, "  %-10s %s\n", l[0], l[1])
		}
		if st.Path != "" {
			installed++
		}
	}
	fmt.Fprintln(w)
	switch {
	case r.DefaultErr != nil:
		fmt.Fprintf(w, "No default agent: %v\n", r.DefaultErr)
	case envAgent != "" && !slices.Contains(agent.CLINames(), envAgent) && r.Default == "":
		fmt.Fprintf(w, "RALPH_AGENT=%s is none of these: a run uses it as it is (exec needs --agent-cmd)\n", envAgent)
	case installed == 0:
		first := r.Agents[0]
		fmt.Fprintf(w, "No agent CLI is installed. Install one, e.g. %s: %s\n(or run any agent program with ralph run --agent exec --agent-cmd \"PROGRAM ARGS\")\n", first.Name, first.Install)
	}
	fmt.Fprintf(w, "Settings: %s, %s (see ralph agents --help)\n", fileState(s.Project, "no Agents section"), fileState(s.Machine, "none"))
}

// agentLines are the lines of one CLI's block: key and text.
func agentLines(st agentconfig.Status) [][2]string {
	var out [][2]string
	switch {
	case st.PathErr != nil:
		out = append(out, [2]string{"error", st.PathErr.Error()})
	case st.Path == "":
		out = append(out, [2]string{"missing", "install with: " + st.Install})
	case st.VersionErr != nil:
		out = append(out, [2]string{"installed", st.Path + ", version unknown: " + st.VersionErr.Error()})
	default:
		out = append(out, [2]string{"installed", st.Path + ", " + st.Version})
	}
	if len(st.Command) > 0 {
		out = append(out, [2]string{"runs", agentconfig.Quote(st.Command)})
	}
	for _, set := range settingLines(st.Agent) {
		out = append(out, [2]string{set.key, set.value + " (" + set.from.String() + ")"})
	}
	return out
}

// settingLine is one setting that applies, for display.
type settingLine struct {
	key   string
	value string
	from  agentconfig.Source
}

// settingLines are the settings of a that are set, env values that look
// like secrets redacted.
func settingLines(a agentconfig.Agent) []settingLine {
	var out []settingLine
	if a.Model.IsSet() {
		out = append(out, settingLine{"model", a.Model.Value, a.Model.From})
	}
	if a.Permission.IsSet() {
		out = append(out, settingLine{"permission", string(a.Permission.Value), a.Permission.From})
	}
	if a.Args.IsSet() {
		out = append(out, settingLine{"args", agentconfig.Quote(a.Args.Value), a.Args.From})
	}
	if a.Bin.IsSet() {
		out = append(out, settingLine{"bin", a.Bin.Value, a.Bin.From})
	}
	if a.Env.IsSet() {
		out = append(out, settingLine{"env", strings.Join(shownEnv(a.Env.Value), " "), a.Env.From})
	}
	return out
}

// shownEnv is env with the values that look like secrets redacted.
func shownEnv(env []string) []string {
	secrets := coordinator.SecretsFromEnv(env)
	out := make([]string, len(env))
	for i, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if slices.Contains(secrets, value) {
			value = coordinator.Redacted
		}
		out[i] = name + "=" + value
	}
	return out
}

// fileState is a settings file and whether it has settings.
func fileState(f agentconfig.File, none string) string {
	if f.Found {
		return f.Shown
	}
	return f.Shown + " (" + none + ")"
}

// The --json report. Its schema is documented in docs/agents.md: keep
// them together.
type (
	agentsReportJSON struct {
		Default       *string        `json:"default"`
		DefaultFrom   *sourceJSON    `json:"default_from"`
		DefaultError  *string        `json:"default_error"`
		Agents        []agentJSON    `json:"agents"`
		SettingsFiles []settingsFile `json:"settings_files"`
		Warnings      []warningJSON  `json:"warnings"`
	}
	agentJSON struct {
		Name         string                  `json:"name"`
		Installed    bool                    `json:"installed"`
		Path         *string                 `json:"path"`
		Version      *string                 `json:"version"`
		VersionError *string                 `json:"version_error"`
		Error        *string                 `json:"error"`
		Default      bool                    `json:"default"`
		Command      []string                `json:"command"`
		Install      string                  `json:"install"`
		Settings     map[string]*settingJSON `json:"settings"`
	}
	settingJSON struct {
		Value any        `json:"value"`
		From  sourceJSON `json:"from"`
	}
	sourceJSON struct {
		Kind agentconfig.Kind `json:"kind"`
		Name *string          `json:"name"`
		File *string          `json:"file"`
		Line *int             `json:"line"`
		Text string           `json:"text"`
	}
	settingsFile struct {
		Scope agentconfig.Scope `json:"scope"`
		Path  *string           `json:"path"`
		Shown string            `json:"shown"`
		Found bool              `json:"found"`
	}
	warningJSON struct {
		File    string `json:"file"`
		Line    int    `json:"line"`
		Message string `json:"message"`
	}
)

// agentsJSON is the report in its --json form.
func agentsJSON(s *agentconfig.Settings, r agentconfig.Report) agentsReportJSON {
	out := agentsReportJSON{Default: optional(r.Default), Agents: []agentJSON{}, Warnings: []warningJSON{}}
	if r.Default != "" {
		src := toSourceJSON(r.DefaultFrom)
		out.DefaultFrom = &src
	}
	if r.DefaultErr != nil {
		out.DefaultError = optional(r.DefaultErr.Error())
	}
	for _, st := range r.Agents {
		out.Agents = append(out.Agents, toAgentJSON(st))
	}
	for _, f := range []agentconfig.File{s.Project, s.Machine} {
		out.SettingsFiles = append(out.SettingsFiles, settingsFile{Scope: f.Scope, Path: optional(f.Path), Shown: f.Shown, Found: f.Found})
	}
	for _, w := range s.Warnings() {
		out.Warnings = append(out.Warnings, warningJSON(w))
	}
	return out
}

func toAgentJSON(st agentconfig.Status) agentJSON {
	a := agentJSON{Name: st.Name, Installed: st.Path != "", Path: optional(st.Path), Version: optional(st.Version),
		Default: st.Default, Command: st.Command, Install: st.Install, Settings: map[string]*settingJSON{}}
	if st.VersionErr != nil {
		a.VersionError = optional(st.VersionErr.Error())
	}
	if st.PathErr != nil {
		a.Error = optional(st.PathErr.Error())
	}
	if a.Command == nil {
		a.Command = []string{}
	}
	for _, k := range []string{"model", "permission", "args", "bin", "env"} {
		a.Settings[k] = nil
	}
	for _, l := range settingLines(st.Agent) {
		var v any = l.value
		switch l.key {
		case "args":
			v = st.Args.Value
		case "env":
			v = shownEnv(st.Env.Value)
		}
		a.Settings[l.key] = &settingJSON{Value: v, From: toSourceJSON(l.from)}
	}
	return a
}

func toSourceJSON(s agentconfig.Source) sourceJSON {
	j := sourceJSON{Kind: s.Kind, Name: optional(s.Name), File: optional(s.File), Text: s.String()}
	if s.Line > 0 {
		j.Line = &s.Line
	}
	return j
}

// optional is s, or nil (JSON null) for "".
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
