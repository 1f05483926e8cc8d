//go:build darwin || freebsd || netbsd

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
// (As stat_linux.go; the BSDs name the ctime field Ctimespec.)
func statID(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{ino: uint64(st.Ino), dev: uint64(st.Dev), ctime: st.Ctimespec.Nano()}, true
}
