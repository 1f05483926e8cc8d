// Package cli builds ralph's command line: one constructor per command
// over an options struct, one IOStreams value for all output, and one
// function (Main) that maps errors to exit codes. Nothing else in ralph
// calls os.Exit or writes to os.Stdout.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/coordinator/registry"
	"github.com/ralph-dev/ralph/mdstate"
	"github.com/ralph-dev/ralph/projectdetect"
)

// Exit codes, documented in README.md. Scripts rely on them.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitLimit       = 3
	ExitLocked      = 4
	ExitInterrupted = 130
)

// Version is set at build time with -ldflags "-X …cli.Version=v1.2.3".
var Version = ""

// IOStreams carries ralph's input and output. Results go to Out; progress,
// warnings and errors go to ErrOut.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// ErrTTY is true when ErrOut is a terminal: live displays redraw a
	// status line there, and print plain lines anywhere else.
	ErrTTY bool
}

// Env is what ralph takes from its environment, read once in Main.
type Env struct {
	Dir   string    // the working directory
	Now   time.Time // RALPH_NOW, for reproducible output in tests; zero: the clock
	Agent string    // RALPH_AGENT: the agent CLI when --agent is not given
	// Git is where git's configuration lives (HOME, XDG_CONFIG_HOME,
	// GIT_CONFIG_*), for the project scan's global excludes file.
	Git projectdetect.GitConfig
	// Environ is the environment ralph started with ("NAME=value"). The
	// commands that run agents find its secrets in it (secrets); the
	// status cache keys on its git variables.
	Environ []string
	// Term is TERM ("dumb": no line editing in chat); NoColor is set by
	// NO_COLOR.
	Term    string
	NoColor bool
	// ConfigDir is the user's configuration folder (os.UserConfigDir),
	// which holds ralph/agents.md, and Home the home folder (shown as ~);
	// "" when unknown.
	ConfigDir, Home string
	// StateDir holds the list of projects where ralph ran
	// (registry.DefaultDir: $XDG_STATE_HOME/ralph); "" when unknown.
	StateDir string
}

// sets reports whether the environment ralph started with gives the
// variable name a value (an empty one is as good as none to the Go
// runtime's GOGC and GOMAXPROCS).
func (e Env) sets(name string) bool {
	return slices.ContainsFunc(e.Environ, func(kv string) bool {
		v, ok := strings.CutPrefix(kv, name+"=")
		return ok && v != ""
	})
}

// Factory gives commands what they share.
type Factory struct {
	IO  IOStreams
	Env Env
	// dir is set by -C.
	dir string
	// signals is the command's context, cancelled by a signal when the
	// command stops on signals (watchSignals); stopSignals undoes that.
	signals     context.Context
	stopSignals func()
	// completing is set when the shell asks for completions (cobra's
	// hidden __complete command): only then are the flags' completions
	// registered, which costs every other command's start-up time.
	completing bool
}

// completing reports a command line that asks for completions.
func completing(args []string) bool {
	return len(args) > 0 && strings.HasPrefix(args[0], cobra.ShellCompRequestCmd)
}

// stopWatching removes the signal handlers watchSignals installed, if any.
func (f *Factory) stopWatching() {
	if f.stopSignals != nil {
		f.stopSignals()
	}
}

// Project resolves the project root from the working directory (or -C).
func (f *Factory) Project() (*mdstate.Project, bool) {
	dir := f.Env.Dir
	if f.dir != "" {
		dir = f.dir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(f.Env.Dir, dir)
		}
	}
	root, found := mdstate.FindRoot(dir)
	return mdstate.Open(root), found
}

// warn prints warnings to ErrOut, one per line, in file and line order.
func (f *Factory) warn(ws []mdstate.Warning) {
	for _, w := range sortWarnings(ws) {
		fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", w)
	}
}

// sortWarnings returns the warnings ordered by file (in the order of
// mdstate.Files), then line, so that they read top to bottom.
func sortWarnings(ws []mdstate.Warning) []mdstate.Warning {
	out := slices.Clone(ws)
	slices.SortStableFunc(out, func(a, b mdstate.Warning) int {
		if fa, fb := slices.Index(mdstate.Files, a.File), slices.Index(mdstate.Files, b.File); fa != fb {
			return fa - fb
		}
		return a.Line - b.Line
	})
	return out
}

// checkDir rejects a -C folder that does not exist, before any command
// takes it for an empty project.
func (f *Factory) checkDir() error {
	if f.dir == "" {
		return nil
	}
	dir := f.dir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(f.Env.Dir, dir)
	}
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return usagef("-C %s: no such folder; give the path of an existing project folder", f.dir)
	case !fi.IsDir():
		return usagef("-C %s: a file, not a folder; give the project's folder (%s?)", f.dir, filepath.Dir(f.dir))
	}
	return nil
}

