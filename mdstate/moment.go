package mdstate

import (
	"errors"
	"io/fs"
	"os"
	"time"
)

// A missing or empty state file is a moment, not a fact. Editors save by
// replacing: vim renames the file to a backup, writes the new one and
// deletes the backup; others truncate the file and then write it. Taken
// at its word, that moment once had ralph write its template over a
// person's RALPH_TODO.md (149 of 150 lines gone) and stop with
// "RALPH_TASKS.md not found" (issue 9). So a file that a Project last saw
// with bytes in it, and now finds missing or empty, is read again every
// few milliseconds for up to the save grace; only a file that stays
// missing is missing, and only one that stays empty is empty.

// DefaultSaveGrace is how long a state file that had bytes may be missing
// or empty before ralph believes it: an editor's save takes milliseconds.
const DefaultSaveGrace = 2 * time.Second

// momentPoll is how often a file in the middle of a save is read again.
const momentPoll = 3 * time.Millisecond

// saveGrace returns p.SaveGrace, or DefaultSaveGrace when it is not set.
func (p *Project) saveGrace() time.Duration {
	if p.SaveGrace > 0 {
		return p.SaveGrace
	}
	return DefaultSaveGrace
}

// waitMoment calls done every momentPoll until it returns true or grace
// has passed, and reports whether it did.
func waitMoment(grace time.Duration, done func() bool) bool {
	for deadline := time.Now().Add(grace); time.Now().Before(deadline); {
		time.Sleep(momentPoll)
		if done() {
			return true
		}
	}
	return false
}

// isMoment reports a read that found the file missing or empty.
func isMoment(size int64, err error) bool {
	return errors.Is(err, fs.ErrNotExist) || (err == nil && size == 0)
}

// readState reads state file name (readChecked), waiting out a moment when
// this Project last saw the file with bytes.
func (p *Project) readState(name string) ([]byte, fs.FileInfo, error) {
	return p.readStateLike(name, nil)
}

// readStateLike is readState of a file ralph expects to hold like (the
// bytes of its last parse): then like itself is returned.
func (p *Project) readStateLike(name string, like []byte) ([]byte, fs.FileInfo, error) {
	path := p.Path(name)
	data, fi, err := readCheckedLike(path, name, like, p.saveGrace())
	if isMoment(int64(len(data)), err) && p.sawBytes(name) {
		waitMoment(p.saveGrace(), func() bool {
			data, fi, err = readCheckedLike(path, name, like, p.saveGrace())
			return !isMoment(int64(len(data)), err)
		})
	}
	p.saw(name, int64(len(data)), err)
	return data, fi, err
}

// readStateSource is readState, checked and indexed as a source.
func (p *Project) readStateSource(name string) (*source, fs.FileInfo, error) {
	data, fi, err := p.readState(name)
	if err != nil {
		return nil, nil, err
	}
	s, err := newSource(name, data)
	if err != nil {
		return nil, nil, err
	}
	return s, fi, nil
}

// statState is os.Stat of state file name with readState's wait.
func (p *Project) statState(name string) (fs.FileInfo, error) {
	path := p.Path(name)
	fi, err := os.Stat(path)
	if isMoment(size(fi), err) && p.sawBytes(name) {
		waitMoment(p.saveGrace(), func() bool {
			fi, err = os.Stat(path)
			return !isMoment(size(fi), err)
		})
	}
	p.saw(name, size(fi), err)
	return fi, err
}

func size(fi fs.FileInfo) int64 {
	if fi == nil {
		return 0
	}
	return fi.Size()
}

// sawBytes reports whether this Project last saw state file name with
// bytes in it.
func (p *Project) sawBytes(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.full[name]
}

// saw records what a read or write found in state file name: bytes, or a
// file missing or empty (after the wait). Other errors say nothing.
func (p *Project) saw(name string, size int64, err error) {
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.full == nil {
		p.full = map[string]bool{}
	}
	p.full[name] = err == nil && size > 0
}

// awaitWritten waits, up to wait, until no process has f's file open for
// writing, and then holds a read lease on it, which makes any open of it
// for writing wait until f is closed: what is read meanwhile is one whole
// version. Without it a read can catch an editor in the middle of writing
// its version into the file (vim writes a new file in place), and see
// only the pages written so far, cut mid-line, as if the person had
// deleted the rest; a save took such a read for their version and lost
// the rest of their lines. Where leases are not available, or the wait
// ends first, the file is read as it is.
func awaitWritten(f *os.File, wait time.Duration) {
	held, known := readLease(f)
	if known && !held {
		waitMoment(wait, func() bool {
			held, _ = readLease(f)
			return held
		})
	}
}

// awaitWriterDone is awaitWritten for a write of ralph's own to the file
// at path, which it cannot make under a read lease: it waits, up to wait,
// until no process has the file open for writing, and returns. An append
// made while an editor is still writing its version into the file would
// go where that write has got to, and the rest of it over the append.
func awaitWriterDone(path string, wait time.Duration) {
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil {
		return
	}
	awaitWritten(f, wait)
	_ = f.Close()
}
