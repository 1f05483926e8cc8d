package mdstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yuin/goldmark/ast"
)

// The golden corpus: hand-written state files in testdata/corpus/<kind>/,
// each with the parse result (<name>.golden.json) and the exact diff of a
// table of edits (<name>.edits.golden) next to it. Refresh both with
//
//	go test ./mdstate -run Corpus -update
//
// and read the diff before committing it: a golden change is a change in
// what ralph reads or writes.

var update = flag.Bool("update", false, "rewrite the golden files in testdata/corpus")

const corpusRoot = "../testdata/corpus"

// corpusKinds are the corpus folders, one per state file.
var corpusKinds = []string{"tasks", "goals", "todo", "agent", "progress"}

type fixture struct {
	Kind string // a corpusKinds entry
	Name string // file name without .md
	Path string
	Data []byte
}

func (f fixture) String() string { return f.Kind + "/" + f.Name }

func (f fixture) golden(suffix string) string {
	return filepath.Join(corpusRoot, f.Kind, f.Name+suffix)
}

// loadCorpus reads every fixture, in a fixed order.
func loadCorpus(tb testing.TB) []fixture {
	tb.Helper()
	var out []fixture
	for _, kind := range corpusKinds {
		paths, err := filepath.Glob(filepath.Join(corpusRoot, kind, "*.md"))
		if err != nil {
			tb.Fatal(err)
		}
		slices.Sort(paths)
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, fixture{Kind: kind, Name: strings.TrimSuffix(filepath.Base(p), ".md"), Path: p, Data: data})
		}
	}
	if len(out) == 0 {
		tb.Fatalf("no fixtures under %s", corpusRoot)
	}
	return out
}

// checklistKind maps a corpus folder to its checklist kind.
func checklistKind(kind string) (Kind, bool) {
	switch kind {
	case "tasks":
		return TasksKind, true
	case "goals":
		return GoalsKind, true
	case "todo":
		return TodoKind, true
	}
	return Kind{}, false
}

// checkGolden compares got with the golden file, or rewrites it with -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test ./mdstate -run Corpus -update` to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is out of date (rerun with -update if the change is intended):\n%s", path, lineDiff(want, got))
	}
}

