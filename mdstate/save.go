package mdstate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// This file is the write path of a whole state file: one read-modify-write
// that knows exactly what it replaced.
//
// A person's editor does not take ralph's lock, so a save can land at any
// instant of ralph's. A check of the file followed by a rename still lost
// 27 of 1,500 appended lines and 48 of 1,500 temp-file saves (issue 9):
// whatever came between the check and the rename was replaced unseen. So a
// save goes like this:
//
//   - ralph's edit is made on the bytes it read, and written durably to a
//     temporary file beside the file;
//   - a look: if the file no longer holds the bytes the edit was made on, a
//     person saved meanwhile, and the edit is made again on their version
//     (or, when ralph's version already holds more than theirs, their
//     change is merged into it: merge3);
//   - the swap: renameat2(RENAME_EXCHANGE) puts the new file in place and
//     leaves the replaced one under the temporary name, where ralph reads
//     it. If a person saved between the look and the swap, that is their
//     version: it is swapped straight back (swapBack), so that ralph's
//     outdated version is never in place long enough for their editor to
//     read it and save it back, and the save goes on from the look;
//   - the replaced files stay open, and are read once more before they are
//     unlinked and once more after: an in-place append (`>>`) that opened
//     the file before the swap and wrote after ralph's read lands there,
//     and is taken in like any other save.
//
// A replaced file is unlinked only once the version that holds its bytes
// is durably in place, so after a crash a leftover temporary file may be a
// person's version: Recover keeps it as a backup (Rescued) rather than
// delete it. Where the exchange is not available (not Linux; a file system
// that refuses it) the swap is the older rename after the look, which a
// save between the two defeats.

// maxSaveTries bounds the tries of one save: a file that changes during
// every one of them is being rewritten by a program in a loop. A save
// gives up only while the file holds a person's version, so that its own
// outdated version is never left in place, and only once all the
// changes it took in are in place (givesUp); hardSaveTries bounds that
// wait.
const (
	maxSaveTries  = 50
	hardSaveTries = 2 * maxSaveTries
)

// ChurnError reports a state file that kept changing while ralph saved an
// edit of it. The versions ralph's swaps replaced are kept in Backups.
type ChurnError struct {
	File    string
	Tries   int
	Backups []string
}

func (e *ChurnError) Error() string {
	msg := fmt.Sprintf("%s kept changing while ralph saved its update (%d tries)", e.File, e.Tries)
	if len(e.Backups) > 0 {
		msg += fmt.Sprintf("; the versions it replaced are kept in %s", filepath.Dir(e.Backups[0]))
	}
	return msg + "; stop whatever rewrites it and run the command again"
}

// editFunc is ralph's edit of a file, applied to its current bytes. A save
// calls it again with each newer version a person saved meanwhile.
type editFunc func(cur []byte) ([]byte, error)

// errNoExchange is exchange's answer where the file system cannot swap.
var errNoExchange = errors.New("the file system cannot exchange two files")

// errNoInPlace is overwriteInPlace's answer where it cannot refuse a
// symlink.
var errNoInPlace = errors.New("no in-place write without following links here")

// useExchange is false only in tests and benchmarks of the fallback.
var useExchange = true

// probePoint is an instant of a save that a person's write can fall
// between.
type probePoint int

const (
	probeLooked    probePoint = iota // a swap's look found the expected bytes
	probeExchanged                   // the exchange is done, nothing read yet
	probeSwapped                     // a swap is done and its replaced file read
	probeUnlinked                    // the replaced files are unlinked, still open
	probeAppended                    // an entry is appended to the progress log
	probeLogLooked                   // an append looked at the log, not yet opened
	probeLogStat                     // a read of the log has its size, nothing read yet
)

// probe, set only by tests, is called at each probePoint, so that a test
// can write at exactly that instant as an editor might.
var probe func(probePoint)

func probeAt(at probePoint) {
	if probe != nil {
		probe(at)
	}
}

// onDisk is what the file holds as far as a save knows: the bytes of the
// last version it saw there, and whether they are its own.
type onDisk struct {
	data []byte
	ours bool
}

