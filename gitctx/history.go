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
)

// MaxFiles is the most paths a Commit lists in Files. A commit that adds a
// whole project (20,000 files, say) would otherwise make every reader of
// recent history walk its whole tree and `ralph context --json` weigh
// hundreds of kilobytes (issue 14).
const MaxFiles = 100

// Commit is one commit as ralph shows it.
type Commit struct {
	Hash    string
	Author  string
	Email   string
	Time    time.Time // author date
	Subject string    // first paragraph of the message, on one line
	// Files lists the paths the commit changed relative to its first
	// parent (all paths for a root commit), sorted: all of them, or
	// MaxFiles of them and FilesMore set (Repo.Changed lists them all).
	// It is nil for a commit at a shallow clone's boundary: its parent is
	// not in the clone, so what it changed is unknown.
	Files     []string
	FilesMore bool // the commit changed more paths than Files lists
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
		cm, err := r.toCommit(ctx, c, parents, w.shallow[c.hash], nil)
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
	onlyHead, _, err := w.paint(ctx, head, base.hash, flagB)
	if err != nil {
		return nil, DiffStat{}, fmt.Errorf("commits since %s: %w", baseline, err)
	}
	var out []Commit
	for _, c := range onlyHead {
		parents, err := w.parents(c)
		if err != nil {
			return nil, DiffStat{}, err
		}
		cm, err := r.toCommit(ctx, c, parents, w.shallow[c.hash], nil)
		if err != nil {
			return nil, DiffStat{}, err
		}
		out = append(out, cm)
	}
	stat, err := r.diffStat(ctx, base.hash, head)
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
	ref, err := r.st.reference(plumbing.HEAD)
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
	up, err := r.st.resolve(upName)
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
	cfg, err := r.st.config()
	if err != nil {
		return "", false
	}
	merge, _ := cfg.Get("branch", branch, "merge")
	if merge == "" {
		return "", false
	}
	remote, _ := cfg.Get("branch", branch, "remote")
	if remote == "" || remote == "." {
		// Upstream is another local branch.
		return plumbing.ReferenceName(merge), remote == "."
	}
	for _, spec := range cfg.GetAll("remote", remote, "fetch") {
		if dst, ok := mapRefspec(spec, merge); ok {
			return plumbing.ReferenceName(dst), true
		}
	}
	return "", false
}

