// Package registry keeps the list of projects on this machine where ralph
// ran a session, so that `ralph sessions --all` can show them side by
// side: one small JSON file in the user's state folder, projects.json in
// $XDG_STATE_HOME/ralph (by default ~/.local/state/ralph; on Windows
// %LocalAppData%\ralph).
//
// The contract:
//
//   - It only says where to look. Each project's own files are the truth
//     about its sessions (status, task, activity), read when the list is
//     shown; the registry holds a project's folder, its last session's id
//     and when ralph last recorded it. It is not a state file: losing it
//     loses nothing, and the next session in each project adds it again.
//   - Every change is a read-modify-write under an exclusive lock on
//     projects.lock beside it (a file never unlinked, so two processes can
//     never lock two different files of the same name), and the file is
//     replaced atomically (a reader sees the old list or the new one). It
//     is not synced to the disk: a crash of the machine may take back the
//     last change, which the next session makes again, and every session
//     saves the two fsyncs a durable write costs (issue 14). Two ralphs in
//     two projects ending sessions at the same instant both stay listed.
//   - A project that moved or was deleted stays listed, as gone (Entry.Gone),
//     until Prune removes it: a folder on a disk that is not mounted right
//     now is not forgotten behind the person's back.
//   - A file that is not the registry's JSON (damaged, or written by hand)
//     is an error for Entries, and is started afresh by the next Record,
//     since it holds nothing that cannot be found again.
package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/mdstate"
)

// FileName is the registry's file in its folder.
const FileName = "projects.json"

// lockName is the lock beside it.
const lockName = "projects.lock"

// formatVersion is written in the file, for a later ralph that changes the
// format.
const formatVersion = 1

// Entry is one project in the registry.
type Entry struct {
	// Root is the project's folder, absolute, with symlinks resolved.
	Root string `json:"root"`
	// Session is the id of the last session ralph recorded there; "" when
	// unknown.
	Session string `json:"session,omitempty"`
	// Seen is when ralph last recorded a session start or end there.
	Seen time.Time `json:"seen"`
}

// Gone reports whether the project is no longer where the registry says:
// its folder, or the RALPH_TASKS.md in it, does not exist. A folder ralph
// cannot look into is not gone.
func (e Entry) Gone() bool {
	fi, err := os.Stat(e.Root)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	if !fi.IsDir() {
		return true
	}
	_, err = os.Stat(filepath.Join(e.Root, mdstate.TasksFile))
	return errors.Is(err, fs.ErrNotExist)
}

// file is the registry's JSON.
type file struct {
	Version  int     `json:"version"`
	Projects []Entry `json:"projects"`
}

// Registry is the registry in one folder. A nil *Registry is no registry:
// Record does nothing, so a caller without a state folder passes nil.
type Registry struct{ dir string }

// Open returns the registry in dir (DefaultDir's answer), nil when dir is
// "". Nothing is read or created until it is used.
func Open(dir string) *Registry {
	if dir == "" {
		return nil
	}
	return &Registry{dir: dir}
}

// DefaultDir is the registry's folder: ralph in the user's state folder,
// $XDG_STATE_HOME (when it is an absolute path, as the XDG spec asks), else
// ~/.local/state, and %LocalAppData% on Windows. It is not
// os.UserConfigDir: the registry is state a program keeps, not settings a
// person writes. "" when there is no home folder to put it in. getenv is
// os.Getenv at the entry point.
func DefaultDir(getenv func(string) string, home string) string {
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "ralph")
	}
	if runtime.GOOS == "windows" {
		if d := getenv("LocalAppData"); filepath.IsAbs(d) {
			return filepath.Join(d, "ralph")
		}
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".local", "state", "ralph")
}

// Path is the registry's file. Path, Entries and Prune need a registry:
// only Record takes a nil one.
func (r *Registry) Path() string { return filepath.Join(r.dir, FileName) }

// Record notes that a session (id session) started or ended in the project
// at root at time at. It is safe on a nil Registry.
func (r *Registry) Record(root, session string, at time.Time) error {
	if r == nil {
		return nil
	}
	e := Entry{Root: canonical(root), Session: session, Seen: at.UTC().Truncate(time.Second)}
	return r.update(func(es []Entry) ([]Entry, bool) {
		if i := slices.IndexFunc(es, func(x Entry) bool { return x.Root == e.Root }); i >= 0 {
			es[i] = e
			return es, true
		}
		return append(es, e), true
	})
}

// Entries returns the projects in the registry, ordered by folder; none
// when it does not exist yet.
func (r *Registry) Entries() ([]Entry, error) {
	es, err := r.read()
	if err != nil {
		return nil, err
	}
	sortEntries(es)
	return es, nil
}

// Prune removes the projects that are gone (Entry.Gone) and returns them.
func (r *Registry) Prune() ([]Entry, error) {
	var pruned []Entry
	err := r.update(func(es []Entry) ([]Entry, bool) {
		es = slices.DeleteFunc(es, func(e Entry) bool {
			if e.Gone() {
				pruned = append(pruned, e)
				return true
			}
			return false
		})
		return es, len(pruned) > 0
	})
	sortEntries(pruned)
	return pruned, err
}

// errDamaged reports a registry file that is not the registry's JSON.
var errDamaged = errors.New("not a list of projects ralph can read")

// read reads the registry file: nothing when there is none.
func (r *Registry) read() ([]Entry, error) {
	data, err := os.ReadFile(r.Path())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the list of projects: %w", err)
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w (%v); it only says where ralph ran: delete it, and each project's next session adds the project again", r.Path(), errDamaged, err)
	}
	return slices.DeleteFunc(f.Projects, func(e Entry) bool { return e.Root == "" }), nil
}

// update changes the registry under its lock: fn gets the entries as they
// are on disk now and says whether it changed them; the file is not
// written when it did not.
func (r *Registry) update(fn func([]Entry) ([]Entry, bool)) error {
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return fmt.Errorf("create the state folder: %w", err)
	}
	unlock, err := lockFile(filepath.Join(r.dir, lockName))
	if err != nil {
		return err
	}
	defer unlock()
	es, err := r.read()
	if errors.Is(err, errDamaged) {
		es, err = nil, nil // started afresh: see the package doc
	}
	if err != nil {
		return err
	}
	es, changed := fn(es)
	if !changed {
		return nil
	}
	sortEntries(es)
	data, err := json.MarshalIndent(file{Version: formatVersion, Projects: es}, "", "  ")
	if err != nil {
		return err
	}
	if err := replaceFile(r.Path(), append(data, '\n')); err != nil {
		return fmt.Errorf("write the list of projects: %w", err)
	}
	return nil
}

// replaceFile replaces path with data atomically, through a temporary
// file beside it renamed over it, without syncing (see the package doc).
func replaceFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}

func sortEntries(es []Entry) {
	slices.SortFunc(es, func(a, b Entry) int { return strings.Compare(a.Root, b.Root) })
}

// canonical makes one name of a project's folder: absolute, clean, with
// symlinks resolved when it exists, so that a project reached through a
// link is listed once.
func canonical(root string) string {
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	return filepath.Clean(root)
}
