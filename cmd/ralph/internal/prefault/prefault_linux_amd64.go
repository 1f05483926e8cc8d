//go:build !ralph_noprefault

package prefault

import "unsafe"

const (
	// madvPopulateRead is MADV_POPULATE_READ (Linux 5.14): fault the
	// pages of a range in, readable, as a read of each would.
	madvPopulateRead = 22
	// madvPopulateWrite is MADV_POPULATE_WRITE: as a write to each would
	// (for the data, a private copy of each page, its bytes unchanged).
	madvPopulateWrite = 23
	pageSize          = 4096
)

// The system calls the package makes (linux/amd64 numbers) and their
// flags.
const (
	sysRead    = 0
	sysOpen    = 2
	sysClose   = 3
	sysMadvise = 28
	oRdonly    = 0
	oCloexec   = 0o2000000
)

// syscall3 is a raw system call; it returns the kernel's result (a
// count or 0, or minus an errno).
func syscall3(trap, a1, a2, a3 uintptr) uintptr

// madvise is the raw madvise system call.
func madvise(addr, n, advice uintptr) uintptr {
	return syscall3(sysMadvise, addr, n, advice)
}

// readOnlyImage is where the linker put the binary's code through its
// function tables: [runtime.text, runtime.epclntab), read-only pages.
func readOnlyImage() (start, end uintptr)

// dataImage is the binary's initialised variables: [runtime.noptrdata,
// runtime.edata), which the package inits write to.
func dataImage() (start, end uintptr)

func init() {
	// A supervisor (ralph's program re-executed to contain an agent,
	// coordinator/proc) runs a few of the binary's functions and exits
	// with ralph: mapping all of it would cost the supervisor's start
	// (which the first agent of a run waits for) and its exit (which
	// ralph's waits for) more than the faults it saves. Runs of 1 task
	// were about 0.75 ms faster without (docs/benchmarks.md).
	var buf [64]byte
	if isSupervisor(commandLine(buf[:])) {
		return
	}
	// The results are ignored: a kernel without the advice, or a page it
	// could not fill, leaves the fault to happen as it would have.
	start, end := readOnlyImage()
	madvise(start&^(pageSize-1), end-start&^(pageSize-1), madvPopulateRead)
	start, end = dataImage()
	madvise(start&^(pageSize-1), end-start&^(pageSize-1), madvPopulateWrite)
}

// SuperviseArg is coordinator/proc.SuperviseArg, which this package cannot
// import (it imports nothing but unsafe): as the first argument, it makes
// ralph's program a supervisor. cmd/ralph's tests check that the two are
// the same.
const SuperviseArg = "__ralph-supervise"

// commandLine reads the start of the process's arguments, each ended by
// a NUL byte, from /proc/self/cmdline into buf, and returns what it read:
// nothing when it cannot (no /proc), and then the process is taken for
// what it usually is, not a supervisor.
func commandLine(buf []byte) []byte {
	const path = "/proc/self/cmdline\x00"
	fd := syscall3(sysOpen, uintptr(unsafe.Pointer(unsafe.StringData(path))), oRdonly|oCloexec, 0)
	if int(fd) < 0 {
		return nil
	}
	n := syscall3(sysRead, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	syscall3(sysClose, fd, 0, 0)
	if int(n) < 0 {
		return nil
	}
	return buf[:n]
}

// isSupervisor reports whether cmdline, a process's arguments as
// commandLine reads them, is a supervisor's: its first argument after the
// program's name is SuperviseArg.
func isSupervisor(cmdline []byte) bool {
	for i, b := range cmdline {
		if b == 0 {
			rest := cmdline[i+1:]
			return len(rest) > len(SuperviseArg) && string(rest[:len(SuperviseArg)]) == SuperviseArg && rest[len(SuperviseArg)] == 0
		}
	}
	return false
}
