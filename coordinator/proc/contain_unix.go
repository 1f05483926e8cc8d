//go:build unix

package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The supervisor's descriptors beyond stdin, stdout and stderr, in the
// order of exec.Cmd.ExtraFiles.
const (
	lifelineFD = 3 // read end of the lifeline: EOF when ralph is gone
	reportFD   = 4 // write end of the report pipe (one report, then closed)
)

// startSupervised starts the supervisor that starts c (found at path) and
// returns once it reported the child's pid. ctx stops the child as Start
// documents: SIGINT to its group now, then, after the grace, SIGTERM to
// the supervisor, which kills everything.
func startSupervised(ctx context.Context, c Cmd, path string, stdout, stderr io.Writer) (*Process, error) {
	self, err := selfPath()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Name, err)
	}
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Name, err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		lifeR.Close()
		lifeW.Close()
		return nil, fmt.Errorf("start %s: %w", c.Name, err)
	}
	defer repR.Close()

	cmd := exec.CommandContext(ctx, self)
	// argv[0] stays this program's own: testscript picks the command a
	// test binary plays by it.
	cmd.Args = append([]string{os.Args[0], superviseArg, path, c.Name}, c.Args...)
	cmd.Dir, cmd.Env, cmd.Stdin = c.Dir, c.environ(), c.Stdin
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = []*os.File{lifeR, repW} // lifelineFD, reportFD
	// Its own process group: a Ctrl-C or a hangup at ralph's terminal
	// reaches ralph alone, which decides what to stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s := &supervisor{name: c.Name, life: lifeW}
	grace := c.grace()
	cmd.Cancel = func() error {
		if errors.Is(context.Cause(ctx), ErrStopNow) {
			// As in build: read by exec after Cancel returns.
			cmd.WaitDelay = HardGrace + sweepLimit
			grace = HardGrace
		}
		s.stop(cmd.Process, grace)
		return nil
	}
	// Nothing escapes the supervisor, so no pipe outlives it: the bound is
	// for the supervisor's sweep, which exec would cut short by killing
	// it (and so orphan what it had not killed yet) if it were tight.
	cmd.WaitDelay = grace + sweepLimit

	err = cmd.Start()
	lifeR.Close()
	repW.Close()
	if err != nil {
		lifeW.Close()
		return nil, fmt.Errorf("start %s: %w", c.Name, err)
	}
	pid, err := readReport(repR)
	if err != nil {
		lifeW.Close() // a supervisor still running kills what it started and exits
		_ = cmd.Wait()
		return nil, fmt.Errorf("start %s: %w", c.Name, err)
	}
	s.child.Store(int64(pid))
	p := &Process{cmd: cmd, done: make(chan struct{}), sup: s}
	go func() {
		p.err = cmd.Wait()
		lifeW.Close()
		close(p.done)
	}()
	return p, nil
}

// stop interrupts the child's group now and has the supervisor kill
// everything after grace. The supervisor is ralph's child, not reaped
// before Wait returns, so the late signal cannot reach a process that
// reused its pid (os.Process knows when it is done).
func (s *supervisor) stop(sup *os.Process, grace time.Duration) {
	pid := s.childPid()
	if pid <= 1 {
		_ = sup.Signal(syscall.SIGTERM)
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGINT)
	time.AfterFunc(grace, func() { _ = sup.Signal(syscall.SIGTERM) })
}

// killAll has the supervisor kill everything now and waits for it to
// exit; a supervisor that does not (it cannot, short of a bug) is killed
// with the child's group after sweepLimit.
func (s *supervisor) killAll(sup *os.Process, done <-chan struct{}) {
	_ = sup.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(sweepLimit):
		_ = sup.Kill()
		if pid := s.childPid(); pid > 1 {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
}

// Signal sends sig to the child alone (not its group, nor a contained
// child's supervisor): how a test simulates a crash of the child itself.
// Once the child has been reaped the error is ESRCH.
func (p *Process) Signal(sig syscall.Signal) error {
	return syscall.Kill(p.Pid(), sig)
}

// supervise is the supervisor: args are the child's path, its argv[0]
// and its arguments. It starts the child in a process group of its own,
// reports its pid, waits for its end, for SIGTERM, or for ralph's death,
// then kills everything it can reach (sweep) and exits as the child did.
func supervise(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "ralph: "+superviseArg+" is ralph's own supervisor mode, not a command")
		return 2
	}
	life, rep, err := supervisorPipes()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ralph: "+superviseArg+": "+err.Error())
		return 2
	}
	// Without a subreaper (not Linux, or a kernel before 3.4) the sweep
	// reaches the child's group only.
	_ = becomeSubreaper()
	// SIGINT and SIGHUP are ralph's to act on (it stops the child through
	// its group); SIGTERM is ralph saying "kill everything now". Caught,
	// not ignored: an ignored signal stays ignored in the child. One that
	// is ignored already (SIGHUP under nohup) stays so, for the child too,
	// as without a supervisor.
	sigs := make(chan os.Signal, 4)
	for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGHUP} {
		if !signal.Ignored(sig) {
			signal.Notify(sigs, sig)
		}
	}
	signal.Notify(sigs, syscall.SIGTERM)
	pid, err := syscall.ForkExec(args[0], args[1:], &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   childAttr(),
	})
	if err != nil {
		writeReport(rep, report{Error: (&os.PathError{Op: "fork/exec", Path: args[0], Err: err}).Error()})
		return 127
	}
	writeReport(rep, report{PID: pid})
	// The child alone holds the prompt's pipe now: when it stops reading,
	// ralph's writer hears so at once.
	if null, err := os.Open(os.DevNull); err == nil {
		_ = unix.Dup2(int(null.Fd()), 0)
		null.Close()
	}

	exited := make(chan syscall.WaitStatus, 1)
	childless := make(chan struct{})
	go func() {
		defer close(childless)
		reap(pid, exited)
	}()
	ralphGone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, life)
		close(ralphGone)
	}()
	var status syscall.WaitStatus
	ended := false
wait:
	for {
		select {
		case status = <-exited:
			ended = true
			break wait
		case <-ralphGone:
			break wait
		case sig := <-sigs:
			if sig == syscall.SIGTERM {
				break wait
			}
		}
	}
	sweep(pid, childless)
	if !ended {
		select {
		case status = <-exited:
			ended = true
		case <-time.After(sweepLimit):
		}
	}
	return exitAs(status, ended)
}

// supervisorPipes checks and takes the descriptors ralph passed: both
// must be pipes, or this is not a supervisor ralph started. Neither may
// reach the child.
func supervisorPipes() (life, rep *os.File, err error) {
	for _, fd := range []int{lifelineFD, reportFD} {
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
			return nil, nil, fmt.Errorf("descriptor %d is not the pipe ralph passes", fd)
		}
		syscall.CloseOnExec(fd)
	}
	return os.NewFile(lifelineFD, "lifeline"), os.NewFile(reportFD, "report"), nil
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

// exitAs returns the child's exit code, or, when a signal ended it (or it
// could not be reaped), kills the supervisor with SIGKILL so that ralph
// sees a child ended by a signal, as it would without a supervisor.
func exitAs(status syscall.WaitStatus, ended bool) int {
	if ended && status.Exited() {
		return status.ExitStatus()
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	for {
		time.Sleep(time.Hour) // SIGKILL cannot be caught: not reached
	}
}
