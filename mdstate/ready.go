package mdstate

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// Ready is asked for several times an iteration by a coordinator, on a
// file whose last write changed a task or two. On 10,000 tasks working it
// out takes most of a millisecond; from the last version's answer, only
// the tasks whose status or priority changed, and those waiting for them,
// are looked at again.

// readyList is a checklist's ready tasks, by index in Items, in the order
// Ready gives them.
type readyList struct {
	versionAnswer[[]int]
	// deps maps an ID to the items that wait for it; shared by the
	// versions whose IDs and dependencies are the same.
	deps *dependents
}

// versionAnswer is an answer about a checklist (Ready's, Counts'), worked
// out once, on first use. A version that an edit made (reparse) works it
// out from the answer of the version it was made from, when that one had
// it by then: only the items in changed can make them differ.
type versionAnswer[T any] struct {
	once sync.Once
	done atomic.Bool
	v    T
	// prev is the answer of from, the version this one was made from;
	// nil when this one is worked out whole.
	prev    *versionAnswer[T]
	from    *Checklist
	changed []int
}

// follow makes a's answer the one of an edit of from, whose answer is
// prev, that may have changed the items changed; a stays whole unless
// prev is worked out.
func (a *versionAnswer[T]) follow(prev *versionAnswer[T], from *Checklist, changed []int) {
	if prev.done.Load() {
		a.prev, a.from, a.changed = prev, from, changed
	}
}

// get returns the answer: whole works it out from nothing, since from the
// answer of the version this one was made from.
func (a *versionAnswer[T]) get(whole func() T, since func(from *Checklist, prev T, changed []int) T) T {
	a.once.Do(func() {
		if a.prev != nil && a.prev.done.Load() {
			a.v = since(a.from, a.prev.v, a.changed)
		} else {
			a.v = whole()
		}
		a.prev, a.from, a.changed = nil, nil, nil
		a.done.Store(true)
	})
	return a.v
}

// dependents maps each ID to the indexes of the items that wait for it,
// built on first use.
type dependents struct {
	once sync.Once
	of   map[string][]int
}

func (d *dependents) on(c *Checklist, id string) []int {
	d.once.Do(func() {
		d.of = map[string][]int{}
		for i := range c.Len() {
			for _, ref := range c.content(i).After {
				d.of[ref] = append(d.of[ref], i)
			}
		}
	})
	return d.of[id]
}

// readyIndexes returns the indexes of the ready items, in Ready's order.
func (c *Checklist) readyIndexes() []int {
	return c.ready.get(c.findReady, func(_ *Checklist, old, changed []int) []int {
		return c.readyFrom(old, changed)
	})
}

// readyKey orders ready items: priority 1 first, then 2, …, then those
// without one; ties in file order.
func (c *Checklist) readyKey(i int) int {
	if p := c.content(i).Priority; p > 0 {
		return p
	}
	return 1 << 30
}

func (c *Checklist) byReadyOrder(a, b int) int {
	return cmp.Or(cmp.Compare(c.readyKey(a), c.readyKey(b)), cmp.Compare(a, b))
}

// isReady reports whether item i can run now.
func (c *Checklist) isReady(i int) bool {
	it := c.content(i)
	return it.Status == Pending && c.depsDone(it)
}

// findReady works Ready out from every item.
func (c *Checklist) findReady() []int {
	var out []int
	for i := range c.Len() {
		if c.isReady(i) {
			out = append(out, i)
		}
	}
	slices.SortFunc(out, c.byReadyOrder)
	return out
}

// readyFrom works Ready out from old, the answer for the version this
// one was made from, whose items are these but for the status or
// priority of those in changed: only those and the items that wait for
// them can have become ready or stopped being so, or moved.
func (c *Checklist) readyFrom(old, changed []int) []int {
	look := map[int]bool{}
	for _, i := range changed {
		look[i] = true
		for _, j := range c.ready.deps.on(c, c.content(i).ID) {
			look[j] = true
		}
	}
	var now []int
	for i := range look {
		if c.isReady(i) {
			now = append(now, i)
		}
	}
	slices.SortFunc(now, c.byReadyOrder)
	out := make([]int, 0, len(old)+len(now))
	k := 0
	for _, i := range old {
		if look[i] {
			continue
		}
		for k < len(now) && c.byReadyOrder(now[k], i) < 0 {
			out = append(out, now[k])
			k++
		}
		out = append(out, i)
	}
	return append(out, now[k:]...)
}

// NextOnceDone returns the task Next would return once the task id is
// done (and if it were pending, no longer): the answer for the file with
// that edit made, worked out without it. Only id's own readiness and that
// of the tasks waiting for it can differ.
func (c *Checklist) NextOnceDone(id string) *Item {
	id = normID(id)
	done := c.indexOf(id)
	best := -1
	for _, i := range c.readyIndexes() {
		if i != done {
			best = i // the first in Ready's order
			break
		}
	}
	for _, j := range c.ready.deps.on(c, id) {
		if j != done && c.content(j).Status == Pending && c.depsDoneBut(c.content(j), done) &&
			(best < 0 || c.byReadyOrder(j, best) < 0) {
			best = j
		}
	}
	if best < 0 {
		return nil
	}
	return c.Item(best)
}

// depsDoneBut is depsDone with the item at index done counted as done.
func (c *Checklist) depsDoneBut(it *Item, done int) bool {
	for _, ref := range it.After {
		if i := c.indexOf(ref); i < 0 || (i != done && c.content(i).Status != Done) {
			return false
		}
	}
	return true
}
