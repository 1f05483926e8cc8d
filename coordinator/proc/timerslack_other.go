//go:build !linux

package proc

import "time"

// RelaxTimers does nothing here: timer slack is Linux's.
func RelaxTimers(time.Duration) {}

// startSlack is 0: children keep the slack they inherit.
func startSlack() uint64 { return 0 }

// withSlack calls fork: no start order carries a slack here.
func withSlack(_ uint64, fork func()) { fork() }
