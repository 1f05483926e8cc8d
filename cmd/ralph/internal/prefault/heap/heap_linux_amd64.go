//go:build !ralph_noprefault

package heap

import (
	"runtime"
	"syscall"
	"unsafe"
)

const (
	// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14): fault the
	// pages of a range in, writable, as a write to each would.
	madvPopulateWrite = 23
	pageSize          = 4096
	// span is how far above the next free page to fill: status and
	// --version touch about 400 pages of heap; 2 MB measured a little
	// faster than 1 MB (and 1 MB than 512 KB), and peak RSS did not move.
	span = 2 << 20
	// chunk is the runtime's unit of heap mapping (pallocChunkBytes): the
	// chunk holding the next free page is mapped, readable and writable.
	chunk = 4 << 20
	// large is above the runtime's largest size class (32 KB), so that the
	// object is given fresh pages rather than a slot in a used span.
	large = 64 << 10
)

// probe is the large object whose address says where the next free page
// is; a package variable, so that it is on the heap, not the stack.
var probe *[large]byte

// ahead is the range the init's goroutine fills and what came of it.
var ahead struct {
	start, end uintptr
	errno      syscall.Errno
	done       chan struct{} // closed when the madvise returns
}

func init() {
	if runtime.GOMAXPROCS(0) < 2 {
		return
	}
	probe = new([large]byte)
	ahead.start, ahead.end = fillRange(uintptr(unsafe.Pointer(probe)))
	probe = nil
	ahead.done = make(chan struct{})
	go populate()
}

// fillRange is the range to fill from next, the address of a fresh
// object: span bytes, cut at the end of next's chunk.
func fillRange(next uintptr) (start, end uintptr) {
	start = next &^ (pageSize - 1)
	return start, min(start+span, (start+chunk)&^(chunk-1))
}

func populate() {
	defer close(ahead.done)
	_, _, ahead.errno = syscall.Syscall(syscall.SYS_MADVISE, ahead.start, ahead.end-ahead.start, madvPopulateWrite)
}
