package gitctx

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"

	"github.com/ralph-dev/ralph/gitctx/ignore"
)

// fallbackStatus reads the work tree's status without the git CLI, as
// `git status --porcelain=v2 --untracked-files=all --no-renames` would
// report it, from what git itself reads:
//
//   - staged changes: the index against HEAD's tree, skipping every
//     directory whose cached tree (the index's TREE extension) still
//     matches HEAD's, as git does;
//   - unstaged changes: each index entry against the file, by its stat
//     data, and by its blob hash when the stat data differs or the entry
//     is racily clean (written in the same instant as the index);
//   - untracked files: a walk of the work tree honouring .gitignore files,
//     info/exclude and core.excludesFile from the user's and the system's
//     git config (~/.gitconfig and /etc/gitconfig, where go-git looked),
//     matched by package ignore, the matcher projectdetect uses too.
//
// Clean and smudge filters and end-of-line conversion are not applied, so
// a file git converts may show as modified. It stops when ctx ends.
func fallbackStatus(ctx context.Context, root string) (_ Status, err error) {
	// A panic here would be in a goroutine nobody can recover for us.
	defer recovered("status", &err)
	st, db, err := openStorage(root)
	if err != nil {
		return Status{}, err
	}
	defer db.close()
	idx, err := st.index()
	if err != nil {
		return Status{}, fmt.Errorf("read the index: %w", err)
	}
	w := &worktreeScan{ctx: ctx, root: root, st: st, db: db, idx: idx, fileMode: fileModeTrusted(st)}
	return w.status()
}

// worktreeScan is one fallback status in progress.
type worktreeScan struct {
	ctx      context.Context
	root     string
	st       *store
	db       *objectDB
	idx      *index.Index
	fileMode bool // core.fileMode: the executable bit counts
}

func (w *worktreeScan) status() (Status, error) {
	// The work-tree walk for untracked files, the comparison of the
	// tracked ones with the work tree (itself shared by a few goroutines,
	// as git's preload-index does) and the reading of HEAD's tree run at
	// once: the first two mostly wait on the file system.
	var untracked Status
	walked := make(chan error, 1)
	go func() { walked <- guarded("status", func() error { return w.untracked(&untracked) }) }()
	var codes []changeCode
	compared := make(chan error, 1)
	go func() {
		compared <- guarded("status", func() (err error) {
			codes, err = w.unstagedAll()
			return err
		})
	}()
	head, herr := w.headFiles()
	if err := errors.Join(herr, <-compared, <-walked); err != nil {
		return Status{}, err
	}
	out := Status{Untracked: untracked.Untracked}
	unmerged := map[string]bool{}
	for i, e := range w.idx.Entries {
		if e.Stage != 0 {
			if !unmerged[e.Name] {
				unmerged[e.Name] = true
				out.Unmerged = append(out.Unmerged, e.Name)
			}
			continue
		}
		out.file(e, head.staged(e), codes[i])
	}
	for p := range head.files {
		if !unmerged[p] {
			out.Deleted = append(out.Deleted, p) // staged deletion
		}
	}
	out.sort()
	return out, nil
}

// unstagedAll compares every merged index entry with the work tree, in
// parallel, and returns their codes by entry.
func (w *worktreeScan) unstagedAll() ([]changeCode, error) {
	entries := w.idx.Entries
	codes := make([]changeCode, len(entries))
	workers := min(runtime.GOMAXPROCS(0), maxScanWorkers, len(entries)/minScanShare+1)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = guarded("status", func() error {
				for i := k; i < len(entries); i += workers {
					if (i/workers)%256 == 0 {
						if err := w.ctx.Err(); err != nil {
							return err
						}
					}
					e := entries[i]
					if e.Stage != 0 {
						continue
					}
					c, err := w.unstaged(e)
					if err != nil {
						return fmt.Errorf("%s: %w", e.Name, err)
					}
					codes[i] = c
				}
				return nil
			})
		}()
	}
	wg.Wait()
	return codes, errors.Join(errs...)
}

// guarded runs f, turning a panic into an error as recovered does: in a
// goroutine of its own a panic would end the process.
func guarded(what string, f func() error) (err error) {
	defer recovered(what, &err)
	return f()
}

// The tracked files' comparison uses up to maxScanWorkers goroutines, one
// per minScanShare entries.
const (
	maxScanWorkers = 8
	minScanShare   = 512
)

// changeCode is what became of a path on one side, as a letter of
// porcelain v2's XY.
type changeCode byte

const (
	same     changeCode = '.'
	added    changeCode = 'A'
	deleted  changeCode = 'D'
	modified changeCode = 'M'
)

// file files one tracked path by its staged (x) and unstaged (y) codes, as
// addOrdinary files git's records.
func (s *Status) file(e *index.Entry, x, y changeCode) {
	switch {
	case e.IntentToAdd:
		// git add -N: porcelain says ".A", which reads as modified.
		s.Modified = append(s.Modified, e.Name)
	case x == same && y == same:
	case x == added:
		s.Added = append(s.Added, e.Name)
	case x == deleted || y == deleted:
		s.Deleted = append(s.Deleted, e.Name)
	default:
		s.Modified = append(s.Modified, e.Name)
	}
}

