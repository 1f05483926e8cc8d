package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes of work stopped by a signal other than Ctrl-C: 128 plus the
// signal's number, as a shell reports a process that the signal killed,
// so that a script or a service manager tells them apart. Ctrl-C is
// ExitInterrupted (130, 128 plus SIGINT's 2).
const (
	ExitHangup     = 129 // SIGHUP: the terminal closed, an ssh connection dropped
	ExitTerminated = 143 // SIGTERM: kill, a service manager, a container stopping
)

// StopSignal is the cause of the root context's cancellation when a signal
// stops ralph (main's handler). Work stops as it does for Ctrl-C: the
// agent and everything it started are stopped, its task goes back to
// pending with a note, the session is saved as paused. Only the exit code
// names the signal.
type StopSignal struct{ Signal os.Signal }

func (s StopSignal) Error() string { return "stopped by " + s.Signal.String() }

// signalCode turns ExitInterrupted into the exit code of the signal that
// cancelled ctx, if one did.
func signalCode(ctx context.Context, code int) int {
	var s StopSignal
	if code != ExitInterrupted || !errors.As(context.Cause(ctx), &s) {
		return code
	}
	switch s.Signal {
	case syscall.SIGHUP:
		return ExitHangup
	case syscall.SIGTERM:
		return ExitTerminated
	}
	return code
}

// stopsOnSignals is the annotation of the commands whose work a signal
// stops as Ctrl-C does: those that run agents (run, resume, chat, demo, the
// one-shot). Only they install the handlers (signal.Notify costs every
// start about 0.2 ms, issue 14); a signal ends any other command at once,
// which loses nothing, since every write is atomic.
const stopsOnSignals = "ralph/stops-on-signals"

// runsAgents reports whether cmd is one of those.
func runsAgents(cmd *cobra.Command) bool { return cmd.Annotations[stopsOnSignals] != "" }

// stopOnSignalsFor marks cmd as one of those.
func stopOnSignalsFor(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[stopsOnSignals] = "yes"
	return cmd
}

// watchSignals gives a command marked by stopOnSignalsFor a context that
// the first of SIGINT (Ctrl-C), SIGTERM and SIGHUP cancels with a
// StopSignal cause, which picks the exit code. SIGTERM is how kill,
// service managers and containers ask a program to end, SIGHUP how a
// closed terminal or a dropped ssh connection says so: left at their
// default, either would kill ralph with its task in progress, its session
// "running", its agent at work. A SIGHUP ignored from the start (nohup
// ralph run) stays ignored. Later signals are ignored while the work stops
// (bounded by the agent's grace).
func (f *Factory) watchSignals(cmd *cobra.Command) {
	if !runsAgents(cmd) || f.stopSignals != nil {
		return
	}
	ctx, cancel := context.WithCancelCause(cmd.Context())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	if !signal.Ignored(syscall.SIGHUP) {
		signal.Notify(sigs, syscall.SIGHUP)
	}
	go func() {
		select {
		case sig := <-sigs:
			// A hangup often takes the reader of ralph's output with it
			// (`ralph run | tee log` over ssh): a write to a broken pipe
			// must fail, not kill ralph before it saved the session.
			// Caught here rather than ignored for good: an ignored
			// SIGPIPE would stay ignored in the agents ralph starts.
			signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
			cancel(StopSignal{Signal: sig})
		case <-ctx.Done():
		}
	}()
	cmd.SetContext(ctx)
	f.signals = ctx
	f.stopSignals = func() {
		signal.Stop(sigs)
		cancel(nil)
	}
}
