//go:build linux

package mdstate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bigTasks writes a RALPH_TASKS.md of n tasks (about 60 bytes each) in a
// new folder, and returns the folder, the file's path and its size.
func bigTasks(t *testing.T, n int) (dir, path string, size int64) {
	t.Helper()
	dir = t.TempDir()
	var b []byte
	b = append(b, "# Tasks\n\n"...)
	for i := 1; i <= n; i++ {
		b = fmt.Appendf(b, "- [ ] T%d: Implement part %d of the feature\n", i, i)
	}
	path = filepath.Join(dir, TasksFile)
	writeFile(t, path, string(b), 0o644)
	return dir, path, int64(len(b))
}

// tickAndAsk has p mark task id done, then asks whether the file changed
// since ralph's write, as a coordinator does before its next step. It
// returns the bytes this process read meanwhile.
func tickAndAsk(t *testing.T, p *Project, id string) int64 {
	t.Helper()
	before := bytesRead(t)
	if _, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error { return e.SetStatus(id, Done) }); err != nil {
		t.Fatal(err)
	}
	if changed, ok, err := p.ChangedSinceOwnWrite(TasksFile); err != nil || !ok || changed {
		t.Fatalf("after ralph's own save of %s: changed %v, known %v, %v", id, changed, ok, err)
	}
	return bytesRead(t) - before
}

// TestSaveVouchesAcrossItsRenames: a save of a big file, and the question
// after it, read none of it back where ctimes are fine-grained. The
// exchange and the spare's rename stamp the files with new ctimes; the
// write leases held across them show that nobody opened the files in
// between. Without them each save compared the replaced file twice and
// the next question compared the new one: three times the file's size.
// Elsewhere (no fine-grained ctimes) the compares are made.
func TestSaveVouchesAcrossItsRenames(t *testing.T) {
	dir, path, size := bigTasks(t, 15000)
	if size < 2*leaseWorth {
		t.Fatalf("the file is %d bytes, too small to take leases", size)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	fine := expectFineGrained(t, f)
	f.Close()
	p := Open(dir)
	if _, err := p.LoadChecklist(TasksKind); err != nil {
		t.Fatal(err)
	}
	tickAndAsk(t, p, "T1") // the first save has no spare yet
	for _, id := range []string{"T2", "T3", "T4"} {
		read := tickAndAsk(t, p, id)
		t.Logf("fine-grained ctimes: %v; saving %s and asking read %d bytes of a %d-byte file", fine, id, read, size)
		switch {
		case fine && read > size/2:
			t.Fatalf("saving %s read %d bytes back, want none of the %d-byte file", id, read, size)
		case !fine && read < size:
			t.Fatalf("without fine-grained ctimes the save must compare: %d bytes read", read)
		}
	}
	got := readFile(t, path)
	for _, id := range []string{"T1", "T2", "T3", "T4"} {
		if !strings.Contains(got, "- [x] "+id+": ") {
			t.Fatalf("%s is not ticked", id)
		}
	}
}

// TestSaveComparesWhatIsOpenElsewhere: while another process may hold the
// file open (here the test itself, through a second open file), no lease
// is granted, and a save compares what it replaced, as before.
func TestSaveComparesWhatIsOpenElsewhere(t *testing.T) {
	dir, path, size := bigTasks(t, 15000)
	p := Open(dir)
	if _, err := p.LoadChecklist(TasksKind); err != nil {
		t.Fatal(err)
	}
	tickAndAsk(t, p, "T1")
	tickAndAsk(t, p, "T2")
	held, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	before := bytesRead(t)
	if _, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error { return e.SetStatus("T3", Done) }); err != nil {
		t.Fatal(err)
	}
	if read := bytesRead(t) - before; read < size {
		t.Fatalf("the save read %d bytes of a %d-byte file another open file holds: it took a lease it could not have", read, size)
	}
	if got := readFile(t, path); !strings.Contains(got, "- [x] T3: ") {
		t.Fatal("T3 is not ticked")
	}
}

// TestBrokenLeaseVouchesForNothing: a lease that an open broke between
// leaseVouched and vouchLeased vouches for nothing: the file's version
// after the rename is not taken to hold the bytes, and the opener's wait
// ends when the lease is given back.
func TestBrokenLeaseVouchesForNothing(t *testing.T) {
	path, f, data := vouchedTestFile(t, 256<<10)
	if same, err := sameContent(f, data); err != nil || !same {
		t.Fatalf("first look: %v, %v", same, err)
	}
	if !expectFineGrained(t, f) {
		// Nothing is vouched for here, so no lease carries it.
		if leaseVouched(f, data) {
			t.Fatal("a lease taken on a version nothing vouches for")
		}
		return
	}
	if !leaseVouched(f, data) {
		t.Fatal("no lease on a vouched file nobody else has open")
	}
	moved := path + ".moved"
	if err := os.Rename(path, moved); err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() {
		g, err := os.Open(moved) // waits for the lease to be given back
		if err == nil {
			g.Close()
		}
		opened <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for leaseWhole(f) {
		if time.Now().After(deadline) {
			t.Fatal("the open did not break the lease within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	vouchLeased(f, data)
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the open still waits after the lease was given back")
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	v, known := versionOf(f, fi)
	if !known {
		t.Fatal("no version known")
	}
	if got, ok := v.vouched(); ok && bytes.Equal(got, data) {
		t.Fatal("a broken lease vouched for the renamed file")
	}
	// Unbroken, the same steps vouch.
	if same, err := sameContent(f, data); err != nil || !same {
		t.Fatalf("look after the rename: %v, %v", same, err)
	}
	if !leaseVouched(f, data) {
		t.Fatal("no lease the second time")
	}
	if err := os.Rename(moved, path); err != nil {
		t.Fatal(err)
	}
	vouchLeased(f, data)
	if fi, err = f.Stat(); err != nil {
		t.Fatal(err)
	}
	if v, _ = versionOf(f, fi); !v.holds(data) {
		t.Fatal("an unbroken lease did not vouch across the rename")
	}
}
