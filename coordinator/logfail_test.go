//go:build linux

package coordinator

import (
	"os"
	"strings"
	"testing"
)

// A full disk while the agent writes its log is told once, the first time
// a write fails, and the notice says the disk is full; the writes that
// follow, and the close, add nothing. /dev/full fails every write with
// ENOSPC, as a full disk does.
func TestLogFullDiskIsTold(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	l, err := openLog(t.TempDir(), "full.log", Resources{}, newRedactor(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = l.f.Close()
	l.f = full
	if l.capped != nil {
		l.capped.f = full
	}
	var notices []string
	l.onFail = func(err error) { notices = append(notices, logFailedNotice("full.log", err)) }
	for range 3 {
		_, _ = l.Write([]byte("a line of the agent's output\n"))
	}
	if err := l.Close(); err == nil {
		t.Error("Close of a log that could not be written returned no error")
	}
	if len(notices) != 1 {
		t.Fatalf("%d notices, want 1: %q", len(notices), notices)
	}
	if !strings.Contains(notices[0], "the disk is full") || !strings.Contains(notices[0], "full.log") {
		t.Errorf("notice %q does not say the disk is full and which log", notices[0])
	}
}

// A log whose every write succeeds tells nothing.
func TestLogWrittenTellsNothing(t *testing.T) {
	l, err := openLog(t.TempDir(), "ok.log", Resources{}, newRedactor(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	told := false
	l.onFail = func(error) { told = true }
	if _, err := l.Write([]byte("fine\n")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if told {
		t.Error("a log written in full was reported as failed")
	}
}
