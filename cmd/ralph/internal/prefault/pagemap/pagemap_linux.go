// Package pagemap reads what Linux's /proc/self/pagemap says of the
// process's pages: what the prefault packages' tests check.
package pagemap

import (
	"encoding/binary"
	"fmt"
	"os"
)

// PageSize is the size of the pages an Entry describes.
const PageSize = 4096

// Entry is one page's 64-bit pagemap entry.
type Entry uint64

// Present says the page is in the page tables (bit 63).
func (e Entry) Present() bool { return e&(1<<63) != 0 }

// FileOrShared says the page is the page cache's or shared anonymous
// memory (bit 61): false for a private copy, as a write to a private
// mapping of a file makes.
func (e Entry) FileOrShared() bool { return e&(1<<61) != 0 }

// Entries returns the entries of the pages of [start, end), start rounded
// down and end up to a page.
func Entries(start, end uintptr) ([]Entry, error) {
	start &^= PageSize - 1
	if end <= start {
		return nil, fmt.Errorf("pagemap: empty range [%#x, %#x)", start, end)
	}
	pages := int((end - start + PageSize - 1) / PageSize)
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 8*pages)
	if _, err := f.ReadAt(buf, int64(start/PageSize*8)); err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	entries := make([]Entry, pages)
	for i := range entries {
		entries[i] = Entry(binary.LittleEndian.Uint64(buf[8*i:]))
	}
	return entries, nil
}

// Count counts the entries for which keep is true, and returns the index
// of the first (-1 when none).
func Count(entries []Entry, keep func(Entry) bool) (n, first int) {
	first = -1
	for i, e := range entries {
		if keep(e) {
			if n == 0 {
				first = i
			}
			n++
		}
	}
	return n, first
}
