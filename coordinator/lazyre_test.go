package coordinator

import (
	"testing"

	"github.com/ralph-dev/ralph/coordinator/internal/lazyre"
)

// Every pattern compiles: a lazy one that did not would panic only on the
// rare output that first reaches it, far from any test.
func TestLazyRegexpsCompile(t *testing.T) {
	if n, err := lazyre.CompileAll(); n == 0 || err != nil {
		t.Fatalf("%d patterns: %v", n, err)
	}
}
