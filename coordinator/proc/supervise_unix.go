//go:build unix

package proc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

// The supervisor's side: this program re-executed with SuperviseArg and
// ralph's end of a socket pair as descriptor 3. It runs ralph's contained
// children one at a time, for as long as ralph keeps the socket open; one
// start order may wait while a child runs, for right after its end.

// socketFD is the supervisor's end of its socket pair with ralph.
const socketFD = 3

// supervise is the supervisor. It takes orders from ralph until ralph
// closes the socket (an idle supervisor let go, or ralph's death, however
// it died), a SIGTERM, or a child it could not finish with; then it exits.
func supervise(args []string) int {
	if len(args) > 0 {
		fmt.Fprintln(os.Stderr, "ralph: "+SuperviseArg+" is ralph's own supervisor mode, not a command")
		return 2
	}
	// One thread runs its goroutines: each hands work to the next (an
	// order, the child's end, a report), and with a second thread every
	// handoff woke it: 64 context switches an agent, 26 on one thread,
	// where a switch can cost tens of microseconds (issue 14). A blocking
	// call (wait4) still gets a thread of its own. ralph starts it with
	// GOMAXPROCS=1, which makes this a no-op.
	runtime.GOMAXPROCS(1)
	conn, err := supervisorConn()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ralph: "+SuperviseArg+": "+err.Error())
		return 2
	}
	// Without a subreaper (not Linux, or a kernel before 3.4) the sweep
	// reaches the child's group only.
	_ = becomeSubreaper()
	s := &supervisorProc{conn: conn, orders: make(chan received), gone: make(chan struct{}), sigs: make(chan os.Signal, 4)}
	// SIGINT and SIGHUP are ralph's to act on (it stops the child through
	// its group); SIGTERM is "kill everything and exit". Caught, not
	// ignored: an ignored signal stays ignored in the child. A SIGHUP
	// ignored already (nohup) stays so, for the child too, as without a
	// supervisor; SIGINT is caught whatever ralph had, since it is the
	// signal StopGroup stops the child with (interruptible).
	if !signal.Ignored(syscall.SIGHUP) {
		signal.Notify(s.sigs, syscall.SIGHUP)
	}
	signal.Notify(s.sigs, syscall.SIGINT, syscall.SIGTERM)
	go s.readOrders()
	for s.next() {
	}
	return 0
}

// supervisorConn checks and takes the socket ralph passed: it must be a
// socket, or this is not a supervisor ralph started. It may not reach the
// children.
func supervisorConn() (*net.UnixConn, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(socketFD, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		return nil, fmt.Errorf("descriptor %d is not the socket ralph passes", socketFD)
	}
	f := os.NewFile(socketFD, "ralph")
	defer f.Close()
	return fileConn(f)
}

// supervisorProc is the supervisor's state.
type supervisorProc struct {
	conn   *net.UnixConn
	orders chan received  // ralph's orders, from readOrders
	gone   chan struct{}  // closed when ralph's end is closed
	sigs   chan os.Signal // SIGINT, SIGHUP (ignored), SIGTERM
	// queued is the start order that came while a child ran (Cmd.After):
	// it is carried out as soon as that child's end is reported.
	queued *received
}

// received is one order and the descriptors that came with it.
type received struct {
	order
	fds []int
}

// readOrders passes ralph's orders on until the socket ends.
func (s *supervisorProc) readOrders() {
	defer close(s.gone)
	for {
		var o order
		fds, err := readFrame(s.conn, &o)
		if err != nil {
			return
		}
		select {
		case s.orders <- received{o, fds}:
		case <-s.gone:
			closeFDs(fds)
			return
		}
	}
}

// next waits for ralph's next order, runs the child it starts, and says
// whether to wait for another.
func (s *supervisorProc) next() bool {
	if q := s.queued; q != nil {
		s.queued = nil
		return s.run(*q)
	}
	for {
		select {
		case o := <-s.orders:
			if o.Kind != orderStart {
				closeFDs(o.fds) // a kill for a child already ended
				continue
			}
			return s.run(o)
		case <-s.gone:
			return false
		case sig := <-s.sigs:
			if sig == syscall.SIGTERM {
				return false
			}
		}
	}
}

