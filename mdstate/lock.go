package mdstate

import (
	"fmt"
	"os"
	"time"
)

// stateLockWait bounds the wait for another ralph process's write: one
// read-modify-write takes milliseconds, so this much means it is stuck.
const stateLockWait = 10 * time.Second

// lockFile takes ralph's state lock at path, waiting at most
// stateLockWait.
func lockFile(path string) (func(), error) { return LockFile(path, stateLockWait) }

// LockFile takes an exclusive lock on path (flock on Unix, LockFileEx on
// Windows), creating the file if needed and waiting at most wait; the
// function it returns releases it. The system releases it when the
// process dies, so a crash never leaves it held.
func LockFile(path string, wait time.Duration) (func(), error) {
	f, err := openFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	deadline := time.Now().Add(wait)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		held, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if held {
			break
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another ralph process has held %s for over %s; if none is running, report this as a bug", path, wait)
		}
		time.Sleep(delay)
	}
	return func() {
		unlock(f)
		f.Close()
	}, nil
}