// save is one read-modify-write of a state file.
type save struct {
	p     *Project
	name  string // the state file, for messages and backups
	path  string // the file itself, links resolved
	mode  fs.FileMode
	grace time.Duration
	edit  editFunc

	// force swaps want in even when the file holds those bytes already.
	force bool

	// pre and post are the last application of edit (post = edit(pre)),
	// to tell whether a person's version was built on ralph's.
	pre, post []byte
	// base is the latest version of the file not written by ralph that
	// the save takes in: its read, or a person's save since.
	base []byte
	// editErr is edit's failure on a person's version: their version
	// then stays as it is, and the save returns editErr.
	editErr error
	held    []*replaced
	// known are the versions of the file the save has seen or written,
	// oldest first.
	known [][]byte
	// keepHeld is set when a person's version was taken over want:
	// then a replaced file with lines the file lacks is kept as a backup.
	keepHeld bool
	// unplaced is set when the save took in a change written into a file
	// its swap had taken out (incorporateLate), and cleared when its next
	// version is in place: until then the change is in no file in place.
	unplaced bool
	// written is the file ralph last put in place.
	written fs.FileInfo
	// final is what the file holds when the save ends, and ours whether
	// that is written.
	final []byte
	ours  bool
	// spared is set once a replaced file is kept as the spare (spare.go).
	spared bool
	// fresh is the spare the swap's new version was written over, and
	// looked the file found in place by the look, each open under a write
	// lease until the exchange is done (vouched.go).
	fresh, looked *os.File
	// later lets the folder's flush after a swap go on once the save is
	// over (Project.FlushLater); owed says a swap left one to do.
	later, owed bool
}

// replaced is a file a swap took out of place, open under its temporary
// name until the save ends.
type replaced struct {
	tmp      string
	f        *os.File
	data     []byte // as last read
	unlinked bool
}

// newSave prepares a save of the file at path (a symlink is resolved: the
// link stays a link, and its target is replaced).
func (p *Project) newSave(name, path string, mode fs.FileMode, edit editFunc) *save {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	return &save{p: p, name: name, path: path, mode: mode, grace: p.saveGrace(), edit: edit}
}

// run puts want in place of base, the bytes the file held when ralph read
// it (want is edit(base)), and goes on until a swap replaces what ralph
// expected. Then s.final is what the file holds, and s.ours says whether
// that is ralph's write (s.written): it is not when a person's version
// already had ralph's edit, or took none (editErr).
func (s *save) run(base, want []byte) (err error) {
	s.pre, s.post, s.base = base, want, base
	s.known = append(s.known, base)
	defer func() { err = s.release(err) }()
	disk := onDisk{data: base}
	// rebased says the last try found a person's version in place, whole
	// (a read waits out a write under way), and made the edit again on it.
	rebased := false
	for try := 1; ; try++ {
		if s.givesUp(try, disk) {
			return &ChurnError{File: s.name, Tries: try - 1}
		}
		if try > 1 && !rebased {
			// A person's editor is mid-save: give it a moment.
			time.Sleep(min(time.Duration(try)*500*time.Microsecond, 10*time.Millisecond))
		}
		rebased = false
		if !bytes.Equal(want, disk.data) || (s.force && try == 1) {
			got, placed, err := s.swap(want, disk)
			if err != nil {
				return err
			}
			if !placed {
				// The file is a person's version, and ralph's is not in:
				// tried again at once, before their next save.
				want, disk = s.incorporate(got, disk.data, want), onDisk{data: got}
				rebased = true
				continue
			}
			prev := disk
			disk = onDisk{data: want, ours: true}
			s.unplaced = false
			s.known = append(s.known, want)
			if !bytes.Equal(got, prev.data) {
				want = s.incorporate(got, prev.data, want)
				continue
			}
		}
		h, now, err := s.settle()
		if err != nil {
			return err
		}
		if h == nil {
			s.final, s.ours = disk.data, disk.ours
			return nil
		}
		want = s.incorporateLate(h, now, want)
	}
}

// givesUp reports whether the save stops before try: past maxSaveTries,
// while the file holds a person's version and every change the save took
// in is in place (a line a person wrote into a file the swap had taken
// out is in no file in place until the save places it: it goes on to do
// so); past hardSaveTries in any case.
func (s *save) givesUp(try int, disk onDisk) bool {
	if try > hardSaveTries {
		return true
	}
	return try > maxSaveTries && !disk.ours && !s.unplaced
}

// ralphs reports whether the file, as the save left it, is ralph's write:
// ralph put it in place, and it is not just a person's version put back.
func (s *save) ralphs() bool {
	return s.ours && s.editErr == nil && (s.force || !bytes.Equal(s.final, s.base))
}

