package coordinator

import (
	"regexp"
	"sync"
)

// lazyRegexp returns a regular expression compiled on first use, not at
// start-up: commands that never run an agent (status, task edits) do not
// pay for the patterns that read its report (issue 14).
func lazyRegexp(expr string) func() *regexp.Regexp {
	lazyPatterns = append(lazyPatterns, expr)
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// lazyPatterns are the expressions given to lazyRegexp, for the test that
// compiles every one: a bad one would panic only on the rare output that
// first reaches it.
var lazyPatterns []string
