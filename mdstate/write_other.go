//go:build !linux

package mdstate

import "os"

// exchange is Linux's renameat2(RENAME_EXCHANGE); elsewhere a save checks
// the file and renames over it.
func exchange(tmp, path string) error { return errNoExchange }

// openForWriting is known only on Linux (write_linux.go).
func openForWriting(f *os.File) (writing, known bool) { return false, false }
