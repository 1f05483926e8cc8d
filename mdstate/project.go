package mdstate

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
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
	// SaveGrace is how long a state file this Project saw with bytes may
	// be missing or empty before a read believes it (an editor's save);
	// 0 means DefaultSaveGrace.
	SaveGrace time.Duration
	// FlushLater lets an append to the progress log return once its
	// journal record is durable, the log's own flush going on beside what
	// follows (progress.go), and a checklist's save return once its new
	// version is swapped in, the folder's flush going on the same way. Sync waits for both; so does the next
	// write. A long-lived writer sets it, and calls Sync before anything
	// that must follow a durable write (an agent's start) and before it is
	// done, so that it leaves the journal retired.
	FlushLater bool

	mu sync.Mutex
	// resolved is Root with its links resolved (realRoot).
	resolveOnce sync.Once
	resolved    string
	// parsed holds the last parse of each checklist ralph read or wrote.
	// It is used only while the file's bytes are exactly the ones parsed,
	// so a coordinator that edits in a loop parses once per edit (the
	// check of its own write) instead of twice.
	parsed map[string]*Checklist
	// own is what ralph's last write through this Project left in each
	// file, so that a watcher can tell its own writes from a person's.
	own map[string]ownWrite
	// full says, per file, whether this Project last saw it with bytes
	// (moment.go).
	full    map[string]bool
	hooks   []writeHook
	hookSeq int
	rescued []Rescue
	// scanned is when a write last looked for a crash's leftovers
	// (recoverLocked).
	scanned time.Time
	// entries keeps the parses of the progress entries read last, index
	// the progress index.
	entries entryMemo
	index   indexMemo
	// flush is the last append's flush, when it may not be over
	// (progress.go, flushLater); dirSync the last save's folder flush.
	flush   *pendingFlush
	dirSync *pendingFlush
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

// realRoot returns Root with its links resolved, as a save's path is
// (newSave), worked out once.
func (p *Project) realRoot() string {
	p.resolveOnce.Do(func() {
		p.resolved = filepath.Clean(p.Root)
		if r, err := filepath.EvalSymlinks(p.Root); err == nil {
			p.resolved = r
		}
	})
	return p.resolved
}

// LoadChecklist reads and parses a checklist file. A missing file is an
// error wrapping fs.ErrNotExist; a file this Project saw with bytes is
// missing or empty only if it stays so for the save grace (SaveGrace).
func (p *Project) LoadChecklist(kind Kind) (*Checklist, error) {
	data, _, err := p.readStateLike(kind.File, p.parsedBytes(kind))
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
// read-modify-write, and knows what its write replaced: if a person saved
// the file after ralph's read, fn runs again on their version, which is
// saved with ralph's change in it, so neither is lost (save.go). If fn
// fails on their version (they deleted the task it changes), their
// version stays and the error is returned with its checklist.
func (p *Project) UpdateChecklist(kind Kind, fn func(e *ChecklistEdit) error) (*Checklist, error) {
	return p.updateChecklist(kind, fn)
}

func (p *Project) updateChecklist(kind Kind, fn func(e *ChecklistEdit) error) (*Checklist, error) {
	// A missing file is advice to run init, before anything (.ralph/ with
	// its lock) is created in a folder that may not be a project at all.
	// (Lstat: a dangling link is refused by the read, with its reason.)
	if _, err := os.Lstat(p.Path(kind.File)); errors.Is(err, fs.ErrNotExist) {
		if _, err := p.statState(kind.File); errors.Is(err, fs.ErrNotExist) {
			return nil, &MissingError{File: kind.File, Root: p.Root}
		}
	}
	unlock, err := p.lockForWrite()
	if err != nil {
		return nil, err
	}
	defer unlock()
	data, fi, err := p.readStateLike(kind.File, p.parsedBytes(kind))
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
	edit := func(cur []byte) ([]byte, error) {
		c, err := p.checklist(kind, cur)
		if err != nil {
			return nil, err
		}
		e := c.Edit()
		if err := fn(e); err != nil || !e.Changed() {
			return cur, err
		}
		out, after, err := e.Bytes()
		if err != nil {
			return nil, err
		}
		p.remember(after)
		return out, nil
	}
	out, err := edit(data)
	if err != nil || bytes.Equal(out, data) {
		return c, err
	}
	if err := checkWritable(kind.File, fi); err != nil {
		return c, err
	}
	s := p.newSave(kind.File, p.Path(kind.File), fi.Mode(), edit)
	s.later = p.FlushLater
	err = p.runSave(s, data, out)
	if s.owed {
		p.syncDirLater(filepath.Dir(s.path))
	}
	if err != nil {
		return c, err
	}
	after, err := p.checklist(kind, s.final)
	if err != nil {
		return c, err
	}
	return after, s.editErr
}

// runSave runs s and records its result: the own-write record, the write
// hooks, what the Project saw. A save that only put a person's version
// back (fn failed on it) is not ralph's write.
func (p *Project) runSave(s *save, base, want []byte) error {
	err := s.run(base, want)
	var churn *ChurnError
	switch {
	case errors.As(err, &churn):
		return err
	case errors.Is(err, fs.ErrNotExist):
		return &MissingError{File: s.name, Root: p.Root}
	case err != nil:
		return writeFailure(s.name, "cannot write", err)
	}
	p.saw(s.name, int64(len(s.final)), nil)
	if s.ralphs() {
		p.noteWrite(s.name, s.final, s.written)
		p.wrote(s.name, s.base, s.final)
	}
	return nil
}

func checkWritable(name string, fi fs.FileInfo) error {
	// Root can write anything, so ask the mode rather than the kernel: a
	// read-only state file is a person's way of saying "hands off".
	if fi.Mode().Perm()&0o200 == 0 {
		return &FileError{File: name, Msg: "is read-only", Hint: "make it writable (chmod u+w " + name + ") if ralph may change it"}
	}
	return nil
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
	tmp, fi, err := writeTemp(path, data, perm)
	if err != nil {
		return nil, err
	}
	if create {
		err = linkNew(tmp, path)
		_ = os.Remove(tmp)
	} else if err = os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
	}
	if err != nil {
		return nil, err
	}
	return fi, syncDir(filepath.Dir(path))
}

