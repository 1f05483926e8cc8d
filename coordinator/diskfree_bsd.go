//go:build darwin || freebsd || dragonfly

package coordinator

import "golang.org/x/sys/unix"

// freeDiskSpace is the space on dir's file system that an unprivileged
// process may still use: statfs's available blocks times its block size.
func freeDiskSpace(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
