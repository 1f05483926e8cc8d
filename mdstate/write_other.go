//go:build !linux

package mdstate

import "os"

// exchange is Linux's renameat2(RENAME_EXCHANGE); elsewhere a save checks
// the file and renames over it.
func exchange(tmp, path string) error { return errNoExchange }

// writeInPlace is Linux's (write_linux.go); elsewhere a memo is written
// through a temporary file and a rename.
func writeInPlace(path string, data []byte, perm os.FileMode) error { return errNoInPlace }

// openForWriting is known only on Linux (write_linux.go).
func openForWriting(f *os.File) (writing, known bool) { return false, false }