// mapRefspec maps ref through a fetch refspec ("+refs/heads/*:refs/remotes/origin/*"):
// the local ref it fetches into, ok false when the refspec does not take
// ref. A negative refspec ("^refs/heads/x") takes nothing.
func mapRefspec(spec, ref string) (string, bool) {
	spec = strings.TrimPrefix(spec, "+")
	src, dst, ok := strings.Cut(spec, ":")
	if !ok || strings.HasPrefix(src, "^") || dst == "" {
		return "", false
	}
	before, after, wild := strings.Cut(src, "*")
	if !wild {
		if src != ref {
			return "", false
		}
		return dst, true
	}
	if len(ref) < len(before)+len(after) || !strings.HasPrefix(ref, before) || !strings.HasSuffix(ref, after) {
		return "", false
	}
	middle := ref[len(before) : len(ref)-len(after)]
	return strings.Replace(dst, "*", middle, 1), true
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
	key := func(c *commitObj) ([]entryID, error) {
		if k, ok := keys[c.hash]; ok {
			return k, nil
		}
		k, err := r.pathEntries(c, clean)
		if err != nil {
			return nil, err
		}
		keys[c.hash] = k
		return k, nil
	}
	var out []Commit
	for len(out) < n && w.q.Len() > 0 {
		c, parents, err := w.next(ctx, "state commits")
		if err != nil {
			return out, err
		}
		if w.shallow[c.hash] {
			continue
		}
		ck, err := key(c)
		if err != nil {
			return out, err
		}
		touched := true
		var first []entryID // the first parent's, or none for a root
		for i, p := range parents {
			if p.tree == c.tree {
				touched = false
				break
			}
			pk, err := key(p)
			if err != nil {
				return out, err
			}
			if i == 0 {
				first = pk
			}
			if slices.Equal(pk, ck) {
				touched = false
				break
			}
		}
		if len(parents) == 0 {
			touched = slices.ContainsFunc(ck, func(e entryID) bool { return !e.hash.IsZero() })
		}
		// c's children were (barring clock skew) popped before it, so its
		// entry is done with; if not, it is just read again.
		delete(keys, c.hash)
		if !touched {
			continue
		}
		cm, err := r.toCommit(ctx, c, parents, false, changedOf(clean, ck, first))
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

func (r *Repo) pathEntries(c *commitObj, paths []string) ([]entryID, error) {
	tree, err := r.db.tree(c.tree)
	if err != nil {
		return nil, fmt.Errorf("read tree of %s: %w", c.hash, err)
	}
	out := make([]entryID, len(paths))
	for i, p := range paths {
		e, err := r.db.findEntry(tree, p)
		switch {
		case err == nil:
			out[i] = entryID{e.hash, e.mode}
		case errors.Is(err, errNoEntry):
			// absent: the zero entry
		default:
			return nil, fmt.Errorf("find %s in %s: %w", p, c.hash, err)
		}
	}
	return out, nil
}

// changedOf picks the paths whose entries differ between a commit (ck)
// and its first parent (first; nil for a root commit).
func changedOf(paths []string, ck, first []entryID) []string {
	var out []string
	for i, p := range paths {
		if first == nil && !ck[i].hash.IsZero() || first != nil && ck[i] != first[i] {
			out = append(out, p)
		}
	}
	return out
}

// toCommit converts c, listing up to MaxFiles of the paths it changed
// against its first parent, always including those of must that it
// changed. The caller holds r.mu.
func (r *Repo) toCommit(ctx context.Context, c *commitObj, parents []*commitObj, boundary bool, must []string) (Commit, error) {
	cm := Commit{
		Hash:    c.hash.String(),
		Author:  c.author.name,
		Email:   c.author.email,
		Time:    c.author.when,
		Subject: subject(c.message),
	}
	if boundary {
		return cm, nil
	}
	var from plumbing.Hash // none for a root commit: everything is new
	if len(parents) > 0 {
		from = parents[0].tree
	}
	changes, err := r.diffTrees(ctx, from, c.tree, MaxFiles+1)
	if err != nil {
		return Commit{}, fmt.Errorf("diff %s: %w", c.hash, err)
	}
	for _, ch := range changes {
		cm.Files = append(cm.Files, ch.path)
	}
	if len(cm.Files) > MaxFiles {
		cm.Files, cm.FilesMore = capFiles(cm.Files, must), true
	}
	slices.Sort(cm.Files)
	return cm, nil
}

// capFiles keeps MaxFiles of files, the paths of must among them.
func capFiles(files, must []string) []string {
	kept := files[:MaxFiles:MaxFiles]
	for _, m := range must {
		if slices.Contains(kept, m) {
			continue
		}
		// Give up the last path that is not itself a must.
		for i := len(kept) - 1; i >= 0; i-- {
			if !slices.Contains(must, kept[i]) {
				kept[i] = m
				break
			}
		}
	}
	return kept
}

// Changed lists every path that differs between the commits from and to
// name (revisions as FileAt takes them), sorted, without rename
// detection: `git diff --name-only --no-renames from to`. With from ""
// it compares to with its first parent (every path, for a root commit),
// as a Commit's Files does, but with no cap.
func (r *Repo) Changed(ctx context.Context, from, to string) (_ []string, err error) {
	defer recovered("changed", &err)
	r.mu.Lock()
	defer r.mu.Unlock()
	tc, err := r.resolve(to)
	if err != nil {
		return nil, fmt.Errorf("changed: %w", err)
	}
	var base plumbing.Hash
	switch {
	case from != "":
		fc, err := r.resolve(from)
		if err != nil {
			return nil, fmt.Errorf("changed: %w", err)
		}
		base = fc.tree
	case len(tc.parents) > 0:
		p, err := r.db.commit(tc.parents[0])
		if err != nil {
			return nil, fmt.Errorf("changed: %w", err)
		}
		base = p.tree
	}
	changes, err := r.diffTrees(ctx, base, tc.tree, 0)
	if err != nil {
		return nil, fmt.Errorf("changed: %w", err)
	}
	out := make([]string, 0, len(changes))
	for _, ch := range changes {
		out = append(out, ch.path)
	}
	slices.Sort(out)
	return out, nil
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
	db      *objectDB
	shallow map[plumbing.Hash]bool
	q       commitQueue
	flags   map[plumbing.Hash]uint8
	seq     int
}

func (r *Repo) newWalker() (*walker, error) {
	w := &walker{db: r.db, flags: map[plumbing.Hash]uint8{}}
	sh, err := r.st.shallow()
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
	c, err := w.db.commit(h)
	if err != nil {
		return err
	}
	w.mark(c, flag)
	return nil
}

// mark adds flag to c and queues it if that changed anything, so that new
// reachability propagates to its ancestors.
func (w *walker) mark(c *commitObj, flag uint8) {
	if w.flags[c.hash]&flag == flag {
		return
	}
	w.flags[c.hash] |= flag
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

func (w *walker) pop() *commitObj { return heap.Pop(&w.q).(queued).c }

// next takes the newest queued commit and queues its parents, for a walk
// of everything reachable (op names the walk in errors).
func (w *walker) next(ctx context.Context, op string) (*commitObj, []*commitObj, error) {
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
func (w *walker) parents(c *commitObj) ([]*commitObj, error) {
	if w.shallow[c.hash] {
		return nil, nil
	}
	out := make([]*commitObj, 0, len(c.parents))
	for _, h := range c.parents {
		p, err := w.db.commit(h)
		if err != nil {
			return nil, fmt.Errorf("read parent %s of %s: %w", h, c.hash, err)
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
func (w *walker) paint(ctx context.Context, a, b plumbing.Hash, stop uint8) (onlyA, onlyB []*commitObj, err error) {
	if err := w.start(a, flagA); err != nil {
		return nil, nil, err
	}
	if err := w.start(b, flagB); err != nil {
		return nil, nil, err
	}
	const maxSlop = 5
	slop := maxSlop
	var order []*commitObj
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
		if !popped[c.hash] {
			popped[c.hash] = true
			order = append(order, c)
		}
		f := w.flags[c.hash] & (flagA | flagB)
		parents, err := w.parents(c)
		if err != nil {
			return nil, nil, err
		}
		for _, p := range parents {
			w.mark(p, f)
		}
	}
	for _, c := range order {
		switch w.flags[c.hash] & (flagA | flagB) {
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
		if w.flags[e.c.hash]&mask != mask {
			return false
		}
	}
	return true
}

type queued struct {
	c   *commitObj
	seq int
}

// commitQueue orders by committer date, newest first; ties go to the
// commit queued first, as in git's commit_list_insert_by_date.
type commitQueue []queued

func (q commitQueue) Len() int { return len(q) }
func (q commitQueue) Less(i, j int) bool {
	ti, tj := q[i].c.committer.when, q[j].c.committer.when
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
