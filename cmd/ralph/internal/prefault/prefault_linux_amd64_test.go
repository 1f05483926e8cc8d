//go:build !ralph_noprefault

package prefault

import (
	"testing"

	"github.com/ralph-dev/ralph/cmd/ralph/internal/prefault/pagemap"
)

// atInit is what /proc/self/pagemap said of the image's pages as the
// package's init left them: this file's init runs right after the
// package's own (the go tool hands the compiler a package's files sorted
// by name).
var atInit struct {
	code, data []pagemap.Entry
	err        error
}

func init() {
	start, end := readOnlyImage()
	if atInit.code, atInit.err = pagemap.Entries(start, end); atInit.err != nil {
		return
	}
	start, end = dataImage()
	atInit.data, atInit.err = pagemap.Entries(start, end)
}

// TestImageMappedAtInit checks that once the package has initialised,
// every page of the test binary's code and read-only data is in its page
// tables, and every page of its data is there as a private copy (a
// MADV_POPULATE_READ would have left page cache pages). Without the
// package's madvise calls, hundreds of code pages are absent at that
// point, and most data pages are absent or shared.
func TestImageMappedAtInit(t *testing.T) {
	if atInit.err != nil {
		t.Fatal(atInit.err)
	}
	if n, first := pagemap.Count(atInit.code, func(e pagemap.Entry) bool { return !e.Present() }); n > 0 {
		start, _ := readOnlyImage()
		t.Errorf("%d of %d pages of the code not mapped after init, the first at %#x", n, len(atInit.code), start&^(pageSize-1)+uintptr(first)*pageSize)
	}
	if n, first := pagemap.Count(atInit.data, func(e pagemap.Entry) bool { return !e.Present() || e.FileOrShared() }); n > 0 {
		start, _ := dataImage()
		t.Errorf("%d of %d pages of the data not private copies after init, the first at %#x", n, len(atInit.data), start&^(pageSize-1)+uintptr(first)*pageSize)
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
