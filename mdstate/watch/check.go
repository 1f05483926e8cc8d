package watch

import (
	"time"

	"github.com/ralph-dev/ralph/mdstate"
)

// progressTries bounds the recounts of the progress log while ralph keeps
// appending to it during the count.
const progressTries = 3

// check reads a file whose events have gone quiet and queues what changed.
// It returns true to wait: the file is missing or empty within the save
// grace.
func (w *Watcher) check(name string, pd *pending, now time.Time) (wait bool) {
	if name == mdstate.ProgressFile {
		return w.checkProgress(pd, now)
	}
	return w.checkText(name, pd, now)
}

// settled waits until no write of ralph's is in flight (it takes the state
// lock, under which ralph's writes run their hooks) and reports whether
// the file on disk is the one ralph's last write left there.
func (w *Watcher) settled(name string) (ralphs bool) {
	changed, ok, err := w.p.ChangedSinceOwnWrite(name)
	return err == nil && ok && !changed
}

// failure queues a file that could not be read.
func (w *Watcher) failure(name string, pd *pending, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.enqueue(Change{File: name, Diff: mdstate.FileDiff{File: name}, Err: err, Seen: pd.seen})
}

// checkText checks a file read whole: a checklist or AGENT.md.
func (w *Watcher) checkText(name string, pd *pending, now time.Time) bool {
	snap := w.snapshot(name)
	data, exists, err := readFile(w.p.Path(name))
	switch {
	case err != nil:
		w.failure(name, pd, err)
		return false
	case (!exists || len(data) == 0) && snap.hadContent() && w.gone(pd, now):
		return true
	case snap.same(data, exists):
		return false
	}
	// A version that differs is judged once no write of ralph's is in
	// flight: it may be ralph's, on disk a moment before its hook ran.
	ralphs := w.settled(name)
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.files[name]
	if exists && b.ownSince(data, snap.version) {
		return false
	}
	base := snap
	if b.version != snap.version {
		if ralphs {
			// ralph wrote after this read, and its version is on disk:
			// its write took this version in, and its hook reported it.
			return false
		}
		base = *b // this version came after ralph's write
	}
	ch, nb := textChange(name, base, data, exists)
	ch.Seen = pd.seen
	b.replace(nb)
	w.enqueue(ch)
	return false
}

// textChange is the change from base to a file's new bytes, and the new
// baseline.
func textChange(name string, base baseline, data []byte, exists bool) (Change, baseline) {
	if !exists {
		return Change{File: name, Diff: mdstate.FileDiff{File: name}, Missing: true}, baseline{}
	}
	nb := baseline{exists: true, data: data, good: base.good, goodOK: base.goodOK}
	d, err := mdstate.DiffFile(name, base.diffBase(), data)
	if err != nil {
		return Change{File: name, Diff: mdstate.FileDiff{File: name}, Err: err}, nb
	}
	nb.good, nb.goodOK = data, true
	return Change{File: name, Diff: d}, nb
}

// checkProgress checks the progress log by its identity and entry count.
// Only a count other than the baseline's, or a file other than the one it
// stat'ed, is a change.
func (w *Watcher) checkProgress(pd *pending, now time.Time) bool {
	const name = mdstate.ProgressFile
	for try := 1; ; try++ {
		at := w.snapshot(name)
		fi, exists, err := statFile(w.p.Path(name))
		switch {
		case err != nil:
			w.failure(name, pd, err)
			return false
		case (!exists || fi.Size() == 0) && at.hadContent() && w.gone(pd, now):
			return true
		case exists == at.exists && (!exists || sameStat(at, fi)):
			return false
		}
		nb, err := w.readProgress()
		if err != nil {
			w.failure(name, pd, err)
			return false
		}
		// An append of ralph's may have been counted before its hook
		// ran: once none is in flight, count again if one was.
		w.settled(name)
		if w.commitProgress(at, nb, pd.seen, try == progressTries) {
			return false
		}
	}
}

// commitProgress makes nb, read after at, the progress log's baseline and
// queues the change, unless ralph appended since at (and not last, the
// final try): it returns false then, to count again.
func (w *Watcher) commitProgress(at, nb baseline, seen time.Time, last bool) bool {
	const name = mdstate.ProgressFile
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.files[name]
	if b.version != at.version {
		if !last {
			return false
		}
		at = *b
	}
	b.replace(nb)
	switch {
	case !nb.exists:
		w.enqueue(Change{File: name, Diff: mdstate.FileDiff{File: name}, Missing: true, Seen: seen})
	case at.exists && at.fi == nil && nb.entries == at.entries:
		// ralph's appends, as counted
	default:
		d := mdstate.FileDiff{File: name, Created: !at.exists, Entries: nb.entries - at.entries}
		w.enqueue(Change{File: name, Diff: d, Seen: seen})
	}
	return true
}
