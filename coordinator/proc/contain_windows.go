package proc

import (
	"context"
	"errors"
	"io"
	"os"
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

// killAll is not reached: no Process has a supervisor here.
func (s *supervisor) killAll(sup *os.Process, _ <-chan struct{}) { _ = sup.Kill() }

// KillMarked finds nothing here: the job object already killed the tree
// when ralph died.
func KillMarked(string) (int, error) { return 0, nil }

// KillMarkedIf finds nothing here either, for the same reason.
func KillMarkedIf(func(mark string) bool) (int, error) { return 0, nil }
