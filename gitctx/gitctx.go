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
//     index through go-git's storage, objects by gitctx's own reader of
//     git's formats (objects.go, odb.go), which maps pack indexes instead
//     of decoding them and leaves go-git's root and object packages, with
//     their network, SSH and OpenPGP dependencies, out of ralph (issue
//     14). Walks stop quietly at the boundary of a shallow clone instead
//     of failing with "object not found" (go-git/go-git#2409), and every
//     walk honours its context. A commit lists at most MaxFiles of the
//     paths it changed.
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
//   - No environment variable is read by gitctx itself. The git CLI gets
//     the Runner's environment (ralph's, so the user's global config
//     applies). go-git's packages read the environment in two places:
//     the fallback status reads $HOME to find the global gitignore, and
//     Commit reads $XDG_CONFIG_HOME and $HOME to find the author in the
//     user's git config.
//
// A Repo is safe for concurrent use. Its storage and object reader are
// not (and go-git's storage is known to race, go-git/go-git#773), so all
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

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
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

	mu sync.Mutex // serialises st and db (go-git/go-git#773)
	st *filesystem.Storage
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
// read through go-git's storage; objects through gitctx's objectDB. Like
// git.Open it refuses a git directory without HEAD, an unparsable config
// and repository formats it cannot read.
func openStorage(root string) (*filesystem.Storage, *objectDB, error) {
	dot, err := dotGitFS(root)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	repoFS, objects := dot, dot.Root()
	common, err := commonDir(dot)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if common != nil {
		repoFS, objects = dotgit.NewRepositoryFilesystem(dot, common), common.Root()
	}
	// The storage's own object reading is unused (see objectDB); its
	// cache only serves the objects Commit writes.
	st := filesystem.NewStorage(repoFS, cache.NewObjectLRU(0))
	if err := checkFormat(st); err != nil {
		_ = st.Close()
		return nil, nil, err
	}
	return st, newObjectDB(filepath.Join(objects, "objects")), nil
}

// checkFormat is git.Open's check, with readOnlySafeExtensions allowed.
func checkFormat(st *filesystem.Storage) error {
	if _, err := st.Reference(plumbing.HEAD); errors.Is(err, plumbing.ErrReferenceNotFound) {
		// .git exists (findRoot saw it): HEAD is gone.
		return fmt.Errorf("%w: no HEAD in the git directory", ErrCorrupt)
	}
	cfg, err := st.Config()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	version := cfg.Core.RepositoryFormatVersion
	if version != "" && version != "0" && version != "1" {
		return fmt.Errorf("%w: core.repositoryformatversion %q", errUnsupportedFormat, version)
	}
	if !cfg.Raw.HasSection("extensions") {
		return nil
	}
	for _, o := range cfg.Raw.Section("extensions").Options {
		ext := strings.ToLower(o.Key)
		if (version == "" || version == "0") && !extensionsValidForV0[ext] {
			return fmt.Errorf("%w: extension %s needs core.repositoryformatversion 1", errUnsupportedFormat, o.Key)
		}
		if !readOnlySafeExtensions[ext] {
			return fmt.Errorf("%w: unknown extension %s", errUnsupportedFormat, o.Key)
		}
	}
	return nil
}

func dotGitFS(root string) (billy.Filesystem, error) {
	p := filepath.Join(root, gitDirName)
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return osfs.New(p), nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir: ")
	if !ok {
		return nil, fmt.Errorf("%s: no gitdir line", p)
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(root, gitdir)
	}
	if _, err := os.Stat(gitdir); err != nil {
		// A moved or deleted main repository leaves worktrees and
		// submodules pointing at nothing.
		return nil, fmt.Errorf("%s names a git directory that cannot be read: %w", p, err)
	}
	return osfs.New(gitdir), nil
}

func commonDir(dot billy.Filesystem) (billy.Filesystem, error) {
	b, err := os.ReadFile(filepath.Join(dot.Root(), "commondir"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p := strings.TrimSpace(string(b))
	if !filepath.IsAbs(p) {
		p = filepath.Join(dot.Root(), p)
	}
	return osfs.New(p), nil
}

// checkHead reads HEAD and decodes the commit it names, so that a damaged
// repository is reported once, at Open, rather than as a string of odd
// failures later.
func (r *Repo) checkHead() error {
	ref, err := r.st.Reference(plumbing.HEAD)
	if err != nil {
		return fmt.Errorf("read HEAD: %w", err)
	}
	var h plumbing.Hash
	switch ref.Type() {
	case plumbing.SymbolicReference:
		if !strings.HasPrefix(ref.Target().String(), "refs/") {
			return fmt.Errorf("HEAD points at %q, which is not a ref", ref.Target())
		}
		target, err := storer.ResolveReference(r.st, ref.Target())
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
	if err := errors.Join(r.db.close(), r.st.Close()); err != nil {
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
	ref, err := r.st.Reference(plumbing.HEAD)
	if err != nil {
		return Head{}, fmt.Errorf("read HEAD: %w", err)
	}
	if ref.Type() != plumbing.SymbolicReference {
		return Head{Hash: ref.Hash().String(), Detached: true}, nil
	}
	h := Head{Branch: strings.TrimPrefix(ref.Target().String(), "refs/heads/")}
	target, err := storer.ResolveReference(r.st, ref.Target())
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
func resolveHead(st storer.ReferenceStorer) (plumbing.Hash, bool, error) {
	ref, err := storer.ResolveReference(st, plumbing.HEAD)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("read HEAD: %w", err)
	}
	return ref.Hash(), true, nil
}
