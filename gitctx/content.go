package gitctx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// FileAt returns the content of the root-relative path at revision rev
// (anything `git rev-parse` would take for a commit: a hash or prefix, a
// branch, a tag, HEAD~2). A path absent at rev wraps fs.ErrNotExist; a
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
	h, err := r.resolve(rev)
	if err != nil {
		return nil, fmt.Errorf("file at: %w", err)
	}
	c, err := object.GetCommit(r.repo.Storer, h)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", h, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("read tree of %s: %w", h, err)
	}
	e, err := tree.FindEntry(clean)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return nil, fmt.Errorf("%s at %s: %w", clean, rev, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("find %s at %s: %w", clean, rev, err)
	}
	if !e.Mode.IsFile() {
		return nil, fmt.Errorf("%s at %s is not a file (mode %s)", clean, rev, e.Mode)
	}
	// Read the blob directly: Tree.File turns a missing blob (a partial
	// clone) into "file not found", which would be a lie here.
	b, err := readBlob(r.repo.Storer, e.Hash)
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", clean, rev, err)
	}
	return b, nil
}

func readBlob(s interface {
	EncodedObject(plumbing.ObjectType, plumbing.Hash) (plumbing.EncodedObject, error)
}, h plumbing.Hash) ([]byte, error) {
	obj, err := s.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, err
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// diffStat compares the trees of two commits. The caller holds r.mu.
func (r *Repo) diffStat(ctx context.Context, from, to plumbing.Hash) (DiffStat, error) {
	if from == to {
		return DiffStat{}, nil
	}
	trees := make([]*object.Tree, 2)
	for i, h := range []plumbing.Hash{from, to} {
		c, err := object.GetCommit(r.repo.Storer, h)
		if err != nil {
			return DiffStat{}, fmt.Errorf("read commit %s: %w", h, err)
		}
		if trees[i], err = c.Tree(); err != nil {
			return DiffStat{}, fmt.Errorf("read tree of %s: %w", h, err)
		}
	}
	changes, err := diffTrees(ctx, r.repo.Storer, trees[0], trees[1])
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
func (r *Repo) sideContent(p string, e object.TreeEntry) ([]byte, error) {
	if e.Hash.IsZero() {
		return nil, nil // the path does not exist on this side
	}
	if e.Mode == filemode.Submodule {
		return []byte("Subproject commit " + e.Hash.String() + "\n"), nil
	}
	b, err := readBlob(r.repo.Storer, e.Hash)
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
