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
//     is read with go-git, in process. Walks stop quietly at the boundary of
//     a shallow clone instead of failing with "object not found"
//     (go-git/go-git#2409), and every walk honours its context.
//   - Work-tree state (Status, IsDirty) is read with the git CLI when it is
//     installed, because go-git's Worktree.Status is slow on large trees,
//     cannot be cancelled and ignores the global gitignore
//     (go-git/go-git#181, #327, #795). gitctx starts no process itself:
//     the caller passes a Runner to Open and CLIStatus. Without git (or
//     without a Runner) it falls back to go-git, bounded by a timeout.
//     Status never blocks past its timeout.
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
//     applies). go-git reads the environment in two places: the fallback
//     status reads $HOME to find the global gitignore, and Commit reads
//     $XDG_CONFIG_HOME and $HOME to find the author in the user's git
//     config.
//
// A Repo is safe for concurrent use. go-git is not (go-git/go-git#773:
// concurrent reads race on pack index maps and crash the process), so all
// go-git access through one Repo is serialised by a mutex.
package gitctx

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
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
)

// Repo is an open repository with a work tree.
type Repo struct {
	root string
	run  Runner // runs the git CLI; nil: go-git only

	mu   sync.Mutex // serialises go-git access (go-git/go-git#773)
	repo *git.Repository

	// fallbackBusy is set while a go-git status, abandoned after its
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
// their go-git fallbacks, as when git is not installed.
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
	repo, err := openGoGit(root)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", root, err)
	}
	r := &Repo{root: root, run: run, repo: repo}
	if err := r.checkHead(); err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("open %s: %w: %w", root, ErrCorrupt, err)
	}
	return r, nil
}

// recovered turns a panic inside go-git into an ErrCorrupt error. go-git
// has panicked on malformed objects and packfiles before, and a damaged
// repository must cost ralph its git context, not the whole process.
func recovered(what string, err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%s: %w: go-git panicked: %v", what, ErrCorrupt, p)
	}
}

