// Package watch tells ralph, within a fraction of a second, that someone
// else changed a state file: a person in an editor, a `ralph task done`
// typed in another terminal, an agent that edited a file it should not
// have. It reports each change in the model's terms (a task added, marked
// done, moved up; a learning edited), as a Change for each save.
//
// # Contract
//
//   - It watches the project folder, not the files. Editors save by
//     writing a new file and renaming it over the old one (or by renaming
//     the old one to a backup first, as vim does), and a watch on the file
//     itself is lost at the first such save (fsnotify/fsnotify#372). Any
//     event whose name is a state file's, or holds one (an editor's
//     "RALPH_TASKS.md~", ".RALPH_TASKS.md.swp", ralph's own temporary
//     files), counts for that file; what the event was does not matter,
//     because the file is read by its own name once the folder is quiet.
//   - It debounces: a file is read once no event for it has come for
//     Options.Debounce (50 ms by default), so one save, however many
//     events it makes, is one read and at most one Change.
//   - It knows each file's last version (its baseline) and reports a
//     change only when the bytes differ from it, with the diff from it
//     (mdstate.DiffFile); the new bytes become the baseline. The progress
//     log, which can be many megabytes, is not held: its baseline is its
//     identity, size and modification time and its entry count, counted
//     by mdstate.Project.ReadProgress (from the log's index after ralph's
//     own appends, else by a scan in fixed-size blocks), and only when the
//     file is no longer the one it stat'ed.
//   - ralph's own writes are never reported. Every write ralph makes
//     through the Project calls a hook (mdstate.Project.OnWriteFrom) with
//     the version the write started from and the bytes written. If the
//     version it started from is not the baseline, a person saved in
//     between and ralph's write took their save in: that is reported as
//     their change (the baseline to the version ralph started from). The
//     bytes ralph wrote then become the baseline, so a person's save that
//     lands just after is diffed against ralph's version. A read that
//     differs from the baseline is judged only once no write of ralph's
//     is in flight (mdstate.Project.ChangedSinceOwnWrite waits for the
//     state lock, under which ralph's writes run their hooks), because
//     ralph's write may be on disk a moment before its hook has run.
//   - A missing or empty file that had content is a moment of an editor's
//     save, not a fact: it is reported (Missing, or the diff to empty) only
//     if it stays so for the Project's save grace (mdstate.Project.SaveGrace,
//     2 s by default), as ralph's own reads wait. A file that comes back
//     within it is diffed as if it had never gone.
//   - onChange is called from one goroutine, one call at a time, in the
//     order the changes were read. It must return; Close waits for it.
//   - Close stops the goroutine and the fsnotify watcher and removes the
//     write hook; nothing of the Watcher outlives it. An idle Watcher
//     costs no CPU: it blocks on the folder's events, with no polling.
//   - Unwatch, ahead of Close, stops watching the folder at once. Closing
//     a watcher that still watches waits out a kernel grace period (5-20
//     ms here) while the kernel frees the watch; after Unwatch the kernel
//     frees it in the background, and a Close some milliseconds later
//     finds nothing to wait for.
//
// A state file that is a symlink is watched by its name in the project
// folder: an edit through the link's target elsewhere is seen at the next
// event for the name.
//
// What a change means for a run (stop the agent of a task a person marked
// done, pick a new task with a higher priority) is the coordinator's
// business; this package only says what changed.
package watch

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/ralph-dev/ralph/mdstate"
)

// Change is one change to one state file that ralph did not make.
type Change struct {
	File string           // a state file's name, e.g. mdstate.TasksFile
	Diff mdstate.FileDiff // what changed since the last version the watcher knew
	// Missing is true when the file is gone (and stayed gone past the
	// save grace); Diff then holds the name only.
	Missing bool
	// Err says why the new version could not be read as its file (for a
	// checklist, not UTF-8 text, say); Diff then holds the name only, and
	// the next change is diffed against the last version that could be.
	Err  error
	Seen time.Time // when the first filesystem event of this change arrived
}

