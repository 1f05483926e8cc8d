package mdstate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-dev/ralph/mdstate"
)

const initIgnoreLines = "# ralph's runtime folder: locks, logs, backups (not state)\n.ralph/\n"

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInitCreatesEverything(t *testing.T) {
	dir := t.TempDir()
	p := mdstate.Open(dir)
	res, err := p.Init()
	if err != nil {
		t.Fatal(err)
	}
	if !res.IgnoreAdded || !res.CreatedAny() || len(res.Files) != len(mdstate.Files) {
		t.Fatalf("Init() = %+v; want every file created and .ralph/ ignored", res)
	}
	for i, name := range mdstate.Files {
		if res.Files[i] != (mdstate.InitFile{Name: name, Created: true}) {
			t.Errorf("Files[%d] = %+v; want %s created", i, res.Files[i], name)
		}
		if got := readString(t, p.Path(name)); got != mdstate.Templates[name] {
			t.Errorf("%s = %q; want its template", name, got)
		}
		// Written through the Project, which knows it wrote it.
		if changed, ok, err := p.ChangedSinceOwnWrite(name); err != nil || changed || !ok {
			t.Errorf("ChangedSinceOwnWrite(%s) = %v, %v, %v; want false, true, nil", name, changed, ok, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, mdstate.RuntimeDir)); err != nil || !fi.IsDir() {
		t.Errorf("%s not created: %v", mdstate.RuntimeDir, err)
	}
	if got := readString(t, filepath.Join(dir, ".gitignore")); got != initIgnoreLines {
		t.Errorf(".gitignore = %q; want %q", got, initIgnoreLines)
	}
}

func TestInitTwiceChangesNothing(t *testing.T) {
	dir := t.TempDir()
	if _, err := mdstate.Open(dir).Init(); err != nil {
		t.Fatal(err)
	}
	// A person's edit since must survive the second init.
	tasks := filepath.Join(dir, mdstate.TasksFile)
	if err := os.WriteFile(tasks, []byte("# Tasks\n\n- [ ] Mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := mdstate.Open(dir).Init()
	if err != nil {
		t.Fatal(err)
	}
	if res.IgnoreAdded || res.CreatedAny() {
		t.Fatalf("second Init() = %+v; want nothing created or added", res)
	}
	for i, name := range mdstate.Files {
		if res.Files[i] != (mdstate.InitFile{Name: name}) {
			t.Errorf("Files[%d] = %+v; want %s kept", i, res.Files[i], name)
		}
	}
	if got := readString(t, tasks); got != "# Tasks\n\n- [ ] Mine\n" {
		t.Errorf("%s = %q; want the person's version", mdstate.TasksFile, got)
	}
	if got := readString(t, filepath.Join(dir, ".gitignore")); got != initIgnoreLines {
		t.Errorf(".gitignore = %q after a second init", got)
	}
}

func TestInitGitignore(t *testing.T) {
	tests := []struct {
		name, before, after string
	}{
		{"no final newline", "/bin\n*.log", "/bin\n*.log\n" + initIgnoreLines},
		{"final newline", "/bin\n", "/bin\n" + initIgnoreLines},
		{"crlf", "/bin\r\n", "/bin\r\n# ralph's runtime folder: locks, logs, backups (not state)\r\n.ralph/\r\n"},
		{"empty", "", initIgnoreLines},
		{"a similar name", ".ralph-old\nsub/.ralph/\n", ".ralph-old\nsub/.ralph/\n" + initIgnoreLines},
		{"ignored", "node_modules/\n/.ralph/\n", ""},
		{"ignored bare", ".ralph\n", ""},
		{"ignored contents", "  /.ralph/*  \n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, ".gitignore")
			if err := os.WriteFile(path, []byte(tc.before), 0o640); err != nil {
				t.Fatal(err)
			}
			res, err := mdstate.Open(dir).Init()
			if err != nil {
				t.Fatal(err)
			}
			want := tc.after
			if want == "" {
				want = tc.before
			}
			if res.IgnoreAdded != (tc.after != "") {
				t.Errorf("IgnoreAdded = %v; want %v", res.IgnoreAdded, tc.after != "")
			}
			if got := readString(t, path); got != want {
				t.Errorf(".gitignore = %q; want %q", got, want)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
				t.Errorf(".gitignore mode = %v, %v; want 0640 kept", fi.Mode(), err)
			}
		})
	}
}

func TestInitRefusesAFolderInAFilesPlace(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, mdstate.TasksFile), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := mdstate.Open(dir).Init()
	want := "create RALPH_TASKS.md: it is a directory; move it out of the way and run `ralph init` again"
	if err == nil || err.Error() != want {
		t.Fatalf("Init() error = %v; want %q", err, want)
	}
	// Nothing was created, so that init again after moving it is as new.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the folder holds %d entries; want only the directory", len(entries))
	}
}

func TestInitNeedsAFolder(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{file, filepath.Join(file, "..", "missing")} {
		_, err := mdstate.Open(root).Init()
		if err == nil || !strings.HasSuffix(err.Error(), "is not a folder ralph can use") {
			t.Errorf("Init(%s) error = %v; want not a folder", root, err)
		}
	}
}
