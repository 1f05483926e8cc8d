package mdstate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A state file a person deleted for good is not created again by a write
// (only `ralph init` creates them): Learn says the file is missing. The
// progress log is the one exception: an entry has nowhere else to go, so
// AppendProgress starts a new log, and never over one that exists.
func TestOnlyInitCreates(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{AgentFile, ProgressFile} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(Templates[name]+"\nsomething of theirs\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := Open(dir)
	p.SaveGrace = 50 * time.Millisecond
	if _, err := p.LoadAgent(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ReadProgress(1); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{AgentFile, ProgressFile} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	var missing *MissingError
	if err := p.Learn("a learning"); !errors.As(err, &missing) || missing.File != AgentFile {
		t.Errorf("Learn: %v, want a MissingError for AGENT.md", err)
	}
	if _, err := os.Stat(filepath.Join(dir, AgentFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("AGENT.md was created again: %v", err)
	}
	if err := p.AppendProgress(Entry{Title: "T1: something", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, ProgressFile))
	if err != nil || !strings.Contains(string(data), "T1: something") {
		t.Errorf("the progress log: %v\n%s", err, data)
	}
}
