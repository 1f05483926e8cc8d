//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
)

// TestRunPinsOnlyItself runs the real ralph (static, as installed) through
// two tasks with --commit in a git repository: while its agents run,
// ralph's threads are pinned to one CPU (proc.PinToOneCPU), and its agents
// and the gits it starts, the commits between the agents among them, have
// the CPUs ralph was started with. On a machine with one CPU, nothing is
// pinned.
func TestRunPinsOnlyItself(t *testing.T) {
	bin := buildRalph(t)
	was := cpusAllowed(t, "/proc/self/status")
	logs := t.TempDir()
	project := agentDir{t: t, dir: t.TempDir()}
	project.write("RALPH_TASKS.md", "# Tasks\n\n- [ ] T1: Note the CPUs\n- [ ] T2: Note them again\n")
	// The agent finds ralph up its parents (through the supervisor) and
	// notes ralph's threads' CPUs and its own.
	project.write("agent.sh", `cat > /dev/null
p=$PPID
while [ "$p" -gt 1 ] && ! tr '\0' ' ' < /proc/$p/cmdline | grep -q '^'"$RALPH_BIN"' run'; do
  p=$(awk '/^PPid:/ {print $2}' /proc/$p/status)
done
grep -h Cpus_allowed_list /proc/$p/task/*/status >> "$CPU_LOGS/ralph"
grep Cpus_allowed_list /proc/self/status >> "$CPU_LOGS/agent"
echo '<promise>COMPLETE</promise>'
`)
	env := append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"RALPH_BIN="+bin, "CPU_LOGS="+logs)
	env = committedWithNotingGit(t, project.dir, env, "grep Cpus_allowed_list /proc/self/status >> '"+filepath.Join(logs, "git")+"'")
	run := exec.Command(bin, "run", "--commit", "--agent", "exec", "--agent-cmd", "sh agent.sh")
	run.Dir, run.Env = project.dir, env
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("ralph run: %v\n%s", err, out)
	}
	ralph, agents, gits := cpuLog(t, logs, "ralph"), cpuLog(t, logs, "agent"), cpuLog(t, logs, "git")
	if len(agents) != 2 || len(ralph) == 0 || len(gits) < 2 {
		t.Fatalf("noted %d agents, %d of ralph's threads, %d gits; want 2 agents, the threads, and the commits' gits", len(agents), len(ralph), len(gits))
	}
	multi := strings.ContainsAny(was, ",-")
	for _, got := range ralph {
		if multi && (strings.ContainsAny(got, ",-") || got != ralph[0]) || !multi && got != was {
			t.Errorf("while an agent ran, ralph's threads had CPUs %v; started with %s, want one CPU, the same for all (or, with one, that one)", ralph, was)
			break
		}
	}
	for name, list := range map[string][]string{"an agent": agents, "a git": gits} {
		for _, got := range list {
			if got != was {
				t.Errorf("%s had CPUs %s, want %s, ralph's at its start", name, got, was)
			}
		}
	}
}

// cpusAllowed is the Cpus_allowed_list of a status file under /proc.
func cpusAllowed(t *testing.T, status string) string {
	t.Helper()
	cpus, err := proctest.CPUsOf(status)
	if err != nil {
		t.Fatal(err)
	}
	return cpus
}

// cpuLog is the CPU lists noted in logs/name, in order.
func cpuLog(t *testing.T, logs, name string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(logs, name))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return proctest.AllowedCPUs(string(data))
}
