//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package gitctx

import "os"

// mapFile reads a file whole where gitctx does not map files.
func mapFile(path string) ([]byte, func() error, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return nil }, nil
}
