package mdstate

import (
	"io/fs"
	"syscall"
)

type fileID struct {
	ino, dev uint64
	ctime    int64
}

// statID returns what identifies one version of a file beyond its size and
// mtime: inode, device and ctime, which no editor or tool can set back.
func statID(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{ino: st.Ino, dev: st.Dev, ctime: st.Ctim.Nano()}, true
}
