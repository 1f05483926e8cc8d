package gitctx

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"

	"github.com/ralph-dev/ralph/gitctx/gitconfig"
)

// ErrHeadMoved reports that the branch moved while ralph was committing
// (someone committed at the same time); nothing was changed.
var ErrHeadMoved = errors.New("the branch moved while ralph was committing")

// pathChange is what becomes of one path in the commit.
type pathChange struct {
	del  bool
	hash plumbing.Hash
	mode filemode.FileMode
	size uint32
	mod  time.Time
}

// Commit records paths (relative to the work tree root, slash-separated)
// as they are in the work tree now, added, changed or deleted, in a new
// commit on top of HEAD, and nothing else: other changes, staged or not,
// stay as they were and out of the commit. Only the trees along those
// paths are rewritten, so the cost does not grow with the repository. The
// index entries of those paths are updated to match, so they show clean.
// When is the commit's time; the author is the repository's user.name and
// user.email, else "ralph". It returns the new commit's hash.
func (r *Repo) Commit(ctx context.Context, paths []string, msg string, when time.Time) (_ string, err error) {
	defer recovered("commit", &err)
	if len(paths) == 0 {
		return "", errors.New("commit: no paths")
	}
	r.mu.Lock()
	defer r.mu.Unlock()

	// The index is locked first, as git does: a git command at work here
	// (an agent's own commit) makes ralph's commit fail rather than race.
	idxLock, err := r.lockFile("index")
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	defer idxLock.abort()

	changes := map[string]pathChange{}
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("commit: %w", err)
		}
		clean, err := cleanPath(p)
		if err != nil {
			return "", fmt.Errorf("commit: %w", err)
		}
		c, err := r.workTreeBlob(clean)
		if err != nil {
			return "", fmt.Errorf("commit %s: %w", clean, err)
		}
		changes[clean] = c
	}

	// HEAD: a branch (born or not) or a detached commit.
	headRef, err := r.st.reference(plumbing.HEAD)
	if err != nil {
		return "", fmt.Errorf("commit: read HEAD: %w", err)
	}
	target := plumbing.HEAD
	if headRef.Type() == plumbing.SymbolicReference {
		target = headRef.Target()
	}
	var parents []plumbing.Hash
	var base *treeObj
	old, err := r.st.reference(target)
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
		old = nil // unborn: the first commit
	case err != nil:
		return "", fmt.Errorf("commit: read %s: %w", target, err)
	default:
		parent, err := r.db.commit(old.Hash())
		if err != nil {
			return "", fmt.Errorf("commit: %w", err)
		}
		if base, err = r.db.tree(parent.tree); err != nil {
			return "", fmt.Errorf("commit: %w", err)
		}
		parents = []plumbing.Hash{parent.hash}
	}
	tree, _, err := r.writeTree(base, changes)
	if err != nil {
		return "", fmt.Errorf("commit: write tree: %w", err)
	}
	sig := r.signature(when)
	c := &commitObj{author: sig, committer: sig, message: msg, tree: tree, parents: parents}
	hash, err := r.writeObject(plumbing.CommitObject, encodeCommit(c))
	if err != nil {
		return "", fmt.Errorf("commit: store: %w", err)
	}
	// Move the branch only if nobody moved it meanwhile.
	if err := r.setRef(target, hash, old); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	if err := r.updateIndex(idxLock, changes); err != nil {
		return hash.String(), fmt.Errorf("commit %s made, but the index was not updated: %w", hash.String()[:7], err)
	}
	return hash.String(), nil
}

// workTreeBlob stores the work tree's version of path as a blob.
func (r *Repo) workTreeBlob(path string) (pathChange, error) {
	full := filepath.Join(r.root, filepath.FromSlash(path))
	fi, err := os.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) {
		return pathChange{del: true}, nil
	}
	if err != nil {
		return pathChange{}, err
	}
	var data []byte
	mode := filemode.Regular
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(full)
		if err != nil {
			return pathChange{}, err
		}
		data, mode = []byte(target), filemode.Symlink
	case fi.Mode().IsRegular():
		if data, err = os.ReadFile(full); err != nil {
			return pathChange{}, err
		}
		if fi.Mode()&0o111 != 0 {
			mode = filemode.Executable
		}
	default:
		return pathChange{}, fmt.Errorf("not a file")
	}
	h, err := r.writeObject(plumbing.BlobObject, data)
	if err != nil {
		return pathChange{}, err
	}
	return pathChange{hash: h, mode: mode, size: uint32(fi.Size()), mod: fi.ModTime()}, nil
}

// writeObject stores a loose object (store.writeObject).
func (r *Repo) writeObject(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	return r.st.writeObject(t, data)
}

// writeTree writes t (nil: an empty tree) with changes applied (paths
// relative to t) and returns its hash, or empty=true when nothing is left
// in it.
func (r *Repo) writeTree(t *treeObj, changes map[string]pathChange) (_ plumbing.Hash, empty bool, _ error) {
	entries := map[string]treeEntry{}
	if t != nil {
		for _, e := range t.entries {
			entries[e.name] = e
		}
	}
	sub := map[string]map[string]pathChange{}
	for p, c := range changes {
		name, rest, nested := strings.Cut(p, "/")
		if !nested {
			if c.del {
				delete(entries, name)
			} else {
				entries[name] = treeEntry{name: name, mode: c.mode, hash: c.hash}
			}
			continue
		}
		if sub[name] == nil {
			sub[name] = map[string]pathChange{}
		}
		sub[name][rest] = c
	}
	for name, ch := range sub {
		var st *treeObj
		if e, ok := entries[name]; ok && e.mode == filemode.Dir {
			var err error
			if st, err = r.db.tree(e.hash); err != nil {
				return plumbing.ZeroHash, false, err
			}
		}
		h, gone, err := r.writeTree(st, ch)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		if gone {
			delete(entries, name)
		} else {
			entries[name] = treeEntry{name: name, mode: filemode.Dir, hash: h}
		}
	}
	if len(entries) == 0 && t != nil {
		return plumbing.ZeroHash, true, nil
	}
	list := make([]treeEntry, 0, len(entries))
	for _, e := range entries {
		list = append(list, e)
	}
	// Git orders entries by name, a directory as if its name ended in "/".
	key := func(e treeEntry) string {
		if e.mode == filemode.Dir {
			return e.name + "/"
		}
		return e.name
	}
	sort.Slice(list, func(i, j int) bool { return key(list[i]) < key(list[j]) })
	h, err := r.writeObject(plumbing.TreeObject, encodeTree(list))
	return h, false, err
}

