// Package proc is the one package in ralph that owns os/exec.
//
// Every child process ralph starts (git, child agents, test helpers) goes
// through here so that the same rules hold everywhere:
//
//   - the child runs in its own process group, so stopping it stops
//     what it spawned in that group (snarktank/ralph#79: agents outliving
//     ralph); a contained child, everything it spawned (see Containment);
//   - cancellation interrupts the group (SIGINT), then kills it (SIGKILL)
//     after a grace period, and every wait is bounded (WaitDelay). A
//     context cancelled with a cause wrapping ErrStopNow is a hard stop:
//     the grace is HardGrace, whatever Cmd.Grace says;
//   - stdin is the null device unless the caller supplies one: an open,
//     silent stdin pipe makes some agent CLIs block forever.
//
// # Containment
//
// A process group is not a container: Claude Code's Bash tool runs each
// command in a new session and process group, and anything can call setsid
// or double-fork to leave its group (a SIGKILLed claude left a `python3 …
// sleep` of its Bash tool running 16 s after the next run had recovered).
// A child started with Cmd.Contain runs under a supervisor: ralph's own
// program, re-executed in a hidden mode (enabled by Supervise, which main
// and every TestMain call first; run by this package's init, before the
// packages a supervisor does not use initialise), which talks with ralph
// over a unix socket pair
// that only the two of them hold. ralph sends it the child's command with
// the child's stdin, stdout and stderr (SCM_RIGHTS); the supervisor starts
// the child, reports its pid, and waits for one of three things: the
// child's exit (the iteration's end), a kill order from ralph (the stop's
// SIGKILL phase), or the end of the socket (ralph's death, by any signal,
// SIGKILL included). Then it kills every process it can reach, over and
// over until none is left, and reports how the child ended. A supervisor
// serves one child at a time and waits for the next one: starting ralph's
// program costs milliseconds (10-11 ms on the machines of issue 14), a
// start order tens of microseconds; Prepare
// starts one ahead of the first child, beside other work. The next child's
// order may come while a child runs (Cmd.After): the supervisor keeps it
// and starts that child as soon as the running one's end is reported. Those that wait
// are let go, and waited for, when ralph is done (Shutdown), or end with
// the socket when ralph dies. A Cmd.Mark goes into the environment of the
// child and so of everything it starts (MarkVar), which lets KillMarked
// find what is left when the supervisor itself was killed.
//
// What each platform gives (the rules above hold on all of them, except
// where said):
//
//   - Linux: all of the above. The supervisor is a child subreaper
//     (PR_SET_CHILD_SUBREAPER): whatever the child starts is its
//     descendant, even after a setsid or a double fork, and it kills them
//     all, found through /proc. The child has a parent-death signal, so a
//     killed supervisor takes the child with it; KillMarked reads
//     /proc/*/environ. StartTime and KillGroupIfSame read /proc so that
//     recovery can kill a dead ralph's survivors without hitting a reused
//     pid.
//   - macOS and the BSDs: process groups and signals, and the supervisor,
//     but no subreaper: when the child ends, is stopped, or ralph dies,
//     the supervisor kills the child's process group only, so a process
//     that left the group (setsid, a daemon) outlives it. There is no
//     parent-death signal, KillMarked finds nothing, and StartTime is
//     unavailable, so KillGroupIfSame never kills (recovery cannot tell a
//     survivor from a stranger that reused its pid).
//   - Windows: no process groups, signals or supervisor. The child gets a
//     new console process group (so a Ctrl-C typed at ralph's console does
//     not reach it) and is put in a job object that kills its whole tree,
//     setsid-like detaching included, when ralph exits or dies. The
//     interrupt is a CTRL_BREAK_EVENT, which reaches the child only when
//     it shares ralph's console; the kill terminates the job. A grandchild
//     spawned in the instant between the child's start and its assignment
//     to the job escapes the job. StartTime is unavailable, as on macOS,
//     and KillMarked finds nothing.
//
// Cgroups and PID namespaces would contain more (a process started on the
// child's behalf by a service outside its tree), but need privileges or
// a systemd session that ralph cannot count on; ralph works without them.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// DefaultGrace is how long a cancelled child gets between SIGINT and SIGKILL.
const DefaultGrace = 2 * time.Second

// HardGrace is the grace of a hard stop (see ErrStopNow): long enough for
// a child that handles SIGINT at once to flush a line, short enough that
// "stop now" is felt as now.
const HardGrace = 100 * time.Millisecond

// ErrStopNow, as the cause of a context's cancellation
// (context.WithCancelCause), makes the stop of every child under that
// context a hard one: SIGINT, then SIGKILL after HardGrace instead of
// Cmd.Grace.
var ErrStopNow = errors.New("stopped at once")

// waitSlack is how long after the SIGKILL a cancelled child's pipes may
// stay open (held by a grandchild that left the group) before Wait closes
// them: a second after a normal stop, HardGrace after a hard one.
const (
	waitSlack     = time.Second
	hardWaitSlack = HardGrace
)

