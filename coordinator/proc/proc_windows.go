//go:build windows

package proc

import (
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// sysProcAttr gives the child its own console process group: a Ctrl-C
// typed at ralph's console then reaches ralph alone, which decides what to
// stop, as the process group does on Unix.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

// maxRSS is unknown here: the process state carries times, not memory.
func maxRSS(*os.ProcessState) int64 { return 0 }

// job is the job object holding one child's tree. It is created with
// KILL_ON_JOB_CLOSE, so the tree dies when ralph closes the handle: when
// the child is done, or when ralph exits or dies (Windows' stand-in for
// Linux's parent-death signal).
type job struct {
	mu     sync.Mutex
	h      windows.Handle
	closed bool
}

// terminate kills every process in the job and keeps the handle.
func (j *job) terminate() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.closed {
		_ = windows.TerminateJobObject(j.h, 1)
	}
}

// close kills what is left in the job and frees the handle. A timer from
// StopGroup that fires later finds the job closed and does nothing, so it
// cannot reach a later child that reused the pid.
func (j *job) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.closed {
		_ = windows.TerminateJobObject(j.h, 1)
		_ = windows.CloseHandle(j.h)
		j.closed = true
	}
}

// jobs maps the pid of each running child to its job.
var jobs = struct {
	sync.Mutex
	m map[int]*job
}{m: map[int]*job{}}

func lookupJob(pid int) *job {
	jobs.Lock()
	defer jobs.Unlock()
	return jobs.m[pid]
}

func takeJob(pid int) *job {
	jobs.Lock()
	defer jobs.Unlock()
	j := jobs.m[pid]
	delete(jobs.m, pid)
	return j
}

// newJob creates a job object that kills its processes when closed.
func newJob() (windows.Handle, error) {
	h, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, err
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	_, err = windows.SetInformationJobObject(h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)))
	if err != nil {
		_ = windows.CloseHandle(h)
		return 0, err
	}
	return h, nil
}

// interruptible needs do nothing: StopGroup sends a console break, which
// no inherited disposition keeps from the child.
func interruptible() {}

// adopt puts a just-started child in a job of its own. The child runs
// from its start, so a grandchild it spawns before this call stays outside
// the job. If the job cannot be made, the child is still stopped: exec
// kills it when WaitDelay expires after a cancellation.
func adopt(p *os.Process) {
	h, err := newJob()
	if err != nil {
		return
	}
	// The child is not waited for yet, so its pid cannot name another.
	ph, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(p.Pid))
	if err != nil {
		_ = windows.CloseHandle(h)
		return
	}
	defer windows.CloseHandle(ph)
	if err := windows.AssignProcessToJobObject(h, ph); err != nil {
		_ = windows.CloseHandle(h)
		return
	}
	jobs.Lock()
	jobs.m[p.Pid] = &job{h: h}
	jobs.Unlock()
}

// StopGroup stops the child whose pid is pgid and its tree: a
// CTRL_BREAK_EVENT now (delivered only when the child shares ralph's
// console), the job terminated after grace. It reaches only children that
// proc started; it returns at once.
func StopGroup(pgid int, grace time.Duration) {
	if pgid <= 0 {
		return // 0 would signal every process on ralph's console, ralph too
	}
	_ = windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(pgid))
	if j := lookupJob(pgid); j != nil {
		time.AfterFunc(grace, j.terminate)
	}
}

// killGroup kills what is left of the child's tree and frees its job.
func killGroup(p *os.Process) {
	if p == nil {
		return
	}
	if j := takeJob(p.Pid); j != nil {
		j.close()
		return
	}
	_ = p.Kill()
}

// Signal sends sig to the child alone. Windows can only kill
// (syscall.SIGKILL); other signals return an error.
func (p *Process) Signal(sig syscall.Signal) error {
	return p.cmd.Process.Signal(sig)
}