// headSide is HEAD's tree as the index is compared with it: the files of
// the directories the index's cached trees do not vouch for.
type headSide struct {
	files map[string]treeEntry // not yet matched by an index entry
	same  map[string]bool      // directories known equal to the index
}

// headFiles reads HEAD's tree, skipping the directories whose cached tree
// in the index names the same tree.
func (w *worktreeScan) headFiles() (*headSide, error) {
	h := &headSide{files: map[string]treeEntry{}, same: map[string]bool{}}
	ref, born, err := resolveHead(w.st)
	if err != nil || !born {
		return h, err // unborn: everything in the index is added
	}
	c, err := w.db.commit(ref)
	if err != nil {
		return nil, err
	}
	return h, w.readHead(h, cachedTrees(w.idx.Cache), "", c.tree)
}

func (w *worktreeScan) readHead(h *headSide, cached map[string]plumbing.Hash, dir string, tree plumbing.Hash) error {
	if c, ok := cached[dir]; ok && c == tree {
		h.same[dir] = true
		return nil
	}
	if err := w.ctx.Err(); err != nil {
		return err
	}
	t, err := w.db.tree(tree)
	if err != nil {
		return err
	}
	for _, e := range t.entries {
		p := path.Join(dir, e.name)
		if e.mode == filemode.Dir {
			if err := w.readHead(h, cached, p, e.hash); err != nil {
				return err
			}
			continue
		}
		h.files[p] = e
	}
	return nil
}

// cachedTrees lists the valid trees of the index's TREE extension by
// directory ("" for the root). The extension is the pre-order list of
// directories, each with its number of subtrees; an invalidated one has a
// negative entry count.
func cachedTrees(t *index.Tree) map[string]plumbing.Hash {
	out := map[string]plumbing.Hash{}
	if t == nil || len(t.Entries) == 0 {
		return out
	}
	i := 0
	var walk func(parent string)
	walk = func(parent string) {
		e := t.Entries[i]
		i++
		dir := path.Join(parent, e.Path)
		if e.Entries >= 0 {
			out[dir] = e.Hash
		}
		for n := 0; n < e.Trees && i < len(t.Entries); n++ {
			walk(dir)
		}
	}
	walk("")
	return out
}

// staged compares an index entry with HEAD's version of its path.
func (h *headSide) staged(e *index.Entry) changeCode {
	if h.vouched(e.Name) {
		return same
	}
	he, ok := h.files[e.Name]
	if !ok {
		return added
	}
	delete(h.files, e.Name)
	if he.hash != e.Hash || he.mode != e.Mode {
		return modified
	}
	return same
}

// vouched reports whether a directory holding p is known equal in HEAD
// and the index.
func (h *headSide) vouched(p string) bool {
	if len(h.same) == 0 {
		return false
	}
	if h.same[""] {
		return true
	}
	for i := strings.LastIndexByte(p, '/'); i > 0; i = strings.LastIndexByte(p[:i], '/') {
		if h.same[p[:i]] {
			return true
		}
	}
	return false
}

// fileModeTrusted reads core.fileMode: false means the executable bit is
// not tracked on this file system.
func fileModeTrusted(st *store) bool {
	cfg, err := st.config()
	if err != nil {
		return true
	}
	v, _ := cfg.Get("core", "", "filemode")
	v = strings.ToLower(v)
	return v != "false" && v != "no" && v != "off" && v != "0"
}

// unstaged compares an index entry with the work tree.
func (w *worktreeScan) unstaged(e *index.Entry) (changeCode, error) {
	if e.SkipWorktree {
		return same, nil // sparse checkout: not in the work tree by design
	}
	full := filepath.Join(w.root, filepath.FromSlash(e.Name))
	fi, err := os.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return deleted, nil
	}
	if err != nil {
		return 0, err
	}
	if e.Mode == filemode.Submodule {
		return w.submodule(full, e)
	}
	mode, ok := worktreeMode(fi)
	if !ok {
		// A directory (or a socket, a device) where a file was: git
		// reports the file deleted.
		return deleted, nil
	}
	if !w.fileMode && mode.IsRegular() && e.Mode.IsRegular() {
		mode = e.Mode
	}
	if mode != e.Mode {
		return modified, nil
	}
	if statMatches(fi, e) && e.ModifiedAt.Before(w.idx.ModTime) {
		return same, nil
	}
	h, err := worktreeHash(full, fi)
	if err != nil {
		return 0, err
	}
	if h != e.Hash {
		return modified, nil
	}
	return same, nil
}

// worktreeMode is the mode git would record for a work-tree entry; ok is
// false for anything git does not track as a file.
func worktreeMode(fi fs.FileInfo) (filemode.FileMode, bool) {
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		return filemode.Symlink, true
	case m.IsRegular() && m&0o111 != 0:
		return filemode.Executable, true
	case m.IsRegular():
		return filemode.Regular, true
	}
	return filemode.Empty, false
}

