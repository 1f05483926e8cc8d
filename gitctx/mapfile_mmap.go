//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package gitctx

import (
	"errors"
	"os"
	"syscall"
)

// mapFile maps a file read-only. Git writes pack indexes once, under a
// temporary name, and never changes them in place, so the mapping cannot
// see a torn file.
func mapFile(path string) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := fi.Size()
	if size == 0 {
		return nil, func() error { return nil }, nil
	}
	if int64(int(size)) != size {
		return nil, nil, errors.New("file too large to map")
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, &os.PathError{Op: "mmap", Path: path, Err: err}
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}
