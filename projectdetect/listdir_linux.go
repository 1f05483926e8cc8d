package projectdetect

import (
	"bytes"
	"encoding/binary"
	"os"
	"syscall"
)

// direntBufSize is the buffer the system fills with records: 32 KB holds
// about a thousand entries, so most directories take one getdents call.
const direntBufSize = 32 << 10

// A linux_dirent64 record: d_ino (8 bytes), d_off (8), d_reclen (2),
// d_type (1), then the name, NUL-terminated and padded.
const (
	direntReclen = 16
	direntType   = 18
	direntName   = 19
)

// rawLister is listRaw's state, reused from one directory to the next.
type rawLister struct {
	buf     []byte // the system's records
	spans   []span // where each entry's name lies in lister.names
	unknown []int  // entries whose type the records did not give
}

// span is where one name lies in lister.names.
type span struct{ start, end int }

// listRaw lists dir with getdents64 into the lister's buffers, unsorted.
// The names become one string, of which each entry's name is a part.
func (l *lister) listRaw(dir string) ([]dirEntry, error) {
	fd, err := ignoringEINTR(func() (int, error) {
		return syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer syscall.Close(fd)
	r := &l.raw
	if r.buf == nil {
		r.buf = make([]byte, direntBufSize)
	}
	l.ents, l.names, r.spans, r.unknown = l.ents[:0], l.names[:0], r.spans[:0], r.unknown[:0]
	for {
		n, err := ignoringEINTR(func() (int, error) { return syscall.Getdents(fd, r.buf) })
		if err != nil {
			return nil, &os.PathError{Op: "readdirent", Path: dir, Err: err}
		}
		if n <= 0 {
			break
		}
		l.parse(r.buf[:n])
	}
	l.finish(dir)
	return l.ents, nil
}

// finish gives the parsed entries their names, and a type to those whose
// records had none.
func (l *lister) finish(dir string) {
	r := &l.raw
	all := string(l.names)
	for i, s := range r.spans {
		l.ents[i].name = all[s.start:s.end]
	}
	for _, i := range r.unknown {
		// The file system gave no type (DT_UNKNOWN): ask, as os.ReadDir
		// does.
		fi, err := os.Lstat(dir + "/" + l.ents[i].name)
		l.ents[i].dir = err == nil && fi.IsDir()
	}
}

// parse appends the entries in records to l.ents, their names to l.names
// and where each name went to l.raw.spans.
func (l *lister) parse(records []byte) {
	r := &l.raw
	for len(records) >= direntName {
		reclen := int(binary.NativeEndian.Uint16(records[direntReclen:]))
		if reclen < direntName || reclen > len(records) {
			return // not a record: the rest cannot be read
		}
		rec := records[:reclen]
		records = records[reclen:]
		if binary.NativeEndian.Uint64(rec) == 0 {
			continue // no file behind it (as syscall.ParseDirent)
		}
		name := rec[direntName:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if string(name) == "." || string(name) == ".." {
			continue
		}
		if rec[direntType] == syscall.DT_UNKNOWN {
			r.unknown = append(r.unknown, len(l.ents))
		}
		r.spans = append(r.spans, span{len(l.names), len(l.names) + len(name)})
		l.names = append(l.names, name...)
		l.ents = append(l.ents, dirEntry{dir: rec[direntType] == syscall.DT_DIR})
	}
}

// ignoringEINTR retries f while a signal interrupts it, as package os
// does for its own system calls.
func ignoringEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != syscall.EINTR {
			return n, err
		}
	}
}
