package mdstate

import (
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// fineGrained reports whether the file system of the file f gives every
// change made after a stat of a file a ctime that differs from the one
// that stat saw. Linux does from 6.13 on ext4, xfs, btrfs and tmpfs
// (multigrain timestamps: a ctime that was read is followed by a
// fine-grained one, not one from the same clock tick). Elsewhere two
// writes in one tick may leave the same ctime. The file system is asked
// each time (a statfs, a microsecond): a device may be mounted again with
// another.
func fineGrained(f *os.File) bool {
	if !multigrainKernel() {
		return false
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return false
	}
	return multigrainFS(int64(st.Type))
}

// multigrainFS reports whether the file system of magic number magic
// has multigrain timestamps (on a kernel that has them).
func multigrainFS(magic int64) bool {
	switch magic {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC:
		return true
	}
	return false
}

// multigrainKernel reports whether the running kernel is Linux 6.13 or
// later, the first with multigrain timestamps.
var multigrainKernel = sync.OnceValue(func() bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	return releaseAtLeast(unix.ByteSliceToString(u.Release[:]), 6, 13)
})

// releaseAtLeast reports whether a kernel release ("6.18.44-fc-v657")
// is major.minor or later.
func releaseAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	maj, err := strconv.Atoi(parts[0])
	if err != nil {
		return false
	}
	minorDigits := parts[1]
	if i := strings.IndexFunc(minorDigits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minorDigits = minorDigits[:i]
	}
	mnr, err := strconv.Atoi(minorDigits)
	if err != nil {
		return false
	}
	return maj > major || (maj == major && mnr >= minor)
}
