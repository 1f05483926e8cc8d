package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/ralph-dev/ralph/chat"
	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/agentconfig"
	"github.com/ralph-dev/ralph/mdstate"
)

// NewCmdChat builds `ralph chat`, which plain `ralph` on a terminal runs
// too.
func NewCmdChat(f *Factory) *cobra.Command {
	var o RunOptions
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "The interactive session: start work, watch it, steer it, stop it",
		Long: `Open an interactive session on the project. It takes the coordinator's
lock (like ralph run, so a second chat or run beside it is refused with exit
4), prints where the project stands, and waits for your commands:

  a plain line         talk with the agent: it answers with the project's
                       context, and may add tasks or change files as asked
  /run [N]             work through the tasks in the background (N: at
                       most N iterations)
  /pause /resume /stop pause after this iteration, take it back, stop now
  /status /tasks /task /goals /goal /todo /learn /context /history /log
  /agents              the CLI commands of the same names, in the session
  /agent [NAME [MODEL]] the agent in use, or switch for what starts next
  /queue               the messages queued for the agents
  /help /quit

The conversation goes on across turns and across restarts: each turn's
entry in RALPH_PROGRESS.md keeps the agent's session id, and the next turn
resumes it (an agent without sessions gets the recent turns replayed).
While work runs, a plain line is a message for the next agent (kept in
RALPH_TASKS.md's Guidance list until an agent answered it), and a line
starting with ! pauses the work, is answered as a turn, and the work then
goes on with the message in the next agent's prompt. Ctrl-C stops the work
or the answer (the agent and all it started; a task back to pending); at an
idle, empty prompt Ctrl-C twice, Ctrl-D or /quit leaves, and the session's
summary goes in the progress log.

The flags are ralph run's and shape the runs the session starts. With stdin
not a terminal, ralph chat reads commands line by line, prints no escape
codes, waits at the end of its input for the work it started, and exits
with that run's code (ralph run's exit codes).`,
		Example: `  ralph chat
  ralph chat --agent claude --model sonnet --max-cost 5
  printf '/task add "Write the docs"\n/run\n' | ralph chat`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.JSON {
				return usagef("ralph chat has no --json; use ralph run --json")
			}
			if err := o.validate(); err != nil {
				return err
			}
			opts, err := o.options(f)
			if err != nil {
				return err
			}
			opts.Command = "ralph chat"
			return chatSession(f, cmd.Context(), opts, o.permission)
		},
	}
	o.addFlags(cmd.Flags())
	_ = cmd.Flags().MarkHidden("json")
	return cmd
}

// chatSession holds the project's lock for a chat and maps how it ended
// to an exit code.
func chatSession(f *Factory, ctx context.Context, opts coordinator.Options, askedPerm agent.Permission) error {
	// The session handles Ctrl-C itself: main's handler cancels the root
	// context on the first signal, which must not end the chat.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	ctx = context.WithoutCancel(ctx)
	co, err := openCoordinator(opts)
	if err != nil {
		return err
	}
	defer co.Close()
	tty := isTerminal(f.IO.In) && isTerminal(f.IO.Out) && f.Env.Term != "dumb"
	res, err := chat.Run(ctx, chat.Options{
		Coordinator: co, In: f.IO.In, Out: f.IO.Out, Terminal: tty, Color: tty && !f.Env.NoColor,
		RunCommand: func(ctx context.Context, args []string, out io.Writer) int {
			return Main(ctx, append([]string{"-C", opts.Root}, args...), IOStreams{In: strings.NewReader(""), Out: out, ErrOut: out}, f.Env)
		},
		Signals: sigs, Git: f.Env.Git,
		// /agent: the new agent's settings apply, its permission mode
		// too, under the chat's own --permission-mode if one was given.
		PickAgent: func(name, model string) (coordinator.Agent, string, agent.Permission, error) {
			a, set, err := pickAgent(f, opts.Root, agentconfig.Asked{Agent: name, EnvAgent: f.Env.Agent, Model: model, Permission: askedPerm}, "")
			return a, set.Model.Value, set.Permission.Value, err
		},
	})
	if err != nil {
		return err
	}
	return chatExit(res, tty)
}

// chatExit: a signal's code; without a terminal, the last run's, or 1
// when the last conversation turn failed; else 0.
func chatExit(res chat.Result, tty bool) error {
	if res.Left == chat.LeftSignal {
		code := ExitInterrupted
		switch res.Signal {
		case syscall.SIGHUP:
			code = ExitHangup
		case syscall.SIGTERM:
			code = ExitTerminated
		}
		return &exitError{code: code, msg: "stopped by " + res.Signal.String() + "; `ralph run` or `ralph chat` continues the session"}
	}
	switch {
	case tty:
		return nil
	case res.LastRun != nil:
		return runExit(*res.LastRun)
	case res.TurnFailed:
		return &exitError{code: ExitFailure, msg: "the agent could not answer the last message"}
	}
	return nil
}

// isTerminal reports whether a stream is a terminal.
func isTerminal(s any) bool {
	f, ok := s.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// chatWhenBare makes plain `ralph` (no arguments, no one-shot flag) on a
// terminal, in a project with a task list, the chat; anywhere else it
// stays the help (or the one-shot).
func chatWhenBare(f *Factory, root *cobra.Command) {
	oneShot := root.RunE
	root.RunE = func(c *cobra.Command, args []string) error {
		changed := false
		c.LocalNonPersistentFlags().Visit(func(*pflag.Flag) { changed = true })
		if len(args) > 0 || changed || !isTerminal(f.IO.In) || !isTerminal(f.IO.Out) || !hasTasks(f) {
			return oneShot(c, args)
		}
		sub, _, err := c.Find([]string{"chat"})
		if err != nil {
			return oneShot(c, args)
		}
		sub.SetContext(c.Context())
		return sub.RunE(sub, nil)
	}
}

// hasTasks reports whether the project has a task list to chat about.
func hasTasks(f *Factory) bool {
	p, _ := f.Project()
	_, err := os.Stat(filepath.Join(p.Root, mdstate.TasksFile))
	return err == nil
}