// incorporate returns what the file should hold now that a person's
// version theirs replaced prev, where ralph wants want.
//
// Their version is built on one that ralph knows, most likely prev, but an
// editor may save a buffer it read a little earlier: the known version
// closest to theirs is taken as the one they edited. When that is the
// version ralph's edit was last made on and want is that edit and nothing
// more, the edit is made again on theirs, and checks itself there.
// Otherwise want holds more than theirs may (a version ralph took in
// before, which their save was made without), and their change is merged
// into want: an append, an edit of other lines. Only if their change meets
// want's is theirs taken as the latest word, and the versions ralph
// replaced are then kept as backups unless the file ends with all of their
// lines.
func (s *save) incorporate(theirs, prev, want []byte) []byte {
	from := s.editedFrom(theirs, prev)
	s.known = append(s.known, theirs)
	if bytes.Equal(from, s.pre) && bytes.Equal(want, s.post) {
		return s.apply(theirs)
	}
	if merged, ok := merge3(from, want, theirs); ok {
		s.takeIn(from, theirs)
		return merged
	}
	s.keepHeld = true
	if hasEdit(s.pre, s.post, theirs) {
		s.base = theirs
		return theirs // their version has ralph's edit
	}
	return s.apply(theirs)
}

// knownVersions is how many of the latest versions of the file a save
// compares a person's version with, to find the one they edited.
const knownVersions = 8

// editedFrom returns the version of the file, of those the save has seen
// or written (prev first), that theirs differs least from.
func (s *save) editedFrom(theirs, prev []byte) []byte {
	best, bestSize := prev, hunkSize(prev, theirs)
	for i := len(s.known) - 1; i >= max(0, len(s.known)-knownVersions) && bestSize > 0; i-- {
		if n := hunkSize(s.known[i], theirs); n < bestSize {
			best, bestSize = s.known[i], n
		}
	}
	return best
}

// hunkSize is how many bytes the change from base to x touches, as one
// run of lines: what was there and what is there now.
func hunkSize(base, x []byte) int {
	h, changed := lineHunk(base, x)
	if !changed {
		return 0
	}
	return h.hi - h.lo + len(h.text)
}

// incorporateLate returns want with what was written into the replaced
// file h after ralph read it (it reads now).
func (s *save) incorporateLate(h *replaced, now, want []byte) []byte {
	defer func() { h.data = now }()
	s.unplaced = true
	return s.incorporate(now, h.data, want)
}

// takeIn adds a person's change (from was, now is) to s.base, the
// version the hooks report ralph's write was built on; where it cannot,
// their version stands for it.
func (s *save) takeIn(was, is []byte) {
	if b, ok := merge3(was, s.base, is); ok {
		s.base = b
		return
	}
	s.base = is
}

// apply makes ralph's edit on a person's version cur. If it fails there
// (they deleted the task it changes, say), their version stays as it is.
func (s *save) apply(cur []byte) []byte {
	s.base = cur
	if s.editErr != nil {
		return cur
	}
	out, err := s.edit(cur)
	if err != nil {
		s.editErr = err
		return cur
	}
	s.pre, s.post = cur, out
	return out
}

// swap puts data in place of the file, which ralph expects to hold
// prev. It returns what the file held: the replaced version when placed,
// or, when ralph's data was not placed, the person's version that is
// there.
//
// It looks before it swaps: a person's save found then costs one more
// edit, and nobody sees ralph's outdated version. The exchange then
// catches what comes between the look and the swap.
func (s *save) swap(data []byte, prev onDisk) (got []byte, placed bool, err error) {
	var tmp string
	var fi fs.FileInfo
	defer s.dropLeases()
	tmp, fi, err = s.writeTemp(data)
	if err != nil {
		if tmp != "" {
			_ = os.Remove(tmp)
		}
		return nil, false, err
	}
	cur, err := s.look(prev.data)
	if err != nil || !bytes.Equal(cur, prev.data) {
		_ = os.Remove(tmp)
		return cur, false, err
	}
	probeAt(probeLooked)
	s.leaseLooked(prev.data)
	err = errNoExchange
	if useExchange {
		err = exchange(tmp, s.path)
	}
	if err == nil {
		s.vouchSwapped(data, prev.data)
	}
	// Before anything of ralph's opens the files again: an open waits
	// for the lease on its file to be given back.
	s.dropLeases()
	switch {
	case errors.Is(err, errNoExchange):
		// A save between the look and the rename is lost: the exchange
		// exists to close that gap.
		if err := os.Rename(tmp, s.path); err != nil {
			_ = os.Remove(tmp)
			return nil, false, err
		}
		s.written = fi
		return cur, true, syncDir(filepath.Dir(s.path))
	case errors.Is(err, fs.ErrNotExist): // renamed away since the look
		_ = os.Remove(tmp)
		cur, err := s.reappeared()
		return cur, false, err
	case err != nil:
		_ = os.Remove(tmp)
		return nil, false, err
	}
	s.written = fi
	probeAt(probeExchanged)
	return s.readReplaced(tmp, data, prev.data)
}

