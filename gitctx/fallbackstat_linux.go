package gitctx

import (
	"io/fs"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// statMatches is git's stat check (core.checkStat=default, trustctime):
// modification and change times, inode, owner and size as the index
// recorded them. Nanoseconds count unless git stored none.
func statMatches(fi fs.FileInfo, e *index.Entry) bool {
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	return sameTime(e.ModifiedAt, sys.Mtim) && sameTime(e.CreatedAt, sys.Ctim) &&
		e.Inode == uint32(sys.Ino) && e.UID == sys.Uid && e.GID == sys.Gid &&
		e.Size == uint32(sys.Size)
}

func sameTime(t time.Time, ts syscall.Timespec) bool {
	return t.Unix() == int64(ts.Sec) && (t.Nanosecond() == 0 || int64(t.Nanosecond()) == int64(ts.Nsec))
}
