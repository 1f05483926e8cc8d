//go:build !linux

package proc

import "syscall"

// sysProcAttr puts the child in a new process group. Parent-death signals
// are Linux-only; elsewhere recovery kills recorded survivors on start.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
