package pagemap

import (
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// TestEntries maps fresh memory, touches some of its pages, and checks
// which the entries say are present.
func TestEntries(t *testing.T) {
	const n = 16
	mem, err := syscall.Mmap(-1, 0, n*PageSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	for i := 0; i < n; i += 3 {
		mem[i*PageSize+7] = 1
	}
	start := uintptr(unsafe.Pointer(&mem[0]))
	entries, err := Entries(start+5, start+n*PageSize)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != n {
		t.Fatalf("%d entries, want %d", len(entries), n)
	}
	for i, e := range entries {
		if e.Present() != (i%3 == 0) || e.FileOrShared() {
			t.Errorf("page %d: present %v, file or shared %v; want %v, false", i, e.Present(), e.FileOrShared(), i%3 == 0)
		}
	}
	if absent, first := Count(entries, func(e Entry) bool { return !e.Present() }); absent != n-(n+2)/3 || first != 1 {
		t.Errorf("Count(absent) = %d, first %d; want %d, 1", absent, first, n-(n+2)/3)
	}
	if _, err := Entries(start, start); err == nil {
		t.Error("Entries of an empty range: no error")
	}
}

// read keeps the compiler from dropping TestFileOrShared's read.
var read byte

// TestFileOrShared maps a file privately and reads one page: the page
// cache's page, shared, until a write makes the page a private copy.
func TestFileOrShared(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "pagemap")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 2*PageSize)); err != nil {
		t.Fatal(err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, 2*PageSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	read += mem[0]
	mem[PageSize] = 1
	entries, err := Entries(uintptr(unsafe.Pointer(&mem[0])), uintptr(unsafe.Pointer(&mem[0]))+2*PageSize)
	if err != nil {
		t.Fatal(err)
	}
	if !entries[0].Present() || !entries[0].FileOrShared() {
		t.Errorf("read page: present %v, file or shared %v; want both", entries[0].Present(), entries[0].FileOrShared())
	}
	if !entries[1].Present() || entries[1].FileOrShared() {
		t.Errorf("written page: present %v, file or shared %v; want present, private", entries[1].Present(), entries[1].FileOrShared())
	}
}
