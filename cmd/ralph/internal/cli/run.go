package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ralph-dev/ralph/chat"
	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/agentconfig"
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
	MaxTokens                    int64
	MaxTime                      time.Duration
	MaxTurns                     int
	PermissionMode               string
	permission                   agent.Permission // PermissionMode, parsed by validate
	JSON                         bool
	Commit                       bool
	NewSession                   bool
	OnFailure                    string
	MaxAttempts                  int
	Breaker                      int
	Backoff                      time.Duration
	NoOutputTimeout              time.Duration
	IterationTimeout             time.Duration
	Resources                    coordinator.Resources
}

// pickAgent resolves the agent and the settings it runs with: --agent,
// then RALPH_AGENT, then the agent settings of the project at root and of
// the machine, then the first agent CLI installed (chooseAgent). An exec
// agent has no settings but the command line's.
func pickAgent(f *Factory, root string, asked agentconfig.Asked, cmdline string) (coordinator.Agent, agentconfig.Choice, error) {
	name := asked.Agent
	if name == "" {
		name = asked.EnvAgent
	}
	if name == "exec" || (name == "" && cmdline != "") {
		if cmdline == "" {
			return nil, agentconfig.Choice{}, usagef("--agent exec needs --agent-cmd \"PROGRAM ARGS\"")
		}
		ag, err := agent.Exec(cmdline)
		c := agentconfig.Choice{Agent: agentconfig.Agent{Name: "exec",
			Model: agentconfig.Setting[string]{Value: asked.Model}, Permission: agentconfig.Setting[agent.Permission]{Value: asked.Permission}}}
		return ag, c, err
	}
	if cmdline != "" {
		return nil, agentconfig.Choice{}, usagef("--agent-cmd goes with --agent exec")
	}
	if name != "" && !slices.Contains(agent.CLINames(), name) {
		return nil, agentconfig.Choice{}, unknownAgentError(name, asked.Agent == "")
	}
	return chooseAgent(f, root, asked)
}

