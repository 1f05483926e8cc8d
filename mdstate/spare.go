package mdstate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// A save's new version goes to a temporary file beside the state file,
// and the swap leaves the replaced version there. Creating that file,
// and freeing the replaced one's blocks when it is unlinked, cost more
// than the rest of a save on ext4: a new file's first flush commits its
// blocks' allocation to the journal, and an unlink frees (and, with the
// discard option, trims) every block. So where the swap is an exchange
// (Linux), the replaced file is kept once the save is over, as the spare
// of its state file in RuntimeDir, and the next save of that file writes
// its version over the spare's blocks and renames it beside the file as
// its temporary file. A flush of rewritten blocks is a data write alone.
//
// Nothing else changes: the temporary file has its usual name while the
// swap needs it (Recover finds it there after a crash), and a spare is a
// version ralph already took in, so losing it loses nothing. A spare is
// rewritten only when nothing else has it open (a write lease, which the
// kernel grants only then, is asked for and given back) and it has no
// other link: a process that still reads the version it replaced, or a
// hard link a person made to it, keeps its bytes. Otherwise the save
// writes a new temporary file, as elsewhere.

// sparePath is where the saves of s's file keep their spare, "" where
// they keep none: without the exchange, or for a file outside the project
// root's folder (a link's target), which may be on another file system.
// A root reached through a link is its target: s.path is resolved too.
func (s *save) sparePath() string {
	if !keepsSpares || !useExchange || filepath.Dir(s.path) != s.p.realRoot() {
		return ""
	}
	return filepath.Join(s.p.Root, RuntimeDir, "spare-"+filepath.Base(s.path))
}

// writeTemp writes data to a temporary file beside the file, durably,
// over the spare's blocks when it can (the first swap of a save only: a
// later one may still read the spare as a file it replaced). The spare
// stays open, under its lease, as s.fresh: the swap vouches for it
// (vouchLeased) once it is in place.
func (s *save) writeTemp(data []byte) (tmp string, fi fs.FileInfo, err error) {
	if spare := s.sparePath(); spare != "" && len(s.held) == 0 {
		if f, tmp, fi, err := reuseSpareLeased(spare, s.path, data, s.mode); err == nil {
			s.fresh = f
			return tmp, fi, nil
		}
	}
	return writeTemp(s.path, data, s.mode)
}

// reuseSpare writes data over the spare at spare and renames it to a new
// temporary name beside path. On any failure the spare is removed (a
// file that cannot be reused is not kept) and the error returned; the
// caller then writes a new temporary file.
func reuseSpare(spare, path string, data []byte, perm fs.FileMode) (tmp string, fi fs.FileInfo, err error) {
	f, tmp, fi, err := reuseSpareLeased(spare, path, data, perm)
	if err != nil {
		return "", nil, err
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return "", nil, err
	}
	return tmp, fi, nil
}

// reuseSpareLeased is reuseSpare that hands the spare back open, still
// under the write lease openSpare took; the caller closes it.
func reuseSpareLeased(spare, path string, data []byte, perm fs.FileMode) (f *os.File, tmp string, fi fs.FileInfo, err error) {
	f, err = openSpare(spare)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			_ = os.Remove(spare)
		}
		return nil, "", nil, err
	}
	fi, err = fillSpare(f, data, perm)
	if err == nil {
		tmp, err = renameBeside(spare, path)
	}
	if err != nil {
		_ = f.Close()
		_ = os.Remove(spare)
		return nil, "", nil, err
	}
	return f, tmp, fi, nil
}

// fillSpare makes the spare f hold data with mode perm, durably. It
// returns the file's info.
func fillSpare(f *os.File, data []byte, perm fs.FileMode) (fi fs.FileInfo, err error) {
	if err = writeChanged(f, data); err != nil {
		return nil, err
	}
	if err = f.Truncate(int64(len(data))); err != nil {
		return nil, err
	}
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if fi.Mode().Perm() == perm.Perm() {
		// Only the bytes and the length changed: a data flush.
		return fi, syncData(f)
	}
	if err = f.Chmod(perm.Perm()); err != nil {
		return nil, err
	}
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	return fi, f.Sync()
}

