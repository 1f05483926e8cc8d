//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
)

// runPtyAgent fails its first attempt (no marker), then waits for go-T1
// (its pid in pid-T1), ignoring SIGINT: Ctrl-C must say at once that the
// run stops, before the grace period ends.
const runPtyAgent = agentPrologue + `if [ ! -e tried ]; then touch tried; echo "not yet"; exit 0; fi
trap '' INT
` + agentPidAndWait + `echo "<promise>COMPLETE</promise>"
`

// On a terminal, `ralph run` starts with its header, shows where a task
// stands among the run's ("task 1 of 2"), counts a backoff down on its
// status line, and answers Ctrl-C at once with what it stops.
func TestRunOnTerminal(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"agent.sh": runPtyAgent, "RALPH_TASKS.md": "# Tasks\n\n- [ ] T1: First\n- [ ] T2: Second\n", "wait-T1": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := startOnPty(t, dir, nil, "run", "--agent", "exec", "--agent-cmd", "sh agent.sh", "--backoff", "3s")
	c.expect(`ralph: exec · permission mode bypass`)
	c.expect(`▶ T1: First \(iteration 1\) · task 1 of 2`)
	c.expect(`✗ T1: failed`)
	c.expect(`↻ T1: trying again in 3s, after 1 failed attempt`)
	c.expect(`⏸ [12]s left`) // the countdown, redrawn each second
	c.expect(`▶ T1: First \(iteration 2\) · task 1 of 2`)
	c.waitFile("pid-T1")
	agent := c.pidIn("pid-T1")
	began := time.Now()
	c.send("\x03")
	c.expect(`■ stopping T1… \(the agent gets SIGINT, then SIGKILL if it lingers\)`)
	t.Logf("Ctrl-C to the stopping line: %s", time.Since(began))
	if code := c.wait(); code != 130 {
		t.Fatalf("exit %d after Ctrl-C, want 130", code)
	}
	if proctest.Alive(agent) {
		t.Errorf("the agent (pid %d) outlived the run", agent)
	}
}

// With NO_COLOR unset, a terminal gets the marks of the lines in colour,
// and only them.
func TestRunOnTerminalColour(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"agent.sh": "cat >/dev/null\necho '<promise>COMPLETE</promise>'\n", "RALPH_TASKS.md": "# Tasks\n\n- [ ] T1: First\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := startOnPty(t, dir, []string{"NO_COLOR="}, "run", "--agent", "exec", "--agent-cmd", "sh agent.sh")
	if code := c.wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	out := c.out.String()
	for _, want := range []string{"\x1b[1;36m▶\x1b[0m T1: First (iteration 1)", "\x1b[32m✓\x1b[0m T1: done"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q on the terminal:\n%q", want, out)
		}
	}
	if strings.Contains(out, "\x1b[32mT1") || strings.Contains(out, "First\x1b") {
		t.Errorf("colour beyond the marks:\n%q", out)
	}
}