// leaseLooked takes a write lease on the file in place, when the version
// there is vouched for holding expected (what the look found): unbroken
// after the exchange, it shows the replaced file still holds expected.
// Worth it only where a compare costs more than its system calls.
func (s *save) leaseLooked(expected []byte) {
	if len(expected) < leaseWorth {
		return
	}
	f, err := openFile(s.path, os.O_RDONLY, 0)
	if err != nil {
		return
	}
	if !leaseVouched(f, expected) {
		_ = f.Close()
		return
	}
	s.looked = f
}

// vouchSwapped vouches, after the exchange, for the file now in place
// holding ours and the replaced one holding expected, where their leases
// show it (vouched.go).
func (s *save) vouchSwapped(ours, expected []byte) {
	if s.fresh != nil {
		vouchLeased(s.fresh, ours)
	}
	if s.looked != nil {
		vouchLeased(s.looked, expected)
	}
}

// dropLeases closes the files the swap held under a lease.
func (s *save) dropLeases() {
	for _, f := range []*os.File{s.fresh, s.looked} {
		if f != nil {
			_ = f.Close()
		}
	}
	s.fresh, s.looked = nil, nil
}

// look reads the file as it is, waiting out an editor's save.
func (s *save) look(expected []byte) ([]byte, error) {
	cur, err := s.settled(func() ([]byte, error) { return readFileLike(s.path, expected, s.grace) }, expected)
	if errors.Is(err, fs.ErrNotExist) {
		// Missing: an editor renamed it away to save (vim).
		return s.reappeared()
	}
	return cur, err
}

// readReplaced reads the file an exchange put under the name tmp, in
// place of ours, where ralph expected expected. From then on the file may
// be a person's only copy of their edit: it is held, open, until the end
// of the save. If it is not what ralph expected, it is swapped back at
// once (swapBack), and placed is false.
func (s *save) readReplaced(tmp string, ours, expected []byte) (got []byte, placed bool, err error) {
	r := &replaced{tmp: tmp}
	s.held = append(s.held, r)
	if r.f, err = openFile(tmp, os.O_RDONLY, 0); err != nil {
		return nil, true, err
	}
	if r.data, err = readLike(r.f, expected); err != nil {
		return nil, true, err
	}
	if !bytes.Equal(r.data, expected) {
		if got, ok, err := s.swapBack(r, ours, expected); ok {
			return got, false, err
		}
	}
	if err := s.syncFolder(); err != nil {
		return nil, true, err
	}
	if r.data, err = s.settledFrom(r.data, nil, func() ([]byte, error) { return readAll(r.f) }, expected); err != nil {
		return nil, true, err
	}
	probeAt(probeSwapped)
	return r.data, true, nil
}

// swapBack undoes a swap that replaced a person's version r, saved in the
// moment between ralph's look and its swap: it swaps the two files again,
// so that theirs is back in place at once. Left there while ralph makes
// its edit again on theirs, ralph's version (ours, which lacks their
// change) could be read by their editor and saved back with its next
// change, and theirs would be lost. It returns the file's bytes; ok is
// false if the second swap failed (then ralph's version stays, and the
// save goes on from there). If a person saved over ralph's version in
// that moment too, theirs is what the second swap takes out, and it is
// held like any replaced file, for its change to be taken in.
func (s *save) swapBack(r *replaced, ours, expected []byte) (got []byte, ok bool, err error) {
	if exchange(r.tmp, s.path) != nil {
		return nil, false, nil
	}
	_ = r.f.Close()
	s.held = s.held[:len(s.held)-1]
	f, err := openFile(r.tmp, os.O_RDONLY, 0)
	if err != nil {
		return nil, true, err
	}
	back, err := readAll(f)
	switch {
	case err != nil:
		_ = f.Close()
		return nil, true, err
	case bytes.Equal(back, ours):
		_ = f.Close()
		_ = os.Remove(r.tmp)
	default:
		// Held as read when it was still ralph's, so that the end of the
		// save takes the person's change in.
		s.held = append(s.held, &replaced{tmp: r.tmp, f: f, data: ours})
	}
	got, err = s.look(expected)
	return got, true, err
}

