package gitctx

import (
	"context"
	"errors"
	"path"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// change is one path that differs between two trees; an absent side has
// the zero hash.
type change struct {
	path     string
	from, to treeEntry
}

// errEnough stops a diff that has found as many changes as it was asked.
var errEnough = errors.New("enough changes")

// diffTrees lists the non-directory paths that differ between the trees a
// and b (either may be the zero hash: no tree), without rename detection,
// stopping after limit changes when limit > 0.
//
// Only subtrees whose hashes differ are read, as in git, so a one-file
// commit in a wide tree reads one tree per level (go-git's DiffTree loaded
// every subtree of every directory it listed), and a commit that adds a
// whole project costs no more than limit paths.
func (r *Repo) diffTrees(ctx context.Context, a, b plumbing.Hash, limit int) ([]change, error) {
	d := differ{db: r.db, ctx: ctx, limit: limit}
	at, err := d.tree(a)
	if err != nil {
		return nil, err
	}
	bt, err := d.tree(b)
	if err != nil {
		return nil, err
	}
	if err := d.diff(at, bt, ""); err != nil && !errors.Is(err, errEnough) {
		return nil, err
	}
	return d.out, nil
}

type differ struct {
	db    *objectDB
	ctx   context.Context
	limit int
	out   []change
}

// tree reads h, or gives an empty tree for the zero hash.
func (d *differ) tree(h plumbing.Hash) (*treeObj, error) {
	if h.IsZero() {
		return &treeObj{}, nil
	}
	return d.db.tree(h)
}

func (d *differ) add(c change) error {
	d.out = append(d.out, c)
	if d.limit > 0 && len(d.out) >= d.limit {
		return errEnough
	}
	return nil
}

func (d *differ) diff(a, b *treeObj, prefix string) error {
	if err := d.ctx.Err(); err != nil {
		return err
	}
	old := make(map[string]treeEntry, len(a.entries))
	for _, e := range a.entries {
		old[e.name] = e
	}
	for _, n := range b.entries {
		o, found := old[n.name]
		delete(old, n.name)
		if found && o.hash == n.hash && o.mode == n.mode {
			continue
		}
		p := path.Join(prefix, n.name)
		switch {
		case found && o.mode == filemode.Dir && n.mode == filemode.Dir:
			ot, err := d.db.tree(o.hash)
			if err != nil {
				return err
			}
			nt, err := d.db.tree(n.hash)
			if err != nil {
				return err
			}
			if err := d.diff(ot, nt, p); err != nil {
				return err
			}
		case found && o.mode != filemode.Dir && n.mode != filemode.Dir:
			if err := d.add(change{path: p, from: o, to: n}); err != nil {
				return err
			}
		default: // added, or replaced by something of the other kind
			if found {
				if err := d.oneSide(o, p, true); err != nil {
					return err
				}
			}
			if err := d.oneSide(n, p, false); err != nil {
				return err
			}
		}
	}
	for _, e := range a.entries {
		if _, gone := old[e.name]; gone {
			if err := d.oneSide(e, path.Join(prefix, e.name), true); err != nil {
				return err
			}
		}
	}
	return nil
}

// oneSide records e (recursively, for a directory) as deleted or added.
func (d *differ) oneSide(e treeEntry, p string, deleted bool) error {
	if e.mode != filemode.Dir {
		c := change{path: p}
		if deleted {
			c.from = e
		} else {
			c.to = e
		}
		return d.add(c)
	}
	t, err := d.db.tree(e.hash)
	if err != nil {
		return err
	}
	if deleted {
		return d.diff(t, &treeObj{}, p)
	}
	return d.diff(&treeObj{}, t, p)
}
