package mdstate

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
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
	// own is what ralph's last write through this Project left in each
	// file, so that a watcher can tell its own writes from a person's.
	own map[string]ownWrite
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
	unlock, err := p.lockForWrite()
	if err != nil {
		return nil, err
	}
	defer unlock()
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
		written, err := writeIfUnchanged(path, data, out, fi.Mode())
		switch {
		case errors.Is(err, errChanged) && try < 3:
			continue
		case err != nil:
			return c, writeFailure(kind.File, "cannot write", err)
		}
		p.noteWrite(kind.File, out, written)
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
// are no longer old. It returns what the new file is (writeDurable).
func writeIfUnchanged(path string, old, data []byte, mode fs.FileMode) (fs.FileInfo, error) {
	cur, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(cur, old) {
		return nil, errChanged
	}
	return writeDurable(path, data, mode, false)
}

// WriteFileAtomic writes data to path so that a crash at any instant leaves
// either the old file or the new one, never a mix or a truncated file: a
// temporary file in the same folder, fsync, rename over the target, fsync
// the folder (the rule restic follows). A symlink is followed, so the link
// stays a link. The file gets mode perm. State files are written through a
// Project instead, which remembers what it wrote; this is for ralph's own
// files (backups, .gitignore).
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	_, err := writeDurable(path, data, perm, false)
	return err
}

// errExists reports that writeDurable, asked to create a file, found one.
var errExists = errors.New("file exists")

// writeDurable is WriteFileAtomic; with create, it fails with errExists
// rather than replace a file (or anything else) at path. It returns the
// new file's info, taken from the temporary file before it is renamed
// (its inode, size and mtime are the target's): a stat of path afterwards
// could see a person's save that came in between.
func writeDurable(path string, data []byte, perm fs.FileMode, create bool) (fs.FileInfo, error) {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".ralph-*")
	if err != nil {
		return nil, err
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
		return nil, err
	}
	if err := f.Chmod(perm.Perm()); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	if create {
		if err := linkNew(tmp, path); err != nil {
			return nil, err
		}
		_ = os.Remove(tmp)
	} else if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	ok = true
	return fi, syncDir(dir)
}

// linkNew puts the file tmp at path unless something is there. A hard
// link fails when path exists, so a file a person created a moment ago is
// never replaced. On a file system without hard links it falls back to a
// look and a rename, which only a person's save in between can defeat
// (other ralph writers wait for the state lock).
func linkNew(tmp, path string) error {
	switch err := os.Link(tmp, path); {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrExist):
		return errExists
	}
	if _, lerr := os.Lstat(path); lerr == nil {
		return errExists
	} else if !errors.Is(lerr, fs.ErrNotExist) {
		return lerr
	}
	return os.Rename(tmp, path)
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
	unlock, err := p.lockForWrite()
	if err != nil {
		return err
	}
	unlock()
	return nil
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

// lockForWrite takes the state lock and finishes what a crash left
// half done, as every write does first. On error nothing is held.
func (p *Project) lockForWrite() (func(), error) {
	unlock, err := p.lockState()
	if err != nil {
		return nil, err
	}
	if err := p.recoverLocked(); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
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

// checkName accepts the name of a file in the project root (a state file,
// or another of ralph's such as .gitignore), never a path leading out.
func checkName(name string) error {
	if name == "" || !filepath.IsLocal(name) {
		return fmt.Errorf("%q is not a file name in the project root", name)
	}
	return nil
}

// CreateFile writes a new state file atomically and durably, only if none
// exists (it reports false then).
func (p *Project) CreateFile(name string, data []byte) (created bool, err error) {
	if err := checkName(name); err != nil {
		return false, err
	}
	unlock, err := p.lockForWrite()
	if err != nil {
		return false, err
	}
	defer unlock()
	return p.createLocked(name, data)
}

func (p *Project) createLocked(name string, data []byte) (bool, error) {
	fi, err := writeDurable(p.Path(name), data, 0o644, true)
	if errors.Is(err, errExists) {
		return false, nil
	}
	if err != nil {
		return false, writeFailure(name, "cannot create", err)
	}
	p.noteWrite(name, data, fi)
	return true, nil
}

// EnsureFile creates name from Templates[name] if it is missing.
func (p *Project) EnsureFile(name string) (created bool, err error) {
	tmpl, ok := Templates[name]
	if !ok {
		return false, fmt.Errorf("%s has no template", name)
	}
	return p.CreateFile(name, []byte(tmpl))
}

// ReplaceFile replaces a state file's bytes atomically and durably, keeping
// its mode (restore). A missing file is created (mode 0644); a read-only
// one is refused, as by every other write.
func (p *Project) ReplaceFile(name string, data []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	unlock, err := p.lockForWrite()
	if err != nil {
		return err
	}
	defer unlock()
	return p.replaceLocked(name, data)
}

// replaceLocked is ReplaceFile for a caller that holds the state lock.
func (p *Project) replaceLocked(name string, data []byte) error {
	path := p.Path(name)
	mode := fs.FileMode(0o644)
	switch fi, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return &FileError{File: name, Msg: "cannot read: " + unwrapPathErr(err), Hint: "check the permissions of the file and its folder"}
	case fi.IsDir():
		return &FileError{File: name, Msg: "is a directory, not a file", Hint: "move it out of the way first"}
	default:
		if err := checkWritable(name, fi); err != nil {
			return err
		}
		mode = fi.Mode()
	}
	written, err := writeDurable(path, data, mode, false)
	if err != nil {
		return writeFailure(name, "cannot write", err)
	}
	p.noteWrite(name, data, written)
	return nil
}

