//go:build !ralph_noprefault

package heap

import (
	"runtime"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/cmd/ralph/internal/prefault/pagemap"
)

// TestHeapAheadPopulated checks the init's effect: within a bounded wait
// for its goroutine, every page of the range it filled is in the page
// tables (/proc/self/pagemap, bit 63), though nothing in the test wrote to
// most of them, and the range is what the package doc says.
func TestHeapAheadPopulated(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("GOMAXPROCS is 1: the package does nothing on one CPU")
	}
	select {
	case <-ahead.done:
	case <-time.After(10 * time.Second):
		t.Fatal("madvise(MADV_POPULATE_WRITE) not back after 10 s")
	}
	if ahead.errno != 0 {
		t.Fatalf("madvise(MADV_POPULATE_WRITE, [%#x, %#x)): %v", ahead.start, ahead.end, ahead.errno)
	}
	n := ahead.end - ahead.start
	if n == 0 || n > span || ahead.start%pageSize != 0 || (ahead.end-1)/chunk != ahead.start/chunk {
		t.Fatalf("filled [%#x, %#x): want up to %d bytes from a page boundary, within one %d-byte chunk", ahead.start, ahead.end, span, chunk)
	}
	entries, err := pagemap.Entries(ahead.start, ahead.end)
	if err != nil {
		t.Fatal(err)
	}
	if absent, first := pagemap.Count(entries, func(e pagemap.Entry) bool { return !e.Present() }); absent > 0 {
		t.Errorf("%d of the %d pages of [%#x, %#x) not in the page tables, the first at %#x", absent, len(entries), ahead.start, ahead.end, ahead.start+uintptr(first)*pageSize)
	}
}

// TestFillRange checks the range's arithmetic: from the page of next, 2
// MB, or less where next's 4 MB chunk ends first.
func TestFillRange(t *testing.T) {
	const base = 0x7e5a_0000_0000 // 4 MB-aligned
	for _, tt := range []struct {
		next, start, end uintptr
	}{
		{base + 0x1234, base + 0x1000, base + 0x1000 + span},
		{base + chunk - span, base + chunk - span, base + chunk},
		{base + chunk - 3*pageSize - 8, base + chunk - 4*pageSize, base + chunk},
		{base + chunk - 1, base + chunk - pageSize, base + chunk},
	} {
		if start, end := fillRange(tt.next); start != tt.start || end != tt.end {
			t.Errorf("fillRange(%#x) = [%#x, %#x), want [%#x, %#x)", tt.next, start, end, tt.start, tt.end)
		}
	}
}
