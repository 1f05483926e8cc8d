//go:build linux

package coordinator

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
	"github.com/ralph-dev/ralph/mdstate"
)

// survivor starts a process in a session of its own that carries mark,
// as one an agent started would after its supervisor was killed, and
// returns its pid.
func survivor(t *testing.T, dir, name, mark string) int {
	t.Helper()
	pidFile := filepath.Join(dir, name)
	_, err := proc.Output(t.Context(), proc.Cmd{Name: "sh", Args: []string{"-c",
		`setsid sh -c 'echo $$ > "$1"; exec sleep 60' sh "$0" > /dev/null 2>&1 &
while [ ! -s "$0" ]; do sleep 0.01; done`, pidFile}, Mark: mark})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// Recovering an interrupted session stops the processes its agents left
// running (found by the session's mark, whatever their group), says so,
// and leaves alone those of another project's session with the same id.
func TestRecoveryKillsMarkedSurvivors(t *testing.T) {
	const id = "20261122-100000"
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	other := t.TempDir()
	writeTasks(t, dir, "# Tasks\n\n- [/] T1: Task number 1\n\n## Session\n\n- id: "+id+"\n- status: running\n- phase: agent\n- iteration: 1\n- task: T1\n")
	left := survivor(t, t.TempDir(), "left.pid", sessionMark(dir, id))
	stranger := survivor(t, t.TempDir(), "stranger.pid", sessionMark(other, id))

	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
	out, evs := runAll(t, t.Context(), co)
	if out.Reason != StopAllDone {
		t.Fatalf("outcome %+v", out)
	}
	deadline := time.Now().Add(time.Second)
	for proctest.Alive(left) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if proctest.Alive(left) {
		t.Error("the interrupted session's survivor still runs after recovery")
	}
	if !proctest.Alive(stranger) {
		t.Error("recovery killed a process of another project's session")
	}
	said := false
	for _, e := range evs {
		said = said || e.Kind == EventNotice && e.Text == "stopped 1 processes the interrupted session's agent left running"
	}
	if !said {
		t.Errorf("no notice that recovery stopped a survivor: %+v", evs)
	}
}

// Every agent of a session carries the session's mark in its environment,
// and so does everything it starts.
func TestAgentCarriesSessionMark(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1),
		"agent.sh": "cat > /dev/null\nsh -c 'echo \"$" + proc.MarkVar + "\"' > mark.txt\necho '<promise>COMPLETE</promise>'\n"})
	ag, err := agent.Exec("sh agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	co := newCoordinator(t, Options{Root: dir, Agent: ag})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
		t.Fatalf("outcome %+v", out)
	}
	_, s, _ := loadState(t, dir)
	data, err := os.ReadFile(filepath.Join(dir, "mark.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(data)), sessionMark(dir, s.ID); got != want {
		t.Errorf("the agent's child has %s=%q, want %q", proc.MarkVar, got, want)
	}
	if _, err := mdstate.Open(dir).LoadChecklist(mdstate.TasksKind); err != nil {
		t.Fatal(err)
	}
}

// Each agent's process is recorded in .ralph/ while it runs, with its
// iteration; the record is emptied once the run is over.
func TestAgentRecordLastsTheRun(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2),
		"agent.sh": `cat > /dev/null
i=0
until grep -q "\"pid\":$$," .ralph/agent.json 2>/dev/null; do
	i=$((i+1)); [ $i -gt 500 ] && exit 3
	sleep 0.01
done
cat .ralph/agent.json >> records.txt
echo '<promise>COMPLETE</promise>'
`})
	ag, err := agent.Exec("sh agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	co := newCoordinator(t, Options{Root: dir, Agent: ag})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone || out.Iterations != 2 {
		t.Fatalf("outcome %+v", out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "records.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("the agents saw %d records, want one each:\n%s", len(lines), data)
	}
	for i, l := range lines {
		var a AgentProcess
		if err := json.Unmarshal([]byte(l), &a); err != nil || a.Iteration != i+1 || a.Task != fmt.Sprintf("T%d", i+1) {
			t.Errorf("agent %d saw the record %s (%v)", i+1, l, err)
		}
	}
	if a, ok := RunningAgent(dir); ok {
		t.Errorf("the record names agent %+v after the run", a)
	}
}
