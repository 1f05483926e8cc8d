//go:build !linux

package mdstate

import "os"

// exchange is Linux's renameat2(RENAME_EXCHANGE); elsewhere a save checks
// the file and renames over it.
func exchange(tmp, path string) error { return errNoExchange }

// openForWriting is known only on Linux (write_linux.go).
func openForWriting(f *os.File) (writing, known bool) { return false, false }

// readLease is Linux's (write_linux.go); elsewhere a read cannot keep
// writers out.
func readLease(f *os.File) (held, known bool) { return false, false }

// takeLease: leases are Linux's (write_linux.go); without one a save
// compares what it needs to know.
func takeLease(f *os.File) bool { return false }

// leaseWhole: no lease is ever taken here.
func leaseWhole(f *os.File) bool { return false }

// dropLease: no lease is ever taken here.
func dropLease(f *os.File) {}

// openSpare: spares are kept only where the swap is an exchange (Linux).
func openSpare(path string) (*os.File, error) { return nil, errSpareInUse }

// renameNoReplace is used only with spares (Linux).
func renameNoReplace(from, to string) error { return errSpareInUse }

// syncData is a full fsync where fdatasync is not at hand.
func syncData(f *os.File) error { return f.Sync() }

// keepsSpares is whether files are kept to be written over (spare.go).
const keepsSpares = false

// overwriteInPlace is Linux's (write_linux.go); elsewhere a memo is
// written through a temporary file and a rename.
func overwriteInPlace(path string, data []byte, perm os.FileMode) error { return errNoInPlace }
