package coordinator

import "golang.org/x/sys/unix"

// freeDiskSpace is the space on dir's file system that an unprivileged
// process may still use, as df shows it under "Avail": statfs's available
// blocks times its fragment size.
func freeDiskSpace(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	size := st.Frsize
	if size <= 0 {
		size = st.Bsize
	}
	return int64(st.Bavail) * size, nil
}