// findRoot walks up from dir the way git's own discovery does: the first
// directory holding a .git (directory or file) is the work tree root; a
// directory that is itself a git directory without one is bare.
//
// go-git's DetectDotGit cannot be used for this on its own: it only looks for
// ".git" entries, so a bare repository surfaces as "repository does not
// exist" and could not be told apart from no repository at all.
func findRoot(dir string) (string, error) {
	for d := dir; ; {
		_, err := os.Stat(filepath.Join(d, git.GitDirName))
		if err == nil {
			return d, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("stat %s: %w", filepath.Join(d, git.GitDirName), err)
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
// deliberately absent: go-git v5 cannot read such repositories.
var readOnlySafeExtensions = map[string]bool{
	"noop":              true,
	"noop-v1":           true,
	"partialclone":      true,
	"preciousobjects":   true,
	"worktreeconfig":    true,
	"relativeworktrees": true,
}

// openGoGit opens the repository whose work tree is root: .git may be a
// directory or, in a linked worktree or submodule, a file naming the git
// directory, which for a linked worktree names the shared one in its
// commondir file.
//
// This is git.PlainOpenWithOptions (DetectDotGit, EnableDotGitCommonDir)
// spelled out, because that function offers no storage options: without
// MaxOpenDescriptors go-git opens, reads the header of and closes the
// packfile for every object it reads, which on a 20,000-commit repository
// nearly doubled Log and tripled StateCommits times.
func openGoGit(root string) (*git.Repository, error) {
	dot, err := dotGitFS(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	repoFS := dot
	common, err := commonDir(dot)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if common != nil {
		repoFS = dotgit.NewRepositoryFilesystem(dot, common)
	}
	st := filesystem.NewStorageWithOptions(repoFS, cache.NewObjectLRUDefault(), filesystem.Options{
		// Packfiles stay open between reads, at most this many at once;
		// Repo.Close releases them.
		MaxOpenDescriptors: 16,
	})
	wt := osfs.New(root)
	repo, err := git.Open(st, wt)
	switch {
	case err == nil:
		return repo, nil
	case errors.Is(err, git.ErrUnknownExtension):
		return openLenient(st, wt, err)
	case errors.Is(err, git.ErrUnsupportedRepositoryFormatVersion),
		errors.Is(err, git.ErrUnsupportedExtensionRepositoryFormatVersion):
		_ = st.Close()
		return nil, fmt.Errorf("unsupported repository format, ralph will carry on without git context: %w", err)
	case errors.Is(err, git.ErrRepositoryNotExists):
		// .git exists (findRoot saw it): go-git says this when HEAD is gone.
		_ = st.Close()
		return nil, fmt.Errorf("%w: no HEAD in the git directory", ErrCorrupt)
	default:
		_ = st.Close()
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
}

// openLenient opens a repository whose config lists extensions go-git v5
// refuses (any extension at all under repositoryformatversion 1), when
// every one of them is harmless for reading.
func openLenient(st *filesystem.Storage, wt billy.Filesystem, cause error) (*git.Repository, error) {
	cfg, err := st.Config()
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if cfg.Raw.HasSection("extensions") {
		for _, o := range cfg.Raw.Section("extensions").Options {
			if !readOnlySafeExtensions[strings.ToLower(o.Key)] {
				_ = st.Close()
				return nil, fmt.Errorf("unsupported repository format, ralph will carry on without git context: %w", cause)
			}
		}
	}
	repo, err := git.Open(lenientStorage{st}, wt)
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return repo, nil
}

// lenientStorage hides the [extensions] section from go-git's format check.
type lenientStorage struct{ *filesystem.Storage }

func (s lenientStorage) Config() (*config.Config, error) {
	cfg, err := s.Storage.Config()
	if err != nil {
		return nil, err
	}
	// The storage parses the file on every call, so this copy is ours.
	cfg.Raw.RemoveSection("extensions")
	return cfg, nil
}

func dotGitFS(root string) (billy.Filesystem, error) {
	p := filepath.Join(root, git.GitDirName)
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
	ref, err := r.repo.Storer.Reference(plumbing.HEAD)
	if err != nil {
		return fmt.Errorf("read HEAD: %w", err)
	}
	var h plumbing.Hash
	switch ref.Type() {
	case plumbing.SymbolicReference:
		if !strings.HasPrefix(ref.Target().String(), "refs/") {
			return fmt.Errorf("HEAD points at %q, which is not a ref", ref.Target())
		}
		target, err := r.repo.Reference(ref.Target(), true)
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
	if _, err := object.GetCommit(r.repo.Storer, h); err != nil {
		return fmt.Errorf("read HEAD commit %s: %w", h, err)
	}
	return nil
}

// Close releases the packfiles the Repo keeps open. The Repo must not be
// used afterwards.
func (r *Repo) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.repo.Storer.(io.Closer); ok {
		if err := c.Close(); err != nil {
			return fmt.Errorf("close: %w", err)
		}
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
	ref, err := r.repo.Storer.Reference(plumbing.HEAD)
	if err != nil {
		return Head{}, fmt.Errorf("read HEAD: %w", err)
	}
	if ref.Type() != plumbing.SymbolicReference {
		return Head{Hash: ref.Hash().String(), Detached: true}, nil
	}
	h := Head{Branch: strings.TrimPrefix(ref.Target().String(), "refs/heads/")}
	target, err := r.repo.Reference(ref.Target(), true)
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
func (r *Repo) headHash() (plumbing.Hash, bool, error) {
	ref, err := r.repo.Head()
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("read HEAD: %w", err)
	}
	return ref.Hash(), true, nil
}

// resolve turns a revision into a commit hash, peeling annotated tags.
// The caller holds r.mu.
func (r *Repo) resolve(rev string) (plumbing.Hash, error) {
	h, err := r.repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("resolve %q: %w: %w", rev, ErrUnknownRevision, err)
	}
	obj, err := r.repo.Storer.EncodedObject(plumbing.AnyObject, *h)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("resolve %q: %w: %w", rev, ErrUnknownRevision, err)
	}
	switch obj.Type() {
	case plumbing.CommitObject:
		return *h, nil
	case plumbing.TagObject:
		tag, err := object.DecodeTag(r.repo.Storer, obj)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("resolve %q: %w", rev, err)
		}
		c, err := tag.Commit()
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("resolve %q: %w: %w", rev, ErrUnknownRevision, err)
		}
		return c.Hash, nil
	default:
		return plumbing.ZeroHash, fmt.Errorf("resolve %q: %w: names a %s, not a commit", rev, ErrUnknownRevision, obj.Type())
	}
}