// Cmd describes one child process.
type Cmd struct {
	Name  string   // program name or path
	Args  []string // arguments, without the program name
	Dir   string   // working directory; "" means the current one
	Env   []string // full environment, the last of a variable given twice counting; nil means inherit ralph's
	Stdin io.Reader
	// Grace is the time between SIGINT and SIGKILL on cancellation;
	// zero means DefaultGrace. A hard stop (ErrStopNow) uses HardGrace.
	Grace time.Duration
	// Contain runs the child under a supervisor (see Containment in the
	// package doc), for Start only: when the child exits, is stopped, or
	// ralph dies, everything it started is killed. Where this program
	// cannot be re-executed as a supervisor (Supervise was not called, or
	// Windows), the child runs as without it.
	Contain bool
	// Mark, when set, goes into the child's environment as MarkVar=Mark,
	// and so into that of everything it starts: KillMarked finds them by
	// it.
	Mark string
	// After, when set, is a contained child that may still run: its
	// supervisor starts this one as soon as it has ended and everything it
	// left is dead, without waiting for ralph to hear of its end first (a
	// round trip of about 0.7 ms on a 2-core VM), and Start returns once
	// this one runs. Where After cannot take it (not contained, its end
	// heard already, its supervisor gone, or another start waits on it),
	// the child starts as it would without After. For Contain only.
	After *Process
}

// ErrNotFound reports that the program is not installed (not on PATH).
var ErrNotFound = errors.New("program not found")

// grace is the SIGINT-to-SIGKILL time of a normal stop.
func (c Cmd) grace() time.Duration {
	if c.Grace <= 0 {
		return DefaultGrace
	}
	return c.Grace
}

// build returns an exec.Cmd configured with ralph's process rules.
func (c Cmd) build(ctx context.Context) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.Name, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = c.environ()
	cmd.Stdin = c.Stdin // nil means the null device
	cmd.SysProcAttr = sysProcAttr()
	grace := c.grace()
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		if errors.Is(context.Cause(ctx), ErrStopNow) {
			// exec reads WaitDelay after Cancel returns, on the same
			// goroutine, to start its timer: the hard stop's bound
			// replaces the normal one before it is used.
			cmd.WaitDelay = HardGrace + hardWaitSlack
			StopGroup(cmd.Process.Pid, HardGrace)
			return nil
		}
		StopGroup(cmd.Process.Pid, grace)
		return nil
	}
	// After cancellation, give the group the grace period plus a little to
	// exit and close its pipes; then Wait returns regardless.
	cmd.WaitDelay = grace + waitSlack
	return cmd
}

// environ is the child's environment: Env (or ralph's), with the mark.
func (c Cmd) environ() []string {
	if c.Mark == "" {
		return c.Env
	}
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		// A ralph run by an agent of another ralph inherits that one's
		// mark: the child carries its own ralph's only.
		if !strings.HasPrefix(kv, MarkVar+"=") {
			out = append(out, kv)
		}
	}
	return append(out, MarkVar+"="+c.Mark)
}

// start starts cmd and puts it under the platform's group control.
func start(cmd *exec.Cmd) error {
	interruptible()
	var err error
	withChildCPUs(func() { err = cmd.Start() })
	if err != nil {
		return err
	}
	adopt(cmd.Process)
	return nil
}

// run starts cmd, waits for it, then kills what is left of its group:
// the group may hold grandchildren, and none may outlive the call.
func run(cmd *exec.Cmd) error {
	if err := start(cmd); err != nil {
		return err
	}
	err := cmd.Wait()
	killGroup(cmd.Process)
	return err
}

// Output runs the command and returns its standard output. Standard error
// is included in the returned error when the command fails. The context
// bounds the whole run.
func Output(ctx context.Context, c Cmd) ([]byte, error) {
	wait, err := StartOutput(ctx, c)
	if err != nil {
		return nil, err
	}
	return wait()
}

// StartOutput starts what Output runs and returns once it runs; wait
// waits for its end, kills what is left of its group and returns what
// Output would. A caller with other work to begin starts the longest
// child first, without a goroutine between it and the start.
func StartOutput(ctx context.Context, c Cmd) (wait func() ([]byte, error), err error) {
	if _, err := exec.LookPath(c.Name); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Name, ErrNotFound)
	}
	cmd := c.build(ctx)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := start(cmd); err != nil {
		return nil, outputErr(ctx, c.Name, err, nil)
	}
	return func() ([]byte, error) {
		err := cmd.Wait()
		killGroup(cmd.Process)
		if err := outputErr(ctx, c.Name, err, stderr.Bytes()); err != nil {
			return stdout.Bytes(), err
		}
		return stdout.Bytes(), nil
	}, nil
}