// plainFlagError says what a flag's bad value should have been, without
// the parser's own words (`strconv.ParseInt: parsing "abc": invalid
// syntax`).
func plainFlagError(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, ": time: "); i >= 0 {
		return fmt.Errorf("%s: want a duration such as 30s, 5m or 1h", msg[:i])
	}
	var num *strconv.NumError
	if !errors.As(err, &num) {
		return err
	}
	if i := strings.Index(msg, ": strconv."); i >= 0 {
		msg = msg[:i]
	}
	what := "a whole number"
	if num.Func == "ParseFloat" {
		what = "a number"
	}
	if errors.Is(num.Err, strconv.ErrRange) {
		what += " in range"
	}
	return fmt.Errorf("%s: want %s", msg, what)
}

// usageError marks an error as the caller's misuse: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// Main runs ralph with args (without the program name) and returns the exit
// code.
func Main(ctx context.Context, args []string, io IOStreams, env Env) int {
	f := &Factory{IO: io, Env: env, signals: ctx, completing: completing(args)}
	defer f.stopWatching()
	root := NewCmdRoot(f)
	root.SetArgs(args)
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	code := signalCode(f.signals, reportError(f, cmd, err))
	reportJSON(f, cmd, args, err, code) // with --json, also on stdout for scripts
	return code
}

func reportError(f *Factory, cmd *cobra.Command, err error) int {
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		fmt.Fprintf(f.IO.ErrOut, "ralph: %v\n", err)
		if cmd != nil {
			fmt.Fprintf(f.IO.ErrOut, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
		return ExitUsage
	}
	var ee *exitError
	if errors.As(err, &ee) {
		fmt.Fprintf(f.IO.ErrOut, "ralph: %v\n", err)
		return ee.code
	}
	var fe *mdstate.FileError
	if errors.As(err, &fe) {
		fmt.Fprintf(f.IO.ErrOut, "ralph: %v\n", err)
		return ExitFailure
	}
	if errors.Is(err, mdstate.ErrVerify) {
		fmt.Fprintf(f.IO.ErrOut, "ralph: nothing was written: %v\nThis is a bug in ralph; please report it with the file attached.\n", err)
		return ExitFailure
	}
	fmt.Fprintf(f.IO.ErrOut, "ralph: %v\n", err)
	return ExitFailure
}

// isCobraUsage recognises cobra's own argument errors, which it returns as
// plain errors.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "requires at most", "flag needs an argument", "invalid argument", "bad flag syntax", "unknown help topic"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// NewCmdRoot builds the whole command tree.
func NewCmdRoot(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ralph",
		Short: "A conversational shell around AI coding agents",
		Long: `ralph works through a project's tasks with AI coding agents (Claude Code,
Codex, opencode, Gemini CLI), one agent per task, and keeps everything it
knows in five markdown files in the project root that you can read and edit:

  AGENT.md            what ralph has learned about working in this project
  RALPH_GOALS.md      current goals
  RALPH_TASKS.md      tasks and their status
  RALPH_PROGRESS.md   what was done, when, by which agent, with what result
  RALPH_TODO.md       to-dos and next steps

Start with 'ralph init', add tasks with 'ralph task add' (or by writing
"- [ ] what to do" in RALPH_TASKS.md), see where things stand with
'ralph status', and let agents work through the tasks with 'ralph run'.

One-shot: ralph "fix the typo in the README" gives one task (one quoted
argument of two words or more) to one agent, with a minimal context and no
loop, and prints the result; --json for scripts. It works beside a running
session. Bare words that are not a command are a usage error, never a task.
'ralph demo' shows the whole cycle with a scripted agent, no AI needed.

Agents run unattended with every permission unless told otherwise
(--permission-mode bypass: claude --dangerously-skip-permissions, with
IS_SANDBOX=1 as root); each run shows the mode first. See 'ralph run --help'.`,
		Example: `  ralph init
  ralph task add "Write the docs"
  ralph run --max-iterations 5
  ralph "rename the config flag to --root" --json`,
		Version:       version(),
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			f.watchSignals(cmd)
			f.collectForAgents(cmd)
			f.relaxTimers(cmd)
			return f.checkDir()
		},
	}
	cmd.SetVersionTemplate("ralph {{.Version}}\n")
	cmd.PersistentFlags().StringVarP(&f.dir, "dir", "C", "", "run as if ralph was started in `DIR`")
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{plainFlagError(err)} })
	cmd.AddCommand(
		NewCmdInit(f),
		NewCmdStatus(f),
		NewCmdTask(f),
		NewCmdGoal(f),
		NewCmdTodo(f),
		NewCmdLearn(f),
		NewCmdContext(f),
		NewCmdHistory(f),
		NewCmdLog(f),
		NewCmdRestore(f),
		stopOnSignalsFor(NewCmdRun(f)),
		stopOnSignalsFor(NewCmdResume(f)),
		stopOnSignalsFor(NewCmdDemo(f)),
		stopOnSignalsFor(NewCmdChat(f)),
		NewCmdAgents(f),
		NewCmdSessions(f),
	)
	cmd.InitDefaultCompletionCmd()
	group(cmd)
	addOneShot(f, cmd)
	chatWhenBare(f, cmd)
	stopOnSignalsFor(cmd) // the one-shot, and chat when bare
	if f.completing {
		completeFlags(f, cmd)
	}
	for _, c := range cmd.Commands() {
		if c.Name() == "completion" {
			group(c)
		}
	}
	return cmd
}

