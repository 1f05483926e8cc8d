//go:build !linux && !darwin && !freebsd && !dragonfly && !windows

package coordinator

import "errors"

// freeDiskSpace cannot be read on this platform: the disk guard is off.
func freeDiskSpace(string) (int64, error) {
	return 0, errors.ErrUnsupported
}
