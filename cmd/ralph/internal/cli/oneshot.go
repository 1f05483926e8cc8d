package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/coordinator"
)

// addOneShot makes the root command run `ralph "free text task"`. A task is
// two words or more: a single word is a command name, so a typo such as
// `ralph stauts` is an unknown command, never an agent run.
func addOneShot(f *Factory, root *cobra.Command) {
	var agentName, agentCmd, model string
	var asJSON bool
	unknown := root.Args
	root.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 1 && len(strings.Fields(args[0])) < 2 {
			return unknown(c, args)
		}
		return nil
	}
	root.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		task := strings.Join(args, " ")
		ag, err := pickAgent(f, agentName, agentCmd)
		if err != nil {
			return err
		}
		p, _ := f.Project()
		res, err := coordinator.OneShot(c.Context(), coordinator.Options{Root: p.Root, Agent: ag, Model: model, Now: f.nowFunc(), Git: f.Env.Git}, task)
		if err != nil {
			return err
		}
		if asJSON {
			if err := writeJSON(f.IO.Out, res); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(f.IO.Out, "%s: %s\n", res.Status, res.Summary)
			if res.Reason != "" {
				fmt.Fprintf(f.IO.ErrOut, "  %s\n", res.Reason)
			}
			if len(res.FilesChanged) > 0 {
				fmt.Fprintf(f.IO.ErrOut, "  changed: %s\n", strings.Join(res.FilesChanged, ", "))
			}
			fmt.Fprintf(f.IO.ErrOut, "  %s · %d in, %d out tokens · $%.4f · %.1fs\n", coordinator.AgentLabel(res.Agent, res.Model), res.TokensIn, res.TokensOut, res.CostUSD, float64(res.DurationMS)/1000)
		}
		switch res.Status {
		case coordinator.OneShotComplete:
			return nil
		case coordinator.OneShotInterrupted:
			return &exitError{code: ExitInterrupted, msg: "interrupted"}
		}
		return &exitError{code: ExitFailure, msg: "the task is " + string(res.Status)}
	}
	fl := root.Flags()
	fl.StringVar(&agentName, "agent", "", "one-shot: the agent CLI `NAME` (claude or exec)")
	fl.StringVar(&agentCmd, "agent-cmd", "", "one-shot with --agent exec: the `COMMAND` to run")
	fl.StringVar(&model, "model", "", "one-shot: the `MODEL` the agent uses")
	fl.BoolVar(&asJSON, "json", false, "one-shot: print the result as JSON")
}
