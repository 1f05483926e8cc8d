//go:build linux

package mdstate

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// exchange swaps the files at tmp and path atomically: path then holds
// tmp's file, and tmp the file that was at path. Both must exist (a
// missing path is fs.ErrNotExist). errNoExchange means the file system
// cannot (EINVAL: some network and FUSE file systems; ENOSYS: a kernel
// before 3.15).
func exchange(tmp, path string) error {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return errNoExchange
	}
	return err
}

// writeInPlace replaces the contents of the file at path with data, in
// place (no temporary file, no rename, no fsync): for ralph's own memos in
// .ralph/, whose readers reject a memo they read half written. A symlink
// at path is refused (O_NOFOLLOW), never followed: a cloned project could
// otherwise aim the memo at any file of the user's.
func writeInPlace(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

// openForWriting reports whether any process has the file f (opened
// read-only) open for writing: an appender that opened it before ralph's
// swap may still write into it. It asks for a read lease, which the kernel
// grants only when nobody does, and gives it back at once. known is false
// where leases are not available (a file of another user's, a network
// file system).
func openForWriting(f *os.File) (writing, known bool) {
	fd := f.Fd()
	_, err := unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_RDLCK)
	switch {
	case err == nil:
		_, _ = unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_UNLCK)
		return false, true
	case errors.Is(err, unix.EAGAIN):
		return true, true
	}
	return false, false
}
