package gitctx

import (
	"context"
	"fmt"
	"path"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// change is one path that differs between two trees; an absent side has
// the zero hash.
type change struct {
	path     string
	from, to object.TreeEntry
}

// diffTrees lists the non-directory paths that differ between trees a and
// b (either may be nil), without rename detection.
//
// It replaces object.DiffTree, whose tree noder lists a directory's
// children by loading every subtree of it (TreeWalker.Next fetches each
// Dir entry even when not recursing), so a one-file commit in a wide tree
// decodes hundreds of unchanged trees. Here only subtrees whose hashes
// differ are read, as in git.
func diffTrees(ctx context.Context, s storer.EncodedObjectStorer, a, b *object.Tree) ([]change, error) {
	var out []change
	err := diffInto(ctx, s, a, b, "", &out)
	return out, err
}

func diffInto(ctx context.Context, s storer.EncodedObjectStorer, a, b *object.Tree, prefix string, out *[]change) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var ae, be []object.TreeEntry
	if a != nil {
		ae = a.Entries
	}
	if b != nil {
		be = b.Entries
	}
	old := make(map[string]object.TreeEntry, len(ae))
	for _, e := range ae {
		old[e.Name] = e
	}
	for _, n := range be {
		o, found := old[n.Name]
		delete(old, n.Name)
		if found && o.Hash == n.Hash && o.Mode == n.Mode {
			continue
		}
		p := path.Join(prefix, n.Name)
		switch {
		case found && o.Mode == filemode.Dir && n.Mode == filemode.Dir:
			ot, err := getTree(s, o.Hash)
			if err != nil {
				return err
			}
			nt, err := getTree(s, n.Hash)
			if err != nil {
				return err
			}
			if err := diffInto(ctx, s, ot, nt, p, out); err != nil {
				return err
			}
		case found && o.Mode != filemode.Dir && n.Mode != filemode.Dir:
			*out = append(*out, change{path: p, from: o, to: n})
		default: // added, or replaced by something of the other kind
			if found {
				if err := oneSide(ctx, s, o, p, true, out); err != nil {
					return err
				}
			}
			if err := oneSide(ctx, s, n, p, false, out); err != nil {
				return err
			}
		}
	}
	for _, e := range ae {
		if _, gone := old[e.Name]; gone {
			if err := oneSide(ctx, s, e, path.Join(prefix, e.Name), true, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// oneSide records e (recursively, for a directory) as deleted or added.
func oneSide(ctx context.Context, s storer.EncodedObjectStorer, e object.TreeEntry, p string, deleted bool, out *[]change) error {
	if e.Mode != filemode.Dir {
		c := change{path: p}
		if deleted {
			c.from = e
		} else {
			c.to = e
		}
		*out = append(*out, c)
		return nil
	}
	t, err := getTree(s, e.Hash)
	if err != nil {
		return err
	}
	if deleted {
		return diffInto(ctx, s, t, nil, p, out)
	}
	return diffInto(ctx, s, nil, t, p, out)
}

func getTree(s storer.EncodedObjectStorer, h plumbing.Hash) (*object.Tree, error) {
	t, err := object.GetTree(s, h)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	return t, nil
}
