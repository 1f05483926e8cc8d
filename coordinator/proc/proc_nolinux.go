//go:build !linux

package proc

import "errors"

// errNoStartTime: start times are read from /proc/<pid>/stat, which only
// Linux has in the form StartTime needs.
var errNoStartTime = errors.New("process start times are read from /proc, on Linux only")

// StartTime is Linux-only for now.
func StartTime(pid int) (uint64, error) { return 0, errNoStartTime }

// KillGroupIfSame never kills where start times cannot be read: a pid
// alone may name a stranger that reused it.
func KillGroupIfSame(pid int, start uint64) (bool, error) { return false, nil }
