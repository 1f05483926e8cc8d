package cli

import (
	"context"
	"errors"
	"os"
	"syscall"
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
