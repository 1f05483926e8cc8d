package proc

import (
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// childSlack is the timer slack, in nanoseconds, that contained children
// start with: the one this process had before RelaxTimers changed it. 0
// leaves them the slack of the supervisor's thread that starts them.
var childSlack atomic.Uint64

// relaxOnce makes RelaxTimers act once: a second call would take the
// relaxed slack for the one to give children.
var relaxOnce sync.Once

// RelaxTimers sets the timer slack of every thread of this process to
// slack: a timer of theirs may fire that much late, and the kernel wakes
// them less often. The Go runtime's monitor thread (sysmon) sleeps 20 µs
// at a time while the program is busy, and each of its wake-ups is a
// context switch; a run of short agents had 33 of them an iteration
// (issue 14). Contained children, the agents, start with the slack this
// process had before: their timers are not ralph's to relax. Threads
// started later inherit the new slack, and so do the other processes
// this one starts, the supervisors among them (which give their children
// the old one back).
//
// It acts once, never makes the slack smaller, and does nothing in a
// binary built with cgo, whose threads the runtime does not all know
// (syscall.AllThreadsSyscall).
func RelaxTimers(slack time.Duration) {
	relaxOnce.Do(func() {
		old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
		if err != nil || time.Duration(old) >= slack {
			return // already as relaxed (a service manager's setting, say)
		}
		if _, _, errno := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, unix.PR_SET_TIMERSLACK, uintptr(slack), 0); errno != 0 {
			return
		}
		childSlack.Store(uint64(old))
	})
}

// startSlack is the slack for a start order: childSlack.
func startSlack() uint64 { return childSlack.Load() }

// withSlack calls fork on a thread whose timer slack is slack for the
// call, which a process forked there inherits; 0 leaves it as it is.
func withSlack(slack uint64, fork func()) {
	if slack == 0 {
		fork()
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Should either call fail, the child has this thread's slack: its
	// timers are no worse for it.
	if old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); err == nil {
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack), 0, 0, 0)
		defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(old), 0, 0, 0)
	}
	fork()
}
