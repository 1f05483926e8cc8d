//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRunRelaxesOnlyItsOwnTimers runs the real ralph (static, as
// installed) from a thread whose timer slack is unusual, 70 µs: ralph's
// own threads then have 1 ms (agentTimerSlack in package cli), which the
// git it starts inherits, while the agent, started through a supervisor,
// has the 70 µs ralph was started with. Started with 5 ms, more than
// that, ralph leaves it as it is, for itself and its agents.
func TestRunRelaxesOnlyItsOwnTimers(t *testing.T) {
	bin := buildRalph(t)
	for _, c := range []struct{ started, git, agent string }{
		{started: "70000", git: "1000000", agent: "70000"},
		{started: "5000000", git: "5000000", agent: "5000000"},
	} {
		t.Run(c.started, func(t *testing.T) {
			git, agent := timerSlacksOfRun(t, bin, c.started)
			if agent != c.agent {
				t.Errorf("the agent's timer slack is %s ns, want %s", agent, c.agent)
			}
			if len(git) == 0 {
				t.Fatal("ralph started no git")
			}
			for _, got := range git {
				if got != c.git {
					t.Errorf("a git ralph started has a timer slack of %s ns, want %s", got, c.git)
				}
			}
		})
	}
}

// timerSlacksOfRun runs bin through a one-task project in a git
// repository, started with a timer slack of started (ns), and returns the
// slack of every git it ran (a git first on PATH notes it, then is the
// real one) and that of its agent.
func timerSlacksOfRun(t *testing.T, bin, started string) (git []string, agent string) {
	t.Helper()
	project := agentDir{t: t, dir: t.TempDir()}
	project.write("RALPH_TASKS.md", "# Tasks\n\n- [ ] T1: Note the timer slack\n")
	project.write("agent.sh", "cat > /dev/null\ncat /proc/self/timerslack_ns > agent-slack\necho '<promise>COMPLETE</promise>'\n")
	env := append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	gitSlack := filepath.Join(t.TempDir(), "git-slack")
	env = committedWithNotingGit(t, project.dir, env, "cat /proc/self/timerslack_ns >> '"+gitSlack+"'")
	run := exec.Command(bin, "run", "--agent", "exec", "--agent-cmd", "sh agent.sh")
	run.Dir, run.Env = project.dir, env
	if out, err := startedWithSlack(t, run, started); err != nil {
		t.Fatalf("ralph run: %v\n%s", err, out)
	}
	data, err := os.ReadFile(gitSlack)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(string(data)), strings.TrimSpace(project.read("agent-slack"))
}

// committedWithNotingGit makes dir a git repository with everything in
// it committed, and returns env with a git first on PATH that runs the
// shell line note, then is the real git: a test sees what each git ralph
// starts inherits from it.
func committedWithNotingGit(t *testing.T, dir string, env []string, note string) []string {
	t.Helper()
	crashGit(t, dir, env, "init", "-q")
	crashGit(t, dir, env, "add", "-A")
	crashGit(t, dir, env, "commit", "-qm", "start")
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err) // CI installs git
	}
	gitDir := t.TempDir()
	script := "#!/bin/sh\n" + note + "\nexec '" + realGit + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(gitDir, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return append(env, "PATH="+gitDir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// startedWithSlack runs cmd, started from a thread whose timer slack is
// slack (ns), which a process inherits from the thread that forks it.
func startedWithSlack(t *testing.T, cmd *exec.Cmd, slack string) ([]byte, error) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(slack)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(n), 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(old), 0, 0, 0)
	return cmd.CombinedOutput()
}
