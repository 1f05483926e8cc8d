//go:build linux

package coordinator

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
)

// A one-shot's agent, and everything it starts, carries the one-shot's
// mark: this ralph's pid and start time, and the project.
func TestOneShotAgentCarriesMark(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1),
		"agent.sh": "cat > /dev/null\nsh -c 'echo \"$" + proc.MarkVar + "\"' > mark.txt\necho '<promise>COMPLETE</promise>'\n"})
	ag, err := agent.Exec("sh agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OneShot(t.Context(), Options{Root: dir, Agent: ag}, "fix the thing"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "mark.txt"))
	if err != nil {
		t.Fatal(err)
	}
	start, err := proc.StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("oneshot-%d-%d@%s", os.Getpid(), start, dir)
	if got := strings.TrimSpace(string(data)); got != want {
		t.Errorf("the one-shot agent's child has %s=%q, want %q", proc.MarkVar, got, want)
	}
}

// deadRalph returns the pid and start time of a process that ran and is
// gone: a one-shot's ralph killed with -9.
func deadRalph(t *testing.T) (int, uint64) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start, err := proc.StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return pid, start
}

// oneShotSurvivors starts processes as an agent's would survive: one of a
// one-shot in dir whose ralph died, one of a one-shot in dir whose ralph
// (this test) still runs, one of a dead one-shot in another project, and
// one of a session in dir. Only the first is an earlier one-shot's orphan.
func oneShotSurvivors(t *testing.T, dir string) (orphan int, others []int) {
	pid, start := deadRalph(t)
	tmp := t.TempDir()
	orphan = survivor(t, tmp, "orphan.pid", fmt.Sprintf("oneshot-%d-%d@%s", pid, start, dir))
	others = []int{
		survivor(t, tmp, "live.pid", oneShotMark(dir)),
		survivor(t, tmp, "other.pid", fmt.Sprintf("oneshot-%d-%d@%s", pid, start, t.TempDir())),
		survivor(t, tmp, "session.pid", sessionMark(dir, "20261122-100000")),
	}
	return orphan, others
}

// requireSwept checks that orphan is gone and every one of others runs.
func requireSwept(t *testing.T, orphan int, others []int) {
	t.Helper()
	for deadline := time.Now().Add(time.Second); proctest.Alive(orphan) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if proctest.Alive(orphan) {
		t.Error("an earlier one-shot's orphan still runs")
	}
	for i, pid := range others {
		if !proctest.Alive(pid) {
			t.Errorf("survivor %d (a running one-shot's, another project's, or a session's) was killed", i)
		}
	}
}

// `ralph run` stops what a dead one-shot's agent left running in its
// project, says so, and leaves alone what is not that.
func TestRunSweepsOrphanedOneShots(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	orphan, others := oneShotSurvivors(t, dir)
	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
	out, evs := runAll(t, t.Context(), co)
	if out.Reason != StopAllDone {
		t.Fatalf("outcome %+v", out)
	}
	requireSwept(t, orphan, others)
	if !slices.ContainsFunc(evs, func(e Event) bool {
		return e.Kind == EventNotice && e.Text == "stopped 1 processes an earlier one-shot's agent left running"
	}) {
		t.Errorf("no notice that the run stopped an orphan: %+v", evs)
	}
}

// The next one-shot does the same, and tells it in its result.
func TestOneShotSweepsOrphanedOneShots(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	orphan, others := oneShotSurvivors(t, dir)
	res, err := OneShot(t.Context(), Options{Root: dir, Agent: &fakeAgent{}}, "fix the thing")
	if err != nil {
		t.Fatal(err)
	}
	requireSwept(t, orphan, others)
	if !slices.Contains(res.Notices, "stopped 1 processes an earlier one-shot's agent left running") {
		t.Errorf("notices %q", res.Notices)
	}
}
