package coordinator

import (
	"context"
	"path/filepath"
	"slices"

	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/gitctx"
	"github.com/ralph-dev/ralph/mdstate"
)

// commitTask commits a completed task (--commit) and counts it in the
// session. It returns the commit's short hash ("" when there was nothing
// to commit), or why it failed: a failed commit is noted, not fatal.
func (c *Coordinator) commitTask(ctx context.Context, dirtyBefore []string, task *mdstate.Item) (string, string) {
	// The title is read back from RALPH_TASKS.md, which the agent may
	// have edited: a secret in it stays out of git's history.
	hash, err := c.commit(ctx, dirtyBefore, c.opts.redactor().redact(mdstate.CleanText("ralph: "+task.ID+" "+task.Title)))
	switch {
	case err != nil:
		return "", err.Error()
	case hash == "":
		return "", ""
	}
	c.session.Commits++ // saved with the next write of the session
	return hash[:7], ""
}

// commit records a completed task: the paths that are dirty now and were
// not before it (what its agent changed), plus the state files, which ralph
// itself keeps current. The progress entry that names the commit is
// appended after it, so it goes into the next task's commit.
func (c *Coordinator) commit(ctx context.Context, dirtyBefore []string, msg string) (string, error) {
	repo, err := gitctx.Open(c.opts.Root, proc.Runner{})
	if err != nil {
		return "", err
	}
	defer repo.Close()
	rel, err := filepath.Rel(repo.Root(), c.opts.Root)
	if err != nil {
		return "", err
	}
	prefix := ""
	if rel != "." {
		prefix = filepath.ToSlash(rel) + "/"
	}
	state := map[string]bool{}
	for _, name := range mdstate.Files {
		state[prefix+name] = true
	}
	var paths []string
	for _, p := range dirtyPaths(ctx, c.opts.Root) {
		if state[p] || !slices.Contains(dirtyBefore, p) {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return "", nil
	}
	return repo.Commit(ctx, paths, msg+"\n", c.opts.Now())
}

// dirtyPaths lists the work tree's changed and untracked paths, or nothing
// without git.
func dirtyPaths(ctx context.Context, root string) []string {
	st, err := gitctx.CLIStatus(ctx, proc.Runner{}, root, 0)
	if err != nil || !st.Available {
		return nil
	}
	var out []string
	for _, l := range [][]string{st.Modified, st.Added, st.Deleted, st.Untracked} {
		out = append(out, l...)
	}
	slices.Sort(out)
	return out
}
