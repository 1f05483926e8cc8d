package coordinator

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/gitctx"
	"github.com/ralph-dev/ralph/mdstate"
)

// History is the commits that changed a project's state files.
type History struct {
	Commits []StateCommit // newest first
	// Shallow is true when no commit was found although a file is in
	// HEAD: the commits that changed it lie beyond a shallow clone's
	// boundary.
	Shallow bool
}

// StateCommit is one commit that changed state files.
type StateCommit struct {
	gitctx.Commit
	Changes []FileChange // one per state file asked about that it changed, in path order
}

// FileChange is what one commit did to one state file.
type FileChange struct {
	File    string // the state file's name, like RALPH_TASKS.md
	Deleted bool
	// ReadErr is set when the file could not be read at the commit, and
	// Unreadable when it could but is not a file ralph can parse; Diff
	// is meaningful only when neither is, and the file was not deleted.
	ReadErr    error
	Unreadable error
	Diff       mdstate.FileDiff
}

// StateHistory returns up to limit commits, newest first, that changed
// any of the given state files (names like RALPH_TASKS.md) of project p,
// each with what it changed in them. A project outside git is an error
// wrapping gitctx.ErrNotRepo.
func StateHistory(ctx context.Context, p *mdstate.Project, files []string, limit int) (History, error) {
	repo, err := gitctx.Open(p.Root, proc.Runner{})
	if err != nil {
		return History{}, err
	}
	defer repo.Close()
	rel := relToRepo(repo, p.Root)
	byPath := map[string]string{}
	var paths []string
	for _, name := range files {
		byPath[rel+name] = name
		paths = append(paths, rel+name)
	}
	commits, err := repo.StateCommits(ctx, paths, limit)
	if err != nil {
		return History{}, err
	}
	var h History
	for _, c := range commits {
		sc := StateCommit{Commit: c}
		for _, path := range c.Files {
			if name, ok := byPath[path]; ok {
				sc.Changes = append(sc.Changes, fileChange(ctx, repo, c.Hash, path, name))
			}
		}
		h.Commits = append(h.Commits, sc)
	}
	if len(h.Commits) == 0 {
		for _, path := range paths {
			if committedAtHead(ctx, repo, path) {
				h.Shallow = true
				break
			}
		}
	}
	return h, nil
}

// fileChange reads what commit hash did to the file at path.
func fileChange(ctx context.Context, repo *gitctx.Repo, hash, path, name string) FileChange {
	fc := FileChange{File: name}
	after, err := repo.FileAt(ctx, hash, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fc.Deleted = true
		return fc
	case err != nil:
		fc.ReadErr = err
		return fc
	}
	before, err := repo.FileAt(ctx, hash+"^", path)
	if err != nil {
		before = nil // a new file, or the first commit
	}
	fc.Diff, fc.Unreadable = mdstate.DiffFile(name, before, after)
	return fc
}

// relToRepo returns the project root relative to the work tree's root,
// with a trailing slash ("" when they are the same), for git paths.
func relToRepo(repo *gitctx.Repo, root string) string {
	rel, err := filepath.Rel(repo.Root(), root)
	if err != nil || rel == "." {
		return ""
	}
	return filepath.ToSlash(rel) + "/"
}

// committedAtHead reports whether path is in HEAD's tree.
func committedAtHead(ctx context.Context, repo *gitctx.Repo, path string) bool {
	_, err := repo.FileAt(ctx, "HEAD", path)
	return err == nil
}
