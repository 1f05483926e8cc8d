package cli

import (
	"testing"

	"github.com/ralph-dev/ralph/coordinator"
)

// ralph run's coordinator makes one run: it stops watching the state
// files as its loop ends, and runs the loop on one processor unless
// GOMAXPROCS says how many ralph has.
func TestOneRun(t *testing.T) {
	for _, tc := range []struct {
		environ []string
		oneProc bool
	}{
		{[]string{"HOME=/h"}, true},
		{[]string{"HOME=/h", "GOMAXPROCS=4"}, false},
		{[]string{"GOMAXPROCS="}, true}, // empty: the runtime's default
		{[]string{"XGOMAXPROCS=4"}, true},
	} {
		var opts coordinator.Options
		(&Factory{Env: Env{Environ: tc.environ}}).oneRun(&opts)
		if !opts.SingleRun || opts.OneProc != tc.oneProc {
			t.Errorf("environment %q: SingleRun %v, OneProc %v, want true, %v", tc.environ, opts.SingleRun, opts.OneProc, tc.oneProc)
		}
	}
}
