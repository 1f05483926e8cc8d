package mdstate

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		if runtime.GOOS == "windows" {
			t.Skipf("no symlinks here: %v", err)
		}
		t.Fatal(err)
	}
}

// outsideErr checks that err is the refusal of name as a link out of the
// project, to target.
func outsideErr(t *testing.T, what string, err error, name, target string) {
	t.Helper()
	var fe *FileError
	if !errors.Is(err, ErrOutsideProject) || !errors.As(err, &fe) || fe.File != name {
		t.Fatalf("%s = %v, want %s refused as a link out of the project", what, err, name)
	}
	want := name + ": is a symlink to " + target + ", outside the project; ralph only follows links that stay inside the project; " +
		"replace the link with a copy of the file if ralph should use it"
	if err.Error() != want {
		t.Fatalf("%s:\ngot  %s\nwant %s", what, err, want)
	}
}

// A state file that is a link to a file outside the project is refused
// for reading and writing; the file it points at keeps its bytes. (A
// cloned repository could aim RALPH_TASKS.md at any file of the user's.)
func TestSymlinkOutsideProjectRefused(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "notes.md")
	const victimData = "- [ ] T1: my own notes, not ralph's\n"
	writeFile(t, victim, victimData, 0o644)
	realVictim, err := filepath.EvalSymlinks(victim)
	if err != nil {
		t.Fatal(err)
	}

	p := Open(t.TempDir())
	symlink(t, victim, p.Path(TasksFile))
	_, err = p.LoadChecklist(TasksKind)
	outsideErr(t, "LoadChecklist", err, TasksFile, realVictim)
	_, err = p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error { return e.SetStatus("T1", Done) })
	outsideErr(t, "UpdateChecklist", err, TasksFile, realVictim)
	outsideErr(t, "CheckInside", CheckInside(p.Root, TasksFile), TasksFile, realVictim)

	symlink(t, victim, p.Path(AgentFile))
	outsideErr(t, "Learn", p.Learn("a learning"), AgentFile, realVictim)
	_, err = p.LoadAgent()
	outsideErr(t, "LoadAgent", err, AgentFile, realVictim)

	if got := readFile(t, victim); got != victimData {
		t.Fatalf("the file outside the project changed:\n%s", got)
	}
	if fi, err := os.Lstat(p.Path(TasksFile)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
}

// A chain of links that leaves the project at its last step, a relative
// link that climbs out, and a dangling link (a write through it would
// create the file outside) are refused too.
func TestSymlinkOutsideProjectVariants(t *testing.T) {
	outside := t.TempDir()
	realOutside, err := filepath.EvalSymlinks(outside)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(outside, "log.md"), "# Mine\n", 0o644)

	base := t.TempDir()
	root := filepath.Join(base, "project")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(base, "sibling.md"), "# Beside the project\n", 0o644)
	realBase, err := filepath.EvalSymlinks(base)
	if err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(outside, "log.md"), filepath.Join(root, "inner.md"))
	symlink(t, "inner.md", filepath.Join(root, TasksFile))                          // inside, then out
	symlink(t, "../sibling.md", filepath.Join(root, GoalsFile))                     // relative, out
	symlink(t, filepath.Join(outside, "missing.md"), filepath.Join(root, TodoFile)) // dangling, out
	symlink(t, filepath.Join(outside, "new.md"), filepath.Join(root, ProgressFile)) // dangling, out

	for name, target := range map[string]string{
		TasksFile:    filepath.Join(realOutside, "log.md"),
		GoalsFile:    filepath.Join(realBase, "sibling.md"),
		TodoFile:     filepath.Join(realOutside, "missing.md"),
		ProgressFile: filepath.Join(realOutside, "new.md"),
	} {
		outsideErr(t, "CheckInside "+name, CheckInside(root, name), name, target)
	}
	p := Open(root)
	_, err = p.UpdateChecklist(TodoKind, func(e *ChecklistEdit) error { _, err := e.Add("x"); return err })
	outsideErr(t, "UpdateChecklist of a dangling link", err, TodoFile, filepath.Join(realOutside, "missing.md"))
	if _, err := os.Lstat(filepath.Join(outside, "missing.md")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a file was created outside the project: %v", err)
	}
}

// A link that stays in the project is followed, as before, through a
// project root that is itself reached through a link; the write goes to
// the link's target and the link stays a link.
func TestSymlinkInsideProjectFollowed(t *testing.T) {
	real := t.TempDir()
	alias := filepath.Join(t.TempDir(), "alias")
	symlink(t, real, alias)
	if err := os.Mkdir(filepath.Join(real, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(real, "docs", "tasks.md")
	writeFile(t, target, "# Tasks\n\n- [ ] T1: One\n", 0o644)

	for _, root := range []string{real, alias} {
		p := Open(root)
		link := p.Path(TasksFile)
		_ = os.Remove(link)
		symlink(t, filepath.Join("docs", "tasks.md"), link)
		if err := CheckInside(root, TasksFile); err != nil {
			t.Fatalf("CheckInside(%s): %v", root, err)
		}
		if _, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error { _, err := e.Add("Two"); return err }); err != nil {
			t.Fatalf("UpdateChecklist through %s: %v", root, err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the link was replaced: %v", err)
		}
	}
	if got := readFile(t, target); !strings.HasSuffix(got, "- [ ] T2: Two\n- [ ] T3: Two\n") {
		t.Fatalf("the link's target reads\n%s", got)
	}
	// An absolute link to a file in the project is inside too.
	abs := filepath.Join(real, GoalsFile)
	symlink(t, filepath.Join(alias, "docs", "tasks.md"), abs)
	if err := CheckInside(alias, GoalsFile); err != nil {
		t.Fatal(err)
	}
}

func TestCheckInsidePlainFiles(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, TasksFile), "# Tasks\n", 0o644)
	for _, name := range []string{TasksFile, TodoFile} { // regular, missing
		if err := CheckInside(root, name); err != nil {
			t.Errorf("CheckInside(%s) = %v", name, err)
		}
	}
	if err := CheckInside(root, "../"+TasksFile); err == nil {
		t.Error("CheckInside accepted a name leading out of the root")
	}
}
