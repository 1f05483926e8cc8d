package projectdetect

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManyProjectsCapped checks that a tree with more separate projects
// than maxTypes reports the first maxTypes in breadth-first order.
func TestManyProjectsCapped(t *testing.T) {
	var b strings.Builder
	for i := range maxTypes + 50 {
		fmt.Fprintf(&b, "-- p%03d/package.json --\n{\"scripts\": {\"test\": \"jest\"}}\n", i)
	}
	p := detectArchive(t, b.String())
	if len(p.Types) != maxTypes {
		t.Fatalf("len(Types) = %d, want %d", len(p.Types), maxTypes)
	}
	if first, last := p.Types[0].Dir, p.Types[maxTypes-1].Dir; first != "p000" || last != fmt.Sprintf("p%03d", maxTypes-1) {
		t.Errorf("Types run from %s to %s", first, last)
	}
	if len(p.Commands.Test) != maxTypes {
		t.Errorf("len(Commands.Test) = %d, want %d", len(p.Commands.Test), maxTypes)
	}
}

// TestEmptyJSONShape checks that an empty result marshals lists as [] and
// not null, so "ralph status --json" readers need no null checks.
func TestEmptyJSONShape(t *testing.T) {
	p, err := Detect(context.Background(), t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"types":[]`, `"build":[]`, `"test":[]`, `"lint":[]`, `"config_files":[]`, `"top_level":[]`, `"languages":[]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
}

// TestSymlinksNotFollowed checks that a symlinked directory is counted as
// a file and not walked, so link cycles and links out of the tree cost
// nothing.
func TestSymlinksNotFollowed(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, "-- go.mod --\nmodule x\n-- outside/package.json --\n{}\n")
	if err := os.Symlink(filepath.Join(dir, "outside"), filepath.Join(dir, "link")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	if err := os.Symlink(dir, filepath.Join(dir, "outside", "loop")); err != nil {
		t.Fatal(err)
	}
	p, err := Detect(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{". go go [go.mod]", "outside node  [package.json]"}
	if got := typeStrings(p.Types); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("types = %q, want %q", got, want)
	}
	if p.Summary.Files != 4 { // go.mod, link, outside/package.json, outside/loop
		t.Errorf("Summary.Files = %d, want 4", p.Summary.Files)
	}
}
