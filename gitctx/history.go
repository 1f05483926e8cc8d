package gitctx

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Commit is one commit as ralph shows it.
type Commit struct {
	Hash    string
	Author  string
	Email   string
	Time    time.Time // author date
	Subject string    // first paragraph of the message, on one line
	// Files lists the paths the commit changed relative to its first
	// parent (all paths for a root commit), sorted. It is nil for a commit
	// at a shallow clone's boundary: its parent is not in the clone, so
	// what it changed is unknown.
	Files []string
}

// DiffStat summarises a diff the way `git diff --shortstat --no-renames`
// does: a rename counts as one deleted and one added file, binary files
// count as changed files with no lines.
type DiffStat struct {
	Files      int
	Insertions int
	Deletions  int
}

// Log returns up to n commits reachable from HEAD, newest (by committer
// date) first, like `git log -n`. An unborn HEAD gives nil, nil; a shallow
// clone gives the commits it has. If ctx ends first, Log returns the
// commits read so far with the error.
func (r *Repo) Log(ctx context.Context, n int) (_ []Commit, err error) {
	defer recovered("log", &err)
	if n <= 0 {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w, err := r.walkFromHead()
	if w == nil {
		return nil, err
	}
	var out []Commit
	for len(out) < n && w.q.Len() > 0 {
		c, parents, err := w.next(ctx, "log")
		if err != nil {
			return out, err
		}
		cm, err := r.toCommit(ctx, c, parents, w.shallow[c.Hash])
		if err != nil {
			return out, err
		}
		out = append(out, cm)
	}
	return out, nil
}

// CommitsSince returns the commits reachable from HEAD but not from
// baseline (`git log baseline..HEAD`), newest first, and the diff
// statistics between baseline and HEAD. A baseline that names no commit
// here wraps ErrUnknownRevision.
func (r *Repo) CommitsSince(ctx context.Context, baseline string) (_ []Commit, _ DiffStat, err error) {
	defer recovered("commits since", &err)
	r.mu.Lock()
	defer r.mu.Unlock()
	base, err := r.resolve(baseline)
	if err != nil {
		return nil, DiffStat{}, fmt.Errorf("commits since: %w", err)
	}
	head, ok, err := r.headHash()
	if err != nil || !ok {
		return nil, DiffStat{}, err
	}
	w, err := r.newWalker()
	if err != nil {
		return nil, DiffStat{}, err
	}
	onlyHead, _, err := w.paint(ctx, head, base, flagB)
	if err != nil {
		return nil, DiffStat{}, fmt.Errorf("commits since %s: %w", baseline, err)
	}
	var out []Commit
	for _, c := range onlyHead {
		parents, err := w.parents(c)
		if err != nil {
			return nil, DiffStat{}, err
		}
		cm, err := r.toCommit(ctx, c, parents, w.shallow[c.Hash])
		if err != nil {
			return nil, DiffStat{}, err
		}
		out = append(out, cm)
	}
	stat, err := r.diffStat(ctx, base, head)
	if err != nil {
		return nil, DiffStat{}, fmt.Errorf("diff %s..HEAD: %w", baseline, err)
	}
	return out, stat, nil
}

// AheadBehind counts the commits on the current branch that its configured
// upstream lacks (ahead) and the reverse (behind), from local refs only:
// nothing is fetched. ok is false when the answer is unknown: detached or
// unborn HEAD, no upstream configured, upstream ref missing, a walk error
// or ctx ending first.
func (r *Repo) AheadBehind(ctx context.Context) (ahead, behind int, ok bool) {
	defer func() {
		if recover() != nil { // see recovered
			ahead, behind, ok = 0, 0, false
		}
	}()
	r.mu.Lock()
	defer r.mu.Unlock()
	ref, err := r.repo.Storer.Reference(plumbing.HEAD)
	if err != nil || ref.Type() != plumbing.SymbolicReference || !ref.Target().IsBranch() {
		return 0, 0, false
	}
	head, born, err := r.headHash()
	if err != nil || !born {
		return 0, 0, false
	}
	upName, found := r.upstream(ref.Target().Short())
	if !found {
		return 0, 0, false
	}
	up, err := r.repo.Reference(upName, true)
	if err != nil {
		return 0, 0, false
	}
	w, err := r.newWalker()
	if err != nil {
		return 0, 0, false
	}
	onlyHead, onlyUp, err := w.paint(ctx, head, up.Hash(), flagA|flagB)
	if err != nil {
		return 0, 0, false
	}
	return len(onlyHead), len(onlyUp), true
}

// upstream maps branch.<name>.remote/merge to the local ref that tracks it,
// through the remote's fetch refspecs as git does. The caller holds r.mu.
func (r *Repo) upstream(branch string) (plumbing.ReferenceName, bool) {
	cfg, err := r.repo.Config()
	if err != nil {
		return "", false
	}
	b, found := cfg.Branches[branch]
	if !found || b.Merge == "" {
		return "", false
	}
	if b.Remote == "" || b.Remote == "." {
		// Upstream is another local branch.
		return b.Merge, b.Remote == "."
	}
	remote, found := cfg.Remotes[b.Remote]
	if !found {
		return "", false
	}
	for _, rs := range remote.Fetch {
		if rs.Match(b.Merge) {
			return rs.Dst(b.Merge), true
		}
	}
	return "", false
}

// StateCommits returns up to n commits, newest first, that changed any of
// the given root-relative paths, like `git log -n N -- paths`. A merge
// counts only when it differs from every parent for those paths, so a
// merge that took one side unchanged is not reported. Commits at a shallow
// boundary are skipped: what they changed is unknown.
func (r *Repo) StateCommits(ctx context.Context, paths []string, n int) (_ []Commit, err error) {
	defer recovered("state commits", &err)
	if n <= 0 || len(paths) == 0 {
		return nil, nil
	}
	clean := make([]string, 0, len(paths))
	for _, p := range paths {
		c, err := cleanPath(p)
		if err != nil {
			return nil, fmt.Errorf("state commits: %w", err)
		}
		clean = append(clean, c)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w, err := r.walkFromHead()
	if w == nil {
		return nil, err
	}
	// Each commit's entries are needed once as a child and once per child
	// as a parent; remembering them halves the tree reads.
	keys := map[plumbing.Hash][]entryID{}
	key := func(c *object.Commit) ([]entryID, error) {
		if k, ok := keys[c.Hash]; ok {
			return k, nil
		}
		k, err := pathEntries(c, clean)
		if err != nil {
			return nil, err
		}
		keys[c.Hash] = k
		return k, nil
	}
	var out []Commit
	for len(out) < n && w.q.Len() > 0 {
		c, parents, err := w.next(ctx, "state commits")
		if err != nil {
			return out, err
		}
		if w.shallow[c.Hash] {
			continue
		}
		ck, err := key(c)
		if err != nil {
			return out, err
		}
		touched := true
		if len(parents) == 0 {
			touched = slices.ContainsFunc(ck, func(e entryID) bool { return !e.hash.IsZero() })
		}
		for _, p := range parents {
			if p.TreeHash == c.TreeHash {
				touched = false
				break
			}
			pk, err := key(p)
			if err != nil {
				return out, err
			}
			if slices.Equal(pk, ck) {
				touched = false
				break
			}
		}
		// c's children were (barring clock skew) popped before it, so its
		// entry is done with; if not, it is just read again.
		delete(keys, c.Hash)
		if !touched {
			continue
		}
		cm, err := r.toCommit(ctx, c, parents, false)
		if err != nil {
			return out, err
		}
		out = append(out, cm)
	}
	return out, nil
}

type entryID struct {
	hash plumbing.Hash
	mode filemode.FileMode
}

func pathEntries(c *object.Commit, paths []string) ([]entryID, error) {
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("read tree of %s: %w", c.Hash, err)
	}
	out := make([]entryID, len(paths))
	for i, p := range paths {
		e, err := tree.FindEntry(p)
		switch {
		case err == nil:
			out[i] = entryID{e.Hash, e.Mode}
		case errors.Is(err, object.ErrEntryNotFound), errors.Is(err, object.ErrDirectoryNotFound):
			// absent: the zero entry
		default:
			return nil, fmt.Errorf("find %s in %s: %w", p, c.Hash, err)
		}
	}
	return out, nil
}

// toCommit converts c, listing the files it changed against its first
// parent. The caller holds r.mu.
func (r *Repo) toCommit(ctx context.Context, c *object.Commit, parents []*object.Commit, boundary bool) (Commit, error) {
	cm := Commit{
		Hash:    c.Hash.String(),
		Author:  c.Author.Name,
		Email:   c.Author.Email,
		Time:    c.Author.When,
		Subject: subject(c.Message),
	}
	if boundary {
		return cm, nil
	}
	tree, err := c.Tree()
	if err != nil {
		return Commit{}, fmt.Errorf("read tree of %s: %w", c.Hash, err)
	}
	var ptree *object.Tree // nil for a root commit: everything is new
	if len(parents) > 0 {
		if ptree, err = parents[0].Tree(); err != nil {
			return Commit{}, fmt.Errorf("read tree of %s: %w", parents[0].Hash, err)
		}
	}
	changes, err := diffTrees(ctx, r.repo.Storer, ptree, tree)
	if err != nil {
		return Commit{}, fmt.Errorf("diff %s: %w", c.Hash, err)
	}
	for _, ch := range changes {
		cm.Files = append(cm.Files, ch.path)
	}
	slices.Sort(cm.Files)
	return cm, nil
}

// subject is git's %s: the first paragraph with its lines joined by spaces.
func subject(msg string) string {
	msg = strings.TrimLeft(strings.ReplaceAll(msg, "\r\n", "\n"), "\n")
	para, _, _ := strings.Cut(msg, "\n\n")
	lines := strings.Split(para, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.TrimSpace(strings.Join(lines, " "))
}

// The walker visits commits newest-first by committer date, like git's
// revision walk. Flags record which tips reach a commit.
const (
	flagA    uint8 = 1 << iota // reachable from the first tip (HEAD)
	flagB                      // reachable from the second tip
	flagSeen                   // queued at least once (plain walks)
)

type walker struct {
	s       storer.EncodedObjectStorer
	shallow map[plumbing.Hash]bool
	q       commitQueue
	flags   map[plumbing.Hash]uint8
	seq     int
}

func (r *Repo) newWalker() (*walker, error) {
	w := &walker{s: r.repo.Storer, flags: map[plumbing.Hash]uint8{}}
	sh, err := r.repo.Storer.Shallow()
	if err != nil {
		return nil, fmt.Errorf("read shallow list: %w", err)
	}
	if len(sh) > 0 {
		w.shallow = make(map[plumbing.Hash]bool, len(sh))
		for _, h := range sh {
			w.shallow[h] = true
		}
	}
	return w, nil
}

func (w *walker) start(h plumbing.Hash, flag uint8) error {
	c, err := object.GetCommit(w.s, h)
	if err != nil {
		return fmt.Errorf("read commit %s: %w", h, err)
	}
	w.mark(c, flag)
	return nil
}

// mark adds flag to c and queues it if that changed anything, so that new
// reachability propagates to its ancestors.
func (w *walker) mark(c *object.Commit, flag uint8) {
	if w.flags[c.Hash]&flag == flag {
		return
	}
	w.flags[c.Hash] |= flag
	w.seq++
	heap.Push(&w.q, queued{c, w.seq})
}

// walkFromHead starts a walk of everything reachable from HEAD; it returns
// a nil walker (and no error) when HEAD has no commit yet.
func (r *Repo) walkFromHead() (*walker, error) {
	head, ok, err := r.headHash()
	if err != nil || !ok {
		return nil, err
	}
	w, err := r.newWalker()
	if err != nil {
		return nil, err
	}
	if err := w.start(head, flagSeen); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *walker) pop() *object.Commit { return heap.Pop(&w.q).(queued).c }

// next takes the newest queued commit and queues its parents, for a walk
// of everything reachable (op names the walk in errors).
func (w *walker) next(ctx context.Context, op string) (*object.Commit, []*object.Commit, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", op, err)
	}
	c := w.pop()
	parents, err := w.parents(c)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range parents {
		w.mark(p, flagSeen)
	}
	return c, parents, nil
}

// parents loads c's parents. A commit on the shallow boundary has none
// here: its parents were never fetched, and looking them up is exactly the
// "object not found" go-git's own Log fails with (go-git/go-git#2409).
func (w *walker) parents(c *object.Commit) ([]*object.Commit, error) {
	if w.shallow[c.Hash] {
		return nil, nil
	}
	out := make([]*object.Commit, 0, len(c.ParentHashes))
	for _, h := range c.ParentHashes {
		p, err := object.GetCommit(w.s, h)
		if err != nil {
			return nil, fmt.Errorf("read parent %s of %s: %w", h, c.Hash, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// paint walks from a (flagA) and b (flagB) at once, the way git limits a
// range: it stops once every queued commit carries all of stop — plus a
// few more steps of slop, as git does, to tolerate clock skew between
// commits. It returns, in walk order, the commits reached only from a and
// only from b.
func (w *walker) paint(ctx context.Context, a, b plumbing.Hash, stop uint8) (onlyA, onlyB []*object.Commit, err error) {
	if err := w.start(a, flagA); err != nil {
		return nil, nil, err
	}
	if err := w.start(b, flagB); err != nil {
		return nil, nil, err
	}
	const maxSlop = 5
	slop := maxSlop
	var order []*object.Commit
	popped := map[plumbing.Hash]bool{}
	for w.q.Len() > 0 {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if w.allHave(stop) {
			if slop--; slop <= 0 {
				break
			}
		} else {
			slop = maxSlop
		}
		c := w.pop()
		if !popped[c.Hash] {
			popped[c.Hash] = true
			order = append(order, c)
		}
		f := w.flags[c.Hash] & (flagA | flagB)
		parents, err := w.parents(c)
		if err != nil {
			return nil, nil, err
		}
		for _, p := range parents {
			w.mark(p, f)
		}
	}
	for _, c := range order {
		switch w.flags[c.Hash] & (flagA | flagB) {
		case flagA:
			onlyA = append(onlyA, c)
		case flagB:
			onlyB = append(onlyB, c)
		}
	}
	return onlyA, onlyB, nil
}

func (w *walker) allHave(mask uint8) bool {
	for _, e := range w.q {
		if w.flags[e.c.Hash]&mask != mask {
			return false
		}
	}
	return true
}

type queued struct {
	c   *object.Commit
	seq int
}

// commitQueue orders by committer date, newest first; ties go to the
// commit queued first, as in git's commit_list_insert_by_date.
type commitQueue []queued

func (q commitQueue) Len() int { return len(q) }
func (q commitQueue) Less(i, j int) bool {
	ti, tj := q[i].c.Committer.When, q[j].c.Committer.When
	if !ti.Equal(tj) {
		return ti.After(tj)
	}
	return q[i].seq < q[j].seq
}
func (q commitQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *commitQueue) Push(x any)   { *q = append(*q, x.(queued)) }
func (q *commitQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
