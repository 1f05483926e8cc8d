//go:build !linux

package mdstate

import "os"

// fineGrained is false here: no file system is known to stamp every
// change after a stat with a new ctime, so files are compared.
func fineGrained(*os.File) bool { return false }
