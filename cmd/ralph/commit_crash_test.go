//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/mdstate"
)

// commitCrashKills is how many kills TestCommitCrash inflicts before it
// lets a run finish.
const commitCrashKills = 12

// commitCrashTasks run one after the other, so every kill lands in one
// task's (or the session end's) commit window.
const commitCrashTasks = `# Tasks

- [ ] T1: Write one
- [ ] T2: Write two
  - after: T1
- [ ] T3: Write three
  - after: T2
- [ ] T4: Write four
  - after: T3
`

// commitCrashAgent does its task's work in a file of its own.
const commitCrashAgent = `prompt=$(cat)
task=$(printf '%s\n' "$prompt" | awk '/^## Current task/{f=1;next} f&&NF{print;exit}' | grep -o 'T[0-9][0-9]*' | head -n 1)
echo "done $task" > "out-$task.txt"
echo "<promise>COMPLETE</promise>"
`

// TestCommitCrash SIGKILLs `ralph run --commit` right after it appends a
// progress entry, at once or up to 15 ms later: between a task's entry
// and its commit, in the commit, or just after it (and the same around
// the session's summary and its last commit), over and over until a run
// ends on its own. Then every task has exactly one commit, which adds its
// own entry (its parent does not have it), the session's end has one
// commit, no entry is written twice, and no state file is left
// uncommitted. RALPH_CRASH_SEED fixes the random kills.
func TestCommitCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: -short; the test kills ralph a dozen times")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RALPH_CRASH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RALPH_CRASH_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (rerun with RALPH_CRASH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	bin := buildRalph(t)
	env := append(os.Environ(), "HOME="+t.TempDir())
	kills, owed := 0, 0
	for round := 1; kills < commitCrashKills && !t.Failed(); round++ {
		if round > 20 {
			t.Fatalf("only %d kills in %d rounds", kills, round-1)
		}
		k, o := commitCrashRound(t, bin, env, rng)
		kills, owed = kills+k, owed+o
	}
	t.Logf("%d kills, %d of them with a commit owed", kills, owed)
}

// commitCrashRound runs a fresh project to its end under kills, checks
// its commits, and returns how many kills it took and how many of them
// left a commit owed.
func commitCrashRound(t *testing.T, bin string, env []string, rng *rand.Rand) (kills, owed int) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{mdstate.TasksFile: commitCrashTasks, mdstate.ProgressFile: "# Progress\n", "agent.sh": commitCrashAgent, ".gitignore": ".ralph/\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	crashGit(t, dir, env, "init", "-q")
	crashGit(t, dir, env, "add", "-A")
	crashGit(t, dir, env, "commit", "-qm", "base")

	// Each kill while a task runs counts an attempt: never give up on one.
	args := []string{"run", "--json", "--commit", "--max-attempts", "100", "--agent", "exec", "--agent-cmd", "sh agent.sh"}
	for run := 0; ; run++ {
		if run > 100 {
			t.Fatalf("no end after %d runs", run)
		}
		stdout := newEventWatch(`"file":"RALPH_PROGRESS.md"`, 1+rng.IntN(3))
		jitter := time.Duration(rng.IntN(15001)) * time.Microsecond
		if rng.IntN(3) == 0 {
			jitter = 0
		}
		var stderr bytes.Buffer
		p, err := proc.Start(context.Background(), proc.Cmd{Name: bin, Args: args, Dir: dir, Env: env}, stdout, &stderr)
		if err != nil {
			t.Fatal(err)
		}
		killed := false
		select {
		case <-p.Done():
		case <-stdout.fired:
			time.Sleep(jitter)
			if err := p.Signal(syscall.SIGKILL); err == nil {
				killed = true
			} else if !errors.Is(err, syscall.ESRCH) {
				t.Fatalf("kill ralph: %v", err)
			}
		}
		werr := p.Wait(30 * time.Second)
		if !killed {
			if code := p.ExitCode(); code != 0 {
				t.Fatalf("run %d: ralph run: exit %d, %v\n%s", run, code, werr, stderr.Bytes())
			}
			break
		}
		kills++
		if _, err := os.Stat(filepath.Join(dir, mdstate.RuntimeDir, "commit.json")); err == nil {
			owed++
		}
		// A kill in the middle of a commit leaves git's index.lock or
		// the branch's lock, as git's own commands do; a person removes
		// them, as the message of the next commit that fails says.
		_ = os.Remove(filepath.Join(dir, ".git", "index.lock"))
		locks, _ := filepath.Glob(filepath.Join(dir, ".git", "refs", "heads", "*.lock"))
		for _, l := range locks {
			_ = os.Remove(l)
		}
	}
	if checkCommits(t, dir, env); t.Failed() {
		tasks, _ := os.ReadFile(filepath.Join(dir, mdstate.TasksFile))
		progress, _ := os.ReadFile(filepath.Join(dir, mdstate.ProgressFile))
		t.Logf("%s:\n%s\n%s:\n%s", mdstate.TasksFile, tasks, mdstate.ProgressFile, progress)
	}
	return kills, owed
}

// checkCommits checks a finished project: one commit per task, which
// adds its own entry; one for the session's end; every entry once; no
// state file uncommitted.
func checkCommits(t *testing.T, dir string, env []string) {
	t.Helper()
	log := crashGit(t, dir, env, "log", "--format=%H %s")
	progress, err := os.ReadFile(filepath.Join(dir, mdstate.ProgressFile))
	if err != nil {
		t.Fatal(err)
	}
	ends := 0
	for _, id := range []string{"T1", "T2", "T3", "T4"} {
		var hashes []string
		for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
			hash, subject, _ := strings.Cut(line, " ")
			if strings.HasPrefix(subject, "ralph: "+id+" ") {
				hashes = append(hashes, hash)
			}
		}
		heading := " — " + id + ": "
		if n := strings.Count(string(progress), heading); n != 1 {
			t.Errorf("%d entries of %s in the log, want 1", n, id)
		}
		if len(hashes) != 1 {
			t.Errorf("%d commits of %s, want 1:\n%s", len(hashes), id, log)
			continue
		}
		if at := crashGit(t, dir, env, "show", hashes[0]+":"+mdstate.ProgressFile); !strings.Contains(at, heading) {
			t.Errorf("%s's commit does not hold its entry", id)
		}
		if before := crashGit(t, dir, env, "show", hashes[0]+"~1:"+mdstate.ProgressFile); strings.Contains(before, heading) {
			t.Errorf("%s's entry was committed before its commit", id)
		}
	}
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, " ralph: session ") && strings.HasSuffix(line, " ended") {
			ends++
		}
	}
	if ends != 1 {
		t.Errorf("%d commits of the session's end, want 1:\n%s", ends, log)
	}
	for _, line := range strings.Split(crashGit(t, dir, env, "status", "--porcelain"), "\n") {
		for _, name := range mdstate.Files {
			if strings.HasSuffix(line, " "+name) {
				t.Errorf("left uncommitted: %q", line)
			}
		}
	}
}
