//go:build !linux && !darwin && !freebsd && !netbsd

package mdstate

import "io/fs"

type fileID struct {
	ino, dev uint64
	ctime    int64
}

// statID has no stat fields to read here (Windows, the other BSDs): the
// progress index is not used and every read scans the log.
func statID(fi fs.FileInfo) (fileID, bool) { return fileID{}, false }
