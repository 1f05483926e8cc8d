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

// TestNormID: IDs compare without case, spaces round them or zeros before
// their number; one already in its normal form is returned as it is,
// without a new string (Find and StatusOf run it for every lookup).
func TestNormID(t *testing.T) {
	for in, want := range map[string]string{
		"T7": "T7", "t007": "T7", " T12 ": "T12", "T0": "T0", "T000": "T0", "T10": "T10",
		"abc": "ABC", "x-1": "X-1", "7": "7",
	} {
		if got := normID(in); got != want {
			t.Errorf("normID(%q) = %q, want %q", in, got, want)
		}
	}
	id := "T1234"
	if n := testing.AllocsPerRun(100, func() { _ = normID(id) }); n != 0 {
		t.Errorf("normID of a normal ID allocates %v times", n)
	}
}
