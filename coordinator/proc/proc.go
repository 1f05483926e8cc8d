// Package proc is the one package in ralph that owns os/exec.
//
// Every child process ralph starts (git, child agents, test helpers) goes
// through here so that the same rules hold everywhere:
//
//   - the child runs in its own process group, so stopping it stops
//     everything it spawned (snarktank/ralph#79: agents outliving ralph);
//   - on Linux the child gets a parent-death signal, so a SIGKILLed ralph
//     does not leave it running;
//   - cancellation sends SIGINT to the group, then SIGKILL after a grace
//     period, and every wait is bounded (WaitDelay);
//   - stdin is /dev/null unless the caller supplies one: an open, silent
//     stdin pipe makes some agent CLIs block forever.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"
)

// DefaultGrace is how long a cancelled child gets between SIGINT and SIGKILL.
const DefaultGrace = 2 * time.Second

// Cmd describes one child process.
type Cmd struct {
	Name  string   // program name or path
	Args  []string // arguments, without the program name
	Dir   string   // working directory; "" means the current one
	Env   []string // full environment; nil means inherit ralph's
	Stdin io.Reader
	// Grace is the time between SIGINT and SIGKILL on cancellation;
	// zero means DefaultGrace.
	Grace time.Duration
}

// ErrNotFound reports that the program is not installed (not on PATH).
var ErrNotFound = errors.New("program not found")

// build returns an exec.Cmd configured with ralph's process rules.
func (c Cmd) build(ctx context.Context) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.Name, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	cmd.Stdin = c.Stdin // nil means /dev/null
	cmd.SysProcAttr = sysProcAttr()
	grace := c.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	cmd.Cancel = func() error {
		// Interrupt the whole group first; the timer escalates.
		if cmd.Process == nil {
			return nil
		}
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGINT)
		go func() {
			time.Sleep(grace)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}()
		return nil
	}
	// After cancellation, give the group the grace period plus a little to
	// exit and close its pipes; then Wait returns regardless.
	cmd.WaitDelay = grace + time.Second
	return cmd
}

// Output runs the command and returns its standard output. Standard error
// is included in the returned error when the command fails. The context
// bounds the whole run.
func Output(ctx context.Context, c Cmd) ([]byte, error) {
	if _, err := exec.LookPath(c.Name); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Name, ErrNotFound)
	}
	cmd := c.build(ctx)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	// The group may hold grandchildren; make sure none outlive the call.
	killGroup(cmd)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return stdout.Bytes(), fmt.Errorf("%s: %w", c.Name, ctxErr)
	}
	if err != nil {
		msg := bytes.TrimSpace(stderr.Bytes())
		if len(msg) > 500 {
			msg = append(msg[:500:500], "…"...)
		}
		if len(msg) > 0 {
			return stdout.Bytes(), fmt.Errorf("%s: %w: %s", c.Name, err, msg)
		}
		return stdout.Bytes(), fmt.Errorf("%s: %w", c.Name, err)
	}
	return stdout.Bytes(), nil
}

// LookPath reports whether a program is installed and where.
func LookPath(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, ErrNotFound)
	}
	return p, nil
}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// Result is how a finished child ran.
type Result struct {
	Stdout, Stderr []byte
	ExitCode       int           // -1 when killed by a signal
	Wall           time.Duration // start to exit
	MaxRSS         int64         // peak resident memory in bytes
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
	err := cmd.Run()
	res := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Wall: time.Since(start), ExitCode: -1}
	killGroup(cmd)
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			res.MaxRSS = maxRSSBytes(ru)
		}
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
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts the command with its output going to stdout and stderr
// (nil discards). The context cancels it as a group, like Output.
func Start(ctx context.Context, c Cmd, stdout, stderr io.Writer) (*Process, error) {
	if _, err := exec.LookPath(c.Name); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Name, ErrNotFound)
	}
	cmd := c.build(ctx)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
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
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the child has exited and its output has been copied
// to the writers given to Start. The copying is bounded too: pipes a
// grandchild still holds open once the child has exited (or been
// cancelled) are closed after the grace period plus a second (WaitDelay).
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitCode reports the child's exit code once Done is closed: -1 when a
// signal ended it, or while it is still running.
func (p *Process) ExitCode() int {
	select {
	case <-p.done:
	default:
		return -1
	}
	if p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// Signal sends sig to the child alone (not its group): how a test
// simulates a crash of the child itself.
func (p *Process) Signal(sig syscall.Signal) error {
	return syscall.Kill(p.cmd.Process.Pid, sig)
}

// Wait waits for the child to exit, at most timeout, then kills its group.
func (p *Process) Wait(timeout time.Duration) error {
	select {
	case <-p.done:
	case <-time.After(timeout):
		killGroup(p.cmd)
		<-p.done
		return fmt.Errorf("%s: still running after %s; killed", p.cmd.Path, timeout)
	}
	killGroup(p.cmd)
	return p.err
}
