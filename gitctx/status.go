package gitctx

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// DefaultStatusTimeout is used by Status when given a timeout <= 0.
const DefaultStatusTimeout = 2 * time.Second

// Where a Status came from.
const (
	SourceCLI = "git" // the git CLI
	// SourceFallback is gitctx's own reading, without git (the name is
	// from when go-git's Worktree.Status did it; scripts read it).
	SourceFallback = "go-git"
)

// Status is the state of the work tree against HEAD.
type Status struct {
	Available bool   // false: the lists are empty because status could not be read
	Source    string // SourceCLI or SourceFallback
	// Paths relative to the work tree root, slash-separated, sorted.
	// Modified includes type changes and submodules with new commits or
	// changes inside. A rename is reported as a deletion plus an addition.
	Modified  []string
	Added     []string
	Deleted   []string
	Untracked []string
	Unmerged  []string // conflicts left by a merge, rebase or cherry-pick
	Reason    string   // why Available is false
}

// Clean reports an available status with nothing to report.
func (s Status) Clean() bool { return s.Available && s.empty() }

func (s Status) empty() bool {
	return len(s.Modified)+len(s.Added)+len(s.Deleted)+len(s.Untracked)+len(s.Unmerged) == 0
}

// statusArgs: porcelain v2 with NUL separators is the stable, unquoted
// machine format; --no-renames makes a rename a deletion plus an addition
// whatever status.renames says; --untracked-files=all lists files, not
// just their directory. --no-optional-locks keeps git from refreshing and
// rewriting the index, which would take index.lock from under an agent.
var statusArgs = []string{
	"--no-optional-locks", "status", "--porcelain=v2", "-z",
	"--untracked-files=all", "--no-renames",
}