// run starts the child o orders, reports its pid, waits for its end, for
// a kill, for ralph's death or for SIGTERM, then kills everything it can
// reach (sweep) and reports how the child ended. It says whether the
// supervisor may take another child.
func (s *supervisorProc) run(o received) bool {
	if len(o.fds) != stdioFDs || len(o.Argv) == 0 {
		closeFDs(o.fds)
		return s.send(report{Kind: reportStarted, Error: fmt.Sprintf("a start order with %d descriptors and %d arguments", len(o.fds), len(o.Argv))})
	}
	var pid int
	var err error
	withSlack(o.Slack, func() {
		pid, err = syscall.ForkExec(o.Path, o.Argv, &syscall.ProcAttr{
			Dir:   o.Dir,
			Env:   o.Env,
			Files: []uintptr{uintptr(o.fds[0]), uintptr(o.fds[1]), uintptr(o.fds[2])},
			Sys:   childAttr(),
		})
	})
	// The child alone holds its stdin now: when it stops reading, ralph's
	// writer hears so at once.
	closeFDs(o.fds)
	if err != nil {
		return s.send(report{Kind: reportStarted, Error: (&os.PathError{Op: "fork/exec", Path: o.Path, Err: err}).Error()})
	}
	if !s.send(report{Kind: reportStarted, PID: pid}) {
		// ralph is gone: what it started goes too.
		sweep(pid, reapAll(pid, make(chan syscall.WaitStatus, 1)))
		return false
	}
	exited := make(chan syscall.WaitStatus, 1)
	childless := reapAll(pid, exited)
	end := report{Kind: reportEnded}
wait:
	for {
		select {
		case st := <-exited:
			end.Status, end.Reaped = uint32(st), true
			break wait
		case o := <-s.orders:
			if o.Kind == orderStart && s.queued == nil {
				s.queued = &o // the next child: started after this one
				continue
			}
			closeFDs(o.fds)
			if o.Kind == orderKill && o.PID == pid {
				break wait
			}
			if o.Kind == orderStart {
				// Not sent by ralph, which queues one start at most.
				s.send(report{Kind: reportStarted, Error: "the supervisor is busy"})
			}
		case <-s.gone:
			end.Spent = true
			break wait
		case sig := <-s.sigs:
			if sig == syscall.SIGTERM {
				end.Spent = true
				break wait
			}
		}
	}
	sweep(pid, childless)
	if !end.Reaped {
		select {
		case st := <-exited:
			end.Status, end.Reaped = uint32(st), true
		case <-time.After(sweepLimit):
		}
	}
	// Every descendant reaped, or one the kernel will not let die: then
	// this supervisor's reaper could take the next child's status.
	select {
	case <-childless:
	case <-time.After(sweepLimit):
		end.Spent = true
	}
	return s.send(end) && !end.Spent
}

// reapAll runs reap from a goroutine; the channel it returns is closed
// once no child is left.
func reapAll(child int, exited chan<- syscall.WaitStatus) <-chan struct{} {
	childless := make(chan struct{})
	go func() {
		defer close(childless)
		reap(child, exited)
	}()
	return childless
}

// send writes r to ralph and says whether it could.
func (s *supervisorProc) send(r report) bool {
	return writeFrame(s.conn, r) == nil
}

// reap waits for every child of the supervisor, the adopted ones too (a
// subreaper must, or they stay zombies), and sends the child's status on
// exited. It returns when no child is left.
func reap(child int, exited chan<- syscall.WaitStatus) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return // ECHILD: none left
		}
		if pid == child {
			exited <- ws
		}
	}
}

// sweep kills the child's process group, then every live descendant of
// the supervisor, over and over until a look finds none: a process forked
// between a look and a kill is found by the next look (a killed parent's
// children are the subreaper's). Zombies are dead already.
//
// childless is closed once reap has found no child left: then there is no
// descendant either (every live one has a live parent, up to a child of
// the supervisor), nor can one be forked, and no look at /proc is needed.
// That is the usual end of an agent that left nothing behind: a look
// reads every process's stat file, a millisecond or more an iteration.
func sweep(child int, childless <-chan struct{}) {
	deadline := time.Now().Add(sweepLimit)
	_ = syscall.Kill(-child, syscall.SIGKILL)
	self := os.Getpid()
	// reap looks again right after it reaped the child: the first look
	// waits a moment for it.
	pause := reapMoment
	var wait backoff
	for {
		select {
		case <-childless:
			return
		case <-time.After(pause):
		}
		live := liveDescendants(self)
		if len(live) == 0 || time.Now().After(deadline) {
			return
		}
		for _, pid := range live {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		// SIGKILL is delivered at once, but dying takes the kernel a
		// moment: look again shortly, then less often, since a process
		// that outlives the first looks is stuck in the kernel and each
		// look reads all of /proc.
		pause = wait.pause()
	}
}

// reapMoment is how long sweep waits for reap to find no child left
// before it looks through /proc for descendants.
const reapMoment = time.Millisecond
