package watch

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/mdstate"
)

// The progress log created by ralph's first entry (the one file a write
// may create) and appended to afterwards: none of it is anyone else's
// change.
func TestOwnProgressCreationNotReported(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, mdstate.TasksFile), []byte("# Tasks\n\n- [ ] T1: One\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := mdstate.Open(dir)
	var mu sync.Mutex
	var got []Change
	w, err := New(p, func(ch Change) { mu.Lock(); got = append(got, ch); mu.Unlock() }, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 3 {
		if err := p.AppendProgress(mdstate.Entry{Time: time.Now(), Title: "T1: entry " + string(rune('a'+i))}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, ch := range got {
		t.Errorf("reported: %s", ch.Summary())
	}
}
