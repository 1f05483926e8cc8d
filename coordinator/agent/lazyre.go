package agent

import (
	"regexp"
	"sync"
)

// lazyRegexp returns a regular expression compiled on first use. The
// patterns that read the agents' output were compiled at start-up, by
// every ralph command, also the many that never run an agent (status,
// task edits): 0.4–0.5 ms of each start (issue 14).
func lazyRegexp(expr string) func() *regexp.Regexp {
	lazyPatterns = append(lazyPatterns, expr)
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// lazyPatterns are the expressions given to lazyRegexp, for the test that
// compiles every one: a bad one would panic only on the rare output that
// first reaches it.
var lazyPatterns []string
