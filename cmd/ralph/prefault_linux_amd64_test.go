//go:build !ralph_noprefault

package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/ralph-dev/ralph/cmd/ralph/internal/prefault"
	"github.com/ralph-dev/ralph/coordinator/proc"
)

// TestPrefaultKnowsTheSupervisor checks that package prefault, which
// imports nothing, tells a supervisor by proc's own argument.
func TestPrefaultKnowsTheSupervisor(t *testing.T) {
	if prefault.SuperviseArg != proc.SuperviseArg {
		t.Errorf("prefault.SuperviseArg is %q, proc.SuperviseArg %q", prefault.SuperviseArg, proc.SuperviseArg)
	}
}

// TestPrefaultInitialisesFirst checks what package prefault's doc
// promises: it initialises before every module's package and before os,
// so that their inits already find the binary's pages mapped. The test
// binary holds all of ralph; GODEBUG=inittrace=1 prints each package's
// init as it runs.
func TestPrefaultInitialisesFirst(t *testing.T) {
	res, err := proc.Run(context.Background(), proc.Cmd{Name: os.Args[0], Args: []string{"-test.run=^$"}, Env: append(os.Environ(), "GODEBUG=inittrace=1")})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("test binary: exit %d, %v\n%s", res.ExitCode, err, res.Stderr)
	}
	const prefault = "github.com/ralph-dev/ralph/cmd/ralph/internal/prefault"
	var before []string
	sc := bufio.NewScanner(bytes.NewReader(res.Stderr))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "init" {
			continue
		}
		if f[1] == prefault {
			for _, p := range before {
				if p == "os" || strings.Contains(p, ".") {
					t.Errorf("%s initialised before prefault; all before it: %v", p, before)
				}
			}
			return
		}
		before = append(before, f[1])
	}
	t.Fatalf("no init of %s in the trace:\n%s", prefault, res.Stderr)
}
