//go:build !ralph_noprefault

package prefault

import (
	"testing"

	"github.com/ralph-dev/ralph/cmd/ralph/internal/prefault/pagemap"
)

// atInit is the state of the image's pages as the package's init left
// them: this file's init runs right after the package's own (the go tool
// hands the compiler a package's files sorted by name).
var atInit struct {
	absent []uintptr
	pages  int
	err    error
}

func init() {
	start, end := readOnlyImage()
	atInit.absent, atInit.pages, atInit.err = pagemap.Absent(start, end)
}

// TestImageMappedAtInit checks that every page of the test binary's code
// and read-only data is in its page tables once the package has
// initialised, as /proc/self/pagemap tells (bit 63: page present). Without
// the package's madvise, hundreds of pages are absent at that point.
func TestImageMappedAtInit(t *testing.T) {
	if atInit.err != nil {
		t.Fatal(atInit.err)
	}
	if n := len(atInit.absent); n > 0 {
		t.Errorf("%d of %d pages of the image not mapped after init, the first at %#x", n, atInit.pages, atInit.absent[0])
	}
}

// TestMadviseReportsErrors checks that the raw system call returns the
// kernel's errno: an advice Linux does not know is EINVAL (22).
func TestMadviseReportsErrors(t *testing.T) {
	start, _ := readOnlyImage()
	if got := int64(madvise(start&^(pageSize-1), pageSize, 1<<20)); got != -22 {
		t.Errorf("madvise with an unknown advice = %d, want -22 (EINVAL)", got)
	}
	if got := madvise(start&^(pageSize-1), pageSize, madvPopulateRead); got != 0 {
		t.Errorf("madvise(MADV_POPULATE_READ) of one code page = %d, want 0", int64(got))
	}
}
