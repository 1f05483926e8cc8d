package mdstate_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/mdstate"
)

func TestBackupNeverOverwritesABackup(t *testing.T) {
	dir := t.TempDir()
	p := mdstate.Open(dir)
	tasks := p.Path(mdstate.TasksFile)
	// Two backups in the same second, of two versions: both are kept.
	now := time.Date(2026, 11, 21, 11, 0, 0, 0, time.FixedZone("CET", 3600))
	var got []string
	for _, version := range []string{"# Tasks\n\n- [ ] T1: First\n", "# Tasks\n\n- [x] T1: First\n"} {
		if err := os.WriteFile(tasks, []byte(version), 0o600); err != nil {
			t.Fatal(err)
		}
		path, err := p.Backup(mdstate.TasksFile, now)
		if err != nil {
			t.Fatal(err)
		}
		if b := readString(t, path); b != version {
			t.Errorf("backup %s = %q; want %q", path, b, version)
		}
		got = append(got, path)
	}
	stem := filepath.Join(dir, ".ralph", "backup", "RALPH_TASKS.md.20261121T100000Z")
	if got[0] != stem || got[1] != stem+".2" {
		t.Errorf("backups = %q; want %s and %[2]s.2 (UTC)", got, stem)
	}
	if fi, err := os.Stat(got[0]); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("backup mode = %v, %v; want 0644", fi.Mode(), err)
	}
}

func TestBackupOfNothing(t *testing.T) {
	p := mdstate.Open(t.TempDir())
	path, err := p.Backup(mdstate.GoalsFile, time.Now())
	if err != nil || path != "" {
		t.Fatalf("Backup of a missing file = %q, %v; want \"\", nil", path, err)
	}
	if _, err := os.Stat(filepath.Join(p.Root, mdstate.BackupDir)); !os.IsNotExist(err) {
		t.Errorf("%s was created for nothing: %v", mdstate.BackupDir, err)
	}
}

func TestBackupRefusesAPathOut(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(dir, "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if path, err := mdstate.Open(proj).Backup("../outside", time.Now()); err == nil {
		t.Fatalf("Backup(../outside) = %q, nil; want an error", path)
	}
}
