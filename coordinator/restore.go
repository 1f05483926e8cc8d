package coordinator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/gitctx"
	"github.com/ralph-dev/ralph/mdstate"
)

// ErrUncommitted reports a state file whose uncommitted changes a restore
// would throw away; RestoreOptions.Force overrides it.
var ErrUncommitted = errors.New("uncommitted changes that restoring would discard")

// RestoreOptions say which state file to put back, and from where.
type RestoreOptions struct {
	File string // a state file's name, like RALPH_TASKS.md
	// From is the revision to restore (a hash, branch, tag, HEAD~3); ""
	// means the last commit that changed the file.
	From  string
	Force bool      // restore even over uncommitted changes
	Now   time.Time // stamps the backup's name; zero means the clock
}

// RestoreResult says what Restore did.
type RestoreResult struct {
	File string
	// Rev is the revision the file was restored from: From, else the hash
	// of the last commit that changed it, or "HEAD" in a shallow clone
	// that lacks that commit (HEAD has the same version).
	Rev string
	// Commit is the last commit that changed the file when Restore chose
	// it (From was ""); nil otherwise.
	Commit *gitctx.Commit
	// Unchanged is true when the file already was as at Rev: nothing
	// was written.
	Unchanged bool
	// Backup is the absolute path where the replaced version is kept
	// (mdstate.BackupDir); "" when there was no file to replace.
	Backup string
}

// Restore puts state file o.File of project p back as it was at a commit.
// The version it replaces is kept first (Project.Backup); a file with
// uncommitted changes is refused with ErrUncommitted unless o.Force. A
// project outside git is an error wrapping gitctx.ErrNotRepo, a From that
// names no commit one wrapping gitctx.ErrUnknownRevision.
func Restore(ctx context.Context, p *mdstate.Project, o RestoreOptions) (RestoreResult, error) {
	res := RestoreResult{File: o.File}
	repo, err := gitctx.Open(p.Root, proc.Runner{})
	if err != nil {
		return res, err
	}
	defer repo.Close()
	path := relToRepo(repo, p.Root) + o.File
	res.Rev, res.Commit, err = restorePoint(ctx, repo, path, o)
	if err != nil {
		return res, err
	}
	data, err := repo.FileAt(ctx, res.Rev, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return res, fmt.Errorf("%s did not exist at %s; see `ralph history %s`", o.File, res.Rev, o.File)
	case err != nil:
		return res, fmt.Errorf("restore %s: %w", o.File, err)
	}
	cur, exists, err := currentVersion(p, o.File)
	if err != nil {
		return res, err
	}
	if exists && bytes.Equal(cur, data) {
		res.Unchanged = true
		return res, nil
	}
	if exists && !o.Force {
		dirty, err := repo.IsDirty(ctx, path)
		if err != nil {
			return res, err
		}
		if dirty {
			return res, fmt.Errorf("%s has %w", o.File, ErrUncommitted)
		}
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	res.Backup, err = p.RestoreFile(o.File, data, now)
	return res, err
}

// restorePoint returns the revision to restore path from: o.From, else
// the last commit that changed it, else HEAD when HEAD has it (in a
// shallow clone that commit may be beyond the boundary).
func restorePoint(ctx context.Context, repo *gitctx.Repo, path string, o RestoreOptions) (string, *gitctx.Commit, error) {
	if o.From != "" {
		return o.From, nil, nil
	}
	cs, err := repo.StateCommits(ctx, []string{path}, 1)
	switch {
	case err != nil:
		return "", nil, err
	case len(cs) > 0:
		return cs[0].Hash, &cs[0], nil
	case committedAtHead(ctx, repo, path):
		return "HEAD", nil, nil
	}
	return "", nil, fmt.Errorf("%s has never been committed, so there is no version to restore", o.File)
}

// currentVersion reads the state file as it is now; exists is false when
// there is none (or it cannot be read: restore is how a damaged file is
// repaired). A folder in its place is an error.
func currentVersion(p *mdstate.Project, name string) (data []byte, exists bool, err error) {
	if fi, err := os.Stat(p.Path(name)); err == nil && fi.IsDir() {
		return nil, false, fmt.Errorf("%s is a directory; move it out of the way first", name)
	}
	data, err = os.ReadFile(p.Path(name))
	return data, err == nil, nil
}
