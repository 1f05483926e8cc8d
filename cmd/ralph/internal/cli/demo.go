package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/coordinator"
)

// NewCmdDemo builds `ralph demo`.
func NewCmdDemo(f *Factory) *cobra.Command {
	var asJSON bool
	var step time.Duration
	cmd := &cobra.Command{
		Use:   "demo [DIR]",
		Short: "Watch the whole cycle on a sample project, no agent needed",
		Long: `Create a small sample project in DIR (default: a new temporary folder) and
run the real loop on it, with a built-in scripted agent instead of an AI
agent: it is labelled "scripted demo, no AI" everywhere it shows. You see
tasks picked in dependency and priority order, the agent's output, and every
state file written as the work goes, in a few seconds. DIR must be new or
empty. Afterwards, look at the files in DIR or run 'ralph -C DIR status'.`,
		Example: "  ralph demo\n  ralph demo /tmp/ralph-demo",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var dir string
			if len(args) == 1 {
				dir = args[0]
				if !filepath.IsAbs(dir) {
					dir = filepath.Join(f.Env.Dir, dir)
				}
			} else {
				d, err := os.MkdirTemp("", "ralph-demo-")
				if err != nil {
					return err
				}
				dir = d
			}
			if err := coordinator.WriteDemoProject(dir); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "Sample project in %s; the agent is scripted (no AI).\n\n", dir)
			co, err := coordinator.New(coordinator.Options{Root: dir, Agent: coordinator.DemoAgent{Step: step}, Command: "ralph demo", Now: f.nowFunc()})
			if err != nil {
				return err
			}
			defer co.Close()
			done := make(chan struct{})
			d := newRunDisplay(f, asJSON)
			go func() {
				defer close(done)
				d.follow(co.Events(), cmd.Context().Done())
			}()
			out, err := co.Run(cmd.Context())
			<-done
			if err != nil {
				return err
			}
			if !asJSON {
				left, skipped := openTasks(co.Project())
				fmt.Fprint(f.IO.Out, runSummary(out, d.tally, left, skipped, nil))
				fmt.Fprintf(f.IO.ErrOut, "\nNow look at %s: RALPH_TASKS.md (tasks and the session), RALPH_PROGRESS.md,\nAGENT.md and RALPH_TODO.md, or run `ralph -C %s status`.\n", dir, dir)
			}
			if out.Reason == coordinator.StopInterrupted {
				return &exitError{code: ExitInterrupted, msg: "interrupted"}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON event per line on stdout")
	cmd.Flags().DurationVar(&step, "step", 400*time.Millisecond, "pause between the scripted agent's lines")
	return cmd
}
