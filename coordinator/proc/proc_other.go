//go:build !linux

package proc

import "syscall"

// sysProcAttr puts the child in a new process group. Parent-death signals
// are Linux-only; elsewhere recovery kills recorded survivors on start.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// maxRSSBytes converts ru_maxrss: bytes on Darwin, KiB on the BSDs.
func maxRSSBytes(ru *syscall.Rusage) int64 { return int64(ru.Maxrss) }
