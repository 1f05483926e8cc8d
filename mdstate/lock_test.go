package mdstate

import (
	"path/filepath"
	"testing"
	"time"
)

// The state lock excludes a second holder until the first lets go, and
// then lets it in: one read-modify-write at a time, across processes (a
// second open file description is what another process would have).
func TestLockFileExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.lock")
	release, err := lockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func(), 1)
	go func() {
		second, err := lockFile(path)
		if err != nil {
			t.Error(err)
			second = func() {}
		}
		got <- second
	}()
	select {
	case second := <-got:
		second()
		t.Fatal("a second holder took the lock while the first held it")
	case <-time.After(200 * time.Millisecond):
	}
	release()
	select {
	case second := <-got:
		second()
	case <-time.After(5 * time.Second):
		t.Fatal("the second holder did not get the lock once it was free")
	}
}
