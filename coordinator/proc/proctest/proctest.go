//go:build linux

// Package proctest reads /proc for tests that check which processes ralph
// and its agents left running, and holds a buffer a running child may
// write to while the test reads it. Linux only, like those tests.
package proctest

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Stat reads a process's state letter, parent and process group from
// /proc/<pid>/stat; ok is false once the process is gone.
func Stat(pid int) (state byte, ppid, pgrp int, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	// "pid (comm) S ppid pgrp …": comm may hold spaces and parentheses,
	// so the fields are read after the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 3 {
		return 0, 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	pgrp, _ = strconv.Atoi(f[2])
	return f[0][0], ppid, pgrp, true
}

// Alive reports whether pid is a live process: a zombie, waiting for its
// parent to reap it, is dead.
func Alive(pid int) bool {
	st, _, _, ok := Stat(pid)
	return ok && st != 'Z' && st != 'X'
}

// Living returns those of pids that are alive.
func Living(pids []int) []int {
	var out []int
	for _, pid := range pids {
		if Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// SyncBuffer is a bytes.Buffer safe for a child's writer goroutine and the
// test reading it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// From is what was written after the first off bytes: a reader that
// follows a fast writer (a chat printing 1 MB/s) copies only what is new.
func (s *SyncBuffer) From(off int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b.Bytes()[min(off, s.b.Len()):])
}

// AllowedCPUs reads the values of the Cpus_allowed_list lines in text:
// a /proc/<pid>/status file's one, or those a test's children noted.
func AllowedCPUs(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}

// CPUsOf is the Cpus_allowed_list of a status file under /proc
// (/proc/self/status, /proc/self/task/<tid>/status).
func CPUsOf(status string) (string, error) {
	data, err := os.ReadFile(status)
	if err != nil {
		return "", err
	}
	got := AllowedCPUs(string(data))
	if len(got) != 1 {
		return "", fmt.Errorf("%s: %d Cpus_allowed_list lines", status, len(got))
	}
	return got[0], nil
}
