package coordinator

import (
	"os"
	"path/filepath"
	"testing"
)

// takesNewFiles agrees with a create: it accepts a folder a file can be
// made in, and refuses a missing one and, for a user the permissions
// bind (root's are not checked), a folder without write permission.
func TestTakesNewFiles(t *testing.T) {
	dir := t.TempDir()
	creates := func(d string) bool {
		f, err := os.CreateTemp(d, "probe-*")
		if err != nil {
			return false
		}
		f.Close()
		return os.Remove(f.Name()) == nil
	}
	readOnly := filepath.Join(dir, "read-only")
	if err := os.Mkdir(readOnly, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(readOnly, 0o700) })
	for _, d := range []string{dir, filepath.Join(dir, "missing"), readOnly} {
		if got, want := takesNewFiles(d) == nil, creates(d); got != want {
			t.Errorf("%s: takesNewFiles says %v, a create says %v", d, got, want)
		}
	}
	if takesNewFiles(dir) != nil || takesNewFiles(filepath.Join(dir, "missing")) == nil {
		t.Error("a writable folder refused, or a missing one accepted")
	}
}
