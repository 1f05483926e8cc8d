//go:build unix

package proc

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
)

// What ralph and a supervisor say to each other, over a unix socket pair
// that only the two of them hold. Each message is a frame: its length
// (4 bytes, big-endian), then JSON. Both ends are in this package; the
// JSON is for nothing but the framing's ease.

// orderKind is what ralph asks of a supervisor.
type orderKind string

const (
	// orderStart: start a child (order.Path and the rest). The frame
	// carries the child's stdin, stdout and stderr as SCM_RIGHTS.
	orderStart orderKind = "start"
	// orderKill: kill everything the child (order.PID) started, now.
	orderKill orderKind = "kill"
)

// order is ralph's side of the protocol.
type order struct {
	Kind orderKind `json:"kind"`
	Path string    `json:"path,omitempty"` // the program, found on PATH
	Argv []string  `json:"argv,omitempty"` // argv[0] included
	Env  []string  `json:"env,omitempty"`
	Dir  string    `json:"dir,omitempty"`
	PID  int       `json:"pid,omitempty"` // the child a kill is for
	// Slack is the timer slack the child starts with, in nanoseconds;
	// 0 leaves it the supervisor's (proc.RelaxTimers).
	Slack uint64 `json:"slack,omitempty"`
}

// reportKind is what a supervisor tells ralph.
type reportKind string

const (
	// reportStarted: the child runs (report.PID), or could not start
	// (report.Error); one per start.
	reportStarted reportKind = "started"
	// reportEnded: the child ended and everything it started is dead;
	// one per started child.
	reportEnded reportKind = "ended"
)

// report is the supervisor's side of the protocol.
type report struct {
	Kind  reportKind `json:"kind"`
	PID   int        `json:"pid,omitempty"`
	Error string     `json:"error,omitempty"`
	// Status is the child's wait status, when Reaped.
	Status uint32 `json:"status,omitempty"`
	Reaped bool   `json:"reaped,omitempty"`
	// Spent: the supervisor takes no other child (it is exiting: ralph
	// is gone, it was told to by a signal, or a process it could not
	// kill keeps it busy).
	Spent bool `json:"spent,omitempty"`
}

// maxFrame bounds a frame: an order carries an environment, which the
// kernel bounds far below this.
const maxFrame = 16 << 20

// stdioFDs is how many descriptors a start order carries.
const stdioFDs = 3

// socketPair returns two connected unix stream sockets, close-on-exec:
// ralph's end and the supervisor's (its descriptor 3). The fork lock keeps
// a concurrent exec from inheriting them between the two calls where
// SOCK_CLOEXEC is not at hand (macOS).
func socketPair() (mine *net.UnixConn, theirs *os.File, err error) {
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	f := os.NewFile(uintptr(fds[0]), "supervisor")
	defer f.Close() // FileConn has its own descriptor
	conn, err := fileConn(f)
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, err
	}
	return conn, os.NewFile(uintptr(fds[1]), "supervisor"), nil
}

// fileConn is the unix socket f as a connection.
func fileConn(f *os.File) (*net.UnixConn, error) {
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	u, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("%s is not a unix socket", f.Name())
	}
	return u, nil
}

// writeFrame sends v as one frame, with files (as SCM_RIGHTS) when there
// are any.
func writeFrame(c *net.UnixConn, v any, files ...*os.File) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	frame := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	frame = append(frame, body...)
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = syscall.UnixRights(fds...)
	}
	n, _, err := c.WriteMsgUnix(frame, oob, nil)
	if err == nil && n < len(frame) {
		// A stream socket may take a large frame in parts; the
		// descriptors went with the first.
		_, err = c.Write(frame[n:])
	}
	return err
}

// readFrame reads one frame into v and returns the descriptors that came
// with it, close-on-exec. io.EOF means the other end is closed.
func readFrame(c *net.UnixConn, v any) (fds []int, err error) {
	var head [4]byte
	if err := readFull(c, head[:], &fds); err != nil {
		closeFDs(fds)
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n > maxFrame {
		closeFDs(fds)
		return nil, fmt.Errorf("a frame of %d bytes", n)
	}
	body := make([]byte, n)
	if err := readFull(c, body, &fds); err != nil {
		closeFDs(fds)
		return nil, err
	}
	if err := json.Unmarshal(body, v); err != nil {
		closeFDs(fds)
		return nil, err
	}
	return fds, nil
}

// readFull fills b from c, adding the descriptors that come along to fds.
func readFull(c *net.UnixConn, b []byte, fds *[]int) error {
	oob := make([]byte, syscall.CmsgSpace(stdioFDs*4))
	for len(b) > 0 {
		n, oobn, _, _, err := c.ReadMsgUnix(b, oob)
		n, oobn = max(n, 0), max(oobn, 0) // -1 with some errors (a peer killed: ECONNRESET)
		if oobn > 0 {
			got, perr := parseRights(oob[:oobn])
			*fds = append(*fds, got...)
			if perr != nil && err == nil {
				err = perr
			}
		}
		b = b[n:]
		if err != nil {
			return err
		}
		if n == 0 {
			return io.EOF
		}
	}
	return nil
}

// parseRights returns the descriptors in a control message, close-on-exec.
func parseRights(oob []byte) ([]int, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for i := range msgs {
		got, err := syscall.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		for _, fd := range got {
			syscall.CloseOnExec(fd)
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

// closeFDs closes descriptors received but not used.
func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = syscall.Close(fd)
	}
}