// unknownAgentError is a usage error for an agent name ralph does not
// drive, given with --agent or, when fromEnv, in RALPH_AGENT.
func unknownAgentError(name string, fromEnv bool) error {
	where := "--agent"
	if fromEnv {
		where = "RALPH_AGENT"
	}
	msg := fmt.Sprintf("unknown agent %q in %s: use %s or exec", name, where, strings.Join(agent.CLINames(), ", "))
	if s := agentconfig.NearestAgent(name); s != "" {
		msg += "; did you mean " + s + "?"
	}
	return usagef("%s", msg)
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

Only one coordinator runs per project. Ctrl-C stops the agent and
everything it started (on Linux, what left its process group too), puts its
task back to pending with a note, saves the session as paused and exits
with 130; SIGTERM and SIGHUP (a closed terminal, a dropped ssh
connection) do the same and exit with 143 and 129. If ralph is killed
outright (kill -9), what its agent started is stopped within a second,
and the next 'ralph run' recovers the session.

Budgets: --max-cost, --max-tokens (the session's) and --max-time (this
run's) are also checked while an agent works, against the usage it
streams: crossing one stops the agent within a second, records what it
spent, puts its task back to pending with a note naming the limit, and
exits with 3. While claude works, its cost is estimated from a price table
by model; its own figure replaces the estimate when it finishes.
--max-turns caps each agent's model calls (claude --max-turns).

Resources: before each agent starts, ralph checks the project's disk and
pauses the session (exit 3) when less than --min-disk-free is free. Each
agent's output is kept in .ralph/logs (mode 0600, secrets redacted),
capped by --log-max-size (its start and end kept); the oldest logs go
beyond --logs-max-total or --logs-max-age. Values of the environment's
keys, tokens, secrets and passwords are written as [redacted] everywhere.

` + permissionHelp + `

The agent is --agent, else $RALPH_AGENT, else the default in AGENT.md's
Agents section, else the one in your machine's agents.md, else the first
of claude, codex, opencode, gemini installed; its model, permission mode,
extra arguments, program and environment may be set there too ('ralph
agents --help' shows how). --agent exec --agent-cmd "PROGRAM ARGS"
runs any program: the prompt on its stdin, its last output as its final
message.

Exit codes: 0 every task it could run is done, none failed in this run
(tasks given up on in an earlier session are named, not failures), or
nothing to do; 1 a task failed in this run, or tasks are left and none is
ready; 2 usage;
3 stopped by a limit or low disk space; 4 another coordinator runs here;
130 interrupted (Ctrl-C); 129 stopped by SIGHUP; 143 stopped by SIGTERM.`,
		Example: `  ralph run
  ralph run --agent claude --model sonnet --max-iterations 10 --max-cost 5
  ralph run --max-tokens 2000000 --max-time 2h --permission-mode accept-edits
  ralph run --task T4
  ralph run --agent exec --agent-cmd "./my-agent --fast" --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			opts, err := o.options(f)
			if err != nil {
				return err
			}
			f.oneRun(&opts)
			// The first agent's supervisor starts beside the rest of
			// the run's start.
			coordinator.Prepare(opts)
			return runTasks(f, cmd, opts, o.JSON)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// addFlags registers the flags that shape a run: ralph run's, and ralph
// chat's for the runs it starts.
func (o *RunOptions) addFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.Agent, "agent", "", "the agent CLI: `NAME` claude, codex, opencode, gemini or exec (ralph agents lists them)")
	fl.StringVar(&o.AgentCmd, "agent-cmd", "", "with --agent exec: the `COMMAND` to run, prompt on stdin")
	fl.StringVar(&o.Model, "model", "", "the `MODEL` the agent uses (default: the agent's own)")
	fl.IntVar(&o.MaxIterations, "max-iterations", 0, "stop after `N` iterations (0: no limit)")
	fl.Float64Var(&o.MaxCost, "max-cost", 0, "stop once the session has cost `USD`, even mid-task (0: no limit)")
	fl.Int64Var(&o.MaxTokens, "max-tokens", 0, "stop once the session has used `N` tokens, in and out, even mid-task (0: no limit)")
	fl.DurationVar(&o.MaxTime, "max-time", 0, "stop after `DURATION`, e.g. 2h, even mid-task (0: no limit)")
	fl.IntVar(&o.MaxTurns, "max-turns", DefaultMaxTurns, "each agent makes at most `N` model calls (claude --max-turns; 0: no cap)")
	fl.StringVar(&o.PermissionMode, "permission-mode", "", permissionFlagUsage)
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
	o.Resources = coordinator.DefaultResources()
	fl.Var(&o.Resources.MinDiskFree, "min-disk-free", "pause before an agent starts when the project's disk has less than `SIZE` free (0: never)")
	fl.Var(&o.Resources.LogMaxSize, "log-max-size", "keep at most `SIZE` of one agent's output in .ralph/logs, its start and its end (0: all)")
	fl.Var(&o.Resources.LogsMaxTotal, "logs-max-total", "remove the oldest logs once .ralph/logs holds more than `SIZE` (0: never)")
	fl.Var(&o.Resources.LogsMaxAge, "logs-max-age", "remove logs older than `AGE`, e.g. 30d or 12h (0: never)")
}

// validate rejects flag values that make no sense, before anything runs,
// and parses those that need it.
func (o *RunOptions) validate() error {
	if o.MaxIterations < 0 || o.MaxCost < 0 || o.MaxTokens < 0 || o.MaxTime < 0 || o.MaxTurns < 0 || o.Backoff < 0 {
		return usagef("limits must not be negative")
	}
	perm, err := askedPermission(o.PermissionMode)
	if err != nil {
		return usagef("--permission-mode: %v", err)
	}
	o.permission = perm
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
	return nil
}

// options resolves the agent (the one a continued session used, unless
// told otherwise) and builds the coordinator's options.
func (o *RunOptions) options(f *Factory) (coordinator.Options, error) {
	p, _ := f.Project()
	if _, err := p.LoadChecklist(mdstate.TasksKind); err != nil {
		if isNotExist(err) {
			return coordinator.Options{}, &mdstate.MissingError{File: mdstate.TasksFile, Root: p.Root}
		}
		return coordinator.Options{}, err
	}
	// Continuing a session: the agent and model it used, unless
	// told otherwise.
	choice := coordinator.ChooseAgent(p, coordinator.AgentChoice{Agent: o.Agent, DefaultAgent: f.Env.Agent,
		Command: o.AgentCmd, Model: o.Model, NewSession: o.NewSession})
	o.Agent, o.Model = choice.Agent, choice.Model
	ag, set, err := pickAgent(f, p.Root, agentconfig.Asked{Agent: o.Agent, EnvAgent: f.Env.Agent, Model: o.Model, Permission: o.permission}, o.AgentCmd)
	if err != nil {
		return coordinator.Options{}, err
	}
	// The settings' model and permission, resolved here so that the run's
	// header shows what really runs.
	opts := coordinator.Options{Root: p.Root, Agent: ag, Model: set.Model.Value, MaxIterations: o.MaxIterations,
		MaxCost: o.MaxCost, MaxTokens: o.MaxTokens, MaxTime: o.MaxTime, MaxTurns: o.MaxTurns, Permission: set.Permission.Value, TaskID: strings.ToUpper(o.Task), Command: "ralph run", Commit: o.Commit,
		NewSession: o.NewSession, OnFailure: coordinator.FailurePolicy(o.OnFailure), MaxAttempts: o.MaxAttempts, Backoff: o.Backoff, Breaker: o.Breaker,
		NoOutputTimeout: o.NoOutputTimeout, IterationTimeout: o.IterationTimeout}
	opts.Now = f.nowFunc()
	opts.Git = f.Env.Git
	opts.Secrets, opts.Resources = withAgentSecrets(f.Env.secrets(), set), o.Resources
	opts.Watch = true // a person's edits show, and a task they take stops
	opts.Project = p  // what was parsed here is not parsed again
	opts.Registry = f.registry()
	return opts, nil
}

// oneRun sets what only a coordinator that makes one run and is then
// closed may have (ralph run's, not ralph chat's, which runs again).
func (f *Factory) oneRun(opts *coordinator.Options) {
	opts.SingleRun = true // the watcher stops watching as the loop ends
	// The loop leaves the other cores to the agents, unless GOMAXPROCS
	// says how many processors ralph has.
	opts.OneProc = !f.Env.sets("GOMAXPROCS")
}

// runTasks runs the coordinator with opts, shows its events and maps how
// the run ended to an exit code.
func runTasks(f *Factory, cmd *cobra.Command, opts coordinator.Options, asJSON bool) error {
	co, err := openCoordinator(opts)
	if err != nil {
		return err
	}
	defer co.Close()
	d := newRunDisplay(f, asJSON)
	h := newRunHeader(opts)
	h.Plan = runPlan(opts)
	d.header(h)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.follow(co.Events(), cmd.Context().Done())
	}()
	// What git saw before the run, read while the run starts.
	before := make(chan worktree, 1)
	if !asJSON {
		go func() { before <- readWorktree(cmd.Context(), opts.Root) }()
	}
	out, err := co.Run(cmd.Context())
	<-done // the display ends with the run's stopped event
	if err != nil {
		return err
	}
	if !asJSON {
		ctx := context.WithoutCancel(cmd.Context())
		files := changedSince(ctx, opts.Root, <-before, readWorktree(ctx, opts.Root))
		left, skipped := openTasks(co.Project())
		fmt.Fprint(f.IO.Out, runSummary(out, d.tally, left, skipped, files))
	}
	return runExit(out)
}

