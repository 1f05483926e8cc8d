package coordinator

import (
	"regexp"
	"testing"
)

// Every pattern compiles: a lazy one that did not would panic only on the
// rare output that first reaches it, far from any test.
func TestLazyRegexpsCompile(t *testing.T) {
	if len(lazyPatterns) == 0 {
		t.Fatal("no patterns registered")
	}
	for _, expr := range lazyPatterns {
		if _, err := regexp.Compile(expr); err != nil {
			t.Errorf("%q: %v", expr, err)
		}
	}
}
