package mdstate

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Every checklist reparse builds must be the one a parse of the whole new
// file gives: the same items (offsets, lines, what a next edit reads), the
// same warnings, the same places for new items, the same session and
// guidance. These tests make chains of edits, each on the checklist the
// one before returned, and compare after each.

// sameParse fails unless got (from an edit) reads as want (a whole parse
// of the same bytes).
func sameParse(t *testing.T, step string, got, want *Checklist) {
	t.Helper()
	if string(got.src.src) != string(want.src.src) {
		t.Fatalf("%s: different bytes", step)
	}
	if !reflect.DeepEqual(got.src, want.src) {
		t.Fatalf("%s: source %+v, a whole parse indexes %+v", step, *got.src, *want.src)
	}
	if got.Len() != want.Len() {
		t.Fatalf("%s: %d items, a whole parse reads %d", step, got.Len(), want.Len())
	}
	// Each way of reading the items, the copying one last: Item and All
	// read a shared version as it is.
	sameItem := func(how string, i int, it *Item) {
		t.Helper()
		if !reflect.DeepEqual(*it, want.Items()[i]) {
			t.Fatalf("%s: item %d (%s) is\n%+v\na whole parse reads\n%+v\nfile:\n%s", step, i, how, *it, want.Items()[i], want.src.src)
		}
	}
	for i := range want.Len() {
		sameItem("Item", i, got.Item(i))
	}
	n := 0
	for i, it := range got.All() {
		sameItem("All", i, it)
		n++
	}
	if n != want.Len() {
		t.Fatalf("%s: All yields %d items, a whole parse reads %d", step, n, want.Len())
	}
	for i := range got.Items() {
		sameItem("Items", i, &got.Items()[i])
	}
	for _, it := range want.All() {
		if it.ID == "" {
			continue
		}
		if st, ok := got.StatusOf(strings.ToLower(it.ID)); !ok || st != want.Find(it.ID).Status {
			t.Fatalf("%s: StatusOf(%s) is %q, %v; Find reads %q", step, it.ID, st, ok, want.Find(it.ID).Status)
		}
	}
	if !reflect.DeepEqual(got.Warnings, want.Warnings) || got.walkWarns != want.walkWarns {
		t.Fatalf("%s: warnings %v (%d from the walk), a whole parse reads %v (%d)", step, got.Warnings, got.walkWarns, want.Warnings, want.walkWarns)
	}
	type places struct {
		LastTopEnd, LastTopOrdinal, QuietAt, QuietEnd, MdBase int
		LastTopMarker, LastTopIndent                          string
	}
	pg := places{got.lastTopEnd, got.lastTopOrdinal, got.quietAt, got.quietEnd, got.mdBase, string(got.lastTopMarker), got.lastTopIndent}
	pw := places{want.lastTopEnd, want.lastTopOrdinal, want.quietAt, want.quietEnd, want.mdBase, string(want.lastTopMarker), want.lastTopIndent}
	if pg != pw {
		t.Fatalf("%s: %+v, a whole parse reads %+v", step, pg, pw)
	}
	gs, gw := got.Session()
	ws, ww := want.Session()
	if !reflect.DeepEqual(gs, ws) || !reflect.DeepEqual(gw, ww) {
		t.Fatalf("%s: session %+v %v, a whole parse reads %+v %v", step, gs, gw, ws, ww)
	}
	if g, w := got.Guidance(), want.Guidance(); !reflect.DeepEqual(g, w) {
		t.Fatalf("%s: guidance %v, a whole parse reads %v", step, g, w)
	}
	ids := func(items []*Item) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.ID)
		}
		return out
	}
	if g, w := ids(got.Ready()), ids(want.Ready()); !reflect.DeepEqual(g, w) {
		t.Fatalf("%s: ready %v, a whole parse reads %v", step, g, w)
	}
	var titles, wantTitles []string
	for id, title := range got.EachReadyTitle() {
		titles = append(titles, id+" "+title)
	}
	for _, it := range want.Ready() {
		wantTitles = append(wantTitles, it.ID+" "+it.Title)
	}
	if !reflect.DeepEqual(titles, wantTitles) {
		t.Fatalf("%s: EachReadyTitle yields %q, a whole parse reads %q", step, titles, wantTitles)
	}
	for _, it := range want.Items() {
		if g := got.Find(it.ID); g == nil || g.Line != it.Line {
			t.Fatalf("%s: Find(%s) = %+v", step, it.ID, g)
		}
	}
	if g, w := got.Counts(), want.Counts(); !reflect.DeepEqual(g, w) {
		t.Fatalf("%s: counts %v, a whole parse reads %v", step, g, w)
	}
}

