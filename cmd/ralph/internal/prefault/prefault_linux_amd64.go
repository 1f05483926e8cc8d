//go:build !ralph_noprefault

package prefault

const (
	// madvPopulateRead is MADV_POPULATE_READ (Linux 5.14): fault the
	// pages of a range in, readable, as a read of each would.
	madvPopulateRead = 22
	// madvPopulateWrite is MADV_POPULATE_WRITE: as a write to each would
	// (for the data, a private copy of each page, its bytes unchanged).
	madvPopulateWrite = 23
	pageSize          = 4096
)

// madvise is the raw system call; it returns the kernel's result (0, or
// minus an errno).
func madvise(addr, n, advice uintptr) uintptr

// readOnlyImage is where the linker put the binary's code through its
// function tables: [runtime.text, runtime.epclntab), read-only pages.
func readOnlyImage() (start, end uintptr)

// dataImage is the binary's initialised variables: [runtime.noptrdata,
// runtime.edata), which the package inits write to.
func dataImage() (start, end uintptr)

func init() {
	// The results are ignored: a kernel without the advice, or a page it
	// could not fill, leaves the fault to happen as it would have.
	start, end := readOnlyImage()
	madvise(start&^(pageSize-1), end-start&^(pageSize-1), madvPopulateRead)
	start, end = dataImage()
	madvise(start&^(pageSize-1), end-start&^(pageSize-1), madvPopulateWrite)
}
