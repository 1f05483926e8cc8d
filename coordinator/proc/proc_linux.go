package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// sysProcAttr puts the child in a new process group and asks the kernel to
// SIGKILL it when ralph's thread dies, so a SIGKILLed ralph leaves no child.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// maxRSS reads the peak resident memory of a finished child: ru_maxrss,
// which Linux reports in KiB.
func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024
	}
	return 0
}

// StartTime returns a process's start time in clock ticks since boot, from
// /proc: with the pid, it names one process, since a pid can be reused by a
// later process but not with the same start time.
func StartTime(pid int) (uint64, error) {
	st, err := readStat(pid)
	return st.start, err
}

// procStat is what ralph reads from /proc/<pid>/stat.
type procStat struct {
	state byte // R, S, D, Z (zombie), T, …
	ppid  int
	start uint64 // clock ticks since boot
}

// readStat reads /proc/<pid>/stat.
func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing parenthesis. state is field 3 overall, ppid 4,
	// starttime 22: the 1st, 2nd and 20th after the name.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("unreadable /proc/%d/stat", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("unreadable /proc/%d/stat", pid)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, fmt.Errorf("unreadable /proc/%d/stat: %w", pid, err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("unreadable /proc/%d/stat: %w", pid, err)
	}
	return procStat{state: f[0][0], ppid: ppid, start: start}, nil
}

// KillGroupIfSame SIGKILLs what is left of the process group that pid led
// when it started at start (see StartTime), and reports whether anything was
// there to kill. If a process with that pid runs but started at another
// time, the pid was reused and nothing is killed. If the leader is gone, its
// group may still hold survivors (a grandchild that ignored SIGINT), and
// the group ID is safe to signal: Linux does not hand out a pid that is
// still in use as a process group ID, so -pid reaches only those survivors.
func KillGroupIfSame(pid int, start uint64) (bool, error) {
	if pid <= 1 {
		return false, nil
	}
	if got, err := StartTime(pid); err == nil && (start == 0 || got != start) {
		return false, nil // another process has this pid now, or cannot be told apart
	}
	err := syscall.Kill(-pid, syscall.SIGKILL)
	switch {
	case errors.Is(err, syscall.ESRCH):
		return false, nil // the whole group is gone
	case err != nil:
		return false, err
	}
	return true, nil
}
