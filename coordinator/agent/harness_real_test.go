//go:build linux

package agent

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
)

// What the tests of the real CLIs (claude_real_test.go and the others)
// share: each runs its CLI against its fake model server on loopback
// (agenttest.CLI), in a fresh project and HOME. .ci/run installs the
// pinned CLIs and sets RALPH_<NAME>_BIN.

// realPrompt is the prompt of every real run that does not set its own.
const realPrompt = "Create hello.txt saying hello, then say <promise>COMPLETE</promise>."

// realCLI finds the real CLI called name, or skips the test (only when it
// is missing), saying how to install it.
func realCLI(t *testing.T, name string) string {
	t.Helper()
	return agenttest.RealCLI(t, name, InstallHint(name))
}

// realRequest is a run of the real CLI c in a fresh project and HOME, with
// no way out but the fake model server at baseURL, and a mark on
// everything it starts (see runReal).
func realRequest(t *testing.T, c agenttest.CLI, baseURL string) Request {
	t.Helper()
	project, home := agenttest.RealDirs(t)
	env, err := c.Env(home, baseURL, os.Getenv("PATH"))
	if err != nil {
		t.Fatal(err)
	}
	return Request{
		Prompt: realPrompt,
		Dir:    project,
		Model:  c.Model,
		Env:    env,
		// A node CLI's start-up alone takes 1 to 3 s, more on a busy
		// machine.
		NoOutputTimeout: 60 * time.Second,
		Timeout:         120 * time.Second,
		Grace:           3 * time.Second,
		Mark:            "ralph-" + c.Name + "-test-" + strconv.Itoa(os.Getpid()) + "-" + filepath.Base(filepath.Dir(project)),
	}
}

// runReal runs the real CLI c at bin and checks what every run must
// leave: no process (in its group, or marked as its own anywhere), no
// request to the fake but model requests, all for c's model.
func runReal(ctx context.Context, t *testing.T, c agenttest.CLI, bin string, fake agenttest.Fake, req Request, onEvent func(Event)) (Result, string) {
	t.Helper()
	cli, _ := findCLI(c.Name)
	var raw proctest.SyncBuffer
	req.RawLog = &raw
	res, err := cli.backend(bin).Run(ctx, req, onEvent)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("real %s: %s, exit %d, %s %q, %d model calls", c.Name, res.Duration.Round(time.Millisecond), res.ExitCode, res.ErrorKind, res.ErrorText, len(fake.Seen()))
	if o := fake.Others(); len(o) > 0 {
		t.Errorf("requests other than model calls: %v", o)
	}
	for _, s := range fake.Seen() {
		if s.Model != c.APIModel {
			t.Errorf("model call %d for %q, want %s", s.N, s.Model, c.APIModel)
		}
	}
	assertGone(t, res.PID, res.PID)
	if n, err := proc.KillMarked(req.Mark); n != 0 || err != nil {
		t.Errorf("%d processes of the run were left behind (%v)", n, err)
	}
	return res, raw.String()
}

// stopAfterCalls is an onEvent that keeps the events in ev and cancels
// the run once the usage of its n-th model call has come, as a budget
// would stop it.
func stopAfterCalls(t *testing.T, n int32, cancel func()) (ev *events, on func(Event)) {
	ev = &events{t: t}
	var calls atomic.Int32
	return ev, func(e Event) {
		ev.on(e)
		if e.Kind == EventUsage && calls.Add(1) == n {
			cancel()
		}
	}
}
