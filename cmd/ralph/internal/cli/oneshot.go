package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/coordinator/agentconfig"
)

// oneShotOptions are the root command's flags for `ralph "task"`.
type oneShotOptions struct {
	Agent, AgentCmd, Model, PermissionMode string
	MaxTurns                               int
	JSON                                   bool
}

// addOneShot makes the root command run `ralph "free text task"`: one
// argument of two words or more. Anything else that is not a command is a
// usage error and never reaches an agent: a single word is a command name
// (`ralph stauts` is an unknown command), and several bare words are a
// mistyped command (`ralph taks add foo` once ran an agent with every
// permission on the prompt "taks add foo") or an unquoted task.
func addOneShot(f *Factory, root *cobra.Command) {
	var o oneShotOptions
	root.Args = func(c *cobra.Command, args []string) error {
		if len(args) > 1 || (len(args) == 1 && len(strings.Fields(args[0])) < 2) {
			return severalWords(c, args)
		}
		return nil
	}
	root.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		return runOneShot(f, c, o, args[0])
	}
	fl := root.Flags()
	fl.StringVar(&o.Agent, "agent", "", "one-shot: the agent CLI `NAME`: claude, codex, opencode, gemini or exec (ralph agents lists them)")
	fl.StringVar(&o.AgentCmd, "agent-cmd", "", "one-shot with --agent exec: the `COMMAND` to run")
	fl.StringVar(&o.Model, "model", "", "one-shot: the `MODEL` the agent uses")
	fl.BoolVar(&o.JSON, "json", false, "one-shot: print the result as JSON")
	fl.IntVar(&o.MaxTurns, "max-turns", DefaultMaxTurns, "one-shot: the agent makes at most `N` model calls (claude --max-turns; 0: no cap)")
	fl.StringVar(&o.PermissionMode, "permission-mode", "", "one-shot: "+permissionFlagUsage)
}

// severalWords refuses bare words that name no command, one or more: a
// usage error that suggests the command meant, or how to give a task.
func severalWords(c *cobra.Command, args []string) error {
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		return usageError{errors.New(msg + "; did you mean " + strings.Join(s, " or ") + "?")}
	}
	if len(args) == 1 {
		return usageError{fmt.Errorf("%s (`ralph --help` lists the commands); to give an agent a task, say it in a few words, quoted, as in ralph \"fix the login test\"", msg)}
	}
	return usageError{fmt.Errorf("%s; to give an agent a task, quote it as one argument: ralph %q", msg, strings.Join(args, " "))}
}

// runOneShot runs one task with one agent and prints the result.
func runOneShot(f *Factory, c *cobra.Command, o oneShotOptions, task string) error {
	if o.MaxTurns < 0 {
		return usagef("--max-turns must not be negative")
	}
	perm, err := askedPermission(o.PermissionMode)
	if err != nil {
		return usagef("--permission-mode: %v", err)
	}
	p, _ := f.Project()
	ag, set, err := pickAgent(f, p.Root, agentconfig.Asked{Agent: o.Agent, EnvAgent: f.Env.Agent, Model: o.Model, Permission: perm}, o.AgentCmd)
	if err != nil {
		return err
	}
	opts := coordinator.Options{Root: p.Root, Agent: ag, Model: set.Model.Value, MaxTurns: o.MaxTurns, Permission: set.Permission.Value,
		Now: f.nowFunc(), Git: f.Env.Git, Secrets: withAgentSecrets(f.Env.secrets(), set)}
	// The header goes to stderr even with --json: stdout is the result's.
	fmt.Fprintf(f.IO.ErrOut, "ralph: %s\n", newRunHeader(opts))
	res, err := coordinator.OneShot(c.Context(), opts, task)
	for _, n := range res.Notices {
		fmt.Fprintf(f.IO.ErrOut, "ralph: %s\n", n)
	}
	if err != nil {
		return err
	}
	if !o.JSON {
		printOneShot(f, res)
		return oneShotExit(res)
	}
	if err := writeJSON(f.IO.Out, res); err != nil {
		return err
	}
	if err := oneShotExit(res); err != nil {
		return shownInJSON{err} // the result's status and reason say it
	}
	return nil
}

// printOneShot shows a one-shot's result as text: the status and the
// summary on stdout, the rest on stderr; tokens and cost the agent's CLI
// did not report are unknown, never 0.
func printOneShot(f *Factory, res coordinator.OneShotResult) {
	fmt.Fprintf(f.IO.Out, "%s: %s\n", res.Status, res.Summary)
	if res.Reason != "" {
		fmt.Fprintf(f.IO.ErrOut, "  %s\n", res.Reason)
	}
	if len(res.FilesChanged) > 0 {
		fmt.Fprintf(f.IO.ErrOut, "  changed: %s\n", strings.Join(res.FilesChanged, ", "))
	}
	tokens, cost := fmt.Sprintf("%d in, %d out tokens", res.TokensIn, res.TokensOut), fmt.Sprintf("$%.4f", res.CostUSD)
	if res.UsageUnknown {
		tokens = "tokens unknown"
	}
	if res.CostUnknown {
		cost = "cost unknown"
	}
	fmt.Fprintf(f.IO.ErrOut, "  %s · %s · %s · %.1fs\n", coordinator.AgentLabel(res.Agent, res.Model), tokens, cost, float64(res.DurationMS)/1000)
}

// oneShotExit maps how a one-shot ended to ralph's exit code (nil: 0).
func oneShotExit(res coordinator.OneShotResult) error {
	switch res.Status {
	case coordinator.OneShotComplete:
		return nil
	case coordinator.OneShotInterrupted:
		return &exitError{code: ExitInterrupted, msg: "interrupted"}
	}
	return &exitError{code: ExitFailure, msg: "the task is " + string(res.Status)}
}
