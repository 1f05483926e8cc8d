//go:build !linux

package proc

// PinToOneCPU does nothing here: CPU affinity is set on Linux only.
func PinToOneCPU() (unpin func()) { return func() {} }

// withChildCPUs calls fork: nothing is pinned here.
func withChildCPUs(fork func()) { fork() }
