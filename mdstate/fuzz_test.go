package mdstate

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/yuin/goldmark/ast"
)

// The fuzz targets start from every corpus file. Run one with
//
//	go test ./mdstate -run '^$' -fuzz FuzzParse -fuzztime 60s
//
// A failure lands in testdata/fuzz/<target>/ and runs as a test from then on.

var fuzzKinds = []Kind{TasksKind, GoalsKind, TodoKind}

// strictVerify makes an ErrVerify refusal a failure too, to find the
// inputs ralph refuses to edit: RALPH_FUZZ_STRICT=1 go test -fuzz ….
var strictVerify = os.Getenv("RALPH_FUZZ_STRICT") != ""

func addCorpusSeeds(f *testing.F, add func(data []byte)) {
	for _, fx := range loadCorpus(f) {
		add(fx.Data)
	}
}

// FuzzParse checks that no input makes a parser panic and that what they
// report points into the input.
func FuzzParse(f *testing.F) {
	addCorpusSeeds(f, func(data []byte) { f.Add(data) })
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, k := range fuzzKinds {
			c, err := ParseChecklist(k, data)
			if err != nil {
				var fe *FileError
				if !errors.As(err, &fe) {
					t.Fatalf("ParseChecklist error is not a FileError: %v", err)
				}
				continue
			}
			checkWarnings(t, c.Warnings)
			ids := map[string]bool{}
			for _, it := range c.Items() {
				if ids[it.ID] {
					t.Fatalf("two items are %s", it.ID)
				}
				ids[it.ID] = true
				if it.Line < 1 || it.BoxAt < 1 || it.BoxAt+1 >= len(data) || data[it.BoxAt-1] != '[' || data[it.BoxAt+1] != ']' {
					t.Fatalf("%s: box at %d, line %d, is not in brackets", it.ID, it.BoxAt, it.Line)
				}
				if it.Span.Start > it.BoxAt || it.Span.End < it.BoxAt || it.Span.End > len(data) {
					t.Fatalf("%s: span %v does not hold the box at %d", it.ID, it.Span, it.BoxAt)
				}
				if it.IDSpan.Start < it.BoxAt+2 || it.IDSpan.End < it.IDSpan.Start || it.IDSpan.End > len(data) {
					t.Fatalf("%s: ID span %v is not after the box at %d", it.ID, it.IDSpan, it.BoxAt)
				}
				for _, m := range it.Meta {
					if m.Val.Start < m.Span.Start || m.Val.End > m.Span.End || m.Span.End > len(data) {
						t.Fatalf("%s: meta %s value %v is outside its line %v", it.ID, m.Key, m.Val, m.Span)
					}
				}
			}
			c.Ready()
			c.Counts()
		}
		if a, err := ParseAgent(data); err == nil {
			for _, l := range a.Learnings {
				if l.Line < 1 || l.Span.Start > l.Span.End || l.Span.End > len(data) {
					t.Fatalf("learning %q: line %d, span %v", l.Text, l.Line, l.Span)
				}
			}
		}
		e, warns := parseEntry(data, 1)
		checkWarnings(t, warns)
		if e.Line != 1 {
			t.Fatalf("entry line %d, want 1", e.Line)
		}
		// The progress scan: every entry it finds is a "##" line where it
		// says, and parses.
		x, starts, err := scanLog(bytes.NewReader(data), 1<<10)
		if err != nil {
			return
		}
		if x.Entries < len(starts) || (x.Entries <= 1<<10 && x.Entries != len(starts)) {
			t.Fatalf("%d entries, %d starts", x.Entries, len(starts))
		}
		for i, st := range starts {
			off := int(st.Off)
			if off < 0 || off >= len(data) || (off > 0 && data[off-1] != '\n') || !bytes.HasPrefix(data[off:], []byte("##")) || st.Line != lineAt(data, off) {
				t.Fatalf("entry %d at %d, line %d, is not a heading line", i, off, st.Line)
			}
			if i > 0 && starts[i-1].Off >= st.Off {
				t.Fatalf("entries out of order at %d", off)
			}
			end := len(data)
			if i+1 < len(starts) {
				end = int(starts[i+1].Off)
			}
			_, warns := parseEntry(data[off:end], st.Line)
			checkWarnings(t, warns)
		}
	})
}

func checkWarnings(t *testing.T, ws []Warning) {
	t.Helper()
	for _, w := range ws {
		if w.Line < 0 || w.Message == "" {
			t.Fatalf("bad warning %+v", w)
		}
	}
}

