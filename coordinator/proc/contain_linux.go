package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// canSupervise: Linux has everything containment uses.
func canSupervise() bool { return true }

// selfPath is the program to re-execute as a supervisor: /proc/self/exe
// names this very program even when its file was replaced or deleted
// since it started (an upgrade while ralph runs).
func selfPath() (string, error) { return "/proc/self/exe", nil }

// becomeSubreaper makes the supervisor the parent of every orphan among
// its descendants: a process that double-forks or calls setsid stays
// within its reach. It also names the process for ps and top, which would
// otherwise show the name of the file it was started from: "exe".
func becomeSubreaper() error {
	_ = os.WriteFile("/proc/self/comm", []byte(supervisorName), 0)
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// supervisorName is a supervisor's name in ps (at most 15 bytes).
const supervisorName = "ralph-supervise"

// childAttr starts the supervisor's child in a process group of its own
// (the group ralph interrupts) with a parent-death signal: a supervisor
// killed with SIGKILL takes the child with it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// pids lists the processes in /proc.
func pids() []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	out := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

// liveDescendants lists the descendants of root that are not zombies, from
// one pass over /proc.
func liveDescendants(root int) []int {
	children := map[int][]int{}
	zombie := map[int]bool{}
	for _, pid := range pids() {
		st, err := readStat(pid)
		if err != nil {
			continue // gone meanwhile
		}
		children[st.ppid] = append(children[st.ppid], pid)
		zombie[pid] = st.state == 'Z' || st.state == 'X'
	}
	var live []int
	queue := children[root]
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if !zombie[pid] {
			live = append(live, pid)
		}
		queue = append(queue, children[pid]...)
	}
	return live
}

// KillMarked SIGKILLs every process whose environment carries
// MarkVar=mark (see Cmd.Mark), found through /proc/*/environ, over and
// over until none is left, and returns how many it killed. It is how
// recovery stops what a dead ralph's agent left running when its
// supervisor was killed too. It reaches the processes of ralph's own user
// (root: all); one that emptied or rewrote its environment escapes it.
// Between reading a process's environment and killing it, the process
// could end and its pid be taken by a new one: that needs the kernel to
// hand out every other pid first, which it does not do in microseconds.
func KillMarked(mark string) (int, error) {
	if mark == "" {
		return 0, nil
	}
	n, err := KillMarkedIf(func(m string) bool { return m == mark })
	if err != nil {
		err = fmt.Errorf("%s=%s: %w", MarkVar, mark, err)
	}
	return n, err
}

// KillMarkedIf is KillMarked for every mark that match accepts: the marks
// of a kind (a one-shot's, say) whose owner is gone. match is asked once
// per look at each marked process, so it should be quick.
//
// It returns once no process shows a mark match accepts and every process
// it killed has died: a killed process's environment reads empty as its
// memory goes, a moment before it is a zombie, and a sweep that looked
// only for marks could return while one still ran.
func KillMarkedIf(match func(mark string) bool) (int, error) {
	self := os.Getpid()
	killed := map[int]uint64{} // pid: its start time
	deadline := time.Now().Add(sweepLimit)
	var wait backoff
	var env environReader
	for {
		found := 0
		for _, pid := range pids() {
			if pid == self {
				continue
			}
			if m, ok := env.markOf(pid); !ok || !match(m) {
				continue
			}
			found++
			start, err := StartTime(pid)
			if err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed[pid] = start
			}
		}
		for pid, start := range killed {
			if st, err := readStat(pid); err == nil && st.start == start && st.state != 'Z' && st.state != 'X' {
				found++ // killed, not dead yet
			}
		}
		if found == 0 {
			return len(killed), nil
		}
		if time.Now().After(deadline) {
			return len(killed), fmt.Errorf("%d marked processes still run after %s", found, sweepLimit)
		}
		wait.sleep()
	}
}

// environReader reads processes' environments into one buffer it keeps,
// with the system calls alone: a sweep reads every process on the
// machine, at every run's start, and os.ReadFile's file object (two pairs
// of fcntl and an epoll_ctl an open, on top of open, fstat, read and
// close) made it 12 µs a process here, about 1 ms for 70 processes and
// ten times that on a desktop.
type environReader struct{ buf []byte }

// environBuf is an environment's usual size and then some: most are read
// whole by one read.
const environBuf = 16 << 10

// markOf returns the mark (MarkVar's value) in pid's environment, and
// whether pid is alive and has one. A zombie's environment reads empty.
func (r *environReader) markOf(pid int) (string, bool) {
	env, ok := r.read(pid)
	if !ok {
		return "", false
	}
	prefix := []byte(MarkVar + "=")
	for len(env) > 0 {
		kv := env
		if i := bytes.IndexByte(env, 0); i >= 0 {
			kv, env = env[:i], env[i+1:]
		} else {
			env = nil
		}
		if m, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(m), true
		}
	}
	return "", false
}

// read returns pid's environment, valid until the next read; ok is false
// when it cannot be read (gone, another user's).
func (r *environReader) read(pid int) (_ []byte, ok bool) {
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/environ", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	if r.buf == nil {
		r.buf = make([]byte, environBuf)
	}
	n := 0
	for {
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
		m, err := syscall.Read(fd, r.buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, false
		}
		if m == 0 {
			return r.buf[:n], true
		}
		n += m
	}
}
