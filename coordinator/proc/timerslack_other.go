//go:build !linux

package proc

import "time"

// RelaxTimers does nothing here: timer slack is Linux's.
func RelaxTimers(time.Duration) {}