// editStep is one random edit of the kinds ralph makes.
func editStep(e *ChecklistEdit, r *rand.Rand, now time.Time) (string, error) {
	c := e.Checklist()
	if len(c.Items()) == 0 {
		s := Session{ID: "s1", Status: SessionRunning, Iteration: r.IntN(50), Started: now, Updated: now}
		return "session", e.SetSession(&s)
	}
	it := &c.Items()[r.IntN(len(c.Items()))]
	switch op := r.IntN(12); op {
	case 0, 1, 2:
		st := Statuses[r.IntN(len(Statuses))]
		return "status " + it.ID + " " + string(st), e.SetStatus(it.ID, st)
	case 3:
		return "note " + it.ID, e.AddMeta(it.ID, "note", fmt.Sprintf("note %d", r.IntN(1000)))
	case 4:
		return "attempts " + it.ID, e.SetMeta(it.ID, "attempts", fmt.Sprint(r.IntN(12)))
	case 5:
		if len(it.Notes) == 0 {
			return "no note", nil
		}
		return "drop note " + it.ID, e.DropNote(it.ID, r.IntN(len(it.Notes)))
	case 6:
		return "drop attempts " + it.ID, e.DropMeta(it.ID, "attempts")
	case 7:
		if len(it.Notes) == 0 {
			return "no note", nil
		}
		return "replace note " + it.ID, e.ReplaceNote(it.ID, r.IntN(len(it.Notes)), fmt.Sprintf("failed %d times", r.IntN(9)+2))
	case 8:
		return "guidance", e.QueueGuidance(fmt.Sprintf("message %d", r.IntN(1000)))
	case 9:
		var texts []string
		for _, g := range c.Guidance() {
			texts = append(texts, g.Text)
		}
		if len(texts) == 0 {
			return "no guidance", nil
		}
		return "drop guidance", e.DropGuidance(texts[:1])
	case 10:
		_, err := e.Add(fmt.Sprintf("added %d", r.IntN(1000)))
		return "add", err
	default:
		if err := e.SetStatus(it.ID, Statuses[r.IntN(len(Statuses))]); err != nil {
			return "", err
		}
		s := Session{ID: "s1", Status: SessionRunning, Phase: PhaseAgent, Iteration: r.IntN(50), Task: it.ID, Started: now, Updated: now.Add(time.Duration(r.IntN(1e6)) * time.Second)}
		return "status and session " + it.ID, e.SetSession(&s)
	}
}

// chainEdits makes n random edits of data, each on the checklist the
// last returned, and compares each with a whole parse. It returns how
// many reparse built.
func chainEdits(t *testing.T, name string, data []byte, seed uint64, n int) (reparsed int) {
	t.Helper()
	c, err := ParseChecklist(TasksKind, data)
	if err != nil || c.conflict != nil {
		return 0
	}
	r := rand.New(rand.NewPCG(seed, 7))
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	hits := 0
	reparseHook = func(ok bool) {
		if ok {
			hits++
		}
	}
	defer func() { reparseHook = nil }()
	for i := range n {
		e := c.Edit()
		what, err := editStep(e, r, now)
		if err != nil || !e.Changed() {
			continue
		}
		_, after, err := e.Bytes()
		if err != nil {
			continue // refused, as a whole parse refuses it: not what this tests
		}
		want, err := ParseChecklist(TasksKind, after.src.src)
		if err != nil {
			t.Fatalf("%s step %d (%s): %v", name, i, what, err)
		}
		sameParse(t, fmt.Sprintf("%s seed %d step %d (%s)", name, seed, i, what), after, want)
		c = after
	}
	return hits
}