// Summary is the one-line notice a front end prints for the change, e.g.
// `RALPH_TASKS.md: T3 marked done` (mdstate.FileDiff.Summary), or
// "RALPH_TASKS.md: missing".
func (c Change) Summary() string {
	switch {
	case c.Missing:
		return c.File + ": missing"
	case c.Err != nil:
		return c.File + ": cannot be read (" + c.Err.Error() + ")"
	}
	return c.Diff.Summary()
}

// Options tunes a Watcher.
type Options struct {
	Debounce time.Duration // quiet time after the last event before a file is read; default 50ms
}

// DefaultDebounce is Options.Debounce when it is zero: long enough for the
// few events of one editor's save, short enough for a person not to wait.
const DefaultDebounce = 50 * time.Millisecond

// closeWait bounds Close's wait for the goroutine: it may be in onChange,
// or waiting for the state lock that another ralph process holds.
const closeWait = 5 * time.Second

// ErrCloseTimeout is returned by Close when the goroutine did not stop
// within its bound (an onChange that does not return).
var ErrCloseTimeout = errors.New("watch: the watcher did not stop in time; an onChange call may be stuck")

// Watcher watches one project's state files. Create it with New; Close it.
type Watcher struct {
	p        *mdstate.Project
	onChange func(Change)
	debounce time.Duration
	grace    time.Duration // how long a file may be missing or empty in a save
	fsw      *fsnotify.Watcher
	unhook   func()

	// mu guards the baselines, which the write hook sets from ralph's
	// goroutines, and the queue of changes to report, which the hook
	// adds to too; wake tells the goroutine there is something queued.
	mu    sync.Mutex
	files map[string]*baseline
	queue []Change
	wake  chan struct{}

	// Owned by the goroutine.
	pending map[string]*pending

	done      chan struct{} // closed by Close
	exited    chan struct{} // closed when the goroutine returns
	closeOnce sync.Once
	closeErr  error
}

// New starts watching p's project folder and calls onChange for every
// change to a state file that ralph did not make through p. It reads the
// five files' baselines first (of the progress log, only its entry count),
// so a change made before New returns is not reported.
func New(p *mdstate.Project, onChange func(Change), opts Options) (*Watcher, error) {
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", p.Root, err)
	}
	// The folder first, then the hook, then the baselines: a change in
	// between is an event to check, or already in the baseline.
	if err := fsw.Add(p.Root); err != nil {
		fsw.Close()
		return nil, fmt.Errorf("watch %s: %w", p.Root, err)
	}
	w := &Watcher{
		p:        p,
		onChange: onChange,
		debounce: opts.Debounce,
		grace:    mdstate.DefaultSaveGrace,
		fsw:      fsw,
		files:    map[string]*baseline{},
		pending:  map[string]*pending{},
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		exited:   make(chan struct{}),
	}
	if p.SaveGrace > 0 {
		w.grace = p.SaveGrace
	}
	for _, name := range mdstate.Files {
		w.files[name] = &baseline{}
	}
	w.unhook = p.OnWriteFrom(w.ownWrite)
	for _, name := range mdstate.Files {
		w.readBaseline(name)
	}
	go w.run()
	return w, nil
}

// Close stops the Watcher: no onChange call starts after it returns. It
// waits for a call in progress, at most closeWait. It is safe to call
// more than once.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() {
		close(w.done)
		w.unhook()
		err := w.fsw.Close()
		select {
		case <-w.exited:
		case <-time.After(closeWait):
			err = errors.Join(err, ErrCloseTimeout)
		}
		w.closeErr = err
	})
	return w.closeErr
}

// Unwatch stops watching the project folder and returns at once: a change
// made after it is not seen (one read before may still be reported until
// Close). Close is still to be called, and waits less the later it comes.
func (w *Watcher) Unwatch() {
	_ = w.fsw.Remove(w.p.Root)
}

// closing reports whether Close has begun.
func (w *Watcher) closing() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}
