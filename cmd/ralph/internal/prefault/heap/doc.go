// Package heap fills the Go heap's next pages with memory in the
// background, as the process starts, so that the packages initialising
// after it and the command itself find them there instead of faulting
// them in one by one (see package prefault for the costs).
//
// At init it asks for a large object, whose address is where the runtime's
// page allocator hands out fresh pages next, and starts one goroutine that
// calls madvise(MADV_POPULATE_WRITE) over the 2 MB above it, within the
// 4 MB the runtime has already mapped. The advice gives each page the
// zeroes it would get at its first write, so nothing the runtime or any
// goroutine sees changes; only the faults move to the other core. On one
// CPU (GOMAXPROCS 1) there is no other core to move them to, and it does
// nothing. The system call is package syscall's, so the runtime knows the
// goroutine is in the kernel and neither the scheduler nor the garbage
// collector waits for it.
//
// It works on linux/amd64 only; elsewhere, and with the build tag
// ralph_noprefault, the package is empty.
package heap
