//go:build unix

package proc

import (
	"io"
	"os"
	"sync"
	"time"
)

// childIO is a contained child's stdin, stdout and stderr, as exec.Cmd
// would make them, for a child that a supervisor starts: the child's ends
// go to the supervisor, ralph copies between the pipes' other ends and the
// caller's reader and writers. An *os.File is passed as it is; nil is the
// null device.
type childIO struct {
	child  [stdioFDs]*os.File // the child's stdin, stdout, stderr
	owned  []*os.File         // the child's ends ralph opened: closed once sent
	ends   []*os.File         // ralph's ends of the pipes
	input  func()             // copies the caller's stdin, once the child runs
	output []func()           // copy the child's output, once it runs
	copied sync.WaitGroup     // the output copies
}

// newChildIO makes the child's descriptors for stdin, stdout and stderr.
func newChildIO(stdin io.Reader, stdout, stderr io.Writer) (*childIO, error) {
	x := &childIO{}
	var err error
	if x.child[0], err = x.in(stdin); err == nil {
		if x.child[1], err = x.out(stdout); err == nil {
			if stderr != nil && sameWriter(stdout, stderr) {
				x.child[2] = x.child[1] // one pipe, one writer: as exec
			} else {
				x.child[2], err = x.out(stderr)
			}
		}
	}
	if err != nil {
		x.abort()
		return nil, err
	}
	return x, nil
}

// in is the child's end of its stdin.
func (x *childIO) in(r io.Reader) (*os.File, error) {
	if r == nil {
		return x.null()
	}
	if f, ok := r.(*os.File); ok {
		return f, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	x.owned, x.ends = append(x.owned, pr), append(x.ends, pw)
	x.input = func() {
		// A child that stops reading ends the copy with EPIPE: not an
		// error of the child's, as with exec.
		_, _ = io.Copy(pw, r)
		pw.Close()
	}
	return pr, nil
}

// out is the child's end of an output that goes to w.
func (x *childIO) out(w io.Writer) (*os.File, error) {
	if w == nil {
		return x.null()
	}
	if f, ok := w.(*os.File); ok {
		return f, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	x.owned, x.ends = append(x.owned, pw), append(x.ends, pr)
	x.output = append(x.output, func() {
		buf := copyBufs.Get().(*[]byte)
		defer copyBufs.Put(buf)
		// Through buf: the pipe's own WriteTo would allocate a buffer
		// of its own on every copy.
		_, _ = io.CopyBuffer(w, readerOnly{pr}, *buf)
	})
	return pw, nil
}

// copyBufs holds the buffers the output copies go through: a child's
// output copy allocated 32 KiB each before, a sixth of what ralph
// allocated an iteration of a run of short agents (issue 14).
var copyBufs = sync.Pool{New: func() any {
	b := make([]byte, 32<<10)
	return &b
}}

// readerOnly hides every method of an io.Reader but Read, so that
// io.CopyBuffer uses the buffer it is given.
type readerOnly struct{ io.Reader }

// null opens the null device for the child.
func (x *childIO) null() (*os.File, error) {
	f, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	x.owned = append(x.owned, f)
	return f, nil
}

// sent closes ralph's copies of the child's ends, once the supervisor has
// its own: the child alone holds them then, and its end is their end.
func (x *childIO) sent() {
	for _, f := range x.owned {
		f.Close()
	}
	x.owned = nil
}

// start starts the copies, once the child runs.
func (x *childIO) start() {
	if x.input != nil {
		go x.input()
	}
	for _, copyOut := range x.output {
		x.copied.Add(1)
		go func() {
			defer x.copied.Done()
			copyOut()
		}()
	}
}

// wait waits for the child's output to end (every writer gone), at most
// slack after the child's end, then closes ralph's ends: what holds them
// open past that is nothing ralph waits for.
func (x *childIO) wait(slack time.Duration) {
	done := make(chan struct{})
	go func() {
		x.copied.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(slack):
	}
	for _, f := range x.ends {
		f.Close()
	}
	<-done // a read of a closed file returns at once
}

// abort closes everything of a child that did not start.
func (x *childIO) abort() {
	x.sent()
	for _, f := range x.ends {
		f.Close()
	}
}

// sameWriter reports whether a and b are the same writer, as exec.Cmd
// decides whether stdout and stderr share a pipe; a type that cannot be
// compared is never the same.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}
