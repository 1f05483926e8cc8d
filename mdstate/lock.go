package mdstate

import (
	"fmt"
	"os"
	"time"
)

// stateLockWait bounds the wait for another ralph process's write: one
// read-modify-write takes milliseconds, so this much means it is stuck.
const stateLockWait = 10 * time.Second

// lockFile takes an exclusive lock on path (flock on Unix, LockFileEx on
// Windows), waiting at most stateLockWait. The system releases it when
// the process dies, so a crash never leaves it held.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	deadline := time.Now().Add(stateLockWait)
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
			return nil, fmt.Errorf("another ralph process has held %s for over %s; if none is running, report this as a bug", path, stateLockWait)
		}
		time.Sleep(delay)
	}
	return func() {
		unlock(f)
		f.Close()
	}, nil
}
