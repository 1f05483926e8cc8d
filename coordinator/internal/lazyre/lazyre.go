// Package lazyre gives regular expressions compiled on first use, not at
// start-up. The patterns that read the agents' output and reports were
// compiled by every ralph command, also the many that never run an agent
// (status, task edits): 0.4–0.5 ms of each start (issue 14). Every pattern
// is registered, so that a test can compile them all: a bad one would
// otherwise panic only on the rare output that first reaches it.
package lazyre

import (
	"errors"
	"fmt"
	"regexp"
	"sync"
)

// patterns are the expressions given to New, in a program's package
// variables (registered at its start, before any goroutine).
var patterns []string

// New returns a function that gives expr compiled, compiling it on the
// first call.
func New(expr string) func() *regexp.Regexp {
	patterns = append(patterns, expr)
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// CompileAll compiles every pattern New was given in this program, and
// returns how many there are and why those that fail do.
func CompileAll() (n int, err error) {
	var errs []error
	for _, expr := range patterns {
		if _, err := regexp.Compile(expr); err != nil {
			errs = append(errs, fmt.Errorf("%q: %w", expr, err))
		}
	}
	return len(patterns), errors.Join(errs...)
}
