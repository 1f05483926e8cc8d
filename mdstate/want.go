package mdstate

// wants is what the items of a checklist should read as after an edit:
// each as it was read, but for those the edit changes (changed, by the
// item's index) and those it adds. An edit of one task in a 10,000-task
// file so keeps one view, not 10,000, and its check compares the items
// the new bytes were read for, not every item (edit.go, incremental.go).
type wants struct {
	c       *Checklist
	changed map[int]*view
	added   []addedView
}

// addedView is an item an edit adds, before the old item at pos (or at
// the end when pos is the number of items).
type addedView struct {
	pos int
	v   view
}

// of returns the view of old item i that the edit may change.
func (w *wants) of(i int) *view {
	if v, ok := w.changed[i]; ok {
		return v
	}
	if w.changed == nil {
		w.changed = map[int]*view{}
	}
	v := w.c.content(i).view()
	w.changed[i] = &v
	return &v
}

// peek returns the view of old item i as the edit leaves it so far.
func (w *wants) peek(i int) view {
	if v, ok := w.changed[i]; ok {
		return *v
	}
	return w.c.content(i).view()
}

// all returns every view in file order: the old items, changed or not,
// with the added ones where they go.
func (w *wants) all() []view {
	out := make([]view, 0, w.c.Len()+len(w.added))
	a := 0
	for i := range w.c.Len() {
		for a < len(w.added) && w.added[a].pos <= i {
			out = append(out, w.added[a].v)
			a++
		}
		out = append(out, w.peek(i))
	}
	for ; a < len(w.added); a++ {
		out = append(out, w.added[a].v)
	}
	return out
}

// wantOf returns the view of old item i that the edit changes: what the
// item should read as afterwards.
func (e *ChecklistEdit) wantOf(i int) *view { return e.want.of(i) }

// wantNow returns what old item i should read as, as the edit stands.
func (e *ChecklistEdit) wantNow(i int) view { return e.want.peek(i) }

// allWants returns what every item should read as, added ones included,
// in file order.
func (e *ChecklistEdit) allWants() []view { return e.want.all() }
