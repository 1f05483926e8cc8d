package mdstate

import (
	"reflect"
	"testing"
)

// The memo answers what parseEntry answers, for the same bytes at the
// same line, and a caller that changes the entry it got changes nothing
// for the next.
func TestEntryMemo(t *testing.T) {
	var m entryMemo
	texts := []string{
		"## 2026-03-01T12:00:00Z — T1: First\n- outcome: done\n- decisions:\n  - Kept floats.\n  - Cut the cache.\n\nSome words.\n",
		"## not a time — T2: Second\n- outcome: failed\n- note: it broke\n",
		"## 2026-03-02T12:00:00Z — T3: Third\n- priority: high\n",
	}
	for round := range 3 {
		for i, text := range texts {
			for _, line := range []int{1, 40} {
				want, wantWarns := parseEntry([]byte(text), line)
				got, gotWarns := m.parse([]byte(text), line)
				if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotWarns, wantWarns) {
					t.Fatalf("round %d, entry %d at line %d: memo gave %+v %v, parse %+v %v", round, i, line, got, gotWarns, want, wantWarns)
				}
				if len(got.Fields) > 0 {
					got.Fields[0].Value = "changed by a caller"
					if len(got.Fields[len(got.Fields)-1].List) > 0 {
						got.Fields[len(got.Fields)-1].List[0] = "changed too"
					}
				}
			}
		}
	}
	if len(m.parsed) != 2*len(texts) {
		t.Errorf("the memo holds %d parses, want %d (each text at each line once)", len(m.parsed), 2*len(texts))
	}
}