// worktreeHash is the blob hash of a file's content, or of a symlink's
// target.
func worktreeHash(full string, fi fs.FileInfo) (plumbing.Hash, error) {
	var content []byte
	var err error
	if fi.Mode()&fs.ModeSymlink != 0 {
		var target string
		target, err = os.Readlink(full)
		content = []byte(filepath.ToSlash(target))
	} else {
		content, err = os.ReadFile(full)
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return plumbing.ComputeHash(plumbing.BlobObject, content), nil
}

// submodule compares a submodule's checked-out commit with the one the
// index records, and counts changes inside it, as git status does by
// default. One that is not checked out (an empty directory) is clean.
func (w *worktreeScan) submodule(full string, e *index.Entry) (changeCode, error) {
	if _, err := os.Lstat(filepath.Join(full, gitDirName)); err != nil {
		return same, nil
	}
	st, db, err := openStorage(full)
	if err != nil {
		return modified, nil // git would not read it either; say so
	}
	h, _, err := resolveHead(st)
	_ = db.close()
	if err != nil || h != e.Hash {
		return modified, nil
	}
	inner, err := fallbackStatus(w.ctx, full)
	if err != nil {
		return 0, err
	}
	if !inner.empty() {
		return modified, nil
	}
	return same, nil
}

// untracked walks the work tree for files the index does not hold and no
// ignore rule covers, into out.Untracked.
func (w *worktreeScan) untracked(out *Status) error {
	tracked := make(map[string]filemode.FileMode, len(w.idx.Entries))
	dirs := map[string]bool{"": true} // directories holding tracked paths
	for _, e := range w.idx.Entries {
		tracked[e.Name] = e.Mode
		for d := path.Dir(e.Name); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var base []ignore.Rule
	if home, err := os.UserHomeDir(); err == nil {
		base = excludesFile(filepath.Join(home, ".gitconfig"))
	}
	base = append(base, excludesFile(systemGitConfig)...)
	base = append(base, readRules(w.st.path("info/exclude"), 0)...)
	u := untrackedWalk{w: w, tracked: tracked, dirs: dirs, out: out}
	return u.walk("", base)
}

type untrackedWalk struct {
	w       *worktreeScan
	tracked map[string]filemode.FileMode
	dirs    map[string]bool
	out     *Status
}

func (u *untrackedWalk) walk(dir string, patterns []ignore.Rule) error {
	if err := u.w.ctx.Err(); err != nil {
		return err
	}
	full := filepath.Join(u.w.root, filepath.FromSlash(dir))
	entries, err := os.ReadDir(full)
	if err != nil {
		if dir != "" && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)) {
			return nil // gone meanwhile, or not ours to read: git skips it too
		}
		return err
	}
	var domain []string
	if dir != "" {
		domain = strings.Split(dir, "/")
		if !u.dirs[dir] && hasEntry(entries, gitDirName) {
			// A repository of its own inside this one: git lists it as
			// one untracked directory.
			u.out.Untracked = append(u.out.Untracked, dir+"/")
			return nil
		}
	}
	if hasEntry(entries, ".gitignore") {
		own := readRules(filepath.Join(full, ".gitignore"), len(domain))
		patterns = append(patterns[:len(patterns):len(patterns)], own...)
	}
	for _, e := range entries {
		name := e.Name()
		if name == gitDirName {
			continue
		}
		rel := path.Join(dir, name)
		isDir := e.IsDir()
		if mode, ok := u.tracked[rel]; ok && (!isDir || mode == filemode.Submodule) {
			continue // the index compared it (a directory where a file was is not it)
		}
		parts := append(domain[:len(domain):len(domain)], name)
		if ignore.Ignored(patterns, parts, isDir) {
			continue
		}
		if isDir {
			if err := u.walk(rel, patterns); err != nil {
				return err
			}
			continue
		}
		u.out.Untracked = append(u.out.Untracked, rel)
	}
	return nil
}

func hasEntry(entries []fs.DirEntry, name string) bool {
	for _, e := range entries {
		if e.Name() == name {
			return true
		}
	}
	return false
}

// excludesFile reads the rules of the file that core.excludesFile names
// in the git config file at config, as go-git read the user's
// (~/.gitconfig) and the system's (/etc/gitconfig): none when either file
// is missing or the variable unset.
func excludesFile(config string) []ignore.Rule {
	cfg, err := readConfig(config)
	if err != nil {
		return nil
	}
	file, _ := cfg.Get("core", "", "excludesfile")
	if file == "" {
		return nil
	}
	if rest, ok := strings.CutPrefix(file, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil
		}
		file = filepath.Join(home, rest)
	}
	return readRules(file, 0)
}

// readRules reads an ignore file whose rules apply depth path components
// below the work tree's root.
func readRules(file string, depth int) []ignore.Rule {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	return ignore.Parse(data, depth)
}
