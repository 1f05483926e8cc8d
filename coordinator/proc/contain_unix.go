//go:build unix

package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ralph's side of containment: supervisors, each running one contained
// child at a time, kept between children (a start of ralph's program costs
// about 2 ms, a start order tens of microseconds).

// server is a running supervisor and ralph's end of its socket.
type server struct {
	cmd     *exec.Cmd
	conn    *net.UnixConn
	reports chan report   // from readReports
	gone    chan struct{} // closed once the socket ended: the supervisor is exiting
	exited  chan struct{} // closed once the supervisor was reaped
	quit    chan struct{} // closed by close: readReports stops passing reports on
	once    sync.Once

	// mu guards what becomes of the supervisor once its child has ended:
	// a start may claim it for the next child (Cmd.After) only until the
	// end is heard and the supervisor handed back (released or closed).
	mu      sync.Mutex
	claimed bool // a start waits for the child's end (claim)
	handed  bool // the child's end is heard: no claim from now on
}

// maxIdle is how many supervisors wait for a child at most; one more is
// let go. One serves a run's agents in turn; the second a concurrent
// check (an agent's --version) without a start.
const maxIdle = 2

// pool holds the supervisors: idle, those that wait for a child; live,
// every one started and not yet reaped; preparing, open while Prepare
// starts one (closed once it is idle, or failed); shut, set by Shutdown.
var pool struct {
	sync.Mutex
	idle      []*server
	live      map[*server]struct{}
	preparing chan struct{}
	shut      bool
}

// Prepare starts a supervisor ahead of the next contained start, unless
// one waits already or is on its way, and returns at once. A supervisor
// is this program started again, about 2 ms of work on another core that
// the first start would otherwise wait for; ralph calls it as a run opens
// with a task to do. Nothing is started where Start would not contain a
// child (Supervise was not called) or after Shutdown. A failure is left
// to the start that needs the supervisor, which then says why.
func Prepare() {
	if !supervisable.Load() {
		return
	}
	pool.Lock()
	defer pool.Unlock()
	if pool.shut || pool.preparing != nil || len(pool.idle) > 0 {
		return
	}
	done := make(chan struct{})
	pool.preparing = done
	go func() {
		defer close(done)
		s, err := spawnServer()
		pool.Lock()
		defer pool.Unlock()
		pool.preparing = nil
		if err != nil {
			return // the start that needs one tries again, and says why
		}
		if pool.shut {
			s.close()
			return
		}
		pool.idle = append(pool.idle, s)
	}()
}

// awaitPrepared waits for a supervisor that Prepare is starting, if any.
func awaitPrepared() {
	pool.Lock()
	preparing := pool.preparing
	pool.Unlock()
	if preparing != nil {
		<-preparing
	}
}

// Shutdown lets every supervisor go and waits until each has exited, at
// most sweepLimit in all: one that runs a child (none should, when ralph
// is done) kills what it started first. ralph calls it last, so that
// nothing it started outlives it.
func Shutdown() {
	pool.Lock()
	pool.shut = true
	pool.Unlock()
	awaitPrepared() // the one on its way is let go as it comes
	pool.Lock()
	all := make([]*server, 0, len(pool.live))
	for s := range pool.live {
		all = append(all, s)
	}
	pool.idle = nil
	pool.Unlock()
	deadline := time.After(sweepLimit)
	for _, s := range all {
		s.close()
	}
	for _, s := range all {
		select {
		case <-s.exited:
		case <-deadline:
			return
		}
	}
}

// LetIdleGo lets every idle supervisor go at once, without waiting for its
// exit as Shutdown does: a program that will start no more children calls
// it, and the supervisors' exits overlap its last work. A later start
// starts a new one.
func LetIdleGo() { releaseIdle() }

// releaseIdle lets every idle supervisor go, and the one on its way once
// it is up, and returns them.
func releaseIdle() []*server {
	awaitPrepared()
	pool.Lock()
	idle := pool.idle
	pool.idle = nil
	pool.Unlock()
	for _, s := range idle {
		s.close()
	}
	return idle
}

// takeServer returns an idle supervisor, and whether it served before, or
// starts one.
func takeServer() (s *server, reused bool, err error) {
	awaitPrepared() // a start of its own would only be later
	pool.Lock()
	for len(pool.idle) > 0 {
		s = pool.idle[len(pool.idle)-1]
		pool.idle = pool.idle[:len(pool.idle)-1]
		if s.usable() {
			pool.Unlock()
			return s, true, nil
		}
		s.close()
	}
	pool.Unlock()
	s, err = spawnServer()
	return s, false, err
}

