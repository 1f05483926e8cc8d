//go:build unix

package mdstate

import (
	"io/fs"
	"os"
	"syscall"
)

// openFile is os.OpenFile for the files ralph opens tens of times an
// iteration (the state files, their spares, the journal, the lock, a
// folder to flush). os.OpenFile offers every file to the runtime's
// poller: four fcntl calls and an epoll_ctl that a regular file always
// refuses. A file opened here is never polled, as such a file never is;
// the errors are os.OpenFile's (*fs.PathError).
func openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	for {
		fd, err := syscall.Open(name, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err == nil {
			return os.NewFile(uintptr(fd), name), nil
		}
		if err != syscall.EINTR {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
}
