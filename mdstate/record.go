package mdstate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// A Record is a small runtime file (in .ralph/) that a write of a state
// file depends on: a write-ahead record, such as the agent's report a
// coordinator keeps before it saves the task's outcome.
//
// The ordering rule. UpdateChecklistAfter writes the record and the state
// file's new version as one step: both temporary files are written and
// flushed at once (in parallel), then the record is renamed into place,
// then the state file is swapped in (save.go), then the two folders are
// flushed at once. A kill between any two of these leaves a prefix of
// them done: nothing (the old state, the record's temporary file a
// leftover that Recover removes); the record alone (a record for a step
// that did not happen, which its reader ignores: it names the step it
// belongs to); or both. A power cut relies on the file system making
// renames durable in the order they were made, as ext4 and XFS do (their
// journals commit metadata in order): the state file's swap is then never
// on disk without the record. Before the step returns both are durable,
// so nothing that follows it (the agent's start, an append) depends on a
// rename that could still be lost.
type Record struct {
	Path string
	Data []byte
	Perm fs.FileMode
}

// RecordError is the failure to write a Record: the state file was not
// written.
type RecordError struct {
	Path string
	Err  error
}

func (e *RecordError) Error() string { return fmt.Sprintf("write %s: %v", e.Path, e.Err) }
func (e *RecordError) Unwrap() error { return e.Err }

// UpdateChecklistAfter is UpdateChecklist with a write-ahead record rec,
// put in place just before the checklist's new version (the ordering rule
// above). The record is written even when the edit changes nothing or
// fails; when it cannot be, the error is a *RecordError and the checklist
// is not written.
func (p *Project) UpdateChecklistAfter(kind Kind, rec Record, fn func(e *ChecklistEdit) error) (*Checklist, error) {
	return p.updateChecklist(kind, &pendingRecord{Record: rec}, fn)
}

// pendingRecord is a Record on its way through a save: written to its
// temporary file, then renamed into place, then its folder flushed.
type pendingRecord struct {
	Record
	tmp     string
	renamed bool // in place; its folder not yet flushed
	synced  bool
}

// prepare writes the record's temporary file, durably.
func (r *pendingRecord) prepare() error {
	if err := os.MkdirAll(filepath.Dir(r.Path), 0o755); err != nil {
		return &RecordError{Path: r.Path, Err: err}
	}
	target := r.Path
	if t, err := filepath.EvalSymlinks(target); err == nil {
		target = t
	}
	tmp, _, err := reuseSpare(recordSpare(target), target, r.Data, r.Perm)
	if err != nil {
		tmp, _, err = writeTemp(target, r.Data, r.Perm)
	}
	if err != nil {
		return &RecordError{Path: r.Path, Err: err}
	}
	r.Path, r.tmp = target, tmp
	return nil
}

// place renames the prepared record into place.
func (r *pendingRecord) place() error {
	if err := os.Rename(r.tmp, r.Path); err != nil {
		_ = os.Remove(r.tmp)
		return &RecordError{Path: r.Path, Err: err}
	}
	r.renamed = true
	return nil
}

// discard removes a prepared record that was not placed.
func (r *pendingRecord) discard() {
	if r.tmp != "" && !r.renamed {
		_ = os.Remove(r.tmp)
	}
}

// writeAlone writes the record by itself, as WriteFileAtomic does: the
// step's state file is not written.
func (r *pendingRecord) writeAlone() error {
	if r.synced || r.renamed {
		return r.syncFolder()
	}
	if err := r.prepare(); err != nil {
		return err
	}
	if err := r.place(); err != nil {
		return err
	}
	return r.syncFolder()
}

func (r *pendingRecord) syncFolder() error {
	if r.synced {
		return nil
	}
	if err := syncDir(filepath.Dir(r.Path)); err != nil {
		return &RecordError{Path: r.Path, Err: err}
	}
	r.synced = true
	return nil
}

// withRecord runs write (the state file's temporary file) while the
// record's temporary file is written, then places the record: the first
// half of the ordering rule. Without a record it is write.
func (s *save) withRecord(write func() error) error {
	r := s.record
	if r == nil || r.renamed {
		return write()
	}
	var wg sync.WaitGroup
	var rerr error
	wg.Go(func() { rerr = r.prepare() })
	err := write()
	wg.Wait()
	if err != nil || rerr != nil {
		r.discard()
		return errors.Join(err, rerr)
	}
	return r.place()
}

// syncDirs flushes the state file's folder and, at the same time, the
// record's when it was placed and not yet flushed: the second half of the
// ordering rule.
func (s *save) syncDirs() error {
	r := s.record
	if r == nil || !r.renamed || r.synced {
		return syncDir(filepath.Dir(s.path))
	}
	var wg sync.WaitGroup
	var rerr error
	wg.Go(func() { rerr = r.syncFolder() })
	err := syncDir(filepath.Dir(s.path))
	wg.Wait()
	return errors.Join(err, rerr)
}

// finish makes sure the record is in place and durable at the end of its
// step, whatever the state file's save came to: written by itself when the
// save wrote nothing, its folder flushed when the save placed it and
// ended without a flush. A nil record has nothing to finish.
func (r *pendingRecord) finish() error {
	if r == nil {
		return nil
	}
	return r.writeAlone()
}

// RetireRecord takes the record at path out of place once the step that
// needed it is over: it is kept as the spare of the next record written
// there (spare.go), or removed. One that can be neither does no harm to a
// reader that checks which step a record belongs to.
func RetireRecord(path string) {
	if !keepsSpares {
		_ = os.Remove(path)
		return
	}
	if err := os.Rename(path, recordSpare(path)); err != nil {
		_ = os.Remove(path)
	}
}

// recordSpare is where the spare of the record at path is kept: beside it.
func recordSpare(path string) string {
	dir, base := filepath.Split(path)
	return filepath.Join(dir, "spare-"+base)
}