// Status reports uncommitted changes. It returns within timeout (<= 0 means
// DefaultStatusTimeout) or when ctx ends, whichever is first, and never
// fails: problems are reported as Available=false with a Reason.
//
// It runs `git status` when git is installed. Otherwise, or if git fails,
// it reads the index and the work tree itself (fallbackStatus).
func (r *Repo) Status(ctx context.Context, timeout time.Duration) Status {
	if timeout <= 0 {
		timeout = DefaultStatusTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	st, err := startCLIStatus(ctx, r.run, r.root, timeout)()
	return r.orFallback(ctx, timeout, st, err)
}

// CLIStatus runs only the git CLI's status, in dir (any directory of the
// work tree: porcelain paths are relative to the work tree root). It needs
// no Repo, so a caller can start it before Open and let it run while go-git
// reads the history; ErrNoCLI means git is not installed (or run is nil)
// or failed, and the caller should use Repo.StatusAfter for the fallback.
func CLIStatus(ctx context.Context, run Runner, dir string, timeout time.Duration) (Status, error) {
	return StartCLIStatus(ctx, run, dir, timeout)()
}

// StartCLIStatus starts what CLIStatus runs and returns once git runs, or
// once it is clear that git will not; wait, which must be called, returns
// what CLIStatus would. A caller with other work to begin starts git
// first, with no goroutine between it and git's start: git's status is
// the longest of that work (issue 14).
func StartCLIStatus(ctx context.Context, run Runner, dir string, timeout time.Duration) (wait func() (Status, error)) {
	if timeout <= 0 {
		timeout = DefaultStatusTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	git := startCLIStatus(ctx, run, dir, timeout)
	return func() (Status, error) {
		defer cancel()
		return git()
	}
}

// ErrNoCLI reports that the git CLI is missing or failed, so its status is
// not to be had; the fallback's may be.
var ErrNoCLI = errors.New("git status unavailable from the git CLI")

// errNoGit reports that there is no git CLI to run: no Runner, or git is
// not on PATH. It is not worth mentioning beside a fallback's failure.
var errNoGit = errors.New("no git CLI")

// outsideRepository reports whether git, run in dir, could find no
// repository: nothing named .git in dir or any folder above it, dir not a
// git folder itself, and none named by git's environment (GIT_DIR and the
// like). Where it cannot tell (a folder it may not read), it says false,
// and git is asked.
func outsideRepository(dir string) bool {
	for _, name := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR"} {
		if os.Getenv(name) != "" {
			return false
		}
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		if _, err := os.Lstat(filepath.Join(d, gitDirName)); !errors.Is(err, fs.ErrNotExist) {
			return false // there, or unreadable
		}
		if isGitDir(d) {
			return false
		}
		parent := filepath.Dir(d)
		if parent == d {
			return true
		}
		d = parent
	}
}

// findGit reports whether run can run git.
func findGit(run Runner) error {
	if run == nil {
		return fmt.Errorf("%w: no runner given", errNoGit)
	}
	if _, err := run.LookPath("git"); err != nil {
		return fmt.Errorf("%w: %w", errNoGit, err)
	}
	return nil
}

// StatusAfter completes a CLIStatus: it returns st, or the fallback's
// status when the CLI could not give one (err wraps ErrNoCLI).
func (r *Repo) StatusAfter(ctx context.Context, timeout time.Duration, st Status, err error) Status {
	if timeout <= 0 {
		timeout = DefaultStatusTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return r.orFallback(ctx, timeout, st, err)
}

func (r *Repo) orFallback(ctx context.Context, timeout time.Duration, st Status, err error) Status {
	if err == nil || !errors.Is(err, ErrNoCLI) {
		return st
	}
	fb := r.fallback(ctx, timeout)
	if !fb.Available && !errors.Is(err, errNoGit) {
		fb.Reason += fmt.Sprintf(" (git status also failed: %v)", err)
	}
	return fb
}

// startCLIStatus starts git status in dir; wait returns its answer. An
// error wrapping ErrNoCLI means git is missing or failed (e.g. "detected
// dubious ownership" on a checkout owned by another user, which the
// fallback does not check); a timeout is a Status with a Reason, not an
// error, since the fallback would only be slower.
func startCLIStatus(ctx context.Context, run Runner, dir string, timeout time.Duration) (wait func() (Status, error)) {
	if outsideRepository(dir) {
		// git would only say so: starting it costs a millisecond or more.
		return failedStatus(fmt.Errorf("%w: %w", ErrNoCLI, ErrNotRepo))
	}
	if err := findGit(run); err != nil {
		return failedStatus(fmt.Errorf("%w: %w", ErrNoCLI, err))
	}
	git, err := startGit(ctx, run, dir, statusArgs...)
	if err != nil {
		return func() (Status, error) { return cliStatusOf(ctx, timeout, nil, err) }
	}
	return func() (Status, error) {
		out, err := git()
		return cliStatusOf(ctx, timeout, out, err)
	}
}

// failedStatus is the wait of a status that failed before git's start.
func failedStatus(err error) func() (Status, error) {
	return func() (Status, error) { return Status{}, err }
}

// cliStatusOf is startCLIStatus's answer from git's output and error.
func cliStatusOf(ctx context.Context, timeout time.Duration, out []byte, err error) (Status, error) {
	if err == nil {
		st, perr := parsePorcelainV2(out)
		if perr != nil {
			return Status{Source: SourceCLI, Reason: "status unavailable: " + perr.Error()}, nil
		}
		st.Available, st.Source = true, SourceCLI
		return st, nil
	}
	if ctx.Err() != nil {
		return Status{Source: SourceCLI, Reason: unavailableReason(ctx, timeout)}, nil
	}
	return Status{}, fmt.Errorf("%w: %w", ErrNoCLI, err)
}

func unavailableReason(ctx context.Context, timeout time.Duration) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("status unavailable: timed out after %s", timeout)
	}
	return fmt.Sprintf("status unavailable: %v", context.Cause(ctx))
}

// runGit runs git in the work tree root and returns when it finishes or
// as soon as ctx ends; a git that outlives ctx is stopped by the Runner
// without anyone waiting for it (git exits on SIGINT at once, removing
// its lock files).
func (r *Repo) runGit(ctx context.Context, args ...string) ([]byte, error) {
	return runGit(ctx, r.run, r.root, args...)
}

