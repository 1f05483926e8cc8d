// Package pagemap tells which of the process's pages are in its page
// tables, from /proc/self/pagemap: what the prefault packages' tests check.
package pagemap

import (
	"encoding/binary"
	"fmt"
	"os"
)

// PageSize is the size of the pages Absent counts.
const PageSize = 4096

// present is pagemap's bit 63: the page is in the page tables (RAM).
const present = 1 << 63

// Absent lists the pages of [start, end) not in the process's page tables;
// start is rounded down and end up to a page.
func Absent(start, end uintptr) (absent []uintptr, pages int, err error) {
	start &^= PageSize - 1
	if end <= start {
		return nil, 0, fmt.Errorf("pagemap: empty range [%#x, %#x)", start, end)
	}
	pages = int((end - start + PageSize - 1) / PageSize)
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	buf := make([]byte, 8*pages)
	if _, err := f.ReadAt(buf, int64(start/PageSize*8)); err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	for i := range pages {
		if binary.LittleEndian.Uint64(buf[8*i:])&present == 0 {
			absent = append(absent, start+uintptr(i)*PageSize)
		}
	}
	return absent, pages, nil
}
