package mdstate

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// The five state files, in the order ralph shows them.
const (
	AgentFile    = "AGENT.md"
	GoalsFile    = "RALPH_GOALS.md"
	TasksFile    = "RALPH_TASKS.md"
	ProgressFile = "RALPH_PROGRESS.md"
	TodoFile     = "RALPH_TODO.md"
)

// Files lists the state files.
var Files = []string{AgentFile, GoalsFile, TasksFile, ProgressFile, TodoFile}

// RuntimeDir is ralph's runtime folder in the project root: locks, logs,
// backups. Nothing in it is state; deleting it loses nothing.
const RuntimeDir = ".ralph"

// FindRoot returns the project root for dir: the nearest directory at or
// above dir holding RALPH_TASKS.md, else the root of the git work tree
// holding dir, else dir itself. found is false in the last case.
func FindRoot(dir string) (root string, found bool) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return dir, false
	}
	for d := dir; ; {
		if fi, err := os.Stat(filepath.Join(d, TasksFile)); err == nil && !fi.IsDir() {
			return d, true
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, true
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return dir, false
}

// Project is the state of one project: its five files.
type Project struct {
	Root string

	mu sync.Mutex
	// parsed holds the last parse of each checklist ralph read or wrote.
	// It is used only while the file's bytes are exactly the ones parsed,
	// so a coordinator that edits in a loop parses once per edit (the
	// check of its own write) instead of twice.
	parsed map[string]*Checklist
}

// checklist parses data, or returns the parse of identical bytes.
func (p *Project) checklist(kind Kind, data []byte) (*Checklist, error) {
	p.mu.Lock()
	c := p.parsed[kind.File]
	p.mu.Unlock()
	if c != nil && bytes.Equal(c.src.src, data) {
		return c, nil
	}
	s, err := newSource(kind.File, data)
	if err != nil {
		return nil, err
	}
	c = parseChecklist(kind, s)
	p.remember(c)
	return c, nil
}

func (p *Project) remember(c *Checklist) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.parsed == nil {
		p.parsed = map[string]*Checklist{}
	}
	p.parsed[c.Kind.File] = c
}

// Open returns the project rooted at root.
func Open(root string) *Project {
	return &Project{Root: root}
}

// Path returns the path of a state file.
func (p *Project) Path(name string) string { return filepath.Join(p.Root, name) }

// LoadChecklist reads and parses a checklist file. A missing file is an
// error wrapping fs.ErrNotExist.
func (p *Project) LoadChecklist(kind Kind) (*Checklist, error) {
	data, _, err := readChecked(p.Path(kind.File), kind.File)
	if err != nil {
		return nil, err
	}
	return p.checklist(kind, data)
}

// MissingError reports a state file that a command needs but that does not
// exist yet.
type MissingError struct {
	File, Root string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("%s not found in %s; run `ralph init` to create the state files", e.File, e.Root)
}

// UpdateChecklist reads a checklist, lets fn change it, and writes the
// result durably. It holds ralph's state lock for the whole
// read-modify-write, and if a person saved the file between ralph's read
// and its write it starts again from their version, so neither is lost.
func (p *Project) UpdateChecklist(kind Kind, fn func(e *ChecklistEdit) error) (*Checklist, error) {
	// A missing file is advice to run init, before anything (.ralph/ with
	// its lock) is created in a folder that may not be a project at all.
	if _, err := os.Lstat(p.Path(kind.File)); errors.Is(err, fs.ErrNotExist) {
		return nil, &MissingError{File: kind.File, Root: p.Root}
	}
	unlock, err := p.lockState()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := p.recoverLocked(); err != nil {
		return nil, err
	}
	path := p.Path(kind.File)
	for try := 0; ; try++ {
		data, fi, err := readChecked(path, kind.File)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &MissingError{File: kind.File, Root: p.Root}
		}
		if err != nil {
			return nil, err
		}
		c, err := p.checklist(kind, data)
		if err != nil {
			return nil, err
		}
		e := c.Edit()
		if err := fn(e); err != nil {
			return c, err
		}
		if !e.Changed() {
			return c, nil
		}
		out, after, err := e.Bytes()
		if err != nil {
			return c, err
		}
		if err := checkWritable(kind.File, fi); err != nil {
			return c, err
		}
		switch err := writeIfUnchanged(path, data, out, fi.Mode()); {
		case errors.Is(err, errChanged) && try < 3:
			continue
		case err != nil:
			return c, &FileError{File: kind.File, Msg: "cannot write: " + unwrapPathErr(err), Hint: "check the permissions of the file and its folder"}
		}
		p.remember(after)
		return after, nil
	}
}

func checkWritable(name string, fi fs.FileInfo) error {
	// Root can write anything, so ask the mode rather than the kernel: a
	// read-only state file is a person's way of saying "hands off".
	if fi.Mode().Perm()&0o200 == 0 {
		return &FileError{File: name, Msg: "is read-only", Hint: "make it writable (chmod u+w " + name + ") if ralph may change it"}
	}
	return nil
}

var errChanged = errors.New("file changed while ralph was editing it")

// writeIfUnchanged replaces the file at path with data, unless its bytes
// are no longer old.
func writeIfUnchanged(path string, old, data []byte, mode fs.FileMode) error {
	cur, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !bytes.Equal(cur, old) {
		return errChanged
	}
	return WriteFileAtomic(path, data, mode)
}

// WriteFileAtomic writes data to path so that a crash at any instant leaves
// either the old file or the new one, never a mix or a truncated file: a
// temporary file in the same folder, fsync, rename over the target, fsync
// the folder (the rule restic follows). A symlink is followed, so the link
// stays a link. The file gets mode perm.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".ralph-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm.Perm()); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, fs.ErrInvalid) {
		return err
	}
	return nil
}

// Recover finishes what a crash interrupted: an append to the progress
// log that the journal records, and temporary files of an atomic write
// that never got renamed. ralph calls it on start; every write does too.
func (p *Project) Recover() error {
	unlock, err := p.lockState()
	if err != nil {
		return err
	}
	defer unlock()
	return p.recoverLocked()
}

// recoverLocked is Recover for a caller that holds the state lock, so no
// other ralph is mid-write and every temporary file is a crash's leftover.
func (p *Project) recoverLocked() error {
	// One read of the folder, not one glob per state file.
	entries, _ := os.ReadDir(p.Root)
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, ".") || !strings.Contains(n, ".ralph-") {
			continue
		}
		for _, name := range Files {
			if strings.HasPrefix(n, "."+name+".ralph-") {
				_ = os.Remove(filepath.Join(p.Root, n))
			}
		}
	}
	return p.recoverJournal()
}

// lockState takes ralph's short-lived write lock, held by any ralph process
// (coordinator, one-shot, CLI) for one read-modify-write of a state file.
func (p *Project) lockState() (func(), error) {
	dir := filepath.Join(p.Root, RuntimeDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		// A read-only project can still be read; writes fail later with
		// a message about the file itself.
		return func() {}, nil
	}
	return lockFile(filepath.Join(dir, "state.lock"))
}