func marshalGolden(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// goldenItem is what an item means, as the golden files record it.
type goldenItem struct {
	ID          string   `json:"id"`
	Provisional bool     `json:"provisional"`
	Title       string   `json:"title"`
	Status      Status   `json:"status"`
	Priority    int      `json:"priority"`
	After       []string `json:"after"`
	Attempts    int      `json:"attempts"`
	Notes       []string `json:"notes"`
	From        string   `json:"from"`
	Promoted    string   `json:"promoted"`
	Body        string   `json:"body"`
	Depth       int      `json:"depth"`
	Line        int      `json:"line"`
}

func toGolden(it *Item) goldenItem {
	return goldenItem{ID: it.ID, Provisional: it.Provisional, Title: it.Title, Status: it.Status,
		Priority: it.Priority, After: nonNil(it.After), Attempts: it.Attempts, Notes: nonNil(it.Notes),
		From: it.From, Promoted: it.Promoted, Body: it.Body, Depth: it.Depth, Line: it.Line}
}

// meaning is an item without where it stands: what must not change when
// another item is edited.
func meaning(it *Item) goldenItem {
	g := toGolden(it)
	g.Line = 0
	g.Provisional = false
	return g
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

type goldenWarning struct {
	Line    int    `json:"line"`
	Message string `json:"message"`
}

func toGoldenWarnings(ws []Warning, file string) ([]goldenWarning, error) {
	out := []goldenWarning{}
	for _, w := range ws {
		if w.File != file {
			return nil, fmt.Errorf("warning %q names %s, want %s", w.Message, w.File, file)
		}
		out = append(out, goldenWarning{w.Line, w.Message})
	}
	return out, nil
}

type goldenChecklist struct {
	File     string          `json:"file"`
	Items    []goldenItem    `json:"items"`
	Ready    []string        `json:"ready,omitempty"`    // tasks only: run order
	Guidance []Guidance      `json:"guidance,omitempty"` // tasks only: queued messages
	Warnings []goldenWarning `json:"warnings"`
}

type goldenLearning struct {
	Text string `json:"text"`
	Line int    `json:"line"`
}

type goldenAgent struct {
	Learnings []goldenLearning `json:"learnings"`
}

type goldenEntry struct {
	Time   string  `json:"time"` // RFC 3339, "" when the heading has none
	Title  string  `json:"title"`
	Fields []Field `json:"fields"`
	Body   string  `json:"body"`
	Line   int     `json:"line"`
	Offset int64   `json:"offset"`
}

type goldenProgress struct {
	Entries  int             `json:"entries"`
	Recent   []goldenEntry   `json:"recent"`
	Warnings []goldenWarning `json:"warnings"`
}

func toGoldenEntry(e Entry) goldenEntry {
	g := goldenEntry{Title: e.Title, Fields: nonNil(e.Fields), Body: e.Body, Line: e.Line, Offset: e.Offset}
	if !e.Time.IsZero() {
		g.Time = e.Time.Format(time.RFC3339Nano)
	}
	return g
}

// allEntries is more than any fixture holds: the whole log is parsed.
const allEntries = 1000

func TestCorpusParse(t *testing.T) {
	for _, fx := range loadCorpus(t) {
		t.Run(fx.String(), func(t *testing.T) {
			var g any
			switch fx.Kind {
			case "agent":
				a, err := ParseAgent(fx.Data)
				if err != nil {
					t.Fatal(err)
				}
				ga := goldenAgent{Learnings: []goldenLearning{}}
				for _, l := range a.Learnings {
					ga.Learnings = append(ga.Learnings, goldenLearning{l.Text, l.Line})
				}
				g = ga
			case "progress":
				lg, err := projectWith(t, ProgressFile, fx.Data).ReadProgress(allEntries)
				if err != nil {
					t.Fatal(err)
				}
				if len(lg.Recent) != lg.Entries {
					t.Errorf("parsed %d entries of %d", len(lg.Recent), lg.Entries)
				}
				gp := goldenProgress{Entries: lg.Entries, Recent: []goldenEntry{}}
				for _, e := range lg.Recent {
					gp.Recent = append(gp.Recent, toGoldenEntry(e))
				}
				if gp.Warnings, err = toGoldenWarnings(lg.Warnings, ProgressFile); err != nil {
					t.Error(err)
				}
				g = gp
			default:
				k, _ := checklistKind(fx.Kind)
				c, err := ParseChecklist(k, fx.Data)
				if err != nil {
					t.Fatal(err)
				}
				gc := goldenChecklist{File: k.File, Items: []goldenItem{}}
				for i := range c.Items() {
					gc.Items = append(gc.Items, toGolden(&c.Items()[i]))
				}
				if k == TasksKind {
					for _, it := range c.Ready() {
						gc.Ready = append(gc.Ready, it.ID)
					}
					gc.Guidance = c.Guidance()
				}
				if gc.Warnings, err = toGoldenWarnings(c.Warnings, k.File); err != nil {
					t.Error(err)
				}
				g = gc
			}
			checkGolden(t, fx.golden(".golden.json"), marshalGolden(t, g))
		})
	}
}

// TestCorpusIdentity checks that reading a file and writing it back with
// no change yields the same bytes, and that ralph does not write a file
// when nothing changes.
func TestCorpusIdentity(t *testing.T) {
	for _, fx := range loadCorpus(t) {
		t.Run(fx.String(), func(t *testing.T) {
			switch fx.Kind {
			case "agent":
				a, err := ParseAgent(fx.Data)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a.src.src, fx.Data) {
					t.Fatal("parsing changed the bytes")
				}
				return
			case "progress":
				p := projectWith(t, ProgressFile, fx.Data)
				if _, err := p.ReadProgress(allEntries); err != nil {
					t.Fatal(err)
				}
				assertUntouched(t, p, ProgressFile, fx.Data, nil)
				return
			}
			k, _ := checklistKind(fx.Kind)
			c, err := ParseChecklist(k, fx.Data)
			if err != nil {
				t.Fatal(err)
			}
			provisional := slices.ContainsFunc(c.Items(), func(it Item) bool { return it.Provisional })
			e := c.Edit()
			out, after, err := e.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			if !provisional {
				if e.Changed() {
					t.Error("an edit with no changes reports a change")
				}
				if !bytes.Equal(out, fx.Data) {
					t.Fatalf("an edit with no changes changed the bytes:\n%s", lineDiff(fx.Data, out))
				}
			} else {
				// The only change is the IDs, and written they read the
				// same as they did provisionally.
				checkOnlyIDsWritten(t, c, fx.Data, out)
				for i := range after.Items() {
					if got, want := meaning(&after.Items()[i]), meaning(&c.Items()[i]); !reflect.DeepEqual(got, want) {
						t.Errorf("item %d reads %+v after writing IDs, want %+v", i, got, want)
					}
				}
			}

			// Through a project: an update that changes nothing leaves the
			// file alone, not even rewriting the same bytes.
			p := projectWith(t, k.File, fx.Data)
			fi0, _ := os.Stat(p.Path(k.File))
			if _, err := p.UpdateChecklist(k, func(e *ChecklistEdit) error { return nil }); err != nil {
				t.Fatal(err)
			}
			if provisional {
				got, _ := os.ReadFile(p.Path(k.File))
				if !bytes.Equal(got, out) {
					t.Errorf("update wrote other bytes than the edit:\n%s", lineDiff(out, got))
				}
				return
			}
			assertUntouched(t, p, k.File, fx.Data, fi0)
			if len(c.Items()) > 0 {
				it := c.Items()[0]
				if _, err := p.UpdateChecklist(k, func(e *ChecklistEdit) error { return e.SetStatus(it.ID, it.Status) }); err != nil {
					t.Fatal(err)
				}
				assertUntouched(t, p, k.File, fx.Data, fi0)
			}
		})
	}
}

// checkOnlyIDsWritten checks that out is src with "Tn:" written for every
// provisional item and nothing else: inserted where the item had no ID,
// replacing a duplicate one; with a blank before it when the box ends the
// line and after it when a title follows.
func checkOnlyIDsWritten(t *testing.T, c *Checklist, src, out []byte) {
	t.Helper()
	i, j := 0, 0 // offsets in src and out
	for _, it := range c.Items() {
		if !it.Provisional {
			continue
		}
		n := it.IDSpan.Start - i
		if n < 0 || j+n > len(out) || !bytes.Equal(src[i:it.IDSpan.Start], out[j:j+n]) {
			t.Errorf("writing IDs changed more than the IDs:\n%s", lineDiff(src, out))
			return
		}
		i, j = it.IDSpan.End, j+n
		id := []byte(it.ID + ":")
		switch {
		case bytes.HasPrefix(out[j:], append([]byte(" "), id...)) && it.IDSpan.Start == it.BoxAt+2:
			j += 1 + len(id)
		case bytes.HasPrefix(out[j:], id):
			j += len(id)
		default:
			t.Errorf("%s is not written at %d:\n%s", it.ID, it.IDSpan.Start, lineDiff(src, out))
			return
		}
		if j < len(out) && out[j] == ' ' && (i >= len(src) || src[i] != ' ') {
			j++
		}
	}
	if !bytes.Equal(src[i:], out[j:]) {
		t.Errorf("writing IDs changed more than the IDs:\n%s", lineDiff(src, out))
	}
}

func projectWith(t *testing.T, name string, data []byte) *Project {
	t.Helper()
	p := Open(t.TempDir())
	if err := os.WriteFile(p.Path(name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// assertUntouched checks that the file still holds data and, given fi0,
// is still the same file: not replaced by an atomic write of equal bytes.
func assertUntouched(t *testing.T, p *Project, name string, data []byte, fi0 os.FileInfo) {
	t.Helper()
	got, err := os.ReadFile(p.Path(name))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("%s changed:\n%s", name, lineDiff(data, got))
	}
	if fi0 != nil {
		fi1, err := os.Stat(p.Path(name))
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(fi0, fi1) {
			t.Errorf("%s was rewritten although nothing changed", name)
		}
	}
}

// An editCase is one edit of the table in the edits goldens.
type editCase struct {
	name string
	run  func() ([]byte, error)
}

func TestCorpusEdits(t *testing.T) {
	for _, fx := range loadCorpus(t) {
		t.Run(fx.String(), func(t *testing.T) {
			var cases []editCase
			switch fx.Kind {
			case "agent":
				cases = agentEditCases(t, fx)
			case "progress":
				cases = progressEditCases(t, fx)
			default:
				cases = checklistEditCases(t, fx)
			}
			var b bytes.Buffer
			fmt.Fprintf(&b, "# Edits of %s.md: each shows the diff against the fixture.\n", fx)
			fmt.Fprintf(&b, "# ␍ is a CR, <BOM> a byte-order mark, ␉ a tab, · a trailing space.\n")
			for _, ec := range cases {
				fmt.Fprintf(&b, "\n=== %s\n", ec.name)
				out, err := ec.run()
				switch {
				case err != nil:
					fmt.Fprintf(&b, "error: %v\n", err)
				case bytes.Equal(out, fx.Data):
					b.WriteString("(no change)\n")
				default:
					b.WriteString(lineDiff(fx.Data, out))
				}
			}
			checkGolden(t, fx.golden(".edits.golden"), b.Bytes())
		})
	}
}

func checklistEditCases(t *testing.T, fx fixture) []editCase {
	k, _ := checklistKind(fx.Kind)
	c, err := ParseChecklist(k, fx.Data)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(fn func(e *ChecklistEdit) error) func() ([]byte, error) {
		return func() ([]byte, error) {
			e := c.Edit()
			if err := fn(e); err != nil {
				return nil, err
			}
			out, _, err := e.Bytes()
			return out, err
		}
	}
	var cases []editCase
	if slices.ContainsFunc(c.Items(), func(it Item) bool { return it.Provisional }) {
		cases = append(cases, editCase{"write the provisional IDs (an edit with no other change)", edit(func(*ChecklistEdit) error { return nil })})
	}
	if n := len(c.Items()); n > 0 {
		first, last := c.Items()[0], c.Items()[n-1]
		for _, st := range Statuses {
			cases = append(cases, editCase{fmt.Sprintf("SetStatus(%s, %s)", first.ID, st), edit(func(e *ChecklistEdit) error { return e.SetStatus(first.ID, st) })})
		}
		st := Done
		if last.Status == Done {
			st = Pending
		}
		cases = append(cases,
			editCase{fmt.Sprintf("SetStatus(%s, %s)", last.ID, st), edit(func(e *ChecklistEdit) error { return e.SetStatus(last.ID, st) })},
			editCase{fmt.Sprintf("AddMeta(%s, note)", first.ID), edit(func(e *ChecklistEdit) error { return e.AddMeta(first.ID, "note", "added by the test") })},
			editCase{fmt.Sprintf("AddMeta(%s, note)", last.ID), edit(func(e *ChecklistEdit) error { return e.AddMeta(last.ID, "note", "added to the last item") })},
		)
		// Attempts: in place where an item has the line, else a new line.
		withAttempts := slices.IndexFunc(c.Items(), func(it Item) bool { return hasMeta(&it, "attempts") })
		if withAttempts >= 0 {
			id := c.Items()[withAttempts].ID
			cases = append(cases, editCase{fmt.Sprintf("SetMeta(%s, attempts, 4) in place", id), edit(func(e *ChecklistEdit) error { return e.SetMeta(id, "attempts", "4") })})
		}
		if i := slices.IndexFunc(c.Items(), func(it Item) bool { return !hasMeta(&it, "attempts") }); i >= 0 {
			id := c.Items()[i].ID
			cases = append(cases, editCase{fmt.Sprintf("SetMeta(%s, attempts, 1) as a new line", id), edit(func(e *ChecklistEdit) error { return e.SetMeta(id, "attempts", "1") })})
		}
		cases = append(cases, editCase{fmt.Sprintf("SetStatus(%s, done) + AddMeta(%s, note) + SetMeta(%s, attempts, 2)", last.ID, last.ID, first.ID), edit(func(e *ChecklistEdit) error {
			if err := e.SetStatus(last.ID, Done); err != nil {
				return err
			}
			if err := e.AddMeta(last.ID, "note", "finished"); err != nil {
				return err
			}
			return e.SetMeta(first.ID, "attempts", "2")
		})})
	}
	cases = append(cases, editCase{"Add(\"A new item\")", edit(func(e *ChecklistEdit) error {
		_, err := e.Add("A new item")
		return err
	})})
	var after []string
	for i := 0; i < len(c.Items()) && i < 2; i++ {
		after = append(after, c.Items()[i].ID)
	}
	meta := []MetaKV{{"priority", "2"}}
	if len(after) > 0 {
		meta = append(meta, MetaKV{"after", strings.Join(after, ", ")})
	}
	meta = append(meta, MetaKV{"note", "added with metadata"})
	cases = append(cases, editCase{fmt.Sprintf("Add(\"A new item with metadata\", %v) + Add(\"And another\")", meta), edit(func(e *ChecklistEdit) error {
		if _, err := e.Add("A new item with metadata", meta...); err != nil {
			return err
		}
		_, err := e.Add("And another")
		return err
	})})
	if k == TasksKind {
		cases = append(cases, editCase{"QueueGuidance(\"Use the new logger\")", edit(func(e *ChecklistEdit) error {
			return e.QueueGuidance("Use the new logger")
		})})
		if g := c.Guidance(); len(g) > 0 {
			cases = append(cases, editCase{fmt.Sprintf("DropGuidance(%q) + QueueGuidance(\"Use the new logger\")", g[0].Text), edit(func(e *ChecklistEdit) error {
				if err := e.DropGuidance([]string{g[0].Text}); err != nil {
					return err
				}
				return e.QueueGuidance("Use the new logger")
			})})
		}
	}
	return cases
}

func hasMeta(it *Item, key string) bool {
	return slices.ContainsFunc(it.Meta, func(m Meta) bool { return m.Key == key })
}

func agentEditCases(t *testing.T, fx fixture) []editCase {
	a, err := ParseAgent(fx.Data)
	if err != nil {
		t.Fatal(err)
	}
	return []editCase{
		{"AddLearning(one line)", func() ([]byte, error) {
			return a.AddLearning("Learned in a test: keep the corpus byte-exact.")
		}},
		{"AddLearning(two lines)", func() ([]byte, error) {
			return a.AddLearning("A learning on two lines:\nthe second is indented under the bullet.")
		}},
	}
}

var testEntry = Entry{
	Time:  time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
	Title: "T7: Added by the corpus test",
	Fields: []Field{
		{Key: "outcome", Value: "done"},
		{Key: "agent", Value: "fake"},
		{Key: "decisions", List: []string{"keep it short", "## not a heading"}},
	},
}

func progressEditCases(t *testing.T, fx fixture) []editCase {
	return []editCase{{"AppendProgress(" + testEntry.Title + ")", func() ([]byte, error) {
		p := projectWith(t, ProgressFile, fx.Data)
		if err := p.AppendProgress(testEntry); err != nil {
			return nil, err
		}
		return os.ReadFile(p.Path(ProgressFile))
	}}}
}

// TestCorpusStatusEdits sets every item of every checklist fixture to
// every status and checks the result byte by byte: one byte changes (none
// when the status is the same), and the re-parse differs only in that
// item's status.
func TestCorpusStatusEdits(t *testing.T) {
	for _, fx := range loadCorpus(t) {
		k, ok := checklistKind(fx.Kind)
		if !ok {
			continue
		}
		t.Run(fx.String(), func(t *testing.T) {
			base, c := withIDs(t, k, fx.Data)
			for i := range c.Items() {
				it := &c.Items()[i]
				for _, st := range Statuses {
					e := c.Edit()
					if err := e.SetStatus(it.ID, st); err != nil {
						t.Fatal(err)
					}
					out, _, err := e.Bytes()
					if err != nil {
						t.Errorf("SetStatus(%s, %s): %v", it.ID, st, err)
						continue
					}
					if len(out) != len(base) {
						t.Errorf("SetStatus(%s, %s) changed the length from %d to %d", it.ID, st, len(base), len(out))
						continue
					}
					diff := diffOffsets(base, out)
					if it.Status == st {
						if len(diff) != 0 || e.Changed() {
							t.Errorf("SetStatus(%s, %s) to the same status changed bytes %v", it.ID, st, diff)
						}
						continue
					}
					if len(diff) != 1 || diff[0] != it.BoxAt || out[it.BoxAt] != st.Box() {
						t.Errorf("SetStatus(%s, %s) changed bytes %v, want only %d", it.ID, st, diff, it.BoxAt)
						continue
					}
					checkReparse(t, k, c, out, func(want []goldenItem) []goldenItem {
						want[i].Status = st
						return want
					})
				}
			}
		})
	}
}

// TestCorpusMetaEdits adds a note to every item and sets its attempts,
// checking that each is an insertion of whole lines inside the item (or a
// replacement inside the old value) and that the re-parse differs only so.
func TestCorpusMetaEdits(t *testing.T) {
	for _, fx := range loadCorpus(t) {
		k, ok := checklistKind(fx.Kind)
		if !ok {
			continue
		}
		t.Run(fx.String(), func(t *testing.T) {
			base, c := withIDs(t, k, fx.Data)
			s := c.src
			for i := range c.Items() {
				it := &c.Items()[i]
				lo, hi := s.lineStart(it.BoxAt), it.Span.End

				e := c.Edit()
				if err := e.AddMeta(it.ID, "note", "a new note"); err != nil {
					t.Fatal(err)
				}
				if out, _, err := e.Bytes(); err != nil {
					t.Errorf("AddMeta(%s, note): %v", it.ID, err)
				} else {
					checkInsertion(t, "AddMeta("+it.ID+")", base, out, lo, hi)
					checkReparse(t, k, c, out, func(want []goldenItem) []goldenItem {
						want[i].Notes = append(want[i].Notes, "a new note")
						return want
					})
				}

				e = c.Edit()
				if err := e.SetMeta(it.ID, "attempts", "7"); err != nil {
					t.Fatal(err)
				}
				out, _, err := e.Bytes()
				if err != nil {
					t.Errorf("SetMeta(%s, attempts): %v", it.ID, err)
					continue
				}
				if j := lastMeta(it, "attempts"); j >= 0 {
					val := it.Meta[j].Val
					p, q := commonAffixes(base, out)
					if p < val.Start || len(base)-q > val.End {
						t.Errorf("SetMeta(%s, attempts) changed %d..%d, outside the value at %d..%d", it.ID, p, len(base)-q, val.Start, val.End)
					}
				} else {
					checkInsertion(t, "SetMeta("+it.ID+")", base, out, lo, hi)
				}
				checkReparse(t, k, c, out, func(want []goldenItem) []goldenItem {
					want[i].Attempts = 7
					return want
				})
			}
		})
	}
}

// TestCorpusAdd adds items to every checklist fixture and checks that they
// are inserted as whole lines, after every item, and read back as written.
func TestCorpusAdd(t *testing.T) {
	for _, fx := range loadCorpus(t) {
		k, ok := checklistKind(fx.Kind)
		if !ok {
			continue
		}
		t.Run(fx.String(), func(t *testing.T) {
			base, c := withIDs(t, k, fx.Data)
			if strings.Contains(fx.Name, "unclosed-fence") {
				// The file ends inside a code block: ralph refuses to add,
				// naming the line where the block opened.
				e := c.Edit()
				if _, err := e.Add("Refused"); err != nil {
					t.Fatal(err)
				}
				_, _, err := e.Bytes()
				var fe *FileError
				if !errors.As(err, &fe) || fe.Line == 0 || !strings.Contains(fe.Msg, "never closed") {
					t.Fatalf("Add below an unclosed fence: err = %v, want a FileError naming the line", err)
				}
				return
			}
			next := 1
			for _, it := range c.Items() {
				next = max(next, idNum(it.ID)+1)
			}
			var after []string
			for _, it := range c.Items() {
				after = append(after, it.ID)
			}
			after = after[:min(3, len(after))]
			e := c.Edit()
			id1, err := e.Add("First new item")
			if err != nil {
				t.Fatal(err)
			}
			meta := []MetaKV{{"priority", "3"}, {"note", "two\nlines"}}
			if len(after) > 0 {
				meta = append(meta, MetaKV{"after", strings.Join(after, ", ")})
			}
			id2, err := e.Add("Second   new\titem", meta...)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("%s%d", k.Prefix, next); id1 != want {
				t.Errorf("first added ID is %s, want %s", id1, want)
			}
			if want := fmt.Sprintf("%s%d", k.Prefix, next+1); id2 != want {
				t.Errorf("second added ID is %s, want %s", id2, want)
			}
			out, _, err := e.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			lo := 0
			if len(c.Items()) > 0 {
				lo = c.Items()[len(c.Items())-1].Span.End
			}
			checkInsertion(t, "Add", base, out, lo, len(base))
			checkReparse(t, k, c, out, func(want []goldenItem) []goldenItem {
				return append(want,
					goldenItem{ID: id1, Title: "First new item", Status: Pending, After: []string{}, Notes: []string{}},
					goldenItem{ID: id2, Title: "Second new item", Status: Pending, Priority: 3, After: nonNil(after), Notes: []string{"two lines"}})
			})
		})
	}
}

// TestCorpusLearn adds a learning to every agent fixture.
func TestCorpusLearn(t *testing.T) {
	for _, fx := range loadCorpus(t) {
		if fx.Kind != "agent" {
			continue
		}
		t.Run(fx.String(), func(t *testing.T) {
			a, err := ParseAgent(fx.Data)
			if err != nil {
				t.Fatal(err)
			}
			const text = "Learned here:\nsecond line"
			out, err := a.AddLearning(text)
			if err != nil {
				t.Fatal(err)
			}
			p, q := commonAffixes(fx.Data, out)
			if p+q < len(fx.Data) {
				t.Fatalf("AddLearning changed bytes, not only inserted them:\n%s", lineDiff(fx.Data, out))
			}
			b, err := ParseAgent(out)
			if err != nil {
				t.Fatal(err)
			}
			var got, want []string
			for _, l := range b.Learnings {
				got = append(got, l.Text)
			}
			for _, l := range a.Learnings {
				want = append(want, l.Text)
			}
			i := slices.Index(got, "Learned here:\nsecond line")
			if i < 0 {
				t.Fatalf("new learning not found in %q", got)
			}
			if got = slices.Delete(got, i, i+1); !slices.Equal(got, want) {
				t.Errorf("other learnings changed: got %q, want %q", got, want)
			}
			// The headings are as they were, plus "Learnings" if it was
			// missing.
			hb, ha := headings(a.md), headings(b.md)
			if _, found := a.insertPoint(); !found {
				hb = append(hb, "2 Learnings")
			}
			if !slices.Equal(hb, ha) {
				t.Errorf("headings changed: got %q, want %q", ha, hb)
			}
			// Through a project, the same bytes land in the file.
			pr := projectWith(t, AgentFile, fx.Data)
			if err := pr.Learn(text); err != nil {
				t.Fatal(err)
			}
			if disk, _ := os.ReadFile(pr.Path(AgentFile)); !bytes.Equal(disk, out) {
				t.Errorf("Learn wrote other bytes than AddLearning:\n%s", lineDiff(out, disk))
			}
		})
	}
}

// headings lists the top-level headings of a document as "level text".
func headings(md *parsed) []string {
	var out []string
	for n := md.doc.FirstChild(); n != nil; n = n.NextSibling() {
		if h, ok := n.(*ast.Heading); ok {
			out = append(out, fmt.Sprintf("%d %s", h.Level, md.headingText(h)))
		}
	}
	return out
}

// TestCorpusAppendProgress appends to every progress fixture: the old bytes
// stay a prefix, the count grows by one, the old entries read the same and
// the new one as it was given.
func TestCorpusAppendProgress(t *testing.T) {
	for _, fx := range loadCorpus(t) {
		if fx.Kind != "progress" {
			continue
		}
		t.Run(fx.String(), func(t *testing.T) {
			p := projectWith(t, ProgressFile, fx.Data)
			before, err := p.ReadProgress(allEntries)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.AppendProgress(testEntry); err != nil {
				t.Fatal(err)
			}
			out, err := os.ReadFile(p.Path(ProgressFile))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(out, fx.Data) {
				t.Fatalf("AppendProgress changed the old bytes:\n%s", lineDiff(fx.Data, out))
			}
			after, err := p.ReadProgress(allEntries)
			if err != nil {
				t.Fatal(err)
			}
			if after.Entries != before.Entries+1 {
				t.Fatalf("%d entries after appending to %d", after.Entries, before.Entries)
			}
			for i, e := range before.Recent {
				if got, want := toGoldenEntry(after.Recent[i]), toGoldenEntry(e); !reflect.DeepEqual(got, want) {
					t.Errorf("entry %d reads %+v after the append, want %+v", i, got, want)
				}
			}
			got := after.Recent[len(after.Recent)-1]
			if !got.Time.Equal(testEntry.Time) || got.Title != testEntry.Title || got.Body != testEntry.Body || !reflect.DeepEqual(got.Fields, testEntry.Fields) {
				t.Errorf("appended entry reads %+v, want %+v", got, testEntry)
			}
			if journalPending(t, p) {
				t.Error("the journal still holds its record after a clean append")
			}
		})
	}
}

// withIDs returns the fixture with its provisional IDs written, and its
// parse: edits are checked against that, so that every byte they change
// is theirs.
func withIDs(t *testing.T, k Kind, data []byte) ([]byte, *Checklist) {
	t.Helper()
	c, err := ParseChecklist(k, data)
	if err != nil {
		t.Fatal(err)
	}
	base, after, err := c.Edit().Bytes()
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range after.Items() {
		if it.Provisional {
			t.Fatalf("%s is still provisional after writing IDs", it.ID)
		}
	}
	return base, after
}

// checkReparse parses out and checks that its items are c's, changed by fn.
func checkReparse(t *testing.T, k Kind, c *Checklist, out []byte, fn func([]goldenItem) []goldenItem) {
	t.Helper()
	var want []goldenItem
	for i := range c.Items() {
		want = append(want, meaning(&c.Items()[i]))
	}
	want = fn(want)
	after, err := ParseChecklist(k, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Items()) != len(want) {
		t.Errorf("re-parse has %d items, want %d", len(after.Items()), len(want))
		return
	}
	for i := range after.Items() {
		if after.Items()[i].Provisional {
			t.Errorf("item %d (%s) has no written ID", i, after.Items()[i].ID)
		}
		if got := meaning(&after.Items()[i]); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("item %d reads\n%+v, want\n%+v", i, got, want[i])
		}
	}
}

// commonAffixes returns the lengths of the longest common prefix of a and
// b and of the longest common suffix of what remains.
func commonAffixes(a, b []byte) (p, q int) {
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	for q < len(a)-p && q < len(b)-p && a[len(a)-1-q] == b[len(b)-1-q] {
		q++
	}
	return p, q
}

// checkInsertion checks that out is base with whole lines inserted at one
// offset in [lo, hi]: no byte of base is changed or lost.
func checkInsertion(t *testing.T, what string, base, out []byte, lo, hi int) {
	t.Helper()
	n := len(out) - len(base)
	p, q := commonPrefix(base, out), commonSuffix(base, out)
	if n <= 0 || p+q < len(base) {
		t.Errorf("%s changed bytes of the file instead of inserting:\n%s", what, lineDiff(base, out))
		return
	}
	// The insertion point is ambiguous within a run of equal bytes: any k
	// in [len(base)-q, p] gives the same result. One must start a line
	// (or follow the unterminated last line) and lie in [lo, hi].
	for k := max(len(base)-q, 0); k <= min(p, len(base)); k++ {
		if k < lo || k > hi {
			continue
		}
		ins := out[k : k+n]
		startsLine := k == 0 || base[k-1] == '\n' || (k == len(base) && (ins[0] == '\r' || ins[0] == '\n'))
		if startsLine && ins[len(ins)-1] == '\n' {
			return
		}
	}
	k := max(len(base)-q, 0)
	t.Errorf("%s inserted %q at %d (or up to %d), not whole lines within %d..%d", what, out[k:k+n], k, p, lo, hi)
}

func lastMeta(it *Item, key string) int {
	for j := len(it.Meta) - 1; j >= 0; j-- {
		if it.Meta[j].Key == key {
			return j
		}
	}
	return -1
}

// diffOffsets returns the offsets where two equally long slices differ.
func diffOffsets(a, b []byte) []int {
	var out []int
	for i := range a {
		if a[i] != b[i] {
			out = append(out, i)
		}
	}
	return out
}

// lineDiff returns a line diff of a and b with one line of context, lines
// made visible: ␍ for CR, ␉ for a tab, · for a trailing space, <BOM> for
// a byte-order mark, and a note for a missing final newline.
func lineDiff(a, b []byte) string {
	x, y := splitLinesKeep(a), splitLinesKeep(b)
	// lcs[i][j] is the length of the longest common subsequence of x[i:]
	// and y[j:].
	lcs := make([][]int32, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte // ' ', '-' or '+'
		i, j int  // line indexes in x and y (of the line, or where it goes)
	}
	var ops []op
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			ops = append(ops, op{' ', i, j})
			i++
			j++
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', i, j})
			i++
		default:
			ops = append(ops, op{'+', i, j})
			j++
		}
	}
	const context = 1
	var b2 strings.Builder
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start := max(0, k-context)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(end+context, len(ops))
				break
			}
			end = run
		}
		na, nb := 0, 0
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				na++
			}
			if o.kind != '-' {
				nb++
			}
		}
		fmt.Fprintf(&b2, "@@ -%d,%d +%d,%d @@\n", ops[start].i+1, na, ops[start].j+1, nb)
		for _, o := range ops[start:end] {
			line, idx := "", 0
			if o.kind == '+' {
				line, idx = y[o.j], o.j
			} else {
				line, idx = x[o.i], o.i
			}
			b2.WriteByte(o.kind)
			b2.WriteString(visibleLine(line, idx == 0))
			b2.WriteByte('\n')
			if !strings.HasSuffix(line, "\n") {
				b2.WriteString("\\ no newline at end of file\n")
			}
		}
		k = end
	}
	return b2.String()
}

