package mdstate

import (
	"bytes"
	"io"
	"os"
	"sync"
	"time"
)

// A save of a 10,000-task file reads it five times: before the edit, at
// the look before the swap, the replaced file after it, and that file
// twice more before and after it is unlinked (save.go). Each time ralph
// knows what it expects to find, and almost always finds it. Reading into
// a new 900 KB buffer each time, only to compare it, cost more than the
// rest of the save; comparing chunk by chunk through one small buffer
// costs the kernel's copy alone, and the bytes ralph already has stand for
// the file's. Where the file system's ctime shows every write, a stat
// stands for most of the compares (vouched.go).

// compareChunk is how much of a file sameRead compares at a time.
const compareChunk = 64 << 10

var compareBufs = sync.Pool{New: func() any {
	b := make([]byte, compareChunk)
	return &b
}}

// readLike reads the whole file f from its start, as readAll does. When
// it holds exactly like, it returns like itself and allocates nothing.
func readLike(f *os.File, like []byte) ([]byte, error) {
	if like == nil {
		return readAll(f)
	}
	same, err := sameContent(f, like)
	if err != nil {
		return nil, err
	}
	if same {
		return like, nil
	}
	return readAll(f)
}

// readFileLike is os.ReadFile with readLike's shortcut. A file that does
// not hold like is read while no process writes it (awaitWritten waits up
// to wait for that); one that does is that version, whole or not, and a
// save takes in what comes after it as a later change.
func readFileLike(path string, like []byte, wait time.Duration) ([]byte, error) {
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close() // and with it the read lease, if held
	if like != nil {
		if same, err := sameContent(f, like); err != nil || same {
			return like, err
		}
	}
	awaitWritten(f, wait)
	return readAll(f)
}

// sameContent reports whether the file f holds exactly want, from offset
// 0 to its end. Where a stat vouches for the file (vouched.go), it reads
// nothing.
func sameContent(f *os.File, want []byte) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if fi.Size() != int64(len(want)) {
		return false, nil
	}
	v, known := versionOf(f, fi)
	if known && v.holds(want) {
		return true, nil
	}
	same, err := compareContent(f, want)
	if same && known {
		v.vouch(want)
	}
	return same, err
}

// compareContent reads the file f and reports whether it holds exactly
// want, which is its size at the last stat.
func compareContent(f *os.File, want []byte) (bool, error) {
	bp := compareBufs.Get().(*[]byte)
	defer compareBufs.Put(bp)
	buf := *bp
	for off := 0; off < len(want); {
		n, err := f.ReadAt(buf[:min(len(buf), len(want)-off)], int64(off))
		if n == 0 || !bytes.Equal(buf[:n], want[off:off+n]) {
			if err != nil && err != io.EOF {
				return false, err
			}
			return false, nil
		}
		off += n
	}
	// Nothing more: a file that grew since the stat is another file.
	n, err := f.ReadAt(buf[:1], int64(len(want)))
	if err != nil && err != io.EOF {
		return false, err
	}
	return n == 0, nil
}

// parsedBytes returns the bytes of this Project's last parse of the
// checklist kind, nil when there is none.
func (p *Project) parsedBytes(kind Kind) []byte { return p.parsedBytesOf(kind.File) }

// parsedBytesOf is parsedBytes of the file name.
func (p *Project) parsedBytesOf(name string) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.parsed[name]; c != nil {
		return c.src.src
	}
	return nil
}

// readsAsSource checks that the state file at path is text ralph reads
// (readSource's checks). When it holds the bytes of this Project's last
// parse of it, which passed them, that costs a compare.
func (p *Project) readsAsSource(path, name string) error {
	like := p.parsedBytesOf(name)
	data, _, err := readCheckedLike(path, name, like, p.saveGrace())
	if err != nil {
		return err
	}
	if len(like) > 0 && len(data) == len(like) && &data[0] == &like[0] {
		return nil
	}
	_, err = newSource(name, data)
	return err
}

// readWhole is os.ReadFile through openFile.
func readWhole(path string) ([]byte, error) {
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f)
}