// reparseFiles are files of the shapes reparse meets, and those where it
// must give up: sections, guidance, nesting, loose lists, code under
// items, CRLF, a BOM and front matter, ordered lists, tasks after the
// session, warnings.
func reparseFiles() map[string]string {
	var big strings.Builder
	big.WriteString("# Tasks\n")
	for i := 1; i <= 300; i++ {
		if i%100 == 1 {
			fmt.Fprintf(&big, "\n## Milestone %d\n\n", i/100+1)
		}
		fmt.Fprintf(&big, "- [%c] T%d: Part %d\n", " x/!-"[i%5], i, i)
		if i%3 == 0 {
			fmt.Fprintf(&big, "  - after: T%d\n", i-1)
		}
		if i%7 == 0 {
			big.WriteString("  - attempts: 1\n  - note: timed out\n")
		}
		if i%11 == 0 {
			fmt.Fprintf(&big, "  - [ ] T%d: Nested under %d\n", 1000+i, i)
		}
	}
	big.WriteString("\n## Guidance\n\n- Use the logger\n\n## Session\n\n- id: 20261122-100312\n- status: running\n- iteration: 3\n")
	return map[string]string{
		"big": big.String(),
		"plain": "# Tasks\n\n- [ ] T1: One\n- [ ] T2: Two\n  - after: T1\n- [x] T3: Three\n  - note: done\n" +
			"\n## Session\n\n- id: s0\n- status: paused\n",
		"no session": "# Tasks\n\n- [ ] T1: One\n- [ ] T2: Two\n  - priority: 2\n- [ ] T3: Three\n",
		"loose":      "# Tasks\n\n- [ ] T1: One\n\n- [ ] T2: Two\n  - note: a\n\n- [ ] T3: Three\n\n## Session\n\n- id: s0\n",
		"code": "# Tasks\n\n- [ ] T1: One\n  ```\n  - [ ] not a task\n  ```\n  More text\n- [ ] T2: Two\n  > quoted\n- [ ] T3: Three\n" +
			"\n## Session\n\n- id: s0\n",
		"crlf":    "# Tasks\r\n\r\n- [ ] T1: One\r\n- [ ] T2: Two\r\n  - attempts: 2\r\n\r\n## Session\r\n\r\n- id: s0\r\n",
		"bom":     "\xef\xbb\xbf---\ntitle: x\n---\n# Tasks\n\n- [ ] T1: One\n- [/] T2: Two\n\n## Session\n\n- id: s0\n",
		"ordered": "# Tasks\n\n1. [ ] T1: One\n2. [ ] T2: Two\n   - note: n\n3. [ ] T3: Three\n\n## Session\n\n1. id: s0\n",
		"after session": "# Tasks\n\n- [ ] T1: One\n\n## Session\n\n- id: s0\n- status: running\n\n## Later\n\n- [ ] T2: Appended\n" +
			"- [ ] T3: Appended too\n",
		"warnings": "# Tasks\n\n- [?] T1: Unknown box\n- [ ] T2: Bad priority\n  - priority: soon\n- [ ] T3: Ghost\n  - after: T99\n" +
			"- [ ] T4: Cycle\n  - after: T5\n- [ ] T5: Cycle\n  - after: T4\n- [ ] T5: Twice\n\n## Session\n\n- id: s0\n",
		"lazy":   "# Tasks\n\n- [ ] T1: One\nlazy line\n- [ ] T2: Two\n  - note: x\nText after\n\n## Session\n\n- id: s0\n",
		"mixed":  "# Tasks\n\n- [ ] T1: One\n* [ ] T2: Star\n- Plain item\n  - [ ] T3: Under a plain item\n- [ ] T4: Four\n\n## Session\n\n- id: s0\n",
		"no ids": "# Tasks\n\n- [ ] One\n- [ ] Two\n\n## Session\n\n- id: s0\n",
	}
}

// eachItemsForm runs test with the items of a large file's versions
// shared (items.go) from the size the code uses, and from the first item.
func eachItemsForm(t *testing.T, test func(t *testing.T)) {
	for _, from := range []int{shareItemsFrom, 0} {
		t.Run(fmt.Sprintf("shared-from-%d", from), func(t *testing.T) {
			defer func(was int) { shareItemsFrom = was }(shareItemsFrom)
			shareItemsFrom = from
			test(t)
		})
	}
}

func TestReparseMatchesWholeParse(t *testing.T) { eachItemsForm(t, testReparseMatchesWholeParse) }