// FuzzIdentity checks that an edit that changes nothing writes the input
// back unchanged, and that writing provisional IDs inserts "Tn:" and
// nothing else.
func FuzzIdentity(f *testing.F) {
	addCorpusSeeds(f, func(data []byte) { f.Add(data, uint8(0)) })
	f.Fuzz(func(t *testing.T, data []byte, kind uint8) {
		if FindConflict("", data) != nil {
			return // never written, by design: FuzzConflict
		}
		k := fuzzKinds[int(kind)%len(fuzzKinds)]
		c, err := ParseChecklist(k, data)
		if err != nil {
			return
		}
		e := c.Edit()
		out, after, err := e.Bytes()
		provisional := false
		for _, it := range c.Items() {
			provisional = provisional || it.Provisional
		}
		if !provisional {
			if err != nil {
				t.Fatalf("an edit with no changes fails: %v", err)
			}
			if e.Changed() || !bytes.Equal(out, data) {
				t.Fatalf("an edit with no changes changed the bytes:\n%s", lineDiff(data, out))
			}
			return
		}
		if err != nil {
			if !errors.Is(err, ErrVerify) || strictVerify {
				t.Fatalf("writing IDs fails: %v", err)
			}
			return
		}
		checkOnlyIDsWritten(t, c, data, out)
		if len(after.Items()) != len(c.Items()) {
			t.Fatalf("%d items after writing IDs, %d before", len(after.Items()), len(c.Items()))
		}
		for i := range after.Items() {
			if after.Items()[i].Provisional || after.Items()[i].ID != c.Items()[i].ID {
				t.Fatalf("item %d is %s (provisional %v) after writing IDs, want %s", i, after.Items()[i].ID, after.Items()[i].Provisional, c.Items()[i].ID)
			}
		}
	})
}

// FuzzStatusEdit sets one item to one status and checks that exactly the
// box byte changed, or that Bytes refused with ErrVerify: never a wrong
// result.
func FuzzStatusEdit(f *testing.F) {
	addCorpusSeeds(f, func(data []byte) {
		for i := range 3 {
			f.Add(data, uint16(i), uint8(i))
		}
	})
	f.Fuzz(func(t *testing.T, data []byte, idx uint16, st uint8) {
		if FindConflict("", data) != nil {
			return // never written, by design: FuzzConflict
		}
		k := TasksKind
		if st >= 128 {
			k = GoalsKind
		}
		c, err := ParseChecklist(k, data)
		if err != nil || len(c.Items()) == 0 {
			return
		}
		// Compare against the file with its IDs written, so that every
		// byte that differs is the status edit's.
		base, bc, err := c.Edit().Bytes()
		if err != nil {
			if !errors.Is(err, ErrVerify) || strictVerify {
				t.Fatalf("writing IDs fails: %v", err)
			}
			return
		}
		i := int(idx) % len(bc.Items())
		it := bc.Items()[i]
		status := Statuses[int(st)%len(Statuses)]
		e := bc.Edit()
		if err := e.SetStatus(it.ID, status); err != nil {
			t.Fatal(err)
		}
		out, after, err := e.Bytes()
		if err != nil {
			if !errors.Is(err, ErrVerify) || strictVerify {
				t.Fatalf("SetStatus fails: %v", err)
			}
			return
		}
		if len(out) != len(base) {
			t.Fatalf("SetStatus changed the length from %d to %d", len(base), len(out))
		}
		diff := diffOffsets(base, out)
		if it.Status == status {
			if len(diff) != 0 {
				t.Fatalf("SetStatus to the same status changed bytes %v", diff)
			}
			return
		}
		if len(diff) != 1 || diff[0] != it.BoxAt || out[it.BoxAt] != status.Box() {
			t.Fatalf("SetStatus changed bytes %v, want only the box at %d", diff, it.BoxAt)
		}
		if len(after.Items()) != len(bc.Items()) || after.Items()[i].Status != status || after.Items()[i].ID != it.ID {
			t.Fatalf("after SetStatus(%s, %s) the file reads otherwise", it.ID, status)
		}
	})
}

