//go:build !linux

package gitctx

import "os"

// statusCacheSupported: elsewhere the cache is off, and git always runs
// (the change time's field differs by platform, and it is the one that
// catches a file written back with its old modification time).
const statusCacheSupported = false

func statPath(string, func(string) (os.FileInfo, error)) (fileStat, error) {
	return fileStat{}, errNoStat
}