// openCoordinator takes the project's lock for a run or a chat: another
// coordinator holding it is exit 4, naming the holder.
func openCoordinator(opts coordinator.Options) (*coordinator.Coordinator, error) {
	co, err := coordinator.New(opts)
	if err != nil {
		var locked *coordinator.ErrLocked
		if errors.As(err, &locked) {
			return nil, &exitError{code: ExitLocked, msg: err.Error()}
		}
		return nil, err
	}
	return co, nil
}

// runExit maps how a run ended to ralph's exit code (nil: 0).
func runExit(out coordinator.Outcome) error {
	switch out.Reason {
	case coordinator.StopAllDone, coordinator.StopPaused:
		return nil
	case coordinator.StopLimit, coordinator.StopLowDisk:
		return &exitError{code: ExitLimit, msg: out.Detail}
	case coordinator.StopInterrupted:
		return &exitError{code: ExitInterrupted, msg: "interrupted; the task is back to pending and `ralph run` continues the session"}
	case coordinator.StopFailed:
		return &exitError{code: ExitFailure, msg: out.Detail}
	}
	return &exitError{code: ExitFailure, msg: out.Detail}
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
	tally     runTally // for the summary
	// color colours the marks of the lines (a terminal, no NO_COLOR, not
	// TERM=dumb).
	color bool
}

func newRunDisplay(f *Factory, asJSON bool) *runDisplay {
	// A dumb terminal gets plain lines: no redrawn status line, no colour.
	d := &runDisplay{f: f, tty: f.IO.ErrTTY && !asJSON && f.Env.Term != "dumb"}
	d.color = d.tty && !f.Env.NoColor && f.Env.Term != "dumb"
	if asJSON {
		d.json = json.NewEncoder(f.IO.Out)
		d.json.SetEscapeHTML(false)
	}
	return d
}

