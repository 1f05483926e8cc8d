package mdstate

import (
	"bytes"
	"io/fs"
	"os"
	"sync"
)

// An iteration of the coordinator asks about fifteen times whether
// RALPH_TASKS.md still holds what ralph last wrote or read: before each
// edit, in each save's look, for a person's change, in the preflight, for
// the prompt. At 10,000 tasks each answer read and compared 875 KB.
//
// Where the file system stamps every change made after a stat with a new
// ctime (fineGrained: multigrain timestamps), a stat answers instead. A
// compare that found the file holding some bytes, made after a stat of
// it, vouches for that stat's version: the same inode, size, mtime and
// ctime later mean no write since, so the same bytes. A write before the
// stat was in what the compare read; a write after it, even in the same
// clock tick and even with its mtime put back, gave a new ctime, which
// nothing but the kernel sets. So the first question after each save
// costs a compare and the others a stat.
//
// One writer the ctime misses: a program that writes through a shared
// memory map stamps the file when it first dirties a page, not at each
// store. Editors and tools write with write(2); a file changed through a
// map that ralph also saves is not a case ralph guards.

// A save's own renames stamp the files they move with a new ctime: the
// version a compare vouched for before a swap is not the one after it. So
// each save of a 10,000-task file compared 875 KB three times more: the
// file it replaced (after the exchange, and again once it was renamed to
// be the spare) and its own new version (the next question). A write
// lease bridges the renames: taken while the file's version is known
// (vouched for, or its bytes just written by ralph) and found unbroken
// after them, it shows that nobody opened the file in between, so nobody
// wrote it, and the version after the renames holds the same bytes.
// Where no lease is granted (the file is open elsewhere; another user's;
// not Linux) the compare is made, as before.

// leaseWorth is the size from which a save carries what a file it
// replaced holds across its renames with a lease (leaseLooked,
// keepSpare), rather than compare it after: below it a compare is about
// as cheap as the lease's system calls. The spare a save writes over is
// always leased: openSpare takes that lease anyway.
const leaseWorth = 64 << 10

// leaseVouched takes a write lease on f's file when the version f shows
// then is vouched for holding data, and reports whether it holds one.
// The stat comes after the grant: from then on the version is the one
// that holds data until the lease is given back.
func leaseVouched(f *os.File, data []byte) bool {
	if !takeLease(f) {
		return false
	}
	if fi, err := f.Stat(); err == nil {
		if v, known := versionOf(f, fi); known && v.holds(data) {
			return true
		}
	}
	dropLease(f)
	return false
}

// vouchLeased vouches for f's file holding data, in its version now,
// when the write lease taken while it held data is unbroken, and gives
// the lease back either way.
func vouchLeased(f *os.File, data []byte) {
	defer dropLease(f)
	if !leaseWhole(f) {
		return
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() != int64(len(data)) {
		return
	}
	if v, known := versionOf(f, fi); known {
		v.vouch(data)
	}
}

// fileVersion is one version of a file, as a stat sees it.
type fileVersion struct {
	id    fileID
	size  int64
	mtime int64
}

// versionOf returns the version of the file f that fi (its stat) shows,
// and whether a later stat showing the same version means that nothing
// wrote the file in between (fineGrained).
func versionOf(f *os.File, fi fs.FileInfo) (fileVersion, bool) {
	id, ok := statID(fi)
	if !ok || !fineGrained(f) {
		return fileVersion{}, false
	}
	return fileVersion{id: id, size: fi.Size(), mtime: fi.ModTime().UnixNano()}, true
}

// vouchedVersions is how many file versions are vouched for at once: the
// coordinator's state files and the versions a save replaces.
const vouchedVersions = 8

// vouchedFiles are the file versions a compare found holding their bytes,
// newest last.
var vouchedFiles struct {
	sync.Mutex
	list []vouchedFile
}

// vouchedFile is a version of a file and the bytes it holds.
type vouchedFile struct {
	v    fileVersion
	data []byte
}

// vouch records that the version v holds data, which nobody changes (a
// state file's bytes are never written in place), in place of what was
// vouched for its inode before.
func (v fileVersion) vouch(data []byte) {
	vouchedFiles.Lock()
	defer vouchedFiles.Unlock()
	l := vouchedFiles.list
	for i, x := range l {
		if x.v.id.ino == v.id.ino && x.v.id.dev == v.id.dev {
			l = append(l[:i], l[i+1:]...)
			break
		}
	}
	if len(l) == vouchedVersions {
		l = append(l[:0], l[1:]...)
	}
	vouchedFiles.list = append(l, vouchedFile{v: v, data: data})
}

// holds reports whether the version v was vouched for holding want.
func (v fileVersion) holds(want []byte) bool {
	data, ok := v.vouched()
	return ok && sameBytes(data, want)
}

// vouched returns the bytes the version v was vouched for holding.
func (v fileVersion) vouched() ([]byte, bool) {
	vouchedFiles.Lock()
	defer vouchedFiles.Unlock()
	for _, x := range vouchedFiles.list {
		if x.v == v {
			return x.data, true
		}
	}
	return nil, false
}

// sameBytes is bytes.Equal, at once when a and b are the same slice.
func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	return bytes.Equal(a, b)
}
