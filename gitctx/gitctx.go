// Package gitctx is the git half of ralph's start-up context: which branch
// and commit the project is on, what changed recently, what is uncommitted,
// and which commits touched ralph's own state files.
//
// The contract:
//
//   - Open never panics and never takes long: it locates the repository that
//     contains a directory (plain checkout, subdirectory, linked worktree or
//     submodule), reads HEAD and checks that the HEAD commit decodes. A
//     missing repository is ErrNotRepo, a bare one ErrBare and a damaged one
//     ErrCorrupt; callers carry on without git context in every case.
//   - History (Head, Log, AheadBehind, CommitsSince, StateCommits, FileAt)
//     is read in process: references, config, the shallow list and the
//     index by gitctx's store (store.go, with gitconfig's parser), objects
//     by gitctx's own reader of git's formats (objects.go, odb.go), which
//     maps pack indexes instead of decoding them. Of go-git only the
//     formats' packages are left (plumbing, its index, pack and loose
//     object formats): its root, object, storage and config packages, with
//     their network, SSH, OpenPGP and config-parser dependencies, stay out
//     of ralph (issue 14). Walks stop quietly at the boundary of a shallow
//     clone instead of failing with "object not found"
//     (go-git/go-git#2409), and every walk honours its context. A commit
//     lists at most MaxFiles of the paths it changed.
//   - Work-tree state (Status, IsDirty) is read with the git CLI when it is
//     installed: it honours every ignore source, filter and setting git
//     has. gitctx starts no process itself: the caller passes a Runner to
//     Open and CLIStatus. Without git (or without a Runner) it falls back
//     to its own reading of the index, HEAD's tree and the work tree
//     (fallback.go), bounded by a timeout. Status never blocks past its
//     timeout.
//   - Only Commit writes to the repository: new objects, the branch it
//     moves and the index entries of the paths it commits, each ref and
//     the index through git's own lock file (NAME.lock, created
//     exclusively, synced, renamed into place), so it fails rather than
//     race a git command at work, and a kill leaves the old file or the
//     new one. Everything else only reads: git runs with
//     --no-optional-locks so a status does not take index.lock away from
//     an agent that is committing at the same moment.
//   - The git CLI gets the Runner's environment (ralph's, so the user's
//     global config applies). gitctx reads the environment itself in two
//     places, as go-git's packages did before: the fallback status
//     reads $HOME to find the global gitignore (~/.gitconfig's
//     core.excludesFile), and Commit reads $XDG_CONFIG_HOME and $HOME to
//     find the author in the user's git config.
//
// A Repo is safe for concurrent use. Its object reader is not, so all
// access through one Repo is serialised by a mutex.
package gitctx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
)

var (
	// ErrNotRepo reports that there is no git repository at or above the
	// directory given to Open.
	ErrNotRepo = errors.New("not a git repository")

	// ErrBare reports a repository without a work tree.
	ErrBare = errors.New("bare git repository: ralph needs a work tree (a normal clone or a linked worktree)")

	// ErrCorrupt reports a repository that exists but cannot be read.
	ErrCorrupt = errors.New("git repository looks corrupt; ralph will carry on without git context")

	// ErrUnknownRevision reports a revision (a baseline, a restore point)
	// that does not name a commit in this repository, for instance because
	// history was rewritten or it lies beyond a shallow clone's boundary.
	ErrUnknownRevision = errors.New("unknown revision")

	// errUnsupportedFormat reports a repository format ralph cannot read.
	errUnsupportedFormat = errors.New("unsupported repository format, ralph will carry on without git context")
)

// gitDirName is the work tree's entry that holds or names the repository.
const gitDirName = ".git"

// Repo is an open repository with a work tree.
type Repo struct {
	root string
	run  Runner // runs the git CLI; nil: in-process fallbacks only

	mu sync.Mutex // serialises st and db
	st *store
	db *objectDB

	// fallbackBusy is set while a fallback status, abandoned after its
	// timeout, is still running; see Status.
	fallbackBusy atomic.Bool
}

// Head describes what HEAD points at.
type Head struct {
	Branch   string // short branch name; "" when detached
	Hash     string // full commit hash; "" when unborn
	Detached bool   // HEAD names a commit, not a branch
	Unborn   bool   // the branch has no commits yet
}

