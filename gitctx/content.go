package gitctx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// FileAt returns the content of the root-relative path at revision rev
// (a full or abbreviated hash, a branch, a tag, HEAD~2, HASH^2: the forms
// of `git rev-parse` but reflogs and message searches). A path absent at rev wraps fs.ErrNotExist; a
// revision that names no commit wraps ErrUnknownRevision.
func (r *Repo) FileAt(ctx context.Context, rev, p string) (_ []byte, err error) {
	defer recovered("file at", &err)
	clean, err := cleanPath(p)
	if err != nil {
		return nil, fmt.Errorf("file at %s: %w", rev, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("file at %s: %w", rev, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.resolve(rev)
	if err != nil {
		return nil, fmt.Errorf("file at: %w", err)
	}
	tree, err := r.db.tree(c.tree)
	if err != nil {
		return nil, fmt.Errorf("read tree of %s: %w", c.hash, err)
	}
	e, err := r.db.findEntry(tree, clean)
	if errors.Is(err, errNoEntry) {
		return nil, fmt.Errorf("%s at %s: %w", clean, rev, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("find %s at %s: %w", clean, rev, err)
	}
	if !e.mode.IsFile() {
		return nil, fmt.Errorf("%s at %s is not a file (mode %s)", clean, rev, e.mode)
	}
	// A missing blob (a partial clone) is an error, not "no such file".
	b, err := r.db.blob(e.hash)
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", clean, rev, err)
	}
	return bytes.Clone(b), nil // the object reader may keep b in its cache
}

// diffStat compares the trees of two commits. The caller holds r.mu.
func (r *Repo) diffStat(ctx context.Context, from, to plumbing.Hash) (DiffStat, error) {
	if from == to {
		return DiffStat{}, nil
	}
	var trees [2]plumbing.Hash
	for i, h := range []plumbing.Hash{from, to} {
		c, err := r.db.commit(h)
		if err != nil {
			return DiffStat{}, err
		}
		trees[i] = c.tree
	}
	changes, err := r.diffTrees(ctx, trees[0], trees[1], 0)
	if err != nil {
		return DiffStat{}, err
	}
	st := DiffStat{Files: len(changes)}
	for _, ch := range changes {
		if err := ctx.Err(); err != nil {
			return DiffStat{}, err
		}
		a, err := r.sideContent(ch.path, ch.from)
		if err != nil {
			return DiffStat{}, err
		}
		b, err := r.sideContent(ch.path, ch.to)
		if err != nil {
			return DiffStat{}, err
		}
		if isBinary(a) || isBinary(b) {
			continue // git counts the file but no lines
		}
		ins, del := countLines(ctx, string(a), string(b))
		st.Insertions += ins
		st.Deletions += del
	}
	return st, nil
}

// sideContent is what git diffs for one side of a change: the blob, or for
// a submodule the "Subproject commit" line git prints in its place.
func (r *Repo) sideContent(p string, e treeEntry) ([]byte, error) {
	if e.hash.IsZero() {
		return nil, nil // the path does not exist on this side
	}
	if e.mode == filemode.Submodule {
		return []byte("Subproject commit " + e.hash.String() + "\n"), nil
	}
	b, err := r.db.blob(e.hash)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return b, nil
}

// isBinary is git's heuristic: a NUL byte in the first 8000 bytes.
func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0
}

// countLines counts inserted and deleted lines of a line diff. The diff is
// minimal (Myers) unless ctx's deadline cuts it short, so the counts match
// git's for any file git does not treat as binary.
func countLines(ctx context.Context, a, b string) (ins, del int) {
	timeout := time.Hour // go-git's own choice for diff.Do
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	for _, d := range diff.DoWithTimeout(a, b, timeout) {
		n := strings.Count(d.Text, "\n")
		if d.Text != "" && !strings.HasSuffix(d.Text, "\n") {
			n++ // a last line without newline is still a line
		}
		switch d.Type {
		case diffmatchpatch.DiffInsert:
			ins += n
		case diffmatchpatch.DiffDelete:
			del += n
		}
	}
	return ins, del
}

// cleanPath turns a root-relative path into git's slash form and refuses
// anything that would leave the work tree.
func cleanPath(p string) (string, error) {
	if p == "" || filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q: must be relative to the repository root", p)
	}
	c := path.Clean(filepath.ToSlash(p))
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q: must name something inside the repository", p)
	}
	return c, nil
}
