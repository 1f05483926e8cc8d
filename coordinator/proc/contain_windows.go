package proc

import (
	"context"
	"errors"
	"io"
)

// canSupervise: Windows has no supervisor; the job object (adopt) holds
// the child's whole tree instead.
func canSupervise() bool { return false }

var errNoSupervisor = errors.New("no supervisor on Windows")

// supervise is never asked for here (Supervise does not enable it).
func supervise([]string) int { return 2 }

// startSupervised is not reached: canSupervise is false.
func startSupervised(context.Context, Cmd, string, io.Writer, io.Writer) (*Process, error) {
	return nil, errNoSupervisor
}

// Shutdown has nothing to wait for: there are no supervisors here.
func Shutdown() {}

// Prepare has nothing to start: there are no supervisors here.
func Prepare() {}

// LetIdleGo has nothing to let go: there are no supervisors here.
func LetIdleGo() {}

// supervisor is never made here: no Process has one.
type supervisor struct{ name string }

func (s *supervisor) childPid() int           { return 0 }
func (s *supervisor) exitCode() int           { return -1 }
func (s *supervisor) killAll(<-chan struct{}) {}

// KillMarked finds nothing here: the job object already killed the tree
// when ralph died.
func KillMarked(string) (int, error) { return 0, nil }

// KillMarkedIf finds nothing here either, for the same reason.
func KillMarkedIf(func(mark string) bool) (int, error) { return 0, nil }