// outputErr is Output's error for a run of name that ended with err and
// wrote stderr: ctx's, if it ended the run, else err with the start of
// stderr; nil for a run that succeeded.
func outputErr(ctx context.Context, name string, err error, stderr []byte) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", name, ctxErr)
	}
	if err == nil {
		return nil
	}
	msg := bytes.TrimSpace(stderr)
	if len(msg) > 500 {
		msg = append(msg[:500:500], "…"...)
	}
	if len(msg) > 0 {
		return fmt.Errorf("%s: %w: %s", name, err, msg)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// LookPath reports whether a program is installed and where.
func LookPath(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, ErrNotFound)
	}
	return p, nil
}

// Result is how a finished child ran.
type Result struct {
	Stdout, Stderr []byte
	ExitCode       int           // -1 when killed by a signal
	Wall           time.Duration // start to exit
	MaxRSS         int64         // peak resident memory in bytes; 0 where unknown
}

// Run runs the command to completion and reports its exit code, time and
// peak memory. A non-zero exit is not an error; failing to start is.
func Run(ctx context.Context, c Cmd) (Result, error) {
	if _, err := exec.LookPath(c.Name); err != nil {
		return Result{}, fmt.Errorf("%s: %w", c.Name, ErrNotFound)
	}
	cmd := c.build(ctx)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	start := time.Now()
	err := run(cmd)
	res := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Wall: time.Since(start), ExitCode: -1}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
		res.MaxRSS = maxRSS(cmd.ProcessState)
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return res, fmt.Errorf("%s: %w", c.Name, err)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return res, fmt.Errorf("%s: %w", c.Name, ctxErr)
	}
	return res, nil
}

// Process is a started child.
type Process struct {
	cmd  *exec.Cmd // nil for a contained child
	done chan struct{}
	err  error
	// sup is ralph's side of the supervisor of a contained child; nil
	// otherwise.
	sup *supervisor
}

// Start starts the command with its output going to stdout and stderr
// (nil discards). The context cancels it as a group, like Output. With
// Cmd.Contain, Start returns once the supervisor has started the child.
func Start(ctx context.Context, c Cmd, stdout, stderr io.Writer) (*Process, error) {
	path, err := exec.LookPath(c.Name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Name, ErrNotFound)
	}
	if c.Contain && supervisable.Load() {
		return startSupervised(ctx, c, path, stdout, stderr)
	}
	cmd := c.build(ctx)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := start(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Name, err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid returns the child's process ID, which is also its process group ID.
// For a contained child it is the child's, not its supervisor's.
func (p *Process) Pid() int {
	if p.sup != nil {
		return p.sup.childPid()
	}
	return p.cmd.Process.Pid
}

// Done is closed when the child has exited and its output has been copied
// to the writers given to Start. The copying is bounded too: pipes a
// grandchild still holds open once the child has exited (or been
// cancelled) are closed a little after the grace period (WaitDelay).
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitCode reports the child's exit code once Done is closed: -1 when a
// signal ended it, or while it is still running.
func (p *Process) ExitCode() int {
	select {
	case <-p.done:
	default:
		return -1
	}
	if p.sup != nil {
		return p.sup.exitCode()
	}
	if p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// Wait waits for the child to exit, at most timeout, then kills its group
// (a contained child's supervisor has killed everything by then).
func (p *Process) Wait(timeout time.Duration) error {
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.Kill()
		<-p.done
		return fmt.Errorf("%s: still running after %s; killed", p.name(), timeout)
	}
	if p.sup == nil {
		killGroup(p.cmd.Process)
	}
	return p.err
}

// Kill kills the child and everything it started, at once, and returns
// once the child runs no more: a contained child's supervisor has reported
// its end (or was killed itself, after sweepLimit); another child's group
// has been sent SIGKILL, which no code of theirs outlives. Done follows.
func (p *Process) Kill() {
	if p.sup != nil {
		p.sup.killAll(p.done)
		return
	}
	killGroup(p.cmd.Process)
}

// name is the child's program, for messages.
func (p *Process) name() string {
	if p.sup != nil {
		return p.sup.name
	}
	return p.cmd.Path
}

// Runner runs programs by this package's rules for the packages below
// coordinator, which declare the small interface they need (gitctx.Runner)
// rather than import proc; its methods take only standard types, so it
// satisfies such an interface without knowing it.
type Runner struct{}

// LookPath is the package's LookPath.
func (Runner) LookPath(name string) (string, error) { return LookPath(name) }

// Output runs name with args in dir, with ralph's environment and the
// default grace, like the package's Output.
func (Runner) Output(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	return Output(ctx, Cmd{Name: name, Args: args, Dir: dir})
}

// Start starts what Output runs, like the package's StartOutput.
func (Runner) Start(ctx context.Context, dir, name string, args ...string) (wait func() ([]byte, error), err error) {
	return StartOutput(ctx, Cmd{Name: name, Args: args, Dir: dir})
}