// group makes a command that only holds subcommands reject an unknown
// one as a usage error (cobra would print the help and exit 0) and print
// its help when run alone.
func group(cmd *cobra.Command) *cobra.Command {
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if c.SuggestionsMinimumDistance <= 0 {
			c.SuggestionsMinimumDistance = 2
		}
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return usageError{errors.New(msg)}
	}
	cmd.RunE = func(c *cobra.Command, args []string) error { return c.Help() }
	return cmd
}

// version is what --version prints: the module version (a release, or
// "dev" for a build from a checkout) and the commit it was built from, with
// its date and whether the work tree had changes, from the build info.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return orDev(Version)
	}
	return describeBuild(Version, info)
}

// describeBuild is version's text for a build's info.
func describeBuild(stamped string, info *debug.BuildInfo) string {
	v := stamped
	if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	v = orDev(v)
	var commit, date string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.time":
			date = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if commit == "" {
		if v == "dev" {
			v += " (no commit recorded: `go run` and builds outside a git checkout have none)"
		}
		return v
	}
	var parts []string
	if short := commit[:min(12, len(commit))]; !strings.Contains(v, short) { // a pseudo-version names it already
		parts = append(parts, "commit "+short)
	}
	if t, err := time.Parse(time.RFC3339, date); err == nil {
		parts = append(parts, t.UTC().Format("2006-01-02"))
	}
	if modified {
		parts = append(parts, "with uncommitted changes")
	}
	return v + " (" + strings.Join(parts, ", ") + ")"
}

func orDev(v string) string {
	if v == "" {
		return "dev"
	}
	return v
}

// noArgs, exactArgs and minArgs are cobra's validators with usage errors.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%q takes no arguments, got %q", cmd.CommandPath(), args[0])
	}
	return nil
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s needs %s", cmd.CommandPath(), what)
		}
		return nil
	}
}

// minArgs also rejects arguments that are all blank: they are text
// (a title, a learning) and blank text is none.
func minArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n || strings.TrimSpace(strings.Join(args, "")) == "" {
			return usagef("%s needs %s", cmd.CommandPath(), what)
		}
		return nil
	}
}

// EnvFromOS reads ralph's environment. Only main calls it.
func EnvFromOS() (Env, error) {
	dir, err := os.Getwd()
	if err != nil {
		return Env{}, fmt.Errorf("find the working directory: %w", err)
	}
	env := Env{Dir: dir, Agent: os.Getenv("RALPH_AGENT"), Git: projectdetect.GitConfigFromEnv(os.Getenv),
		Environ: os.Environ(), Term: os.Getenv("TERM"), NoColor: os.Getenv("NO_COLOR") != ""}
	env.ConfigDir, _ = os.UserConfigDir()
	env.Home, _ = os.UserHomeDir()
	env.StateDir = registry.DefaultDir(os.Getenv, env.Home)
	if s := os.Getenv("RALPH_NOW"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return Env{}, fmt.Errorf("RALPH_NOW=%q is not an RFC 3339 time like 2026-01-02T15:04:05Z", s)
		}
		env.Now = t
	}
	return env, nil
}

// secrets are the values of the environment's secrets (keys, tokens,
// passwords), redacted from everything ralph writes from an agent. Found
// only by the commands that run one: the patterns cost start-up time.
func (e Env) secrets() []string { return coordinator.SecretsFromEnv(e.Environ) }

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// nowFunc is the clock commands hand to the coordinator: RALPH_NOW when
// set, for reproducible output.
func (f *Factory) nowFunc() func() time.Time {
	if f.Env.Now.IsZero() {
		return time.Now
	}
	now := f.Env.Now
	return func() time.Time { return now }
}
