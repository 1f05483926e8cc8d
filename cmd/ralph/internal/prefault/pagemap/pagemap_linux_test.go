package pagemap

import (
	"syscall"
	"testing"
	"unsafe"
)

// TestAbsent maps fresh memory, touches some of its pages, and checks that
// Absent names exactly the others.
func TestAbsent(t *testing.T) {
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
	absent, pages, err := Absent(start+5, start+n*PageSize)
	if err != nil {
		t.Fatal(err)
	}
	if pages != n {
		t.Errorf("pages = %d, want %d", pages, n)
	}
	var want []uintptr
	for i := range n {
		if i%3 != 0 {
			want = append(want, start+uintptr(i)*PageSize)
		}
	}
	if len(absent) != len(want) {
		t.Fatalf("absent = %#x, want %#x", absent, want)
	}
	for i := range want {
		if absent[i] != want[i] {
			t.Fatalf("absent = %#x, want %#x", absent, want)
		}
	}
	if _, _, err := Absent(start, start); err == nil {
		t.Error("Absent of an empty range: no error")
	}
}
