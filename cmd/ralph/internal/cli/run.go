package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/mdstate"
)

// exitError carries an exit code other than 1 for a failure that has
// already been reported.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// RunOptions are `ralph run`'s flags.
type RunOptions struct {
	Agent, AgentCmd, Model, Task string
	MaxIterations                int
	MaxCost                      float64
	MaxTime                      time.Duration
	JSON                         bool
	Commit                       bool
	NewSession                   bool
	OnFailure                    string
	MaxAttempts                  int
	Breaker                      int
	Backoff                      time.Duration
	NoOutputTimeout              time.Duration
	IterationTimeout             time.Duration
}

// pickAgent resolves --agent, then RALPH_AGENT, then the first agent CLI
// on PATH.
func pickAgent(f *Factory, name, cmdline string) (coordinator.Agent, error) {
	if name == "" {
		name = f.Env.Agent
	}
	if name == "exec" || (name == "" && cmdline != "") {
		if cmdline == "" {
			return nil, usagef("--agent exec needs --agent-cmd \"PROGRAM ARGS\"")
		}
		return agent.Exec(cmdline)
	}
	if cmdline != "" {
		return nil, usagef("--agent-cmd goes with --agent exec")
	}
	return agent.Find(name, proc.LookPath)
}

// NewCmdRun builds `ralph run`.
func NewCmdRun(f *Factory) *cobra.Command {
	var o RunOptions
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Work through the tasks with child agents",
		Long: `Work through RALPH_TASKS.md: pick the next ready task (pending, its
dependencies done; priority 1 first, then file order), mark it in progress,
give it to a new child agent with the project's context, read the agent's
final message, write the result back (task status, notes, learnings,
to-dos, a progress entry), and go on until no task is ready or a limit is
reached. Everything ralph knows is in the state files as it goes; the
session (iteration, tokens, cost) is kept in RALPH_TASKS.md.

Only one coordinator runs per project. Ctrl-C stops the agent's whole
process group, puts its task back to pending and exits with 130.

The agent is --agent, else $RALPH_AGENT, else the first of claude, codex,
opencode, gemini found on PATH. --agent exec --agent-cmd "PROGRAM ARGS"
runs any program: the prompt on its stdin, its last output as its final
message.

Exit codes: 0 every task done; 1 failure or no task ready; 2 usage;
3 stopped by a limit; 4 another coordinator runs here; 130 interrupted.`,
		Example: `  ralph run
  ralph run --agent claude --model sonnet --max-iterations 10 --max-cost 5
  ralph run --task T4
  ralph run --agent exec --agent-cmd "./my-agent --fast" --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.MaxIterations < 0 || o.MaxCost < 0 || o.MaxTime < 0 || o.Backoff < 0 {
				return usagef("limits must not be negative")
			}
			if o.NoOutputTimeout <= 0 || o.IterationTimeout <= 0 {
				return usagef("--no-output-timeout and --iteration-timeout must be more than 0")
			}
			switch o.OnFailure {
			case "retry", "skip", "abort":
			default:
				return usagef("--on-failure must be retry, skip or abort, not %q", o.OnFailure)
			}
			if o.MaxAttempts < 1 {
				return usagef("--max-attempts must be 1 or more, not %d", o.MaxAttempts)
			}
			p, _ := f.Project()
			if _, err := p.LoadChecklist(mdstate.TasksKind); err != nil {
				if isNotExist(err) {
					return &mdstate.MissingError{File: mdstate.TasksFile, Root: p.Root}
				}
				return err
			}
			// Continuing a session: the agent and model it used, unless
			// told otherwise.
			choice := coordinator.ChooseAgent(p, coordinator.AgentChoice{Agent: o.Agent, DefaultAgent: f.Env.Agent,
				Command: o.AgentCmd, Model: o.Model, NewSession: o.NewSession})
			o.Agent, o.Model = choice.Agent, choice.Model
			ag, err := pickAgent(f, o.Agent, o.AgentCmd)
			if err != nil {
				return err
			}
			opts := coordinator.Options{Root: p.Root, Agent: ag, Model: o.Model, MaxIterations: o.MaxIterations,
				MaxCost: o.MaxCost, MaxTime: o.MaxTime, TaskID: strings.ToUpper(o.Task), Command: "ralph run", Commit: o.Commit,
				NewSession: o.NewSession, OnFailure: coordinator.FailurePolicy(o.OnFailure), MaxAttempts: o.MaxAttempts, Backoff: o.Backoff, Breaker: o.Breaker,
				NoOutputTimeout: o.NoOutputTimeout, IterationTimeout: o.IterationTimeout}
			opts.Now = f.nowFunc()
			opts.Git = f.Env.Git
			co, err := coordinator.New(opts)
			if err != nil {
				var locked *coordinator.ErrLocked
				if errors.As(err, &locked) {
					return &exitError{code: ExitLocked, msg: err.Error()}
				}
				return err
			}
			defer co.Close()
			done := make(chan struct{})
			go func() {
				defer close(done)
				newRunDisplay(f, o.JSON).follow(co.Events())
			}()
			out, err := co.Run(cmd.Context())
			<-done // the display ends with the run's stopped event
			if err != nil {
				return err
			}
			s := out.Session
			if !o.JSON {
				fmt.Fprintf(f.IO.Out, "%s: %s; %d iterations, %d tasks done, %d tokens in, %d out, $%.4f\n",
					out.Reason, out.Detail, s.Iteration, out.TasksDone, s.TokensIn, s.TokensOut, s.CostUSD)
			}
			switch out.Reason {
			case coordinator.StopAllDone, coordinator.StopPaused:
				return nil
			case coordinator.StopLimit:
				return &exitError{code: ExitLimit, msg: out.Detail}
			case coordinator.StopInterrupted:
				return &exitError{code: ExitInterrupted, msg: "interrupted; the task is back to pending and `ralph run` continues the session"}
			case coordinator.StopFailed:
				return &exitError{code: ExitFailure, msg: out.Detail}
			}
			return &exitError{code: ExitFailure, msg: out.Detail}
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Agent, "agent", "", "the agent CLI: `NAME` claude or exec (codex, opencode, gemini later)")
	fl.StringVar(&o.AgentCmd, "agent-cmd", "", "with --agent exec: the `COMMAND` to run, prompt on stdin")
	fl.StringVar(&o.Model, "model", "", "the `MODEL` the agent uses (default: the agent's own)")
	fl.IntVar(&o.MaxIterations, "max-iterations", 0, "stop after `N` iterations (0: no limit)")
	fl.Float64Var(&o.MaxCost, "max-cost", 0, "stop once the session has cost `USD` (0: no limit)")
	fl.DurationVar(&o.MaxTime, "max-time", 0, "stop after `DURATION`, e.g. 2h (0: no limit)")
	fl.StringVar(&o.Task, "task", "", "work on this task `ID` only")
	fl.BoolVar(&o.JSON, "json", false, "print one JSON event per line on stdout instead of the display")
	fl.BoolVar(&o.Commit, "commit", false, "commit each completed task (what its agent changed, plus the state files)")
	fl.BoolVar(&o.NewSession, "new-session", false, "start a new session instead of continuing an interrupted or paused one")
	fl.StringVar(&o.OnFailure, "on-failure", "retry", "after a failed attempt: `POLICY` retry (then skip once --max-attempts are used), skip, or abort")
	fl.IntVar(&o.MaxAttempts, "max-attempts", 3, "failed attempts per task before it is skipped (`N`)")
	fl.DurationVar(&o.Backoff, "backoff", 2*time.Second, "wait before the first retry (`DURATION`), doubling up to a minute")
	fl.DurationVar(&o.NoOutputTimeout, "no-output-timeout", 10*time.Minute, "stop an agent that prints nothing for `DURATION` (a failed attempt)")
	fl.DurationVar(&o.IterationTimeout, "iteration-timeout", time.Hour, "stop an agent that runs longer than `DURATION` (a failed attempt)")
	fl.IntVar(&o.Breaker, "breaker", 3, "stop after `N` iterations in a row that complete no task and change no file (-1: never)")
	return cmd
}

// runDisplay shows a run's events. It is the only writer to the terminal
// while a run lasts: the event loop calls show for each event and tick
// every second, never both at once.
type runDisplay struct {
	f      *Factory
	json   *json.Encoder
	tty    bool
	status string // the status line currently drawn, "" when none
	task   string
	tool   string
	tokens int64
	since  time.Time
	// waitUntil is set while the run waits for a limit to reset.
	waitUntil time.Time
}

func newRunDisplay(f *Factory, asJSON bool) *runDisplay {
	d := &runDisplay{f: f, tty: f.IO.ErrTTY && !asJSON}
	if asJSON {
		d.json = json.NewEncoder(f.IO.Out)
		d.json.SetEscapeHTML(false)
	}
	return d
}

// follow shows every event until the run's stopped event (or the end of
// the stream), redrawing the status line each second on a terminal.
func (d *runDisplay) follow(events <-chan coordinator.Event) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				d.clear()
				return
			}
			d.show(ev)
			if ev.Kind == coordinator.EventStopped {
				d.clear()
				return
			}
		case <-tick.C:
			d.draw()
		}
	}
}

// clear erases the status line so that a normal line can be printed.
func (d *runDisplay) clear() {
	if d.status != "" {
		fmt.Fprint(d.f.IO.ErrOut, "\r\033[K")
		d.status = ""
	}
}

// draw redraws the status line: task, elapsed time, current tool, tokens.
func (d *runDisplay) draw() {
	if d.tty && !d.waitUntil.IsZero() {
		line := fmt.Sprintf("⏸ %s left", time.Until(d.waitUntil).Round(time.Second))
		fmt.Fprint(d.f.IO.ErrOut, "\r\033[K"+line)
		d.status = line
		return
	}
	if !d.tty || d.task == "" {
		return
	}
	line := fmt.Sprintf("… %s · %s", d.task, time.Since(d.since).Round(time.Second))
	if d.tool != "" {
		line += " · " + d.tool
	}
	if d.tokens > 0 {
		line += fmt.Sprintf(" · %d tokens", d.tokens)
	}
	fmt.Fprint(d.f.IO.ErrOut, "\r\033[K"+line)
	d.status = line
}

func (d *runDisplay) show(ev coordinator.Event) {
	if d.json != nil {
		_ = d.json.Encode(ev)
		return
	}
	w := d.f.IO.ErrOut
	d.clear()
	switch ev.Kind {
	case coordinator.EventResumed:
		fmt.Fprintf(w, "↻ %s\n", ev.Text)
	case coordinator.EventWaiting:
		d.task, d.tool, d.waitUntil = "", "", ev.Until
		fmt.Fprintf(w, "⏸ usage or rate limit: waiting until %s (Ctrl-C stops; `ralph run` goes on waiting)\n", ev.Until.Local().Format("15:04:05"))
	case coordinator.EventNotice:
		fmt.Fprintf(w, "  ! %s\n", ev.Text)
	case coordinator.EventTaskStarted:
		d.task, d.tool, d.tokens, d.since, d.waitUntil = ev.Task, "", 0, time.Now(), time.Time{}
		fmt.Fprintf(w, "▶ %s: %s (iteration %d)\n", ev.Task, ev.Title, ev.Iteration)
	case coordinator.EventAgentText:
		for _, l := range strings.Split(strings.TrimRight(ev.Text, "\n"), "\n") {
			fmt.Fprintf(w, "  │ %s\n", l)
		}
	case coordinator.EventToolUse:
		d.tool = ev.Tool
		fmt.Fprintf(w, "  ⚙ %s\n", ev.Tool)
	case coordinator.EventUsage:
		d.tokens = ev.TokensIn + ev.TokensOut
	case coordinator.EventIterationDone:
		d.task = ""
		mark := map[coordinator.IterationOutcome]string{coordinator.OutcomeDone: "✓", coordinator.OutcomeBlocked: "!", coordinator.OutcomeInterrupted: "■"}[ev.Outcome]
		if mark == "" {
			mark = "✗"
		}
		line := fmt.Sprintf("  %s %s: %s", mark, ev.Task, ev.Outcome)
		if ev.Reason != "" {
			line += " (" + ev.Reason + ")"
		}
		fmt.Fprintf(w, "%s · %d in, %d out tokens\n", line, ev.TokensIn, ev.TokensOut)
	}
	d.draw()
}
