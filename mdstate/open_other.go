//go:build !unix

package mdstate

import (
	"io/fs"
	"os"
)

// openFile is os.OpenFile (open_unix.go says why it differs there).
func openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
