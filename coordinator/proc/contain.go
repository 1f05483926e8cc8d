package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// MarkVar is the environment variable that carries Cmd.Mark into a
// child's environment, and so into that of everything it starts.
const MarkVar = "RALPH_SESSION"

// superviseArg, as this program's first argument, makes it a supervisor
// (see Supervise). No command of ralph's has this name, and cobra never
// sees it.
const superviseArg = "__ralph-supervise"

// sweepLimit bounds how long a supervisor (or KillMarked) keeps killing:
// a process stuck in an uninterruptible sleep (a dead NFS server) does not
// die of SIGKILL until the kernel lets it, and must not hold ralph.
const sweepLimit = 5 * time.Second

// The pauses between a sweep's looks: the first look after a SIGKILL
// comes soon, since a killed process is usually gone within microseconds;
// a process still there is stuck, and is looked for less and less often,
// so that a sweep does not read all of /proc thousands of times a second
// for sweepLimit.
const (
	firstPause = 200 * time.Microsecond
	lastPause  = 20 * time.Millisecond
)

// backoff is the pause before a sweep's next look: firstPause, doubling
// up to lastPause. The zero value is ready to use.
type backoff struct{ next time.Duration }

// sleep waits out the next pause.
func (b *backoff) sleep() { time.Sleep(b.pause()) }

// pause returns the next pause and doubles the one after it.
func (b *backoff) pause() time.Duration {
	b.next = min(max(b.next, firstPause), lastPause)
	d := b.next
	b.next *= 2
	return d
}

// supervisable is set by Supervise: this program acts as a supervisor when
// re-executed with superviseArg, so Start may contain children.
var supervisable atomic.Bool

// Supervise must be the first call of main, and of the TestMain of every
// test binary whose code starts contained children (through
// coordinator/agent, say): a supervisor is this very program, re-executed.
// When args (os.Args) say that this process is one, Supervise runs it and
// exits the process, never returning. Otherwise it records that this
// program can be re-executed as a supervisor, where the platform has one,
// and returns at once; in a program that does not call it, Cmd.Contain
// has no effect.
//
// The supervisor exits with the raw exit system call, not os.Exit: a
// race-enabled test binary sleeps a second in os.Exit (GORACE's
// atexit_sleep_ms), which would end every contained child a second late.
func Supervise(args []string) {
	if len(args) >= 2 && args[1] == superviseArg {
		code := supervise(args[2:])
		syscall.Exit(code)
	}
	supervisable.Store(canSupervise())
}

// supervisor is ralph's side of a contained child: the supervisor runs as
// the Process's exec.Cmd, the child under it.
type supervisor struct {
	name  string       // the child's program, for messages
	child atomic.Int64 // the child's pid, once the supervisor reported it
	// life is the write end of the supervisor's lifeline, which only
	// ralph holds: the kernel closes it when ralph dies, however it dies,
	// and the supervisor reads that as "kill everything". Closing it is
	// the same.
	life *os.File
}

func (s *supervisor) childPid() int { return int(s.child.Load()) }

// report is what a supervisor tells ralph once: the child's pid, or why
// it could not start the child. Both ends are in this package.
type report struct {
	PID   int    `json:"pid,omitempty"`
	Error string `json:"error,omitempty"`
}

// writeReport sends r to ralph and closes the pipe.
func writeReport(w io.WriteCloser, r report) {
	// ralph may be gone already (a failed write is EPIPE, not a signal,
	// on a descriptor other than 1 and 2): the lifeline tells the rest.
	_ = json.NewEncoder(w).Encode(r)
	_ = w.Close()
}

// errNoReport: the supervisor ended before it said anything, which only a
// signal from outside ralph can cause.
var errNoReport = errors.New("the supervisor ended before starting the program")

// readReport reads a supervisor's report: the child's pid, or the error
// that kept it from starting.
func readReport(r io.Reader) (int, error) {
	var rep report
	if err := json.NewDecoder(r).Decode(&rep); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, errNoReport
		}
		return 0, fmt.Errorf("read the supervisor's report: %w", err)
	}
	switch {
	case rep.Error != "":
		return 0, errors.New(rep.Error)
	case rep.PID <= 1:
		return 0, fmt.Errorf("the supervisor reported pid %d", rep.PID)
	}
	return rep.PID, nil
}
