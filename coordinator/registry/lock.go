package registry

import (
	"time"

	"github.com/ralph-dev/ralph/mdstate"
)

// lockWait bounds the wait for another ralph's change: one takes
// milliseconds, so this much means something is stuck, and a session is
// not held up longer for a list that is only a convenience.
const lockWait = 5 * time.Second

// lockFile takes the registry's lock at path, waiting at most lockWait.
func lockFile(path string) (func(), error) { return mdstate.LockFile(path, lockWait) }
