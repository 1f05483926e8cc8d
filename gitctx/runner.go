package gitctx

import "context"

// Runner runs the git CLI for gitctx. gitctx starts no process itself: the
// caller passes a Runner (ralph passes coordinator/proc's, which gives
// every child its process group and bounded waits), so this package does
// not import the layer above it.
type Runner interface {
	// LookPath returns the path of an installed program, or an error when
	// it is not on PATH. gitctx asks for "git" before every use, so a
	// PATH changed at run time is honoured.
	LookPath(name string) (string, error)
	// Start starts name with args in dir, with ralph's environment, and
	// returns once it runs; wait returns its standard output, a
	// failure's error carrying the exit status and standard error. When
	// ctx ends the program is stopped; gitctx does not wait for that, it
	// has already given up on the result.
	Start(ctx context.Context, dir, name string, args ...string) (wait func() ([]byte, error), err error)
}