// Open finds the repository containing dir. dir may be any directory inside
// the work tree, including one inside a linked worktree or a submodule.
// run runs the git CLI for Status and IsDirty; with a nil run they take
// their in-process fallbacks, as when git is not installed.
func Open(dir string, run Runner) (_ *Repo, err error) {
	defer recovered("open "+dir, &err)
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	if !fi.IsDir() {
		abs = filepath.Dir(abs)
	}
	root, err := findRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	st, db, err := openStorage(root)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", root, err)
	}
	r := &Repo{root: root, run: run, st: st, db: db}
	if err := r.checkHead(); err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("open %s: %w: %w", root, ErrCorrupt, err)
	}
	return r, nil
}

// recovered turns a panic while reading the repository into an ErrCorrupt
// error. go-git has panicked on malformed data before, and a damaged
// repository must cost ralph its git context, not the whole process.
func recovered(what string, err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%s: %w: panicked: %v", what, ErrCorrupt, p)
	}
}

// findRoot walks up from dir the way git's own discovery does: the first
// directory holding a .git (directory or file) is the work tree root; a
// directory that is itself a git directory without one is bare.
func findRoot(dir string) (string, error) {
	for d := dir; ; {
		_, err := os.Stat(filepath.Join(d, gitDirName))
		if err == nil {
			return d, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("stat %s: %w", filepath.Join(d, gitDirName), err)
		}
		if isGitDir(d) {
			return "", ErrBare
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", ErrNotRepo
		}
		d = parent
	}
}

