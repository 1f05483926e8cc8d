package proc

import (
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pin is the process's pinning to one CPU (PinToOneCPU): the CPUs its
// threads had before, which every child it starts gets back, and the
// one they run on meanwhile. A fork holds mu for reading; pinning and
// unpinning hold it for writing, so that no child starts on a thread
// whose CPUs are being changed under it.
var pin struct {
	mu     sync.RWMutex
	pinned bool
	was    unix.CPUSet
	one    unix.CPUSet // the argument of the threads' system call: not on a stack
}

// PinToOneCPU pins every thread of this process to the CPU the calling
// thread runs on, until unpin is called; every child the process starts
// meanwhile starts with the CPUs it had before (withChildCPUs), and the
// supervisors' children with theirs. A coordinator whose Go code runs on
// one processor (coordinator.Options.OneProc) then never wakes on the CPU
// where its agent starts: on two cores, with short agents, an iteration
// took 0.7-1.3 ms less (docs/benchmarks.md).
//
// It does nothing on a process allowed a single CPU, or in a binary built
// with cgo, whose threads the runtime does not all know
// (syscall.AllThreadsSyscall); nor when it pinned already.
func PinToOneCPU() (unpin func()) {
	pin.mu.Lock()
	defer pin.mu.Unlock()
	if pin.pinned {
		return func() {}
	}
	var was unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil || was.Count() < 2 {
		return func() {}
	}
	cpu, ok := currentCPU()
	if !ok || !was.IsSet(cpu) {
		return func() {}
	}
	pin.one.Zero()
	pin.one.Set(cpu)
	if !setAllThreads(&pin.one) {
		return func() {}
	}
	pin.pinned, pin.was = true, was
	return unpinAll
}

// unpinAll gives every thread back the CPUs it had before PinToOneCPU.
func unpinAll() {
	pin.mu.Lock()
	defer pin.mu.Unlock()
	if !pin.pinned {
		return
	}
	pin.one = pin.was
	setAllThreads(&pin.one)
	pin.pinned = false
}

// setAllThreads sets the CPUs of every thread of the process to set,
// which must not be on a stack, and says whether it could.
func setAllThreads(set *unix.CPUSet) bool {
	_, _, errno := syscall.AllThreadsSyscall(unix.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(*set), uintptr(unsafe.Pointer(set)))
	return errno == 0
}

// currentCPU is the CPU the calling thread runs on.
func currentCPU() (int, bool) {
	var cpu uint32
	_, _, errno := syscall.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), 0, 0)
	return int(cpu), errno == 0
}

// withChildCPUs calls fork on a thread that has, for the call, the CPUs
// the process had before PinToOneCPU, which a process forked there
// inherits: a child is never pinned with ralph. Unpinned, it just calls
// fork.
func withChildCPUs(fork func()) {
	pin.mu.RLock()
	defer pin.mu.RUnlock()
	if !pin.pinned {
		fork()
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Should the call fail, the child shares ralph's CPU: slower, not
	// wrong.
	if err := unix.SchedSetaffinity(0, &pin.was); err == nil {
		defer unix.SchedSetaffinity(0, &pin.one)
	}
	fork()
}
