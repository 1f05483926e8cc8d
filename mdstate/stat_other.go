//go:build !linux

package mdstate

import "io/fs"

type fileID struct {
	ino, dev uint64
	ctime    int64
}

// statID is Linux-only for now; elsewhere the progress index is not used
// and every read scans the log.
func statID(fi fs.FileInfo) (fileID, bool) { return fileID{}, false }
