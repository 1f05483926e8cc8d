package mdstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// The progress index: where the log's last entries start, kept in
// .ralph/progress.index and in memory (indexMemo) so that a read of the
// latest entries does not scan the log.

// indexTail is how many entry starts the index keeps: enough for the
// recent entries the status and an agent's context show (20, every
// iteration of a coordinator: a read of more than the index keeps scans
// the whole log, which grows with the project).
const indexTail = 64

// entryStart is where an entry's heading is.
type entryStart struct {
	Off  int64 `json:"off"`
	Line int   `json:"line"`
}

// logIndex is what a full scan of the log found, kept in .ralph/ so that
// the next read need not scan again. It is a memo of the log's bytes, not
// state: it is used only while the log's size, times and inode are exactly
// those it was made from (a person's edit always changes the ctime), and
// deleting it loses nothing.
type logIndex struct {
	V       int          `json:"v"`
	Size    int64        `json:"size"`
	Mtime   int64        `json:"mtime_ns"`
	Ctime   int64        `json:"ctime_ns"`
	Ino     uint64       `json:"ino"`
	Dev     uint64       `json:"dev"`
	Entries int          `json:"entries"`
	Tail    []entryStart `json:"tail"`
	// The scanner's state at the end of the log, to extend the index
	// when ralph appends.
	Lines     int  `json:"lines"`
	Fence     byte `json:"fence"`
	FenceLen  int  `json:"fence_len"`
	InComment bool `json:"in_comment"`
}

func (x *logIndex) matches(fi fs.FileInfo) bool {
	id, ok := statID(fi)
	return ok && x.V == 1 && x.Size == fi.Size() && x.Mtime == fi.ModTime().UnixNano() &&
		x.Ctime == id.ctime && x.Ino == id.ino && x.Dev == id.dev
}

func (x *logIndex) stamp(fi fs.FileInfo) bool {
	id, ok := statID(fi)
	x.V, x.Size, x.Mtime, x.Ctime, x.Ino, x.Dev = 1, fi.Size(), fi.ModTime().UnixNano(), id.ctime, id.ino, id.dev
	return ok
}

func (x *logIndex) scanner() entryScanner {
	return entryScanner{fence: x.Fence, fenceLen: x.FenceLen, inComment: x.InComment, line: x.Lines}
}

func (x *logIndex) setScanner(sc entryScanner) {
	x.Fence, x.FenceLen, x.InComment, x.Lines = sc.fence, sc.fenceLen, sc.inComment, sc.line
}

func (x *logIndex) add(st entryStart) {
	x.Entries++
	x.Tail = append(x.Tail, st)
	if len(x.Tail) > indexTail {
		x.Tail = x.Tail[len(x.Tail)-indexTail:]
	}
}

// clone is a copy of x that shares nothing with it.
func (x *logIndex) clone() *logIndex {
	c := *x
	c.Tail = slices.Clone(x.Tail)
	return &c
}

// indexMemo is the progress index a Project last read or wrote, so that a
// coordinator, which reads the log for every prompt and extends the index
// at every append, does not read and decode .ralph/progress.index each
// time. It answers only for the log it was made from (matches), like the
// file; a nil memo always reads the file.
type indexMemo struct {
	mu sync.Mutex
	x  *logIndex
}

// load returns the index for the log whose info is fi, a copy the caller
// may change, or nil when neither the memo nor the file has one.
func (m *indexMemo) load(root string, fi fs.FileInfo) *logIndex {
	if m == nil {
		return loadIndex(root)
	}
	m.mu.Lock()
	x := m.x
	m.mu.Unlock()
	if x != nil && x.matches(fi) {
		return x.clone()
	}
	x = loadIndex(root)
	if x != nil && x.matches(fi) {
		m.put(x)
	}
	return x
}

// save writes x to the file and keeps a copy.
func (m *indexMemo) save(root string, x *logIndex) {
	if m != nil {
		m.put(x)
	}
	saveIndex(root, x)
}

func (m *indexMemo) put(x *logIndex) {
	c := x.clone()
	m.mu.Lock()
	m.x = c
	m.mu.Unlock()
}

func indexPath(root string) string {
	return filepath.Join(root, RuntimeDir, "progress.index")
}

func loadIndex(root string) *logIndex {
	data, err := readWhole(indexPath(root))
	if err != nil {
		return nil
	}
	body, ok := checkedRecord(data)
	if !ok {
		return nil
	}
	var x logIndex
	if json.Unmarshal(body, &x) != nil {
		return nil
	}
	return &x
}

// saveIndex writes the index without fsync: after a crash it is stale,
// missing or cut short, and then it is not used. It is rewritten at every
// append, in place where it can be (over its own blocks: a truncation and
// a new block cost more than the rest of an append's index work), under a
// header with its length and checksum: a reader that meets it half
// written, or written over a longer one, finds the checksum wrong and
// scans the log instead.
func saveIndex(root string, x *logIndex) {
	body, err := json.Marshal(x)
	if err != nil {
		return
	}
	data := append([]byte(recordHeader(body)), body...)
	dir := filepath.Join(root, RuntimeDir)
	if os.MkdirAll(dir, 0o755) != nil {
		return
	}
	switch err := overwriteInPlace(indexPath(root), data, 0o600); {
	case err == nil:
		return
	case !errors.Is(err, errNoInPlace):
		_ = os.Remove(indexPath(root)) // a link, say: the next save makes a file
		return
	}
	f, err := os.CreateTemp(dir, ".progress.index-*")
	if err != nil {
		return
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), indexPath(root)) != nil {
		os.Remove(f.Name())
	}
}

// recordHeader is the first line of a memo written in place: the length
// and checksum of what follows it.
func recordHeader(body []byte) string {
	return fmt.Sprintf("%s%d %08x\n", journalV2, len(body), crc32.ChecksumIEEE(body))
}

// checkedRecord returns what follows a recordHeader in data, ok only when
// it is whole: its length and checksum are the header's.
func checkedRecord(data []byte) (body []byte, ok bool) {
	head, body, found := bytes.Cut(data, []byte("\n"))
	rest, v2 := bytes.CutPrefix(head, []byte(journalV2))
	if !found || !v2 {
		return nil, false
	}
	var n int
	var sum uint32
	if k, err := fmt.Sscanf(string(rest), "%d %x", &n, &sum); err != nil || k != 2 {
		return nil, false
	}
	return body, n == len(body) && crc32.ChecksumIEEE(body) == sum
}
