package mdstate

import (
	"iter"
	"slices"
	"sort"
)

// A coordinator's edit of a 10,000-task file changes a task or two, and
// moves every item after it by the bytes and lines it added or took away.
// A version of the checklist that copied all its items for that (3 MB)
// cost 1.2–1.5 ms an edit, most of it in fresh memory, and as much again
// in the collector: more than the rest of the edit and its check.
//
// So a version that reparse makes of a large checklist keeps the items it
// shares with the version it was made from: the same array, read through
// how far the edits since moved each item, and its own copies of only the
// items it changed or read anew. Every version reads exactly as a parse
// of its bytes does (incremental_test.go checks each one both ways). A
// version that would gather more than moveLimit moves or ownLimit copies
// gets an array of its own instead, and the next ones share that.

// shareItemsFrom is how many items a checklist needs before its edits
// share them; below it a copy costs less than the lookups. Tests set it
// to 0 to read every version through the shared form.
var shareItemsFrom = 512

// moveLimit and ownLimit bound a shared version's moves and own copies.
const (
	moveLimit = 32
	ownLimit  = 64
)

// sharedItems are the items of a version made by an edit: base, moved
// as moves say, with own in place of the items the version changed or
// read anew. Nothing in it is written once it is made; versions share
// base and the copies in own.
type sharedItems struct {
	base  []Item
	moves []itemMove // sorted by from
	own   map[int]*Item
}

// itemMove is how far the items from index from on (to the next move's)
// are from where base has them.
type itemMove struct {
	from, d, dl int
}

// moveAt returns how far moves (sorted by from) move item i.
func moveAt(moves []itemMove, i int) (d, dl int) {
	j := sort.Search(len(moves), func(j int) bool { return moves[j].from > i }) - 1
	if j < 0 {
		return 0, 0
	}
	return moves[j].d, moves[j].dl
}

// item returns item i as this version reads it. An item where base has it
// is base's own; a moved one is a copy.
func (s *sharedItems) item(i int) *Item {
	if it, ok := s.own[i]; ok {
		return it
	}
	d, dl := moveAt(s.moves, i)
	if d == 0 && dl == 0 {
		return &s.base[i]
	}
	it := s.base[i]
	it.move(d, dl)
	return &it
}

// content returns item i with its offsets and lines perhaps another
// version's: for what a move does not change (ID, status, title, …).
func (s *sharedItems) content(i int) *Item {
	if it, ok := s.own[i]; ok {
		return it
	}
	return &s.base[i]
}

// start returns where item i starts.
func (s *sharedItems) start(i int) int {
	if it, ok := s.own[i]; ok {
		return it.Span.Start
	}
	d, _ := moveAt(s.moves, i)
	return s.base[i].Span.Start + d
}

// flat returns every item, in an array of their own.
func (s *sharedItems) flat() []Item {
	out := slices.Clone(s.base)
	for j, m := range s.moves {
		end := len(out)
		if j+1 < len(s.moves) {
			end = s.moves[j+1].from
		}
		if m.d == 0 && m.dl == 0 {
			continue
		}
		for k := m.from; k < end; k++ {
			out[k].move(m.d, m.dl)
		}
	}
	for i, it := range s.own {
		out[i] = *it
	}
	return out
}

// Len returns how many items the checklist has.
func (c *Checklist) Len() int {
	if c.shared != nil {
		return len(c.shared.base)
	}
	return len(c.items)
}

// Item returns item i, in file order. It is read-only: versions of the
// checklist share their items.
func (c *Checklist) Item(i int) *Item {
	if c.shared != nil {
		return c.shared.item(i)
	}
	return &c.items[i]
}

// All yields every item in file order, with its index. A coordinator
// looks over the tasks several times an iteration; unlike Items this
// copies none that it does not yield.
func (c *Checklist) All() iter.Seq2[int, *Item] {
	return func(yield func(int, *Item) bool) {
		for i := range c.Len() {
			if !yield(i, c.Item(i)) {
				return
			}
		}
	}
}

// Items returns every item in file order. The slice is the checklist's:
// read-only. On a large file that an edit made, the first call copies
// them (All and Item do not).
func (c *Checklist) Items() []Item {
	if c.shared == nil {
		return c.items
	}
	c.flatOnce.Do(func() { c.flatItems = c.shared.flat() })
	return c.flatItems
}

// content is Item without the offsets and lines of a moved item: for
// what a move leaves as it was.
func (c *Checklist) content(i int) *Item {
	if c.shared != nil {
		return c.shared.content(i)
	}
	return &c.items[i]
}

// itemStart returns where item i starts.
func (c *Checklist) itemStart(i int) int {
	if c.shared != nil {
		return c.shared.start(i)
	}
	return c.items[i].Span.Start
}

// share returns c's items as a version made from it starts from.
func (c *Checklist) share() *sharedItems {
	if c.shared != nil {
		return c.shared
	}
	return &sharedItems{base: c.items}
}
