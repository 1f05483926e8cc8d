//go:build !unix

package coordinator

import "os"

// takesNewFiles reports whether a file can be created in the folder dir,
// by creating one and removing it.
func takesNewFiles(dir string) error {
	probe, err := os.CreateTemp(dir, ".preflight-*")
	if err != nil {
		return err
	}
	probe.Close()
	return os.Remove(probe.Name())
}
