//go:build !linux

package proc

import (
	"errors"
	"syscall"
)

// sysProcAttr puts the child in a new process group. Parent-death signals
// are Linux-only; elsewhere recovery kills recorded survivors on start.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// maxRSSBytes converts ru_maxrss: bytes on Darwin, KiB on the BSDs.
func maxRSSBytes(ru *syscall.Rusage) int64 { return int64(ru.Maxrss) }

// StartTime is Linux-only for now.
func StartTime(pid int) (uint64, error) {
	return 0, errors.New("process start times are read from /proc, on Linux only")
}

// KillGroupIfSame never kills where start times cannot be read.
func KillGroupIfSame(pid int, start uint64) (bool, error) { return false, nil }
