package mdstate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// BackupDir is the folder, relative to the project root, where ralph
// keeps the version of a state file that a whole-file replacement (a
// restore) is about to throw away.
var BackupDir = filepath.Join(RuntimeDir, "backup")

// backupTimeLayout stamps a backup's name: UTC, to the second, sortable.
const backupTimeLayout = "20060102T150405Z"

// Backup keeps a copy of state file name as it is now in BackupDir, named
// NAME.<time>, or NAME.<time>.2, .3 … when that name is taken: two backups
// in one second must not overwrite the first, which may hold the only copy
// of someone's hand edits. It returns the backup's absolute path, or ""
// when the file does not exist (there is nothing to keep).
func (p *Project) Backup(name string, now time.Time) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	data, err := os.ReadFile(p.Path(name))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("back up %s: %w", name, err)
	}
	return p.backupData(name, data, now)
}

// RestoreFile replaces state file name with data, after keeping its
// current bytes as a Backup, all under the state lock; and only if the file
// still holds the bytes it backed up: a person's save in between is never
// lost, neither replaced nor missing from the backup (the restore then
// fails and can be run again). It returns the backup's path ("" when the
// file did not exist).
func (p *Project) RestoreFile(name string, data []byte, now time.Time) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	unlock, err := p.lockForWrite()
	if err != nil {
		return "", err
	}
	defer unlock()
	cur, err := os.ReadFile(p.Path(name))
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("back up %s: %w", name, err)
	}
	backup := ""
	if exists {
		if backup, err = p.backupData(name, cur, now); err != nil {
			return "", err
		}
	}
	// Against the bytes backed up: a save in between stays, and the
	// restore fails.
	if err := p.replaceLocked(name, cur, exists, data); err != nil {
		if errors.Is(err, errReplaced) {
			err = &FileError{File: name, Msg: "changed while ralph was restoring it", Hint: "nothing was replaced; run the restore again", Err: errReplaced}
		}
		return backup, err
	}
	return backup, nil
}

// backupData writes data as a new backup of name.
func (p *Project) backupData(name string, data []byte, now time.Time) (string, error) {
	dir := filepath.Join(p.Root, BackupDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("back up %s: %w", name, err)
	}
	stem := filepath.Join(dir, name+"."+now.UTC().Format(backupTimeLayout))
	for n := 1; ; n++ {
		path := stem
		if n > 1 {
			path += "." + strconv.Itoa(n)
		}
		// Created, never replaced: a name another restore took a moment
		// ago makes this one try the next.
		_, err := writeDurable(path, data, 0o644, true)
		switch {
		case err == nil:
			return path, nil
		case !errors.Is(err, errExists):
			return "", fmt.Errorf("back up %s: %w", name, err)
		}
	}
}
