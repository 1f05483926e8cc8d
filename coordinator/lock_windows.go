//go:build windows

package coordinator

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockRange is the one byte locked, at 1<<62, far past the LockInfo the
// file holds: Windows' locks are mandatory, and a lock over the content
// would stop a refused coordinator from reading who holds it.
func lockRange() *windows.Overlapped { return &windows.Overlapped{OffsetHigh: 1 << 30} }

// tryLock takes a LockFileEx lock on f without waiting; errLockHeld when
// another process holds one that excludes it.
func tryLock(f *os.File, mode lockMode) error {
	flags := uint32(windows.LOCKFILE_FAIL_IMMEDIATELY)
	if mode == lockExclusive {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, lockRange())
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return errLockHeld
	}
	return err
}

// unlock gives the lock up.
func unlock(f *os.File) { _ = windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, lockRange()) }

// holderGone is false on Windows: a lock there dies with its process's
// handle, which a child does not inherit.
func holderGone(LockInfo) bool { return false }
