//go:build unix && !linux

package proc

import (
	"errors"
	"os"
	"syscall"
)

// canSupervise: the supervisor runs here too, without a subreaper; see the
// package doc for what it reaches.
func canSupervise() bool {
	_, err := selfPath()
	return err == nil
}

// selfPath is the program to re-execute as a supervisor.
func selfPath() (string, error) { return os.Executable() }

// errNoSubreaper: Linux alone has PR_SET_CHILD_SUBREAPER. (FreeBSD's
// procctl(PROC_REAP_ACQUIRE) is the equivalent, not used yet.)
var errNoSubreaper = errors.New("no child subreaper on this platform")

func becomeSubreaper() error { return errNoSubreaper }

// childAttr starts the supervisor's child in a process group of its own.
// There is no parent-death signal here.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// liveDescendants cannot list processes here: the sweep reaches the
// child's process group only.
func liveDescendants(int) []int { return nil }

// KillMarked finds nothing here: reading other processes' environments
// needs /proc.
func KillMarked(string) (int, error) { return 0, nil }

// KillMarkedIf finds nothing here either, for the same reason.
func KillMarkedIf(func(mark string) bool) (int, error) { return 0, nil }

// startSlack is 0: timer slack is Linux's (RelaxTimers does nothing here),
// and children keep the slack they inherit.
func startSlack() uint64 { return 0 }

// withSlack calls fork: no start order carries a slack here.
func withSlack(_ uint64, fork func()) { fork() }
