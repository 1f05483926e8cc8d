package coordinator

import (
	"slices"
	"testing"
)

// lostAdditions tells an older copy of a file (everything ralph added
// after some point is gone) from a person's deletion (one addition gone,
// later ones still there), again and again.
func TestLostAdditions(t *testing.T) {
	list := []addition{{text: "a"}, {text: "b"}, {text: "c"}}
	in := func(texts ...string) func(string) bool {
		return func(s string) bool { return slices.Contains(texts, s) }
	}
	texts := func() []string {
		var out []string
		for _, a := range list {
			out = append(out, a.text)
		}
		return out
	}
	steps := []struct {
		name     string
		file     func(string) bool
		lost     []string
		remember []string
	}{
		{"all there", in("a", "b", "c"), nil, []string{"a", "b", "c"}},
		{"an older copy without b and c", in("a"), []string{"b", "c"}, []string{"a", "b", "c"}},
		{"the same older copy again", in("a"), []string{"b", "c"}, []string{"a", "b", "c"}},
		{"a person deletes a", in("b", "c"), nil, []string{"b", "c"}},
		{"c alone goes, once written again: deleted on purpose", in("b"), nil, []string{"b"}},
		{"everything goes, b alone remembered: taken as a deletion", in(), nil, nil},
	}
	for _, s := range steps {
		got := lostAdditions(&list, s.file)
		if !slices.Equal(got, s.lost) || !slices.Equal(texts(), s.remember) {
			t.Errorf("%s: lost %q, remembers %q; want %q, %q", s.name, got, texts(), s.lost, s.remember)
		}
	}
	// A fresh addition gone alone comes back once; gone again, it stays
	// gone.
	list = []addition{{text: "x"}, {text: "y"}}
	if got := lostAdditions(&list, in("x")); !slices.Equal(got, []string{"y"}) {
		t.Errorf("y gone: lost %q", got)
	}
	if got := lostAdditions(&list, in("x")); got != nil || !slices.Equal(texts(), []string{"x"}) {
		t.Errorf("y gone again: lost %q, remembers %q", got, texts())
	}
}

// sameAsOneOf finds a text as FindSame would: by SameKey, and never a
// text with no words.
func TestSameAsOneOf(t *testing.T) {
	has := sameAsOneOf([]string{"Build with make.", "  ", "Deploys need a VPN"})
	for text, want := range map[string]bool{"build WITH   make": true, "deploys need a vpn.": true, "": false, " ": false, "Build with bazel": false} {
		if got := has(text); got != want {
			t.Errorf("has(%q) = %v, want %v", text, got, want)
		}
	}
}
