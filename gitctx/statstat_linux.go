//go:build linux

package gitctx

import (
	"os"
	"syscall"
)

// statusCacheSupported: Linux gives change times, which catch a mode
// change or a file written back with its old modification time.
const statusCacheSupported = true

// statPath stats path with stat (os.Stat or os.Lstat).
func statPath(path string, stat func(string) (os.FileInfo, error)) (fileStat, error) {
	fi, err := stat(path)
	if err != nil {
		return fileStat{}, err
	}
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStat{}, errNoStat
	}
	return fileStat{Size: sys.Size, Mode: sys.Mode, Ino: sys.Ino,
		Mtime: sys.Mtim.Nano(), Ctime: sys.Ctim.Nano()}, nil
}