// FuzzEdits makes the edits that insert lines: a note, an attempts count
// (in place or as a new line), a new item, a learning. Each must insert
// whole lines inside the item (or at the end of the list) and read back as
// intended, or be refused with ErrVerify.
func FuzzEdits(f *testing.F) {
	addCorpusSeeds(f, func(data []byte) {
		for op := range 4 {
			f.Add(data, uint16(op), uint8(op))
		}
	})
	f.Fuzz(func(t *testing.T, data []byte, idx uint16, op uint8) {
		if FindConflict("", data) != nil {
			return // never written, by design: FuzzConflict
		}
		refused := func(err error) {
			t.Helper()
			if !errors.Is(err, ErrVerify) || (strictVerify && !knownRefusal(data)) {
				t.Fatalf("op %d fails: %v", op%4, err)
			}
		}
		if op%4 == 3 {
			a, err := ParseAgent(data)
			if err != nil {
				return
			}
			out, err := a.AddLearning("fuzzed learning")
			if err != nil {
				refused(err)
				return
			}
			if p, q := commonAffixes(data, out); p+q != len(data) {
				t.Fatalf("AddLearning changed bytes:\n%s", lineDiff(data, out))
			}
			return
		}
		k := TasksKind
		c, err := ParseChecklist(k, data)
		if err != nil {
			return
		}
		base, bc, err := c.Edit().Bytes()
		if err != nil {
			refused(err)
			return
		}
		e := bc.Edit()
		var it *Item
		lo, hi := 0, len(base)
		if len(bc.Items()) > 0 {
			i := int(idx) % len(bc.Items())
			it = &bc.Items()[i]
			lo, hi = bc.src.lineStart(it.BoxAt), it.Span.End
		}
		var want func([]goldenItem) []goldenItem
		switch op % 4 {
		case 0, 1:
			if it == nil {
				return
			}
			i := int(idx) % len(bc.Items())
			if op%4 == 0 {
				err = e.AddMeta(it.ID, "note", "fuzzed note")
				want = func(w []goldenItem) []goldenItem { w[i].Notes = append(w[i].Notes, "fuzzed note"); return w }
			} else {
				if lastMeta(it, "attempts") >= 0 {
					return // a replacement, not an insertion
				}
				err = e.SetMeta(it.ID, "attempts", "9")
				want = func(w []goldenItem) []goldenItem { w[i].Attempts = 9; return w }
			}
		case 2:
			// Where addAt says (the task list's end, else before the
			// Session or Guidance section, else the end of the file),
			// after the items before it (items nested in a later list
			// that is not a checklist come after it).
			var id string
			id, err = e.Add("fuzzed item")
			lo, _ = bc.addAt()
			hi = lo
			pos := 0
			for pos < len(bc.Items()) && bc.Items()[pos].BoxAt < lo {
				pos++
			}
			want = func(w []goldenItem) []goldenItem {
				return slices.Insert(w, pos, goldenItem{ID: id, Title: "fuzzed item", Status: Pending, After: []string{}, Notes: []string{}})
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := e.Bytes()
		if err != nil {
			refused(err)
			return
		}
		checkInsertion(t, "edit", base, out, lo, hi)
		checkReparse(t, k, bc, out, want)
	})
}

// knownRefusal reports whether data is a file that ralph refuses to add
// lines to, with ErrVerify, by design or for a known reason: strict fuzzing
// looks for others.
//   - It ends in a code or HTML block (at any depth), which lines added at
//     the end would join; ralph will not close the block for the person.
//   - Its unterminated last line is a bare list marker ("-") in a CRLF
//     file: goldmark reads "-\r\n" as text, not as an empty list item, so
//     ending the line changes what the file says.
func knownRefusal(data []byte) bool {
	s, err := newSource("x", data)
	if err != nil {
		return false
	}
	md := parseMarkdown(s)
	for n := md.doc.LastChild(); n != nil; n = n.LastChild() {
		switch n.(type) {
		case *ast.FencedCodeBlock, *ast.HTMLBlock, *ast.CodeBlock:
			return true
		}
	}
	// A lone CR at the end (an old Mac line ending) becomes CRLF when a
	// line is added below it.
	if bytes.HasSuffix(data, []byte("\r")) {
		return true
	}
	last := data[bytes.LastIndexByte(data, '\n')+1:]
	last = bytes.TrimLeft(bytes.TrimRight(last, " \t"), " \t0123456789")
	return bytes.Contains(data, []byte("\r\n")) && len(last) == 1 && bytes.IndexByte([]byte("-*+.)"), last[0]) >= 0
}

// FuzzSetSession writes a session into any tasks file: the result reads
// back as that session, writing it again changes nothing, and no line is
// lost but the first lines of ralph's own session items (or the write is
// refused with ErrVerify).
func FuzzSetSession(f *testing.F) {
	addCorpusSeeds(f, func(data []byte) { f.Add(data, uint8(0)) })
	f.Add([]byte("## Session\n\n- status: running\n  a note\n- owner: ana\ntext\n"), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, variant uint8) {
		if FindConflict("", data) != nil {
			return // never written, by design: FuzzConflict
		}
		c, err := ParseChecklist(TasksKind, data)
		if err != nil {
			return
		}
		base, bc, err := c.Edit().Bytes()
		if err != nil {
			return // writing IDs is FuzzEdits' business
		}
		s := &Session{ID: "20261122-100312", Status: SessionRunning, Phase: PhaseAgent, Iteration: int(variant), Task: "T1"}
		if variant%2 == 1 {
			s.Status, s.Phase, s.Reason = SessionPaused, "", "interrupted"
			s.Result = &IterationResult{Outcome: "done", TokensIn: 5, TokensOut: 1}
		}
		if variant%4 == 3 {
			s.Result.Iteration, s.Result.Task = 2, "T1"
			s.Report = &IterationReport{Summary: "Did <it> | `so`", Learnings: []string{"a \"b\"", "c\nd"}, Guidance: []string{"## not a heading"}}
		}
		write := func(in []byte, c *Checklist) ([]byte, bool) {
			e := c.Edit()
			if err := e.SetSession(s); err != nil {
				t.Fatal(err)
			}
			out, _, err := e.Bytes()
			if err != nil {
				if !errors.Is(err, ErrVerify) || (strictVerify && !knownRefusal(in)) {
					t.Fatalf("SetSession fails: %v", err)
				}
				return nil, false
			}
			return out, true
		}
		out, ok := write(base, bc)
		if !ok {
			return
		}
		after, err := ParseChecklist(TasksKind, out)
		if err != nil {
			t.Fatalf("the written file does not parse: %v", err)
		}
		// The next write of the same session changes nothing. When the
		// first write created the list, what follows it may read
		// differently (an indented line joins its last item): one more
		// write settles that.
		again, ok := write(out, after)
		if !ok {
			t.Fatalf("a second write of the same session is refused")
		}
		if !bytes.Equal(again, out) {
			ac, err := ParseChecklist(TasksKind, again)
			if err != nil {
				t.Fatal(err)
			}
			third, ok := write(again, ac)
			if hasSessionList(bc) || !ok || !bytes.Equal(third, again) {
				t.Fatalf("a second write of the same session changed the file:\n%s", lineDiff(out, again))
			}
		}
		have := map[string]int{}
		for _, l := range bytes.Split(out, []byte("\n")) {
			have[string(bytes.TrimRight(l, "\r"))]++
		}
		for _, l := range bytes.Split(base, []byte("\n")) {
			l = bytes.TrimRight(l, "\r")
			if len(bytes.TrimSpace(l)) == 0 || ownSessionLine(l) {
				continue
			}
			if have[string(l)] == 0 {
				t.Fatalf("line %q was lost:\n%s", l, lineDiff(base, out))
			}
			have[string(l)]--
		}
	})
}

// ownSessionLine reports whether l could be the first line of one of
// ralph's session items: a list marker, then a key ralph writes and ":".
func ownSessionLine(l []byte) bool {
	l = bytes.TrimLeft(l, " \t>")
	switch {
	case len(l) > 0 && (l[0] == '-' || l[0] == '*' || l[0] == '+'):
		l = l[1:]
	default:
		i := 0
		for i < len(l) && l[i] >= '0' && l[i] <= '9' {
			i++
		}
		if i == 0 || i == len(l) || (l[i] != '.' && l[i] != ')') {
			return false
		}
		l = l[i+1:]
	}
	l = bytes.TrimLeft(l, " \t")
	ke, _, _, ok := splitKeyValue(l)
	return ok && sessionKeys[string(bytes.ToLower(l[:ke]))]
}

// hasSessionList reports whether c has a list under a session heading:
// the one SetSession writes in place.
func hasSessionList(c *Checklist) bool {
	for n := c.md.doc.FirstChild(); n != nil; n = n.NextSibling() {
		if h, ok := n.(*ast.Heading); ok && strings.EqualFold(c.md.headingText(h), SessionHeading) {
			return c.sessionList(h) != nil
		}
	}
	return false
}