// tempPrefix is how the temporary files of a save of the file named base
// begin: hidden, and named after it, so that Recover finds them.
func tempPrefix(base string) string { return "." + base + ".ralph-" }

// writeTemp writes data durably to a new temporary file beside path, with
// mode perm, and returns its name and info (its inode, size and mtime are
// the target's once it is renamed or swapped in).
func writeTemp(path string, data []byte, perm fs.FileMode) (tmp string, fi fs.FileInfo, err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, tempPrefix(base)+"*")
	if err != nil {
		return "", nil, err
	}
	tmp = f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return "", nil, err
	}
	if err = f.Chmod(perm.Perm()); err != nil {
		return "", nil, err
	}
	if err = f.Sync(); err != nil {
		return "", nil, err
	}
	if fi, err = f.Stat(); err != nil {
		return "", nil, err
	}
	if err = f.Close(); err != nil {
		return "", nil, err
	}
	return tmp, fi, nil
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
	d, err := openFile(dir, os.O_RDONLY, 0)
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
// log that the journal records, and saves that left a temporary file: one
// that holds what its state file holds, or nothing, is removed; any other
// may be a person's version that a swap replaced, and is kept as a backup
// (Rescued lists them). ralph calls it on start; every write does too,
// looking for temporary files at most once every leftoverScanEvery.
func (p *Project) Recover() error {
	unlock, err := p.lockState()
	if err != nil {
		return err
	}
	defer unlock()
	p.mu.Lock()
	p.scanned = time.Time{}
	p.mu.Unlock()
	return p.recoverLocked()
}

// leftoverScanEvery is how often the writes of one Project look for the
// temporary files of a crashed save. A look reads the project's folder,
// which costs more than a coordinator's other work on a write; a leftover
// is a backup to keep, not a write to finish, so it can wait that long.
// Every process's first write looks.
const leftoverScanEvery = time.Second

// recoverLocked is Recover for a caller that holds the state lock, so no
// other ralph is mid-write and every temporary file is a crash's leftover.
func (p *Project) recoverLocked() error {
	if err := p.settleDirSync(); err != nil {
		return err
	}
	if p.dueForScan() {
		for _, l := range p.leftovers() {
			// One that cannot be kept (a full disk) stays where it is, for
			// the next write to try again; it stops no write.
			_, _, _ = p.rescue(l.name, l.path, l.tmp)
		}
	}
	if p.flushPending() {
		// The journal holds this Project's last append, whose flush is
		// under way (progress.go): it is the append's to retire.
		return nil
	}
	return p.recoverJournal()
}

