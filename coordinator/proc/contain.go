package proc

import (
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// MarkVar is the environment variable that carries Cmd.Mark into a
// child's environment, and so into that of everything it starts.
const MarkVar = "RALPH_SESSION"

// SuperviseArg, as this program's first argument, makes it a supervisor
// (see Supervise). No command of ralph's has this name, and cobra never
// sees it. It is exported for benchmarks that time a supervisor's start.
const SuperviseArg = "__ralph-supervise"

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
// re-executed with SuperviseArg, so Start may contain children.
var supervisable atomic.Bool

// Supervise must be the first call of main, and of the TestMain of every
// test binary whose code starts contained children (through
// coordinator/agent, say): a supervisor is this very program, re-executed.
// It records that this program can be re-executed as a supervisor, where
// the platform has one; in a program that does not call it, Cmd.Contain
// has no effect. A supervisor never gets as far as main: this package's
// init runs it.
func Supervise() {
	supervisable.Store(canSupervise())
}

// init runs the supervisor, when this process is one, as soon as this
// package is initialised: before the packages initialised after it
// (goldmark's, go-git's, ralph's own), which a supervisor never uses, and
// before main. A supervisor started about 2 ms sooner this way (11.7
// against 13.8 ms for one that exits at once, issue 14), and the first
// agent of a run waits for its supervisor to start.
func init() {
	// It exits with the raw exit system call, not os.Exit: a race-enabled
	// test binary sleeps a second in os.Exit (GORACE's atexit_sleep_ms),
	// and a supervisor let go would outlive ralph by that.
	if len(os.Args) >= 2 && os.Args[1] == SuperviseArg {
		syscall.Exit(supervise(os.Args[2:]))
	}
}
