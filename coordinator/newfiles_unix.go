//go:build unix

package coordinator

import "golang.org/x/sys/unix"

// takesNewFiles reports whether a file can be created in the folder dir:
// access(2) for writing and searching, which sees the permissions, ACLs,
// a read-only file system and an immutable folder, as a create would,
// and costs a lookup where a probe file costs a create and an unlink
// (most of a millisecond on ext4, every iteration). A full disk is the
// disk guard's (lowDisk).
func takesNewFiles(dir string) error {
	return unix.Access(dir, unix.W_OK|unix.X_OK)
}