// isGitDir mirrors git's is_git_directory: HEAD plus objects/ and refs/.
func isGitDir(d string) bool {
	if fi, err := os.Stat(filepath.Join(d, "HEAD")); err != nil || fi.IsDir() {
		return false
	}
	for _, sub := range []string{"objects", "refs"} {
		if fi, err := os.Stat(filepath.Join(d, sub)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// readOnlySafeExtensions are repository extensions that change nothing for
// a reader that only walks history, so refusing to open over them (as
// go-git v5 does for any extension under repositoryformatversion 1) would
// needlessly cost the user their git context. objectFormat (SHA-256) is
// deliberately absent: gitctx reads SHA-1 repositories only.
var readOnlySafeExtensions = map[string]bool{
	"noop":              true,
	"noop-v1":           true,
	"partialclone":      true,
	"preciousobjects":   true,
	"worktreeconfig":    true,
	"relativeworktrees": true,
}

// extensionsValidForV0 are the extensions git honours under
// repositoryformatversion 0, having had them before version 1 existed;
// any other there is an error, as in git and go-git.
var extensionsValidForV0 = map[string]bool{
	"noop":            true,
	"partialclone":    true,
	"preciousobjects": true,
	"worktreeconfig":  true,
}

// openStorage opens the repository whose work tree is root: .git may be a
// directory or, in a linked worktree or submodule, a file naming the git
// directory, which for a linked worktree names the shared one in its
// commondir file. References, config, the index and the shallow list are
// read through store; objects through gitctx's objectDB. Like go-git's
// Open it refuses a git directory without HEAD, an unparsable config and
// repository formats it cannot read.
func openStorage(root string) (*store, *objectDB, error) {
	dot, err := gitDir(root)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	common, err := commonDir(dot)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	st := &store{dir: dot, common: common}
	if err := checkFormat(st); err != nil {
		return nil, nil, err
	}
	return st, newObjectDB(st.path("objects")), nil
}

// checkFormat is go-git's Open check, with readOnlySafeExtensions allowed.
func checkFormat(st *store) error {
	if _, err := st.reference(plumbing.HEAD); errors.Is(err, plumbing.ErrReferenceNotFound) {
		// .git exists (findRoot saw it): HEAD is gone.
		return fmt.Errorf("%w: no HEAD in the git directory", ErrCorrupt)
	}
	cfg, err := st.config()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	version, _ := cfg.Get("core", "", "repositoryformatversion")
	if version != "" && version != "0" && version != "1" {
		return fmt.Errorf("%w: core.repositoryformatversion %q", errUnsupportedFormat, version)
	}
	for _, ext := range cfg.Keys("extensions", "") {
		if (version == "" || version == "0") && !extensionsValidForV0[ext] {
			return fmt.Errorf("%w: extension %s needs core.repositoryformatversion 1", errUnsupportedFormat, ext)
		}
		if !readOnlySafeExtensions[ext] {
			return fmt.Errorf("%w: unknown extension %s", errUnsupportedFormat, ext)
		}
	}
	return nil
}

// gitDir is the git directory of the work tree at root: root/.git, or the
// one a .git file names.
func gitDir(root string) (string, error) {
	p := filepath.Join(root, gitDirName)
	fi, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return p, nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir: ")
	if !ok {
		return "", fmt.Errorf("%s: no gitdir line", p)
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(root, gitdir)
	}
	if _, err := os.Stat(gitdir); err != nil {
		// A moved or deleted main repository leaves worktrees and
		// submodules pointing at nothing.
		return "", fmt.Errorf("%s names a git directory that cannot be read: %w", p, err)
	}
	return filepath.Clean(gitdir), nil
}

// commonDir is the shared git directory of the one at dot: the one its
// commondir file names (a linked worktree's), else dot itself.
func commonDir(dot string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dot, "commondir"))
	if errors.Is(err, os.ErrNotExist) {
		return dot, nil
	}
	if err != nil {
		return "", err
	}
	p := strings.TrimSpace(string(b))
	if !filepath.IsAbs(p) {
		p = filepath.Join(dot, p)
	}
	return filepath.Clean(p), nil
}

// checkHead reads HEAD and decodes the commit it names, so that a damaged
// repository is reported once, at Open, rather than as a string of odd
// failures later.
func (r *Repo) checkHead() error {
	ref, err := r.st.reference(plumbing.HEAD)
	if err != nil {
		return fmt.Errorf("read HEAD: %w", err)
	}
	var h plumbing.Hash
	switch ref.Type() {
	case plumbing.SymbolicReference:
		if !strings.HasPrefix(ref.Target().String(), "refs/") {
			return fmt.Errorf("HEAD points at %q, which is not a ref", ref.Target())
		}
		target, err := r.st.resolve(ref.Target())
		if errors.Is(err, plumbing.ErrReferenceNotFound) {
			return nil // unborn branch: a fresh repository
		}
		if err != nil {
			return fmt.Errorf("resolve %s: %w", ref.Target(), err)
		}
		h = target.Hash()
	case plumbing.HashReference:
		h = ref.Hash()
	default:
		return errors.New("HEAD is neither a ref nor a commit")
	}
	if h.IsZero() {
		// go-git decodes any unparsable HEAD content as the zero hash.
		return errors.New("HEAD does not name a commit")
	}
	if _, err := r.db.commit(h); err != nil {
		return fmt.Errorf("read HEAD commit %s: %w", h, err)
	}
	return nil
}

// Close releases the pack files and indexes the Repo keeps open. The Repo
// must not be used afterwards.
func (r *Repo) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.db.close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}

// Root returns the absolute path of the work tree root.
func (r *Repo) Root() string { return r.root }

// Head reports the current branch and commit.
func (r *Repo) Head() (_ Head, err error) {
	defer recovered("head", &err)
	r.mu.Lock()
	defer r.mu.Unlock()
	ref, err := r.st.reference(plumbing.HEAD)
	if err != nil {
		return Head{}, fmt.Errorf("read HEAD: %w", err)
	}
	if ref.Type() != plumbing.SymbolicReference {
		return Head{Hash: ref.Hash().String(), Detached: true}, nil
	}
	h := Head{Branch: strings.TrimPrefix(ref.Target().String(), "refs/heads/")}
	target, err := r.st.resolve(ref.Target())
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		h.Unborn = true
		return h, nil
	}
	if err != nil {
		return Head{}, fmt.Errorf("resolve %s: %w", ref.Target(), err)
	}
	h.Hash = target.Hash().String()
	return h, nil
}

// headHash returns the commit HEAD resolves to, or ok=false when unborn.
// The caller holds r.mu.
func (r *Repo) headHash() (plumbing.Hash, bool, error) { return resolveHead(r.st) }

// resolveHead returns the commit HEAD resolves to, or ok=false when
// unborn.
func resolveHead(st *store) (plumbing.Hash, bool, error) {
	ref, err := st.resolve(plumbing.HEAD)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("read HEAD: %w", err)
	}
	return ref.Hash(), true, nil
}