func splitLinesKeep(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, string(b))
			break
		}
		out = append(out, string(b[:i+1]))
		b = b[i+1:]
	}
	return out
}

func visibleLine(line string, first bool) string {
	line = strings.TrimSuffix(line, "\n")
	if first && strings.HasPrefix(line, "\uFEFF") {
		line = "<BOM>" + line[len("\uFEFF"):]
	}
	cr := strings.HasSuffix(line, "\r")
	line = strings.TrimSuffix(line, "\r")
	t := strings.TrimRight(line, " ")
	line = t + strings.Repeat("·", len(line)-len(t))
	line = strings.ReplaceAll(line, "\r", "␍")
	line = strings.ReplaceAll(line, "\t", "␉")
	if cr {
		line += "␍"
	}
	return line
}

func TestLineDiff(t *testing.T) {
	a := "\uFEFFone\r\ntwo\nthree \nfour\nfive\nsix\nseven"
	b := "\uFEFFone\r\ntwo\nthree \nFOUR\nfive\nsix\nseven\neight\n"
	want := strings.Join([]string{
		"@@ -3,5 +3,6 @@",
		" three·",
		"-four",
		"+FOUR",
		" five",
		" six",
		"-seven",
		"\\ no newline at end of file",
		"+seven",
		"+eight",
		"",
	}, "\n")
	if got, want := lineDiff([]byte("1\n2\n3\n4\n5\n6\n7\n"), []byte("1\nX\n3\n4\n5\n6\nY\n")), "@@ -1,3 +1,3 @@\n 1\n-2\n+X\n 3\n@@ -6,2 +6,2 @@\n 6\n-7\n+Y\n"; got != want {
		t.Errorf("far-apart changes are not separate hunks:\n%s", got)
	}
	if got := lineDiff([]byte(a), []byte(b)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := lineDiff([]byte("x\n"), []byte("\uFEFFx\r\n")); got != "@@ -1,1 +1,1 @@\n-x\n+<BOM>x␍\n" {
		t.Errorf("got %q", got)
	}
	if got := lineDiff([]byte("same\n"), []byte("same\n")); got != "" {
		t.Errorf("got %q for equal inputs", got)
	}
}