// writeChanged makes the file f hold data from its start (its length is
// left as it is), writing only the pages where what f holds differs. A
// spare holds the version before last, which at 10,000 tasks differs from
// the new one in a few task lines and the session section: the flush then
// writes those pages, not all 875 KB. What f holds is known without a read
// when a stat vouches for it (vouched.go): the last save compared the
// spare as the file it replaced, once it was out of the project's folder.
func writeChanged(f *os.File, data []byte) error {
	if fi, err := f.Stat(); err == nil {
		if v, known := versionOf(f, fi); known {
			if have, ok := v.vouched(); ok {
				return writeChangedPages(f, have, data, 0)
			}
		}
	}
	bp := compareBufs.Get().(*[]byte)
	defer compareBufs.Put(bp)
	buf := *bp
	for off := 0; off < len(data); off += len(buf) {
		want := data[off:min(off+len(buf), len(data))]
		n, err := f.ReadAt(buf[:len(want)], int64(off))
		if err != nil && err != io.EOF {
			return err
		}
		if err := writeChangedPages(f, buf[:n], want, off); err != nil {
			return err
		}
	}
	return nil
}

// sparePage is the unit writeChanged writes: a page of the page cache.
const sparePage = 4 << 10

// writeChangedPages writes, at offset off of f, the runs of pages of want
// that differ from have, what f holds there (shorter where f ends).
func writeChangedPages(f *os.File, have, want []byte, off int) error {
	from := -1 // start of the run of changed pages being gathered
	for at := 0; at < len(want); at += sparePage {
		end := min(at+sparePage, len(want))
		changed := end > len(have) || !bytes.Equal(have[at:end], want[at:end])
		switch {
		case changed && from < 0:
			from = at
		case !changed && from >= 0:
			if _, err := f.WriteAt(want[from:at], int64(off+from)); err != nil {
				return err
			}
			from = -1
		}
	}
	if from < 0 {
		return nil
	}
	_, err := f.WriteAt(want[from:], int64(off+from))
	return err
}

// renameBeside renames the file at from to a new temporary name beside
// path (tempPrefix), never over a file that is there.
func renameBeside(from, path string) (string, error) {
	dir, base := filepath.Split(path)
	for range 100 {
		tmp := filepath.Join(dir, fmt.Sprintf("%s%d", tempPrefix(base), rand.Uint32()))
		err := renameNoReplace(from, tmp)
		if !errors.Is(err, fs.ErrExist) {
			return tmp, err
		}
	}
	return "", fmt.Errorf("no free temporary name beside %s", path)
}

// keepSpare keeps the replaced file h, whose bytes the save took in, as
// the spare of the file instead of unlinking it. It reports whether it
// did; it keeps one a save.
func (s *save) keepSpare(h *replaced) bool {
	spare := s.sparePath()
	if spare == "" || s.spared {
		return false
	}
	// The rename stamps it anew: a lease carries what it holds across.
	leased := h.f != nil && len(h.data) >= leaseWorth && leaseVouched(h.f, h.data)
	if err := os.Rename(h.tmp, spare); err != nil {
		if leased {
			dropLease(h.f)
		}
		return false
	}
	if leased {
		vouchLeased(h.f, h.data)
	}
	s.spared = true
	return true
}

// errSpareInUse is openSpare's refusal of a spare it must not rewrite.
var errSpareInUse = errors.New("the spare is open elsewhere or has other links")

// ReplaceFile writes data to path so that a crash of ralph at any instant
// leaves either the old file or the new one, without WriteFileAtomic's
// flushes: a crash of the machine may leave neither. The new version is
// written over a spare beside path ("spare-" and its name), which the
// exchange (Linux) then leaves holding the old one, so that a file
// replaced in a loop creates and frees nothing (see above); elsewhere the
// spare is renamed over path. It is for runtime files in RuntimeDir that
// one process writes and whose loss loses nothing, such as the record of
// the running agent's pid, which only a ralph that died while the machine
// ran on needs.
func ReplaceFile(path string, data []byte, perm fs.FileMode) error {
	dir, base := filepath.Split(path)
	spare := filepath.Join(dir, "spare-"+base)
	f, err := os.OpenFile(spare, os.O_RDWR|os.O_CREATE, perm)
	if err != nil {
		return err
	}
	if err := writeOver(f, data); err != nil {
		return err
	}
	err = exchange(spare, path)
	if errors.Is(err, errNoExchange) || errors.Is(err, fs.ErrNotExist) {
		// No exchange here, or no file yet to exchange with.
		err = os.Rename(spare, path)
	}
	return err
}

// writeOver makes f hold data, written over its own bytes from the start
// and cut to data's length (no truncation to nothing first), and closes
// it.
func writeOver(f *os.File, data []byte) error {
	_, err := f.WriteAt(data, 0)
	if err == nil {
		err = f.Truncate(int64(len(data)))
	}
	return errors.Join(err, f.Close())
}
