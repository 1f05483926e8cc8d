package projectdetect

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// TestMonorepoGolden detects testdata/monorepo.txtar and compares the JSON
// of the result, with Root blanked, to testdata/monorepo.golden.json.
// Refresh with: go test ./projectdetect -run TestMonorepoGolden -update
func TestMonorepoGolden(t *testing.T) {
	archive, err := os.ReadFile(filepath.Join("testdata", "monorepo.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeTree(t, dir, string(archive))
	p, err := Detect(context.Background(), dir, Options{Budget: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p.Root = ""
	got, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')

	golden := filepath.Join("testdata", "monorepo.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("result differs from %s (run with -update to accept):\n%s", golden, got)
	}
}