// follow shows every event until the run's stopped event (or the end of
// the stream), redrawing the status line each second on a terminal. When
// interrupted is closed (Ctrl-C), it says at once that the run stops.
func (d *runDisplay) follow(events <-chan coordinator.Event, interrupted <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-interrupted:
			interrupted = nil // said once
			d.stopping()
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

// stopping says that the run stops, before the agent is gone: an agent
// that ignores SIGINT takes the grace period.
func (d *runDisplay) stopping() {
	if d.json != nil {
		return // the stopped event says it
	}
	d.clear()
	what := "the run"
	if d.task != "" {
		what = d.task
	}
	fmt.Fprintf(d.f.IO.ErrOut, "■ stopping %s… (the agent gets SIGINT, then SIGKILL if it lingers)\n", what)
	d.draw()
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
	if !d.waitUntil.IsZero() && time.Now().After(d.waitUntil) {
		d.waitUntil = time.Time{}
	}
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
	d.tally.count(ev)
	if d.json != nil {
		_ = d.json.Encode(ev)
		return
	}
	w := &strings.Builder{} // the event's lines, coloured as a whole
	d.clear()
	switch ev.Kind {
	case coordinator.EventResumed:
		fmt.Fprintf(w, "↻ %s\n", ev.Text)
	case coordinator.EventWaiting:
		d.task, d.tool, d.waitUntil = "", "", ev.Until
		fmt.Fprintf(w, "⏸ usage or rate limit: waiting until %s (Ctrl-C stops; `ralph run` goes on waiting)\n", ev.Until.Local().Format("15:04:05"))
	case coordinator.EventNotice:
		fmt.Fprintf(w, "  ! %s\n", ev.Text)
	case coordinator.EventStateChanged:
		fmt.Fprintf(w, "  ✎ %s\n", ev.Text)
	case coordinator.EventTaskStarted:
		d.task, d.tool, d.tokens, d.since, d.waitUntil = ev.Task, "", 0, time.Now(), time.Time{}
		fmt.Fprint(w, chat.StartLine(ev))
	case coordinator.EventAgentText:
		for _, l := range strings.Split(strings.TrimRight(ev.Text, "\n"), "\n") {
			fmt.Fprintf(w, "  │ %s\n", l)
		}
	case coordinator.EventToolUse:
		d.tool = ev.Tool
		fmt.Fprintf(w, "  ⚙ %s\n", ev.Tool)
	case coordinator.EventUsage:
		d.tokens = ev.TokensIn + ev.TokensOut
	case coordinator.EventRetry:
		fmt.Fprint(w, chat.RetryLine(ev))
		if ev.Delay >= time.Second {
			d.waitUntil = time.Now().Add(ev.Delay) // a countdown on the status line
		}
	case coordinator.EventIterationDone:
		d.task = ""
		fmt.Fprint(w, chat.IterationLine(ev))
	}
	out := w.String()
	if out != "" { // most events print nothing: no empty write each
		if d.color {
			out = chat.Colorize(out)
		}
		fmt.Fprint(d.f.IO.ErrOut, out)
	}
	d.draw()
}

// DefaultMaxTurns is --max-turns' default for ralph run and the one-shot:
// enough for a long task, and a bound on an agent that keeps calling tools
// when no budget is set.
const DefaultMaxTurns = 200

// permissionHelp explains --permission-mode in run's and the root's help.
const permissionHelp = `Permissions: an agent runs unattended, so nobody answers its questions;
--permission-mode decides up front what it may do, in its CLI's own flags,
and every run shows it first:
  bypass        (the default) every tool, no questions: claude
                --dangerously-skip-permissions, with IS_SANDBOX=1 when
                ralph runs as root (the CLI refuses otherwise)
  accept-edits  file edits; other tools as the CLI's settings allow:
                claude --permission-mode acceptEdits
  default       only what the CLI's settings allow, the rest is refused:
                claude --permission-mode default ("ask" means this too)
With --agent exec the mode is only shown: the program decides.`

const permissionFlagUsage = "what the agent may do without asking: `MODE` bypass, accept-edits or default (see above; default: the agent's settings, else bypass)"

// runHeader is how a run starts its agents: which agent, with which
// permissions, within which limits. It is shown before any agent starts:
// a line on stderr, or the first line of --json (the run_started event,
// runStartedJSON in json.go).
type runHeader struct {
	Event           string    // "run_started"
	Time            time.Time // when the run starts
	Agent           string
	Model           string
	Permission      agent.Permission
	PermissionFlags string // how the agent's CLI is told
	MaxTurns        int    // when the agent's CLI takes a cap
	MaxTurnsFlag    string
	MaxIterations   int
	MaxCost         float64
	MaxTokens       int64
	MaxTime         string
	// Plan is where a run starts (not given for a one-shot).
	Plan *RunPlan
}

// RunPlan is where a run starts: the tasks that can start now, and the
// session it continues (null: a new one).
type RunPlan struct {
	TasksReady int     `json:"tasks_ready"`
	Continues  *string `json:"continues_session"`
}

// runStartedEvent is the header's event name in --json output.
const runStartedEvent = "run_started"

func newRunHeader(o coordinator.Options) runHeader {
	perm := o.Permission
	if perm == "" {
		perm = agent.PermissionBypass
	}
	name := o.Agent.Name()
	h := runHeader{Event: runStartedEvent, Agent: name, Model: o.Model, Permission: perm,
		PermissionFlags: agent.PermissionFlags(name, perm), MaxTurnsFlag: agent.MaxTurnsFlag(name, o.MaxTurns),
		MaxIterations: o.MaxIterations, MaxCost: o.MaxCost, MaxTokens: o.MaxTokens}
	if o.Now != nil {
		h.Time = o.Now()
	}
	if h.MaxTurnsFlag != "" {
		h.MaxTurns = o.MaxTurns
	}
	if o.MaxTime > 0 {
		h.MaxTime = o.MaxTime.String()
	}
	return h
}

// runPlan is what the run starts from: the tasks ready now, and the
// session it continues (nil when it starts a new one).
func runPlan(o coordinator.Options) *RunPlan {
	p := o.Project
	if p == nil {
		p = mdstate.Open(o.Root)
	}
	tasks, err := p.LoadChecklist(mdstate.TasksKind)
	if err != nil {
		return nil
	}
	plan := &RunPlan{TasksReady: len(tasks.Ready())}
	if o.TaskID != "" {
		plan.TasksReady = 1
	}
	if s, _ := tasks.Session(); s != nil && s.Status != mdstate.SessionEnded && !o.NewSession {
		id := s.ID
		plan.Continues = &id
	}
	return plan
}

// String is the header's line on stderr.
func (h runHeader) String() string {
	var b strings.Builder
	b.WriteString(coordinator.AgentLabel(h.Agent, h.Model) + " · permission mode " + string(h.Permission))
	if h.PermissionFlags != "" {
		b.WriteString(" (" + h.PermissionFlags + ")")
	}
	var limits []string
	if h.MaxTurnsFlag != "" {
		limits = append(limits, h.MaxTurnsFlag)
	}
	if h.MaxIterations > 0 {
		limits = append(limits, fmt.Sprintf("--max-iterations %d", h.MaxIterations))
	}
	if h.MaxCost > 0 {
		limits = append(limits, fmt.Sprintf("--max-cost $%.2f", h.MaxCost))
	}
	if h.MaxTokens > 0 {
		limits = append(limits, fmt.Sprintf("--max-tokens %d", h.MaxTokens))
	}
	if h.MaxTime != "" {
		limits = append(limits, "--max-time "+h.MaxTime)
	}
	if len(limits) > 0 {
		b.WriteString(" · " + strings.Join(limits, " "))
	}
	if h.Plan != nil {
		b.WriteString(" · " + h.Plan.String())
	}
	return b.String()
}

// String is the plan in the header's words.
func (p RunPlan) String() string {
	ready := fmt.Sprintf("%d tasks ready", p.TasksReady)
	switch p.TasksReady {
	case 0:
		ready = "no task ready"
	case 1:
		ready = "1 task ready"
	}
	if p.Continues != nil {
		return ready + " · continues session " + *p.Continues
	}
	if p.TasksReady == 0 {
		return ready // no session opens
	}
	return ready + " · a new session"
}

// header shows how the run starts its agents, before anything else.
func (d *runDisplay) header(h runHeader) {
	if d.json != nil {
		_ = d.json.Encode(h)
		return
	}
	fmt.Fprintf(d.f.IO.ErrOut, "ralph: %s\n", h)
}
