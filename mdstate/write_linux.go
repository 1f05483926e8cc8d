//go:build linux

package mdstate

import (
	"errors"
	"io/fs"
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

// openForWriting reports whether any process has the file f (opened
// read-only) open for writing: an appender that opened it before ralph's
// swap may still write into it. It asks for a read lease (readLease) and
// gives it back at once. known is false where leases are not available.
func openForWriting(f *os.File) (writing, known bool) {
	held, known := readLease(f)
	if held {
		dropLease(f)
	}
	return known && !held, known
}

// readLease asks for a read lease on the file that f (opened read-only)
// is open on. The kernel grants one only while no process has the file open
// for writing, and until it is given back (dropLease, or closing f) an
// open of the file for writing or a truncation waits. held reports
// whether it was granted; known is false where leases are not available
// (a file of another user's, a network file system).
func readLease(f *os.File) (held, known bool) {
	_, err := unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_RDLCK)
	switch {
	case err == nil:
		return true, true
	case errors.Is(err, unix.EAGAIN):
		return false, true
	}
	return false, false
}

// takeLease asks for a write lease on the file f is open on. The kernel
// grants one only while no other open file of it exists (no reader, no
// writer, no mapping), and breaks it as soon as anyone opens or truncates
// the file (an open waits until the lease is given back); a rename leaves
// it whole. Taken, it is given back by dropLease or by closing f. false
// where leases are not available (a file of another user's, a network
// file system) or the file is open elsewhere.
func takeLease(f *os.File) bool {
	_, err := unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_WRLCK)
	return err == nil
}

// leaseWhole reports whether the write lease on f's file is unbroken:
// nobody opened the file since takeLease.
func leaseWhole(f *os.File) bool {
	l, err := unix.FcntlInt(f.Fd(), unix.F_GETLEASE, 0)
	return err == nil && l == unix.F_WRLCK
}

// dropLease gives the lease on f's file back (an open waiting for it goes
// on).
func dropLease(f *os.File) { _, _ = unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_UNLCK) }

// openSpare opens the spare at path for a rewrite: a regular file of one
// link that no other process has open (a write lease is granted only
// then). The lease is kept until f is closed (or dropLease): nobody can
// open the spare while ralph writes it. A symlink there is refused.
func openSpare(path string) (*os.File, error) {
	f, err := openFile(path, os.O_RDWR|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		_ = f.Close()
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		_ = f.Close()
		return nil, errSpareInUse
	}
	if !takeLease(f) {
		_ = f.Close()
		return nil, errSpareInUse
	}
	return f, nil
}

// renameNoReplace renames from to to unless something is at to
// (fs.ErrExist).
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EEXIST) {
		return fs.ErrExist
	}
	return err
}

// syncData flushes f's bytes and length (fdatasync).
func syncData(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

// keepsSpares is whether files are kept to be written over (spare.go).
const keepsSpares = true

// overwriteInPlace makes the file at path hold data, written over its
// own bytes and cut to data's length (no temporary file, no truncation to
// nothing first, no fsync): for ralph's own memos in .ralph/, whose
// readers check a length and checksum. A symlink at path is refused
// (O_NOFOLLOW), never followed.
func overwriteInPlace(path string, data []byte, perm os.FileMode) error {
	f, err := openFile(path, os.O_WRONLY|os.O_CREATE|unix.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	return writeOver(f, data)
}
