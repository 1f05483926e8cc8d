//go:build unix

package mdstate

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// stateLockWait bounds the wait for another ralph process's write: one
// read-modify-write takes milliseconds, so this much means it is stuck.
const stateLockWait = 10 * time.Second

// lockFile takes an exclusive flock on path, waiting at most stateLockWait.
// The kernel releases it when the process dies, so a crash never leaves it
// held.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	deadline := time.Now().Add(stateLockWait)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another ralph process has held %s for over %s; if none is running, report this as a bug", path, stateLockWait)
		}
		time.Sleep(delay)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
