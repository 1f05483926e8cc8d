package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/mdstate"
)

// NewCmdInit builds `ralph init`.
func NewCmdInit(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "init",
		Short: "Create the state files that are missing",
		Long: `Create the five state files (AGENT.md, RALPH_GOALS.md, RALPH_TASKS.md,
RALPH_PROGRESS.md, RALPH_TODO.md) from short templates that explain
themselves. Files that exist are never touched. Adds ralph's runtime folder
.ralph/ (locks, logs, backups) to .gitignore.

The project root is the nearest folder holding RALPH_TASKS.md, else the
root of the git work tree, else the current folder.`,
		Example: "  ralph init\n  ralph -C ~/src/myproject init",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, _ := f.Project()
			return runInit(f, p)
		},
	}
}

func runInit(f *Factory, p *mdstate.Project) error {
	res, err := p.Init()
	for _, file := range res.Files {
		if file.Created {
			fmt.Fprintf(f.IO.Out, "created %s\n", file.Name)
		} else {
			fmt.Fprintf(f.IO.Out, "kept    %s (it exists)\n", file.Name)
		}
	}
	if err != nil {
		return err
	}
	if res.IgnoreAdded {
		fmt.Fprintf(f.IO.Out, "added   %s/ to %s\n", mdstate.RuntimeDir, mdstate.GitignoreFile)
	}
	if res.CreatedAny() {
		fmt.Fprintf(f.IO.ErrOut, "\nralph is set up in %s.\nNext: add a task with `ralph task add \"Write the docs\"`, or write \"- [ ] Write the docs\" in RALPH_TASKS.md.\n", p.Root)
	}
	return nil
}
