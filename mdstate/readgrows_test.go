package mdstate

import (
	"fmt"
	"testing"
	"time"
)

// A read of the log that an append overtakes between its stat and its
// scan (ralph appends an entry beside the next agent while that agent, or
// `ralph status`, reads the log) returns the log as the stat found it.
// It read the entries the append made past the end of what it kept, and
// panicked.
func TestReadProgressOvertakenByAnAppend(t *testing.T) {
	dir := t.TempDir()
	p := Open(dir)
	entry := func(n int) Entry {
		return Entry{Time: time.Date(2026, 11, 29, 9, n, 0, 0, time.UTC), Title: fmt.Sprintf("T%d: Task %d", n, n), Fields: []Field{{Key: "outcome", Value: "done"}}}
	}
	for n := 1; n <= 3; n++ {
		if err := p.AppendProgress(entry(n)); err != nil {
			t.Fatal(err)
		}
	}
	appended := false
	setProbe(t, func(pp probePoint) {
		if pp == probeLogStat && !appended {
			appended = true
			if err := Open(dir).AppendProgress(entry(4)); err != nil {
				t.Error(err)
			}
		}
	})
	lg, err := Open(dir).ReadProgress(10)
	if err != nil || !appended {
		t.Fatalf("ReadProgress: %v (appended %v)", err, appended)
	}
	if lg.Entries != 3 || len(lg.Recent) != 3 || lg.Recent[2].Title != "T3: Task 3" {
		t.Fatalf("read %d entries, %d recent, last %+v; want the 3 the stat found", lg.Entries, len(lg.Recent), lg.Recent[len(lg.Recent)-1])
	}
	setProbe(t, nil)
	if lg, err := Open(dir).ReadProgress(10); err != nil || lg.Entries != 4 {
		t.Fatalf("the next read: %v, %d entries, want 4", err, lg.Entries)
	}
}
