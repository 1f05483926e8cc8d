//go:build unix && !linux

package proc

import (
	"os"
	"runtime"
	"syscall"
)

// sysProcAttr puts the child in a new process group. Parent-death signals
// are Linux-only: here a SIGKILLed ralph leaves its child running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// maxRSS reads the peak resident memory of a finished child: ru_maxrss is
// in bytes on macOS and in KiB on the BSDs.
func maxRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}