// spawnServer starts a supervisor: this program, re-executed, with the
// other end of a socket pair as its descriptor 3, in a process group of
// its own (a Ctrl-C at ralph's terminal reaches ralph alone, which decides
// what to stop) and with no stdin, stdout or stderr of ralph's (it has
// nothing to say but its reports, and would hold ralph's pipes open).
func spawnServer() (*server, error) {
	self, err := selfPath()
	if err != nil {
		return nil, err
	}
	conn, theirs, err := socketPair()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	// argv[0] stays this program's own: testscript picks the command a
	// test binary plays by it.
	cmd.Args = []string{os.Args[0], SuperviseArg}
	cmd.ExtraFiles = []*os.File{theirs} // socketFD
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The supervisor runs on one thread (supervise): set from its start,
	// the runtime makes one P instead of resizing to one, a stop of the
	// world that was 5 % of a supervisor's start. Its children never see
	// this: each gets the environment its start order carries.
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	withChildCPUs(func() { err = cmd.Start() })
	theirs.Close()
	if err != nil {
		conn.Close()
		return nil, err
	}
	s := &server{cmd: cmd, conn: conn, reports: make(chan report, 2),
		gone: make(chan struct{}), exited: make(chan struct{}), quit: make(chan struct{})}
	pool.Lock()
	if pool.live == nil {
		pool.live = map[*server]struct{}{}
	}
	pool.live[s] = struct{}{}
	pool.Unlock()
	go s.readReports()
	go func() {
		_ = cmd.Wait()
		pool.Lock()
		delete(pool.live, s)
		pool.Unlock()
		close(s.exited)
	}()
	return s, nil
}

// readReports passes the supervisor's reports on until its socket ends.
func (s *server) readReports() {
	defer close(s.gone)
	for {
		var r report
		fds, err := readFrame(s.conn, &r)
		closeFDs(fds)
		if err != nil {
			return
		}
		select {
		case s.reports <- r:
		case <-s.quit:
			return
		}
	}
}

// usable reports whether the supervisor still runs and listens.
func (s *server) usable() bool {
	for _, ch := range []chan struct{}{s.gone, s.exited, s.quit} {
		select {
		case <-ch:
			return false
		default:
		}
	}
	return true
}

// release puts the supervisor back among the idle ones, or lets it go.
func (s *server) release() {
	if !s.usable() {
		s.close()
		return
	}
	pool.Lock()
	defer pool.Unlock()
	if len(pool.idle) >= maxIdle {
		s.close()
		return
	}
	pool.idle = append(pool.idle, s)
}

// claim reserves the supervisor for the next child, which its start order,
// sent at once, has it start right after the current child's end: false
// once that end is heard, or another start has claimed it.
func (s *server) claim() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handed || s.claimed || !s.usable() {
		return false
	}
	s.claimed = true
	return true
}

// serve makes the supervisor the new child's, once the end of the child it
// was claimed after (nil: none) is heard: claimable again until the new
// child's end is.
func (s *server) serve(after <-chan struct{}) {
	if after != nil {
		<-after
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claimed, s.handed = false, false
}

// handBack decides what becomes of the supervisor once its child's end is
// heard: a claimed one is the next child's start's (which finds it closed
// if it may not serve), another goes back to the idle ones (release) or,
// if it may not serve, is let go.
func (s *server) handBack(serves bool) {
	s.mu.Lock()
	s.handed = true
	claimed := s.claimed
	s.mu.Unlock()
	switch {
	case !serves:
		s.close()
	case !claimed:
		s.release()
	}
}

// close lets the supervisor go: it reads the end of its socket and exits
// (killing what it runs, if anything); its reaper goroutine reaps it.
func (s *server) close() {
	s.once.Do(func() {
		close(s.quit)
		s.conn.Close()
	})
}

// await waits for the supervisor's next report, which must be of kind k;
// errNoReport if the supervisor ended first.
func (s *server) await(k reportKind) (report, error) {
	var r report
	select {
	case r = <-s.reports:
	case <-s.gone:
		// A report sent just before the end is in the channel by now.
		select {
		case r = <-s.reports:
		default:
			return report{}, errNoReport
		}
	}
	if r.Kind != k {
		return r, fmt.Errorf("the supervisor reported %q, not %q", r.Kind, k)
	}
	return r, nil
}

// errNoReport: the supervisor ended before it answered, which only a
// signal from outside ralph can cause.
var errNoReport = errors.New("the supervisor ended before it answered")

// startSupervised has a supervisor start c (found at path) and returns
// once it reported the child's pid. ctx stops the child as Start
// documents: SIGINT to its group now, then, after the grace, a kill order
// to the supervisor, which kills everything.
func startSupervised(ctx context.Context, c Cmd, path string, stdout, stderr io.Writer) (*Process, error) {
	o := startOrder(c, path)
	for {
		s, after, reused, err := serverFor(c.After)
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", c.Name, err)
		}
		c.After = nil // a retry takes any supervisor
		p, err := launch(ctx, s, c, o, after, stdout, stderr)
		if errors.Is(err, errNoReport) && reused {
			// An idle supervisor, or the one claimed after the last
			// child (serverFor), killed from outside: the next one, or a
			// new one, takes the child.
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", c.Name, err)
		}
		return p, nil
	}
}