func runGit(ctx context.Context, run Runner, dir string, args ...string) ([]byte, error) {
	wait, err := startGit(ctx, run, dir, args...)
	if err != nil {
		return nil, err
	}
	return wait()
}

// startGit starts git in dir and returns once it runs; wait returns when
// git finishes or as soon as ctx ends.
func startGit(ctx context.Context, run Runner, dir string, args ...string) (wait func() ([]byte, error), err error) {
	git, err := run.Start(ctx, dir, "git", args...)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("git: %w", ctx.Err())
		}
		return nil, err
	}
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := git()
		done <- result{out, err}
	}()
	return func() ([]byte, error) {
		select {
		case res := <-done:
			return res.out, res.err
		case <-ctx.Done():
			return nil, fmt.Errorf("git: %w", ctx.Err())
		}
	}, nil
}

// parsePorcelainV2 parses `git status --porcelain=v2 -z` output. Records
// are NUL-terminated; the path is the last field and may contain spaces
// (or even newlines), so each record is split into a fixed number of
// fields before it. Rename and copy records carry their original path in
// the next NUL-terminated token.
func parsePorcelainV2(out []byte) (Status, error) {
	var st Status
	recs := strings.Split(string(out), "\x00")
	if n := len(recs); n > 0 && recs[n-1] == "" {
		recs = recs[:n-1]
	}
	for i := 0; i < len(recs); i++ {
		rec := recs[i]
		if rec == "" {
			return Status{}, fmt.Errorf("parse status: empty record %d", i)
		}
		switch rec[0] {
		case '#', '!': // headers (--branch) and ignored files
		case '?':
			st.Untracked = append(st.Untracked, strings.TrimPrefix(rec, "? "))
		case '1': // 1 XY sub mH mI mW hH hI path
			f := strings.SplitN(rec, " ", 9)
			if len(f) != 9 || len(f[1]) != 2 {
				return Status{}, fmt.Errorf("parse status: bad ordinary record %q", rec)
			}
			st.addOrdinary(f[1], f[8])
		case '2': // 2 XY sub mH mI mW hH hI Xscore path, then origPath
			f := strings.SplitN(rec, " ", 10)
			if len(f) != 10 || len(f[1]) != 2 || i+1 >= len(recs) {
				return Status{}, fmt.Errorf("parse status: bad rename record %q", rec)
			}
			i++
			orig := recs[i]
			xy, p := f[1], f[9]
			if xy[0] == 'R' {
				st.Deleted = append(st.Deleted, orig)
			}
			if xy[1] == 'D' {
				// Renamed in the index, then removed from the work tree.
				break
			}
			st.Added = append(st.Added, p)
		case 'u': // u XY sub m1 m2 m3 mW h1 h2 h3 path
			f := strings.SplitN(rec, " ", 11)
			if len(f) != 11 {
				return Status{}, fmt.Errorf("parse status: bad unmerged record %q", rec)
			}
			st.Unmerged = append(st.Unmerged, f[10])
		default:
			return Status{}, fmt.Errorf("parse status: unknown record %q", rec)
		}
	}
	st.sort()
	return st, nil
}

// addOrdinary files one changed entry by its XY code (X: index against
// HEAD, Y: work tree against index) as the work tree against HEAD.
func (st *Status) addOrdinary(xy, p string) {
	x, y := xy[0], xy[1]
	switch {
	case x == 'A': // even "AD": the index still adds it, as a commit would

		st.Added = append(st.Added, p)
	case x == 'D' || y == 'D':
		st.Deleted = append(st.Deleted, p)
	default: // M, T, or a submodule's own changes
		st.Modified = append(st.Modified, p)
	}
}

func (st *Status) sort() {
	for _, l := range []*[]string{&st.Modified, &st.Added, &st.Deleted, &st.Untracked, &st.Unmerged} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
}

