//go:build unix

package coordinator

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes a flock on f without waiting; errLockHeld when another
// process holds one that excludes it.
func tryLock(f *os.File, mode lockMode) error {
	how := syscall.LOCK_EX | syscall.LOCK_NB
	if mode == lockShared {
		how = syscall.LOCK_SH | syscall.LOCK_NB
	}
	err := flock(f, how)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLockHeld
	}
	return err
}

// unlock gives the flock up.
func unlock(f *os.File) { _ = flock(f, syscall.LOCK_UN) }

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// holderGone reports whether the process the lock file names, on this
// host, no longer exists.
func holderGone(info LockInfo) bool {
	host, _ := os.Hostname()
	if info.PID <= 0 || info.Host != host {
		return false
	}
	return errors.Is(syscall.Kill(info.PID, 0), syscall.ESRCH)
}