// serverFor is the supervisor to start a child with: the one of after,
// claimed, with after's end to wait for before its report; else an idle
// one or a new one (takeServer), with nothing to wait for.
func serverFor(after *Process) (s *server, wait <-chan struct{}, reused bool, err error) {
	if after != nil && after.sup != nil && after.sup.srv.claim() {
		return after.sup.srv, after.done, true, nil
	}
	s, reused, err = takeServer()
	return s, nil, reused, err
}

// startOrder is the order that starts c: its environment and folder
// spelled out, since the supervisor's are those of whenever it started.
// A folder ralph cannot name (its own, deleted) is left to the
// supervisor's, which is the same one.
func startOrder(c Cmd, path string) order {
	env := c.environ()
	if env == nil {
		env = os.Environ()
	}
	env = lastWins(env)
	dir := c.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	return order{Kind: orderStart, Path: path, Argv: append([]string{c.Name}, c.Args...), Env: env, Dir: dir, Slack: startSlack()}
}

// lastWins is env with each variable once, at its last value, as os/exec
// passes Cmd.Env: the supervisor's fork passes env as it is, and a child's
// getenv would find the first.
func lastWins(env []string) []string {
	seen := make(map[string]bool, len(env))
	kept := make([]string, len(env))
	n := len(env)
	for i := len(env) - 1; i >= 0; i-- {
		name, _, _ := strings.Cut(env[i], "=")
		if !seen[name] {
			seen[name] = true
			n--
			kept[n] = env[i]
		}
	}
	return kept[n:]
}

// launch sends o, with the child's stdin, stdout and stderr, to s and
// waits for the child's pid. A supervisor claimed for the child after its
// current one (serverFor) starts it once that one has ended; its reports
// are read in turn: the current child's end (closing after), then this
// one's start.
func launch(ctx context.Context, s *server, c Cmd, o order, after <-chan struct{}, stdout, stderr io.Writer) (*Process, error) {
	cio, err := newChildIO(c.Stdin, stdout, stderr)
	if err != nil {
		s.serve(after)
		s.release()
		return nil, err
	}
	err = writeFrame(s.conn, o, cio.child[:]...)
	cio.sent()
	s.serve(after)
	var r report
	if err != nil {
		err = errNoReport // a socket that takes no order: the supervisor is gone
	} else {
		r, err = s.await(reportStarted)
	}
	switch {
	case err != nil:
	case r.Error != "":
		err = errors.New(r.Error)
	case r.PID <= 1:
		err = fmt.Errorf("the supervisor reported pid %d", r.PID)
	}
	if err != nil {
		cio.abort()
		if errors.Is(err, errNoReport) {
			s.close()
		} else {
			s.release() // it failed to start this child, not to serve
		}
		return nil, err
	}
	sup := &supervisor{name: c.Name, srv: s, grace: c.grace()}
	sup.child.Store(int64(r.PID))
	cio.start()
	p := &Process{done: make(chan struct{}), sup: sup}
	stop := context.AfterFunc(ctx, func() { sup.interrupt(ctx) })
	go func() {
		end, err := s.await(reportEnded)
		stop()
		sup.finish(end, err)
		cio.wait(sup.slack())
		p.err = sup.waitErr()
		s.handBack(err == nil && !end.Spent)
		close(p.done)
	}()
	return p, nil
}

