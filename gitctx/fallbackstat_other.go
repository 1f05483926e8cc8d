//go:build !linux

package gitctx

import (
	"io/fs"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// statMatches compares what every platform reports, modification time
// and size; anything else is left to the content hash.
func statMatches(fi fs.FileInfo, e *index.Entry) bool {
	return fi.ModTime().Equal(e.ModifiedAt) && e.Size == uint32(fi.Size())
}
