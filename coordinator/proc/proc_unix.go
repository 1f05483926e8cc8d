//go:build unix

package proc

import (
	"os"
	"os/signal"
	"sync"
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

// interruptible makes sure the children ralph starts hear SIGINT, the
// signal StopGroup stops them with. A child inherits an ignored signal,
// and ralph started as a script's background job (`ralph "task" &`) has
// SIGINT ignored: its agents would ignore the stop and last the whole
// grace. Caught instead, by a handler whose channel no one reads, SIGINT
// stays without effect on ralph and is at its default in each child, as
// exec resets a caught signal.
var interruptible = sync.OnceFunc(func() {
	if signal.Ignored(syscall.SIGINT) {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGINT)
	}
})

// adopt needs do nothing: the child leads its own group from its start
// (sysProcAttr).
func adopt(*os.Process) {}

// killGroup SIGKILLs what is left of the child's group.
func killGroup(p *os.Process) {
	if p != nil && p.Pid > 1 {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
}
