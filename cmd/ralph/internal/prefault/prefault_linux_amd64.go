//go:build !ralph_noprefault

package prefault

// madvPopulateRead is MADV_POPULATE_READ (Linux 5.14): fault the pages of
// a range in, readable, as a read of each would.
const madvPopulateRead = 22

const pageSize = 4096

// madvise is the raw system call; it returns the kernel's result (0, or
// minus an errno).
func madvise(addr, n, advice uintptr) uintptr

// readOnlyImage is where the linker put the binary's code through its
// function tables: [runtime.text, runtime.epclntab), one range of
// read-only pages.
func readOnlyImage() (start, end uintptr)

func init() {
	start, end := readOnlyImage()
	start &^= pageSize - 1
	// The result is ignored: a kernel without the advice, or a page it
	// could not read, leaves the fault to happen as it would have.
	madvise(start, end-start, madvPopulateRead)
}