// dueForScan reports whether a write should look for leftovers now, and
// if so counts the look as made.
func (p *Project) dueForScan() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if !p.scanned.IsZero() && now.Sub(p.scanned) < leftoverScanEvery && now.After(p.scanned) {
		return false
	}
	p.scanned = now
	return true
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
	if err := CheckInside(p.Root, name); err != nil {
		return false, err
	}
	fi, err := writeDurable(p.Path(name), data, 0o644, true)
	if errors.Is(err, errExists) {
		return false, nil
	}
	if err != nil {
		return false, writeFailure(name, "cannot create", err)
	}
	p.saw(name, int64(len(data)), nil)
	p.noteWrite(name, data, fi)
	p.wrote(name, nil, data)
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
// one is refused, as by every other write. If a person saves the file
// while it is replaced, their version stays and ReplaceFile fails (run it
// again).
func (p *Project) ReplaceFile(name string, data []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	unlock, err := p.lockForWrite()
	if err != nil {
		return err
	}
	defer unlock()
	if name == ProgressFile {
		// The last append is on disk and its record retired before the
		// log it went to is replaced.
		if err := p.settleFlush(); err != nil {
			return err
		}
	}
	// A file that cannot be read (a folder, say) existed: replaceLocked
	// says what it is.
	cur, err := os.ReadFile(p.Path(name))
	return p.replaceLocked(name, cur, !errors.Is(err, fs.ErrNotExist), data)
}

// errReplaced is a whole-file replacement's refusal of a version it did
// not read: a person's save, which stays.
var errReplaced = errors.New("changed while ralph was replacing it")

// replaceLocked is ReplaceFile for a caller that holds the state lock and
// has read the file: it held cur (existed false: it was missing). If the
// file holds anything else, it is left as it is and the error says so.
func (p *Project) replaceLocked(name string, cur []byte, existed bool, data []byte) error {
	if err := CheckInside(p.Root, name); err != nil {
		return err
	}
	path := p.Path(name)
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !existed:
		if created, err := p.createLocked(name, data); err != nil || created {
			return err
		}
		return replacedMeanwhile(name)
	case errors.Is(err, fs.ErrNotExist):
		return replacedMeanwhile(name)
	case err != nil:
		return &FileError{File: name, Msg: "cannot read: " + unwrapPathErr(err), Hint: "check the permissions of the file and its folder"}
	case fi.IsDir():
		return &FileError{File: name, Msg: "is a directory, not a file", Hint: "move it out of the way first"}
	case !existed:
		return replacedMeanwhile(name)
	}
	if err := checkWritable(name, fi); err != nil {
		return err
	}
	s := p.newSave(name, path, fi.Mode(), func(now []byte) ([]byte, error) {
		if !bytes.Equal(now, cur) {
			return nil, errReplaced
		}
		return data, nil
	})
	s.force = true // the same bytes are written too: a restore is ralph's write
	if err := p.runSave(s, cur, data); err != nil {
		return err
	}
	if s.editErr != nil {
		return replacedMeanwhile(name)
	}
	return nil
}

func replacedMeanwhile(name string) error {
	return &FileError{File: name, Msg: "changed while ralph was replacing it", Hint: "nothing was replaced; run the command again", Err: errReplaced}
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
	// data is, for a whole file, what ralph wrote: kept (the Project's
	// parse holds the same bytes), it is compared with the file, which
	// costs a tenth of hashing it (sameread.go).
	data []byte
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

// leftAsOwn reports whether fi is file name as this Project's last write
// of it left it (ownWrite.sameFile): nobody has written it since.
func (p *Project) leftAsOwn(name string, fi fs.FileInfo) bool {
	p.mu.Lock()
	w, ok := p.own[name]
	p.mu.Unlock()
	return ok && w.sameFile(fi)
}

// noteWrite records a whole-file write of data; fi is the written file.
func (p *Project) noteWrite(name string, data []byte, fi fs.FileInfo) {
	p.setOwn(name, ownWrite{fi: fi, size: fi.Size(), data: data})
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
	return p.changedSinceOwnWrite(name)
}

// changedSinceOwnWrite is ChangedSinceOwnWrite for a caller that holds
// the state lock.
func (p *Project) changedSinceOwnWrite(name string) (changed, ok bool, err error) {
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
	if !w.tail {
		same, err := sameContent(f, w.data)
		if err != nil {
			return false, true, fmt.Errorf("read %s: %w", name, err)
		}
		return !same, true, nil
	}
	sum, err := tailSum(f, fi.Size())
	if err != nil {
		return false, true, fmt.Errorf("read %s: %w", name, err)
	}
	return sum != w.sum, true, nil
}
