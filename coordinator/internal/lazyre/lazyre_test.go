package lazyre

import (
	"strings"
	"testing"
)

// A pattern is compiled on its first use, once; CompileAll finds one that
// does not compile before anything uses it.
func TestNewAndCompileAll(t *testing.T) {
	// The registry is the program's: the test starts from an empty one and
	// gives it back, so that it counts right when run again (-count).
	saved := patterns
	patterns = nil
	t.Cleanup(func() { patterns = saved })
	word := New(`^\w+$`)
	if !word().MatchString("ralph") || word() != word() {
		t.Fatal("the pattern does not match, or is compiled again")
	}
	if n, err := CompileAll(); n != 1 || err != nil {
		t.Fatalf("CompileAll = %d, %v; want 1, nil", n, err)
	}
	New(`(unclosed`)
	if n, err := CompileAll(); n != 2 || err == nil || !strings.Contains(err.Error(), "(unclosed") {
		t.Fatalf("CompileAll = %d, %v; want 2 and the bad pattern named", n, err)
	}
}
