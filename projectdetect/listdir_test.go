package projectdetect

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The lister gives what os.ReadDir gives: every name (the longest a file
// system allows, and enough of them to take several reads of the
// system's records), each typed as a directory only if it is one (a link
// to a directory is not), sorted; and a directory read after a larger one
// does not see the larger one's entries.
func TestListerMatchesReadDir(t *testing.T) {
	big := t.TempDir()
	names := []string{strings.Repeat("n", 255), "é-ü", "space name", ".hidden", "-dash", "Z", "a"}
	for i := range 3000 { // about 100 KB of records: several getdents calls
		names = append(names, fmt.Sprintf("file-%04d-%s", i, strings.Repeat("x", i%20)))
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(big, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"sub", "sub two", ".git"} {
		if err := os.Mkdir(filepath.Join(big, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("sub", filepath.Join(big, "link-to-dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("gone", filepath.Join(big, "dangling")); err != nil {
		t.Fatal(err)
	}
	small := filepath.Join(big, "sub")
	if err := os.WriteFile(filepath.Join(small, "only"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(big, "sub two")

	var l, ref lister
	for _, dir := range []string{big, small, empty, big} {
		got, err := l.list(dir)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.listPortable(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			want = nil
		}
		if len(got) == 0 {
			got = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the lister's %d entries differ from os.ReadDir's %d", dir, len(got), len(want))
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Errorf("first difference at %d: %+v, want %+v", i, got[i], want[i])
					break
				}
			}
		}
	}
	if got, _ := l.list(big); len(got) != len(names)+5 {
		t.Errorf("%d entries, want %d", len(got), len(names)+5)
	}
}

// A directory the lister cannot read is an error naming it, as os.ReadDir's.
func TestListerErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var l lister
	for _, p := range []string{filepath.Join(dir, "missing"), file} {
		_, err := l.list(p)
		_, want := os.ReadDir(p)
		if err == nil || want == nil {
			t.Fatalf("list(%s) = %v, os.ReadDir: %v; want errors from both", p, err, want)
		}
		if !strings.Contains(err.Error(), p) {
			t.Errorf("list(%s): %v does not name the directory", p, err)
		}
	}
}
