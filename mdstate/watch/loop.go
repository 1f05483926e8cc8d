package watch

import (
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/ralph-dev/ralph/mdstate"
)

// pending is a file with events not yet read: when the first came, when
// to read it, and since when it has been missing or empty.
type pending struct {
	seen      time.Time
	due       time.Time
	goneSince time.Time // zero unless the last read found it gone
}

// run is the goroutine: it takes the folder's events, reads each file
// whose events have gone quiet, and reports what changed, with what the
// write hook queued.
func (w *Watcher) run() {
	defer close(w.exited)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			w.noteEvent(ev)
		case _, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			// An overflow of the kernel's queue (fsnotify.ErrEventOverflow),
			// or worse: any file may have changed unseen.
			for _, name := range mdstate.Files {
				w.touch(name, time.Now())
			}
		case <-w.wake:
		case <-timer.C:
		}
		w.deliver() // first, while the hook's changes can take Seen from pending
		w.checkDue(time.Now())
		w.deliver()
		if next, ok := w.nextDue(); ok {
			timer.Reset(time.Until(next))
		} else {
			timer.Stop()
		}
	}
}

// deliver calls onChange for each queued change, in order, until Close.
// A change the write hook queued has no Seen yet: it takes the time of the
// first event still pending for its file, else now.
func (w *Watcher) deliver() {
	for !w.closing() {
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.mu.Unlock()
			return
		}
		ch := w.queue[0]
		w.queue = w.queue[1:]
		w.mu.Unlock()
		if ch.Seen.IsZero() {
			ch.Seen = time.Now()
			if pd := w.pending[ch.File]; pd != nil {
				ch.Seen = pd.seen
			}
		}
		w.onChange(ch)
	}
}

// noteEvent counts an event for the state file its name belongs to.
func (w *Watcher) noteEvent(ev fsnotify.Event) {
	if name, ok := stateFileOf(ev.Name); ok {
		w.touch(name, time.Now())
	}
}

// stateFileOf returns the state file an event's name is about: the file
// itself, or a name holding it, as editors' backups, swap and temporary
// files do ("RALPH_TASKS.md~", ".RALPH_TASKS.md.swp", "#AGENT.md#").
func stateFileOf(path string) (string, bool) {
	base := filepath.Base(path)
	if slices.Contains(mdstate.Files, base) {
		return base, true
	}
	for _, name := range mdstate.Files {
		if strings.Contains(base, name) {
			return name, true
		}
	}
	return "", false
}

// touch notes an event for name at now: it is read once quiet for the
// debounce time.
func (w *Watcher) touch(name string, now time.Time) {
	pd := w.pending[name]
	if pd == nil {
		pd = &pending{seen: now}
		w.pending[name] = pd
	}
	pd.due = now.Add(w.debounce)
}

// nextDue returns the earliest time a pending file is to be read.
func (w *Watcher) nextDue() (time.Time, bool) {
	var next time.Time
	for _, pd := range w.pending {
		if next.IsZero() || pd.due.Before(next) {
			next = pd.due
		}
	}
	return next, !next.IsZero()
}

// checkDue reads the files that are due, in the order they fell due.
func (w *Watcher) checkDue(now time.Time) {
	var due []string
	for name, pd := range w.pending {
		if !pd.due.After(now) {
			due = append(due, name)
		}
	}
	slices.SortFunc(due, func(a, b string) int {
		if c := w.pending[a].due.Compare(w.pending[b].due); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for _, name := range due {
		if w.closing() {
			return
		}
		if !w.check(name, w.pending[name], now) {
			delete(w.pending, name)
		}
	}
}

// gone handles a file found missing or empty that had content: it says to
// wait (and when to look again) until the save grace is over.
func (w *Watcher) gone(pd *pending, now time.Time) (wait bool) {
	if pd.goneSince.IsZero() {
		pd.goneSince = now
	}
	if end := pd.goneSince.Add(w.grace); now.Before(end) {
		pd.due = end
		return true
	}
	return false
}
