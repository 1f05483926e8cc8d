//go:build windows

package mdstate

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockRange is the one byte locked, at 1<<62, far past any content:
// Windows' locks are mandatory, and a lock over the content would stop
// other processes from reading it.
func lockRange() *windows.Overlapped { return &windows.Overlapped{OffsetHigh: 1 << 30} }

// tryLock takes an exclusive LockFileEx lock on f without waiting, and
// reports false when another process holds it.
func tryLock(f *os.File) (bool, error) {
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, lockRange())
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION), errors.Is(err, windows.ERROR_IO_PENDING):
		return false, nil
	}
	return false, err
}

func unlock(f *os.File) {
	_ = windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, lockRange())
}
