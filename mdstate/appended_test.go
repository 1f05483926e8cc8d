package mdstate

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Log.Appended says ahead of an append what ReadProgress reads after it:
// for every log and window size, the real append's read and the
// prediction hold the same entries (Line and Offset aside, which only the
// write fixes).
func TestAppendedReadsAsTheAppend(t *testing.T) {
	at := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	entries := map[string]Entry{
		"ralph's": {Time: at, Title: "T3: Add the parser", Fields: []Field{
			{Key: "outcome", Value: "done"}, {Key: "agent", Value: "claude (sonnet)"},
			{Key: "summary", Value: "Parser and tests; all pass."},
			{Key: "decisions", List: []string{"kept the old API", "no new dependency"}},
		}},
		"no time":          {Title: "a note with no time", Fields: []Field{{Key: "outcome", Value: "failed"}}},
		"odd text":         {Time: at, Title: "T9: `code` ## not a heading\nsecond line", Fields: []Field{{Key: "summary", Value: "ends with spaces   "}, {Key: "empty", Value: ""}}},
		"title only":       {Time: at, Title: "T1: nothing else"},
		"field with lists": {Time: at, Title: "T2: lists", Fields: []Field{{Key: "todos", Value: "2", List: []string{"- nested dash", "<!-- not a comment"}}}},
	}
	var person strings.Builder
	person.WriteString("# Progress\n\n")
	for i := range 30 {
		fmt.Fprintf(&person, "## 2026-11-%02dT10:00:00Z — T%d: entry %d\n- outcome: done\n- summary: part %d\n\n", i%28+1, i, i, i)
	}
	logs := map[string]string{
		"none":              "",
		"template":          "# Progress\n",
		"no final newline":  "# Progress\n\n## 2026-11-01 — a person's entry\nwritten by hand",
		"crlf":              "# Progress\r\n\r\n## 2026-11-01T09:00:00Z — T1: one\r\n- outcome: done\r\n",
		"longer than n":     person.String(),
		"a person's format": "# Progress\n\n## 2026-11-02 10:15 | T4 - by hand\n\nSome prose.\n\n- outcome: blocked\n",
	}
	for logName, text := range logs {
		for entryName, e := range entries {
			for _, n := range []int{0, 1, 3, 20} {
				t.Run(fmt.Sprintf("%s/%s/n=%d", logName, entryName, n), func(t *testing.T) {
					p := Open(t.TempDir())
					if text != "" {
						writeFile(t, p.Path(ProgressFile), text, 0o644)
					}
					before, err := p.ReadProgress(n)
					if err != nil {
						t.Fatal(err)
					}
					got := before.Appended(e, n)
					if err := p.AppendProgress(e); err != nil {
						t.Fatal(err)
					}
					want, err := p.ReadProgress(n)
					if err != nil {
						t.Fatal(err)
					}
					if got.Entries != want.Entries {
						t.Errorf("Entries = %d, the append's read %d", got.Entries, want.Entries)
					}
					if got.Size != before.Size {
						t.Errorf("Size = %d, want it left at %d", got.Size, before.Size)
					}
					if g, w := placeless(got.Recent), placeless(want.Recent); !reflect.DeepEqual(g, w) {
						t.Errorf("Recent =\n%#v\nthe append's read:\n%#v", g, w)
					}
				})
			}
		}
	}
}

// Appended leaves the log it is called on as it was.
func TestAppendedLeavesTheLog(t *testing.T) {
	lg := &Log{Entries: 2, Size: 100, Recent: []Entry{{Title: "one"}, {Title: "two"}}}
	recent := lg.Recent
	got := lg.Appended(Entry{Title: "three"}, 2)
	if lg.Entries != 2 || len(lg.Recent) != 2 || &lg.Recent[0] != &recent[0] || lg.Recent[1].Title != "two" {
		t.Fatalf("the log changed: %+v", lg)
	}
	if len(got.Recent) != 2 || got.Recent[0].Title != "two" || got.Recent[1].Title != "three" || got.Entries != 3 {
		t.Fatalf("Appended = %+v", got)
	}
}

// placeless is entries without where they sit in the file.
func placeless(es []Entry) []Entry {
	out := make([]Entry, len(es))
	for i, e := range es {
		e.Line, e.Offset = 0, 0
		out[i] = e
	}
	return out
}
