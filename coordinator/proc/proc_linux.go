package proc

import "syscall"

// sysProcAttr puts the child in a new process group and asks the kernel to
// SIGKILL it when ralph's thread dies, so a SIGKILLed ralph leaves no child.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// maxRSSBytes converts ru_maxrss, which Linux reports in KiB.
func maxRSSBytes(ru *syscall.Rusage) int64 { return ru.Maxrss * 1024 }