// ownWrite is what ralph's last write of one file left there: the file
// itself (its inode, on Windows its file ID) and a hash of its bytes. For
// the append-only progress log, whose whole hash would cost a read of the
// whole log, it is a hash of the last tailBytes bytes, and the size and
// mtime stand for the rest: an append changes the size, and an edit
// anywhere the mtime.
type ownWrite struct {
	fi   fs.FileInfo // as written, for os.SameFile
	size int64
	tail bool // sum covers the last tailBytes bytes, not the whole file
	sum  [sha256.Size]byte
}

// tailBytes is how much of the progress log's end the own-write record
// hashes: a few entries, so that an edit of the last ones is seen even
// within the mtime's resolution.
const tailBytes = 4 << 10

// sameFile reports whether fi is the file w was recorded from: the same
// file (a rename-save, as vim and most editors do, makes a new one), the
// same size, and for the progress log the same mtime.
func (w ownWrite) sameFile(fi fs.FileInfo) bool {
	return os.SameFile(w.fi, fi) && fi.Size() == w.size &&
		(!w.tail || fi.ModTime().Equal(w.fi.ModTime()))
}

// noteWrite records a whole-file write of data; fi is the written file.
func (p *Project) noteWrite(name string, data []byte, fi fs.FileInfo) {
	p.setOwn(name, ownWrite{fi: fi, size: fi.Size(), sum: sha256.Sum256(data)})
}

// noteAppend records the progress log as an append through f left it,
// ending at end: its identity and its last tailBytes bytes. It costs a
// stat and one small read, whatever the log's size.
func (p *Project) noteAppend(f *os.File, end int64) {
	fi, err := f.Stat()
	if err != nil {
		p.forgetOwn(ProgressFile)
		return
	}
	sum, err := tailSum(f, end)
	if err != nil {
		p.forgetOwn(ProgressFile)
		return
	}
	p.setOwn(ProgressFile, ownWrite{fi: fi, size: end, tail: true, sum: sum})
}

// tailSum hashes the tailBytes bytes of f that end at end.
func tailSum(f *os.File, end int64) ([sha256.Size]byte, error) {
	n := min(end, tailBytes)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, end-n); err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(buf), nil
}

func (p *Project) setOwn(name string, w ownWrite) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.own == nil {
		p.own = map[string]ownWrite{}
	}
	p.own[name] = w
}

// forgetOwn drops the record of a write whose result ralph could not read
// back: the next check then says "not written by this Project" rather
// than guess.
func (p *Project) forgetOwn(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.own, name)
}

// ChangedSinceOwnWrite reports whether the file on disk is no longer what
// ralph's last write through this Project left there (false with ok=false
// when this Project has not written it). A file deleted since, replaced by
// a rename (an editor's save, even of the same bytes), or with other bytes
// has changed. It reads the whole file, except for the progress log, of
// which it reads the last few KiB.
func (p *Project) ChangedSinceOwnWrite(name string) (changed, ok bool, err error) {
	// Under the state lock: a write is recorded before the lock is given
	// up, so a write in flight is never taken for someone else's.
	unlock, err := p.lockState()
	if err != nil {
		return false, false, err
	}
	defer unlock()
	p.mu.Lock()
	w, ok := p.own[name]
	p.mu.Unlock()
	if !ok {
		return false, false, nil
	}
	f, err := os.Open(p.Path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return true, true, nil
	}
	if err != nil {
		return false, true, fmt.Errorf("read %s: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, true, fmt.Errorf("read %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() || !w.sameFile(fi) {
		return true, true, nil
	}
	var sum [sha256.Size]byte
	if w.tail {
		sum, err = tailSum(f, fi.Size())
	} else {
		h := sha256.New()
		if _, err = io.Copy(h, f); err == nil {
			copy(sum[:], h.Sum(nil))
		}
	}
	if err != nil {
		return false, true, fmt.Errorf("read %s: %w", name, err)
	}
	return sum != w.sum, true, nil
}
