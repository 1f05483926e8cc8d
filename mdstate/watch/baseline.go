package watch

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"slices"

	"github.com/ralph-dev/ralph/mdstate"
)

// ownKept is how many of ralph's latest writes of a file are remembered by
// hash: a read may catch one of them after a later one's hook has run.
const ownKept = 8

// ownVersion is one of ralph's writes of a file: its number and a hash.
type ownVersion struct {
	version uint64
	sum     [sha256.Size]byte
}

// baseline is the last version of one file the Watcher knows. The write
// hook sets it from ralph's goroutines, so it lives under Watcher.mu, and
// the goroutine works on copies (snapshot).
type baseline struct {
	exists bool
	data   []byte // the whole file; nil for the progress log
	// good is the last version DiffFile could read (goodOK), which the
	// next change is diffed against.
	good   []byte
	goodOK bool
	// The progress log: the file as last stat'ed (nil after an append of
	// ralph's), and its entry count.
	fi      fs.FileInfo
	entries int
	// version counts ralph's writes; own holds the last ownKept of them.
	version uint64
	own     []ownVersion
}

// snapshot copies name's baseline.
func (w *Watcher) snapshot(name string) baseline {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := *w.files[name]
	b.own = slices.Clone(b.own)
	return b
}

// ownSince reports whether data is one of ralph's writes after the
// version since. An earlier write of ralph's found again is not ralph's
// doing: someone put those bytes back (an editor's stale buffer, a git
// checkout).
func (b *baseline) ownSince(data []byte, since uint64) bool {
	sum := sha256.Sum256(data)
	return slices.ContainsFunc(b.own, func(o ownVersion) bool { return o.version > since && o.sum == sum })
}

// same reports whether a read found the baseline's version.
func (b *baseline) same(data []byte, exists bool) bool {
	return exists == b.exists && bytes.Equal(data, b.data)
}

// replace makes nb the baseline, keeping the record of ralph's writes.
func (b *baseline) replace(nb baseline) {
	nb.version, nb.own = b.version, b.own
	*b = nb
}

// hadContent reports whether the baseline is a file with something in it.
func (b *baseline) hadContent() bool {
	if b.fi != nil {
		return b.fi.Size() > 0
	}
	return b.exists && (len(b.data) > 0 || b.entries > 0)
}

// diffBase is what a new version is diffed against: nil when there was
// no file (everything is then new), else the last readable version, else
// the unreadable one, which DiffFile takes as empty.
func (b *baseline) diffBase() []byte {
	switch {
	case !b.exists:
		return nil
	case b.goodOK:
		return nonNil(b.good)
	}
	return nonNil(b.data)
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// enqueue adds a change to report; the caller holds w.mu.
func (w *Watcher) enqueue(ch Change) {
	w.queue = append(w.queue, ch)
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// ownWrite is the Project's write hook, called in ralph's writing
// goroutine under the state lock, with the version its write started from
// (base: nil for a new file and for the progress log) and the bytes it
// wrote (data: nil for an append to the progress log, which adds one
// entry). A base other than the baseline is a person's save that ralph's
// write took in: it is reported as theirs. Then ralph's bytes are the
// baseline, and remembered as its own.
func (w *Watcher) ownWrite(name string, base, data []byte) {
	if !slices.Contains(mdstate.Files, name) {
		return // .gitignore, say
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.files[name]
	if name == mdstate.ProgressFile {
		b.ownAppend(data)
		return
	}
	if base != nil && !b.same(base, true) {
		ch, _ := textChange(name, *b, base, true)
		w.enqueue(ch)
	}
	data = bytes.Clone(data)
	b.replace(baseline{exists: true, data: data, good: data, goodOK: true})
	b.version++
	b.own = append(b.own, ownVersion{b.version, sha256.Sum256(data)})
	if len(b.own) > ownKept {
		b.own = b.own[len(b.own)-ownKept:]
	}
}

// ownAppend is the write hook's work for the progress log. The file as ralph left it
// is not known (a stat here could already see a person's append), so the
// baseline forgets it: the next read counts the entries, and only a count
// other than this one is a change.
func (b *baseline) ownAppend(data []byte) {
	b.version++
	b.exists = true
	b.fi = nil
	if data == nil {
		b.entries++
	} else {
		b.entries = mdstate.CountEntries(data)
	}
}

// readBaseline reads name's first baseline, unless ralph has written it
// since New registered the hook: ralph's write is then the baseline.
func (w *Watcher) readBaseline(name string) {
	at := w.snapshot(name).version
	var nb baseline
	if name == mdstate.ProgressFile {
		b, err := w.readProgress()
		if err != nil {
			return
		}
		nb = b
	} else {
		data, exists, err := readFile(w.p.Path(name))
		if err != nil {
			return // unreadable: every change to it will be one
		}
		nb = baseline{exists: exists, data: data}
		if _, err := mdstate.DiffFile(name, nil, data); err == nil && exists {
			nb.good, nb.goodOK = data, true
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if b := w.files[name]; b.version == at {
		b.replace(nb)
	}
}

// readFile reads a file; a missing one is exists=false, not an error.
func readFile(path string) (data []byte, exists bool, err error) {
	data, err = os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// statFile stats a file; a missing one is exists=false, not an error.
func statFile(path string) (fi fs.FileInfo, exists bool, err error) {
	fi, err = os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return fi, true, nil
}

// readProgress reads the progress log's baseline: its identity and its
// entry count, without reading it whole when its index is current.
func (w *Watcher) readProgress() (baseline, error) {
	fi, exists, err := statFile(w.p.Path(mdstate.ProgressFile))
	if err != nil || !exists {
		return baseline{}, err
	}
	lg, err := w.p.ReadProgress(0)
	if err != nil {
		return baseline{}, err
	}
	return baseline{exists: true, fi: fi, entries: lg.Entries}, nil
}

// sameStat reports whether the progress log is still the file a baseline
// stat'ed: the same file, size and modification time.
func sameStat(b baseline, fi fs.FileInfo) bool {
	return b.fi != nil && fi != nil && os.SameFile(b.fi, fi) && b.fi.Size() == fi.Size() && b.fi.ModTime().Equal(fi.ModTime())
}
