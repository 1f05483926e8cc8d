//go:build unix

package proc

import (
	"os"
	"syscall"
	"time"
)

// StopGroup stops the process group pgid: SIGINT now, SIGKILL after
// grace. It returns at once; the SIGKILL follows from a timer. A pgid of
// 1 or less names no child's group (kill(2) would reach ralph's own group
// or every process) and is ignored.
func StopGroup(pgid int, grace time.Duration) {
	if pgid <= 1 {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGINT)
	time.AfterFunc(grace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
}

// adopt needs do nothing: the child leads its own group from its start
// (sysProcAttr).
func adopt(*os.Process) {}

// killGroup SIGKILLs what is left of the child's group.
func killGroup(p *os.Process) {
	if p != nil && p.Pid > 1 {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
}