// fallback is the status for machines without git (fallback.go). It runs
// in a goroutine so that Status returns by its deadline even when a file
// read blocks (a hung network mount); the scan itself stops at ctx's end.
// Until an abandoned one returns, further calls report unavailable rather
// than pile up more of them.
func (r *Repo) fallback(ctx context.Context, timeout time.Duration) Status {
	if ctx.Err() != nil {
		return Status{Source: SourceFallback, Reason: unavailableReason(ctx, timeout)}
	}
	if !r.fallbackBusy.CompareAndSwap(false, true) {
		return Status{Source: SourceFallback, Reason: "status unavailable: an earlier status without git that timed out is still running"}
	}
	type result struct {
		st  Status
		err error
	}
	done := make(chan result, 1)
	go func() {
		var res result
		func() {
			defer r.fallbackBusy.Store(false) // before the result is seen
			res.st, res.err = fallbackStatus(ctx, r.root)
		}()
		done <- res
	}()
	select {
	case res := <-done:
		if res.err != nil {
			if ctx.Err() != nil {
				return Status{Source: SourceFallback, Reason: unavailableReason(ctx, timeout)}
			}
			return Status{Source: SourceFallback, Reason: "status unavailable: " + res.err.Error()}
		}
		res.st.Available, res.st.Source = true, SourceFallback
		return res.st
	case <-ctx.Done():
		return Status{Source: SourceFallback, Reason: unavailableReason(ctx, timeout)}
	}
}

// IsDirty reports whether path (relative to the root) differs between the
// work tree or index and HEAD: modified, staged, deleted, or untracked and
// not ignored. It asks git about that one path only, which is cheap even
// in a large repository. Without git it compares the file's blob hash with
// HEAD's; that ignores clean/smudge filters and autocrlf, so it may call a
// converted file dirty, and it does not consult ignore rules.
func (r *Repo) IsDirty(ctx context.Context, path string) (bool, error) {
	clean, err := cleanPath(path)
	if err != nil {
		return false, fmt.Errorf("is dirty: %w", err)
	}
	if findGit(r.run) != nil {
		return r.dirtyByHash(clean)
	}
	args := append(slices.Clone(statusArgs), "--", ":(literal)"+clean)
	out, err := r.runGit(ctx, args...)
	if err != nil {
		return false, fmt.Errorf("is dirty %s: %w", clean, err)
	}
	st, err := parsePorcelainV2(out)
	if err != nil {
		return false, fmt.Errorf("is dirty %s: %w", clean, err)
	}
	return !st.empty(), nil
}

func (r *Repo) dirtyByHash(p string) (_ bool, err error) {
	defer recovered("is dirty", &err)
	r.mu.Lock()
	defer r.mu.Unlock()
	var headHash plumbing.Hash
	h, born, err := r.headHash()
	if err != nil {
		return false, fmt.Errorf("is dirty %s: %w", p, err)
	}
	if born {
		c, err := r.db.commit(h)
		if err != nil {
			return false, fmt.Errorf("is dirty %s: read HEAD: %w", p, err)
		}
		tree, err := r.db.tree(c.tree)
		if err != nil {
			return false, fmt.Errorf("is dirty %s: read tree: %w", p, err)
		}
		if e, err := r.db.findEntry(tree, p); err == nil && e.mode.IsFile() {
			headHash = e.hash
		}
	}
	full := filepath.Join(r.root, filepath.FromSlash(p))
	fi, err := os.Lstat(full)
	if errors.Is(err, os.ErrNotExist) {
		return !headHash.IsZero(), nil
	}
	if err != nil {
		return false, fmt.Errorf("is dirty %s: %w", p, err)
	}
	var content []byte
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(full)
		if err != nil {
			return false, fmt.Errorf("is dirty %s: %w", p, err)
		}
		content = []byte(filepath.ToSlash(target))
	case fi.Mode().IsRegular():
		if content, err = os.ReadFile(full); err != nil {
			return false, fmt.Errorf("is dirty %s: %w", p, err)
		}
	case fi.IsDir() && headHash.IsZero():
		// Could hold untracked files; without git's ignore rules and
		// index there is no cheap honest answer.
		return false, fmt.Errorf("is dirty %s: a directory; without git only files can be checked", p)
	default:
		return true, nil // something else where HEAD has a file
	}
	return plumbing.ComputeHash(plumbing.BlobObject, content) != headHash, nil
}
