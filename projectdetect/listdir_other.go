//go:build !linux

package projectdetect

// rawLister has no state where listRaw is os.ReadDir.
type rawLister struct{}

// listRaw is listPortable: only Linux has a lister of its own.
func (l *lister) listRaw(dir string) ([]dirEntry, error) { return l.listPortable(dir) }
