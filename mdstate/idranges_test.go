package mdstate

import "testing"

func TestIDRanges(t *testing.T) {
	for _, tc := range []struct {
		ids  []string
		want string
	}{
		{[]string{"T1", "T2", "T3"}, "T1 to T3"},
		{[]string{"T1", "T2"}, "T1, T2"},
		{[]string{"T1", "T2", "T3", "T7", "T9", "T10", "T11"}, "T1 to T3, T7, T9 to T11"},
		{[]string{"T3", "T1", "T2"}, "T3, T1, T2"}, // the file's order
		{[]string{"T1", "X9", "T2"}, "T1, X9, T2"},
	} {
		if got := idRanges("T", tc.ids); got != tc.want {
			t.Errorf("idRanges(%q) = %q, want %q", tc.ids, got, tc.want)
		}
	}
}