// reappeared waits, up to the save grace, for the file to be back after
// it went missing during the save, and returns its bytes.
func (s *save) reappeared() ([]byte, error) {
	var data []byte
	err := fs.ErrNotExist
	waitMoment(s.grace, func() bool {
		data, err = readFileLike(s.path, nil, s.grace)
		return err == nil && len(data) > 0
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", s.name, fs.ErrNotExist)
	}
	return data, err
}

// settled reads a file with read; if it is empty where ralph expected
// bytes, an editor may be between its truncation and its write, so it
// reads again until the file has bytes or the save grace is over.
func (s *save) settled(read func() ([]byte, error), expected []byte) ([]byte, error) {
	data, err := read()
	return s.settledFrom(data, err, read, expected)
}

// settledFrom is settled after a first read that gave data and err.
func (s *save) settledFrom(data []byte, err error, read func() ([]byte, error), expected []byte) ([]byte, error) {
	if err != nil || len(data) > 0 || len(expected) == 0 {
		return data, err
	}
	waitMoment(s.grace, func() bool {
		data, err = read()
		return err != nil || len(data) > 0
	})
	return data, err
}

// settle ends a save whose last swap replaced what ralph expected: unless
// a replaced file changed since ralph read it (then it returns that file
// and its bytes now), the replaced files are unlinked and read once more.
func (s *save) settle() (*replaced, []byte, error) {
	h, now, err := s.lateChange()
	if err != nil || h != nil {
		return h, now, err
	}
	if err := s.unlinkHeld(); err != nil {
		return nil, nil, err
	}
	probeAt(probeUnlinked)
	// A last look after the unlink: the file is gone from the folder, but
	// an appender that has it open still writes to it, and what ralph
	// holds open it can still read, once the appender is done.
	s.awaitWriters()
	return s.lateChange()
}

// awaitWriters waits, up to the save grace, until no process has a
// replaced file open for writing: `>>` opens, writes and closes in a
// moment, but a write ralph read no more would be lost.
func (s *save) awaitWriters() {
	busy := func() bool {
		for _, h := range s.held {
			if h.f == nil {
				continue
			}
			if writing, _ := openForWriting(h.f); writing {
				return true
			}
		}
		return false
	}
	if busy() {
		waitMoment(s.grace, func() bool { return !busy() })
	}
}

// lateChange reads every replaced file again and returns the first whose
// bytes changed since ralph read it, with its bytes now.
func (s *save) lateChange() (*replaced, []byte, error) {
	for _, h := range s.held {
		if h.f == nil {
			continue
		}
		now, err := readLike(h.f, h.data)
		if err != nil {
			return nil, nil, fmt.Errorf("read the version of %s ralph replaced: %w", s.name, err)
		}
		if !bytes.Equal(now, h.data) {
			return h, now, nil
		}
	}
	return nil, nil, nil
}

// unlinkHeld removes the replaced files from the folder (they stay
// open), or, if keepHeld, keeps each with lines the file lacks as a
// backup first.
func (s *save) unlinkHeld() error {
	for _, h := range s.held {
		if h.unlinked {
			continue
		}
		var err error
		switch {
		case s.keepHeld:
			_, _, err = s.p.rescue(s.name, s.path, h.tmp)
		case !s.keepSpare(h):
			err = removeLeftover(h.tmp)
		}
		if err != nil {
			return err
		}
		h.unlinked = true
	}
	return nil
}

// syncFolder flushes the folder after a swap, or leaves that to the end
// of the save when it may go on later.
func (s *save) syncFolder() error {
	if s.later {
		s.owed = true
		return nil
	}
	return syncDir(filepath.Dir(s.path))
}

// release closes the replaced files and returns err. After a failure, a
// replaced file may hold lines the file does not: it is kept as a backup
// then (keepFailed), and a ChurnError names the backups.
func (s *save) release(err error) error {
	var churn *ChurnError
	errors.As(err, &churn)
	errs := []error{err}
	for _, h := range s.held {
		if h.f != nil {
			_ = h.f.Close()
		}
		if err == nil {
			if !h.unlinked {
				_ = os.Remove(h.tmp)
			}
			continue
		}
		r, kept, rerr := s.keepFailed(h)
		errs = append(errs, rerr)
		if kept && churn != nil {
			churn.Backups = append(churn.Backups, r.Backup)
		}
	}
	s.held = nil
	if rerr := errors.Join(errs[1:]...); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// keepFailed keeps the replaced file h, after a save that failed, as a
// backup when the file lacks lines of it. One still in the folder is kept
// from there, as Recover would; one unlinked already from ralph's copy of
// it, the only place left for a change made to it after the unlink, which
// the save took in but could not place.
func (s *save) keepFailed(h *replaced) (Rescue, bool, error) {
	if h.unlinked {
		return s.p.keepUnlessIn(s.name, s.path, h.data, time.Now())
	}
	return s.p.rescue(s.name, s.path, h.tmp)
}

// readAll reads the whole file f from its start, whatever its offset.
func readAll(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// One byte more than the size: a file that grew since the stat reads
	// to its end in the loop below.
	buf := make([]byte, 0, fi.Size()+1)
	for off := int64(0); ; {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.ReadAt(buf[len(buf):cap(buf)], off)
		buf = buf[:len(buf)+n]
		off += int64(n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return buf, nil
			}
			return nil, err
		}
	}
}

// hunk is one change of a file: base[lo:hi] became text. lo and hi are
// at line starts (or the end of the file).
type hunk struct {
	lo, hi int
	text   []byte
}

// lineHunk returns the change from base to x as one hunk of whole lines:
// from the first line that differs to the last. ok is false when they are
// equal.
func lineHunk(base, x []byte) (h hunk, ok bool) {
	if bytes.Equal(base, x) {
		return hunk{}, false
	}
	pre := commonPrefix(base, x)
	suf := commonSuffix(base[pre:], x[pre:])
	// Widened to whole lines: lo back to its line's start, hi (unless it
	// is at one) on to its line's end. Both stay within what base and x
	// share, so x's text is the same lines.
	lo := bytes.LastIndexByte(base[:pre], '\n') + 1
	hi := len(base) - suf
	if hi > lo && base[hi-1] != '\n' {
		if i := bytes.IndexByte(base[hi:], '\n'); i >= 0 {
			hi += i + 1
		} else {
			hi = len(base)
		}
	}
	return hunk{lo: lo, hi: hi, text: x[lo : len(x)-(len(base)-hi)]}, true
}

// merge3 merges two versions made from base, ours and theirs, when each
// changed one run of lines and the runs do not overlap (two insertions at
// one place: ours first). ok is false when they overlap.
func merge3(base, ours, theirs []byte) (merged []byte, ok bool) {
	ht, changed := lineHunk(base, theirs)
	if !changed {
		return ours, true
	}
	ho, changed := lineHunk(base, ours)
	if !changed {
		return theirs, true
	}
	first, second := ho, ht
	if ho.hi > ht.lo {
		if ht.hi > ho.lo {
			return nil, false
		}
		first, second = ht, ho
	}
	out := make([]byte, 0, len(ours)+len(theirs)-len(base))
	out = append(out, base[:first.lo]...)
	out = append(out, first.text...)
	out = append(out, base[first.hi:second.lo]...)
	out = append(out, second.text...)
	return append(out, base[second.hi:]...), true
}

// hasEdit reports whether x already holds the change that turned pre into
// post: the changed lines of post, with a line of context on each side,
// are in x. A person's version built on ralph's write has them; one saved
// from an older copy does not, and gets the edit again.
func hasEdit(pre, post, x []byte) bool {
	if pre == nil || post == nil {
		return false
	}
	n := commonPrefix(pre, post)
	m := commonSuffix(pre[n:], post[n:])
	return bytes.Contains(x, contextWindow(post, n, len(post)-m))
}

// contextWindow returns b[from:to] widened to whole lines, plus the line
// before and the line after.
func contextWindow(b []byte, from, to int) []byte {
	start := bytes.LastIndexByte(b[:from], '\n') // end of the line before
	if start >= 0 {
		start = bytes.LastIndexByte(b[:start], '\n')
	}
	start++
	end := len(b)
	if i := bytes.IndexByte(b[to:], '\n'); i >= 0 {
		end = to + i + 1
		if j := bytes.IndexByte(b[end:], '\n'); j >= 0 {
			end += j + 1
		} else {
			end = len(b)
		}
	}
	return b[start:end]
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func commonSuffix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return n
}