// updateIndex makes the index entries of the committed paths match the
// commit, leaving every other entry alone.
func (r *Repo) updateIndex(l *lockFile, changes map[string]pathChange) error {
	idx, err := r.st.index()
	if err != nil {
		return err
	}
	for p, c := range changes {
		if c.del {
			_, _ = idx.Remove(p)
			continue
		}
		e, err := idx.Entry(p)
		if errors.Is(err, index.ErrEntryNotFound) {
			e = idx.Add(p)
		} else if err != nil {
			return err
		}
		e.Hash, e.Mode, e.Size, e.ModifiedAt = c.hash, c.mode, c.size, c.mod
	}
	return l.commit(func(w io.Writer) error { return index.NewEncoder(w).Encode(idx) })
}

// setRef points ref name at hash if it still points at old (nil: if it
// does not exist yet), under name's lock file.
func (r *Repo) setRef(name plumbing.ReferenceName, hash plumbing.Hash, old *plumbing.Reference) error {
	l, err := r.lockFile(name.String())
	if err != nil {
		return err
	}
	defer l.abort()
	cur, err := r.st.reference(name)
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
		if old != nil {
			return fmt.Errorf("%w: %s is gone", ErrHeadMoved, name)
		}
	case err != nil:
		return err
	case old == nil || cur.Hash() != old.Hash():
		return fmt.Errorf("%w: %s is at %s now", ErrHeadMoved, name, cur.Hash().String()[:7])
	}
	return l.commit(func(w io.Writer) error {
		_, err := io.WriteString(w, hash.String()+"\n")
		return err
	})
}

// lockFile is a git lock file: NAME.lock in the git directory, created
// exclusively, written, synced and renamed over NAME, so that a kill at
// any moment leaves the old file or the new one, never a torn one, and a
// git process at work (which holds the same lock) is never raced.
// go-git's own writes of the index and of refs truncate the files in
// place, and a kill in the middle leaves a corrupt index or an empty
// branch.
type lockFile struct {
	path string // NAME, in the git directory it belongs to
	f    *os.File
}

func (r *Repo) lockFile(name string) (*lockFile, error) {
	path := r.st.path(name)
	f, err := os.OpenFile(path+".lock", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%s.lock exists in the git directory: a git command is at work in this repository (or one was killed; if none runs, remove the file)", name)
	}
	if errors.Is(err, fs.ErrNotExist) {
		// A ref in a folder of its own not made yet (refs/heads/a/b).
		if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			f, err = os.OpenFile(path+".lock", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		}
	}
	if err != nil {
		return nil, err
	}
	return &lockFile{path: path, f: f}, nil
}

// commit writes the new content and puts it in place.
func (l *lockFile) commit(write func(io.Writer) error) error {
	bw := bufio.NewWriter(l.f)
	err := write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = l.f.Sync()
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	if err == nil {
		err = os.Rename(l.path+".lock", l.path)
	}
	if err != nil {
		_ = os.Remove(l.path + ".lock")
	}
	return err
}

// abort gives the lock up without a change, unless commit did.
func (l *lockFile) abort() {
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
		_ = os.Remove(l.path + ".lock")
	}
}

// signature is the repository's configured user, else the user's, else
// the system's (git's order), else ralph.
func (r *Repo) signature(when time.Time) signature {
	sig := signature{name: "ralph", email: "ralph@localhost", when: when}
	files := []func() (*gitconfig.Config, error){r.st.config, globalConfig, systemConfig}
	name, email := "", ""
	for _, read := range files {
		cfg, err := read()
		if err != nil {
			continue
		}
		if name == "" {
			name, _ = cfg.Get("user", "", "name")
		}
		if email == "" {
			email, _ = cfg.Get("user", "", "email")
		}
	}
	if name != "" {
		sig.name = name
	}
	if email != "" {
		sig.email = email
	}
	return sig
}

// globalConfig reads the user's git config, where go-git looked for it:
// the first of $XDG_CONFIG_HOME/git/config, ~/.gitconfig and
// ~/.config/git/config that exists (an empty config when none does).
func globalConfig() (*gitconfig.Config, error) {
	var paths []string
	if xdg := os.Getenv("XDG_CONFIG_HOME"); xdg != "" {
		paths = append(paths, filepath.Join(xdg, "git", "config"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		paths = append(paths, filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config"))
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return readConfig(p)
		}
	}
	return gitconfig.Parse(nil)
}

// systemConfig reads /etc/gitconfig (an empty config when there is none).
func systemConfig() (*gitconfig.Config, error) { return readConfig(systemGitConfig) }

// systemGitConfig is the system's git config, where go-git looked for it.
const systemGitConfig = "/etc/gitconfig"