// supervisor is ralph's side of one contained child: the supervisor that
// runs it, and how it ended.
type supervisor struct {
	name  string       // the child's program, for messages
	child atomic.Int64 // the child's pid
	srv   *server
	grace time.Duration // of a normal stop

	mu     sync.Mutex
	ended  bool          // no order may follow: the child's end is reported, or the supervisor is gone
	hard   bool          // stopped with ErrStopNow
	timers []*time.Timer // a stop's kill order and its last resort
	end    report        // the supervisor's last word
	err    error         // why there was none
}

func (s *supervisor) childPid() int { return int(s.child.Load()) }

// interrupt stops the child as ctx's cause says: SIGINT to its group
// now, then everything killed after the grace (HardGrace for ErrStopNow).
// If the supervisor has not reported the end sweepLimit after that, it is
// killed with the child's group.
func (s *supervisor) interrupt(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	grace := s.grace
	if errors.Is(context.Cause(ctx), ErrStopNow) {
		grace, s.hard = HardGrace, true
	}
	_ = syscall.Kill(-s.childPid(), syscall.SIGINT)
	s.timers = append(s.timers,
		time.AfterFunc(grace, s.killNow),
		time.AfterFunc(grace+sweepLimit, s.forceKill))
}

// killNow orders the supervisor to kill everything the child started.
func (s *supervisor) killNow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if err := writeFrame(s.srv.conn, order{Kind: orderKill, PID: s.childPid()}); err != nil {
		s.killSupervisor()
	}
}

// forceKill kills a supervisor that did not report the child's end in
// time (it cannot, short of a bug), and the child's group.
func (s *supervisor) forceKill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.killSupervisor()
	}
}

// killSupervisor kills the supervisor and the child's group. The
// supervisor is ralph's child, and os.Process knows once it was reaped, so
// the signal cannot reach a process that reused its pid.
func (s *supervisor) killSupervisor() {
	_ = s.srv.cmd.Process.Kill()
	_ = syscall.Kill(-s.childPid(), syscall.SIGKILL)
}

// killAll has the supervisor kill everything now and waits for the end;
// a supervisor that does not report it within sweepLimit is killed.
func (s *supervisor) killAll(done <-chan struct{}) {
	s.killNow()
	select {
	case <-done:
	case <-time.After(sweepLimit):
		s.forceKill()
	}
}

// finish records the child's end (err: the supervisor ended first) and
// forbids further orders: from now on the supervisor may serve another
// child.
func (s *supervisor) finish(end report, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended, s.end, s.err = true, end, err
	for _, t := range s.timers {
		t.Stop()
	}
	if err != nil {
		// A supervisor killed from outside: the child had a parent-death
		// signal (Linux); its group goes too.
		_ = syscall.Kill(-s.childPid(), syscall.SIGKILL)
	}
}

// slack is how long the child's output may stay open after its end (held
// by what the supervisor could not reach) before ralph stops copying it.
func (s *supervisor) slack() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hard {
		return hardWaitSlack
	}
	return waitSlack
}

// exitCode is the child's exit code, -1 if a signal ended it or it was
// not reaped.
func (s *supervisor) exitCode() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := syscall.WaitStatus(s.end.Status)
	if s.err != nil || !s.end.Reaped || !st.Exited() {
		return -1
	}
	return st.ExitStatus()
}

// waitErr is Wait's error, as exec's for a child of ralph's own: nil for
// exit 0.
func (s *supervisor) waitErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := syscall.WaitStatus(s.end.Status)
	switch {
	case s.err != nil:
		return fmt.Errorf("%s: %w", s.name, s.err)
	case !s.end.Reaped:
		return fmt.Errorf("%s: not reaped within %s", s.name, sweepLimit)
	case st.Signaled():
		return fmt.Errorf("%s: signal: %v", s.name, st.Signal())
	case st.ExitStatus() != 0:
		return fmt.Errorf("%s: exit status %d", s.name, st.ExitStatus())
	}
	return nil
}

// Signal sends sig to the child alone (not its group, nor a contained
// child's supervisor): how a test simulates a crash of the child itself.
// Once the child has been reaped the error is ESRCH.
func (p *Process) Signal(sig syscall.Signal) error {
	return syscall.Kill(p.Pid(), sig)
}
