package mdstate

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Rescue is a version of a state file that an interrupted save left
// beside it under a temporary name, kept in BackupDir rather than deleted:
// after an exchange that temporary name holds the version the save
// replaced, possibly a person's only copy of their edit.
type Rescue struct {
	File   string // the state file, e.g. RALPH_TASKS.md
	Backup string // the backup's absolute path
}

func (r Rescue) String() string {
	return fmt.Sprintf("%s: a version that an interrupted save left behind is kept in %s", r.File, r.Backup)
}

// Rescued returns the versions kept since the last call (by Recover, the
// start of every write, or a save that failed), and forgets them. A front
// end shows them: the person may want their edit back.
func (p *Project) Rescued() []Rescue {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.rescued
	p.rescued = nil
	return r
}

// leftover is a temporary file beside a state file.
type leftover struct {
	name string // the state file
	path string // its file, links resolved
	tmp  string
}

// leftovers finds the temporary files of every state file's saves: beside
// the file, which for a link is beside its target. The caller holds the
// state lock, so no save of ralph's is under way and each is a crash's.
func (p *Project) leftovers() []leftover {
	var out []leftover
	dirs := map[string][]os.DirEntry{}
	for _, name := range Files {
		if CheckInside(p.Root, name) != nil {
			continue // never touch a folder outside the project
		}
		path := p.Path(name)
		if target, err := filepath.EvalSymlinks(path); err == nil {
			path = target
		}
		dir, base := filepath.Split(path)
		entries, ok := dirs[dir]
		if !ok {
			entries, _ = os.ReadDir(dir) // one read of the folder, not one glob per file
			dirs[dir] = entries
		}
		prefix := tempPrefix(base)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), prefix) {
				out = append(out, leftover{name: name, path: path, tmp: filepath.Join(dir, e.Name())})
			}
		}
	}
	return out
}

// rescue deals with tmp, a temporary file left beside state file name
// (whose file is path): removed when every line of it is in the file (it
// is the file, or an older version of it that lost nothing since), else
// kept as a backup, stamped with its own mtime, and then removed. kept
// says which.
func (p *Project) rescue(name, path, tmp string) (r Rescue, kept bool, err error) {
	left, err := os.ReadFile(tmp)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Rescue{}, false, nil
	case err != nil:
		return Rescue{}, false, fmt.Errorf("read %s: %w", tmp, err)
	}
	stamp := time.Now()
	if fi, err := os.Stat(tmp); err == nil {
		stamp = fi.ModTime()
	}
	if r, kept, err = p.keepUnlessIn(name, path, left, stamp); err != nil {
		return r, kept, err
	}
	return r, kept, removeLeftover(tmp)
}

// keepUnlessIn keeps data, a version of state file name (whose file is
// path), as a backup stamped stamp, unless every line of it is in the
// file. kept says whether it did.
func (p *Project) keepUnlessIn(name, path string, data []byte, stamp time.Time) (r Rescue, kept bool, err error) {
	if cur, err := os.ReadFile(path); err == nil && linesIn(data, cur) {
		return Rescue{}, false, nil
	}
	backup, err := p.backupData(name, data, stamp)
	if err != nil {
		return Rescue{}, false, err
	}
	r = Rescue{File: name, Backup: backup}
	p.mu.Lock()
	p.rescued = append(p.rescued, r)
	p.mu.Unlock()
	return r, true, nil
}

// linesIn reports whether every line of a is in b, as often as in a.
func linesIn(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	have := map[string]int{}
	for line := range bytes.Lines(b) {
		have[string(bytes.TrimRight(line, "\r\n"))]++
	}
	for line := range bytes.Lines(a) {
		k := string(bytes.TrimRight(line, "\r\n"))
		if have[k] == 0 {
			return false
		}
		have[k]--
	}
	return true
}

func removeLeftover(tmp string) error {
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
