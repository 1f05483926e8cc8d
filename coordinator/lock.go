package coordinator

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ralph-dev/ralph/mdstate"
)

// LockFile is the coordinator lock under the runtime folder.
const LockFile = "coordinator.lock"

// A refused lock is tried again lockRetries times, lockRetryDelay apart,
// before AcquireLock reports it held: long enough to outlast LockHolder's
// look, short enough not to be noticed when a coordinator really runs.
const (
	lockRetries    = 20
	lockRetryDelay = 5 * time.Millisecond
	lockOrphanWait = 2 * time.Second
)

// orphaned reports whether a lock still refused after try retries is held
// for a holder that is gone (holderGone), within lockOrphanWait.
func orphaned(path string, try int) bool {
	if time.Duration(try)*lockRetryDelay >= lockOrphanWait {
		return false
	}
	info, err := readLockInfo(path)
	return err == nil && holderGone(info)
}

// LockInfo is written inside the lock file so that a refused coordinator
// can say who holds it. The lock itself is the flock, not this content:
// a PID file identified by path let two processes delete each other's lock
// (subsy/ralph-tui#436), and a lock re-taken by its own holder made resume
// always fail (#438).
type LockInfo struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
}

// ErrLocked reports that another coordinator runs in the project.
type ErrLocked struct{ Holder LockInfo }

func (e *ErrLocked) Error() string {
	h := e.Holder
	if h.PID == 0 {
		return "another ralph coordinator is running here"
	}
	return fmt.Sprintf("another ralph coordinator is running here (pid %d, %q, since %s)", h.PID, h.Command, h.Since.Local().Format("15:04"))
}

// Lock is a held coordinator lock.
type Lock struct{ f *os.File }

// AcquireLock takes the project's coordinator lock or fails at once with
// *ErrLocked. The lock is a flock on Unix and a LockFileEx lock on
// Windows; the system releases either when its process dies, so a crash
// never leaves a stale lock.
func AcquireLock(root string, info LockInfo) (*Lock, error) {
	dir := filepath.Join(root, mdstate.RuntimeDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, runtimeDirError(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open coordinator lock: %w", err)
	}
	err = tryLock(f, lockExclusive)
	// LockHolder (ralph status, ralph context) takes a shared lock for an
	// instant to look: that must not make a coordinator starting at the
	// same moment give up, so a refusal is retried for a short while.
	// So is one whose named holder is gone (a child it was starting has
	// the lock until its exec), for up to lockOrphanWait.
	path := filepath.Join(dir, LockFile)
	for try := 0; errors.Is(err, errLockHeld) && (try < lockRetries || orphaned(path, try)); try++ {
		time.Sleep(lockRetryDelay)
		err = tryLock(f, lockExclusive)
	}
	if err != nil {
		f.Close()
		if errors.Is(err, errLockHeld) {
			holder, _ := readLockInfo(path)
			return nil, &ErrLocked{Holder: holder}
		}
		return nil, fmt.Errorf("lock %s: %w", LockFile, err)
	}
	data, _ := json.Marshal(info)
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(append(data, '\n'), 0)
	}
	return &Lock{f: f}, nil
}

// Release gives the lock up.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	unlock(l.f)
	l.f.Close()
	l.f = nil
}

// LockHolder reports whether a coordinator holds the project's lock now,
// and who. It takes and releases a shared lock to find out, so it never
// blocks and never disturbs a holder.
func LockHolder(root string) (LockInfo, bool) {
	path := filepath.Join(root, mdstate.RuntimeDir, LockFile)
	f, err := os.Open(path)
	if err != nil {
		return LockInfo{}, false
	}
	defer f.Close()
	if err := tryLock(f, lockShared); err != nil {
		info, _ := readLockInfo(path)
		// A coordinator killed while it started a child leaves the lock
		// to that child for the moment until its exec closes it: with
		// the coordinator itself gone, nobody holds the project.
		return info, errors.Is(err, errLockHeld) && !holderGone(info)
	}
	unlock(f)
	return LockInfo{}, false
}

func readLockInfo(path string) (LockInfo, error) {
	var info LockInfo
	data, err := os.ReadFile(path)
	if err != nil {
		return info, err
	}
	return info, json.Unmarshal(data, &info)
}

// lockMode is how tryLock locks: a coordinator alone, lookers together.
type lockMode int

const (
	lockExclusive lockMode = iota
	lockShared
)

// errLockHeld is tryLock's answer when another process holds a lock that
// excludes the one asked for.
var errLockHeld = errors.New("lock held by another process")