func testReparseMatchesWholeParse(t *testing.T) {
	total := 0
	for name, data := range reparseFiles() {
		for seed := range uint64(12) {
			total += chainEdits(t, name, []byte(data), seed, 40)
		}
	}
	for _, fx := range loadCorpus(t) {
		for seed := range uint64(3) {
			total += chainEdits(t, fx.Name, fx.Data, seed, 15)
		}
	}
	// Most edits of these files are reparsed, not parsed whole: the test
	// would pass without reparse at all otherwise.
	if total < 1000 {
		t.Fatalf("only %d edits were reparsed", total)
	}
	t.Logf("%d edits reparsed", total)
}

// TestReparseCoordinatorEdits is what a coordinator writes per iteration
// on a large file: each of them is reparsed, none parsed whole.
func TestReparseCoordinatorEdits(t *testing.T) { eachItemsForm(t, testReparseCoordinatorEdits) }

func testReparseCoordinatorEdits(t *testing.T) {
	data := []byte(reparseFiles()["big"])
	c, err := ParseChecklist(TasksKind, data)
	if err != nil {
		t.Fatal(err)
	}
	misses := 0
	reparseHook = func(ok bool) {
		if !ok {
			misses++
		}
	}
	defer func() { reparseHook = nil }()
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for n, it := range c.Ready() {
		if n == 20 {
			break
		}
		id := it.ID
		for _, st := range []Status{InProgress, Done} {
			e := c.Edit()
			if err := e.SetStatus(id, st); err != nil {
				t.Fatal(err)
			}
			if st == Done {
				cur := e.Checklist().Find(id)
				for i := range cur.Notes {
					if err := e.DropNote(id, i); err != nil {
						t.Fatal(err)
					}
				}
				if err := e.DropMeta(id, "attempts"); err != nil {
					t.Fatal(err)
				}
			}
			s := Session{ID: "s1", Status: SessionRunning, Phase: PhaseAgent, Iteration: n + 1, Task: id, Started: now, Updated: now.Add(time.Duration(n) * time.Minute)}
			if err := e.SetSession(&s); err != nil {
				t.Fatal(err)
			}
			_, after, err := e.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			want, _ := ParseChecklist(TasksKind, after.src.src)
			sameParse(t, id+" "+string(st), after, want)
			c = after
		}
	}
	if misses > 0 {
		t.Fatalf("%d of the coordinator's writes were parsed whole", misses)
	}
}

// An edit that changes a task's lines and a later task's checkbox moves
// the checkbox's item with its new status: reparsed, and read as a whole
// parse reads it.
func TestReparseMovesABox(t *testing.T) {
	eachItemsForm(t, func(t *testing.T) {
		c, err := ParseChecklist(TasksKind, []byte(reparseFiles()["big"]))
		if err != nil {
			t.Fatal(err)
		}
		reparsed := false
		reparseHook = func(ok bool) { reparsed = ok }
		defer func() { reparseHook = nil }()
		for _, step := range []struct{ drop, box string }{{"T7", "T20"}, {"T14", "T25"}, {"T21", "T40"}} {
			e := c.Edit()
			if err := e.DropMeta(step.drop, "attempts"); err != nil {
				t.Fatal(err)
			}
			if err := e.SetStatus(step.box, Done); err != nil {
				t.Fatal(err)
			}
			_, after, err := e.Bytes()
			if err != nil || !reparsed {
				t.Fatalf("%+v: reparsed %v, %v", step, reparsed, err)
			}
			want, _ := ParseChecklist(TasksKind, after.src.src)
			sameParse(t, step.drop+" "+step.box, after, want)
			c = after
		}
	})
}

// FuzzReparse is TestReparseMatchesWholeParse from any file.
func FuzzReparse(f *testing.F) {
	for _, data := range reparseFiles() {
		f.Add([]byte(data), uint64(1))
	}
	addCorpusSeeds(f, func(data []byte) { f.Add(data, uint64(2)) })
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		defer func(was int) { shareItemsFrom = was }(shareItemsFrom)
		if seed%2 == 1 {
			shareItemsFrom = 0 // every version's items shared
		}
		chainEdits(t, "fuzz", data, seed, 8)
	})
}
