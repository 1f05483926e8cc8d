//go:build linux

package coordinator

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/mdstate"
)

// A person marks the task done in the moment after begin wrote "T1 in
// progress, phase agent" and before the iteration can be stopped: with
// --commit that moment includes `git status`, here a git that sleeps
// 1.5 s. The watcher's report comes while nothing can be stopped; the
// iteration looks once more before its agent starts, and none starts.
func TestTakenBeforeAgentStarts(t *testing.T) {
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err) // CI installs git; a skip would hide the test
	}
	// A repository, as --commit is for: outside one ralph starts no git.
	dir := commitProject(t, tasksMD(2))
	bin := t.TempDir()
	mark := filepath.Join(bin, "status-started")
	script := "#!/bin/sh\nfor a in \"$@\"; do if [ \"$a\" = status ]; then touch " + mark + "; sleep 1.5; break; fi; done\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	// No call blocks: the test reads which task the first one was for.
	ba := &blockingAgent{started: make(chan int, 8)}
	co := newCoordinator(t, Options{Root: dir, Agent: ba, Watch: true, Commit: true})
	col := collect(co)
	if err := co.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(mark); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("git status never ran")
		}
		time.Sleep(time.Millisecond)
	}
	// begin's write is on disk (T1 in progress, phase agent); the agent
	// has not started yet.
	personMarks(t, dir, "T1", mdstate.Done)
	select {
	case n := <-ba.started:
		if !strings.Contains(ba.prompt(n), "## Current task\n\nT2: ") {
			t.Errorf("call %d is not T2's: T1's agent started though a person took T1 first", n)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("no agent started in 10 s")
		co.Stop(true)
	}
	out, err := co.Wait()
	<-col.stopped
	if err != nil || out.Reason != StopAllDone || ba.calls() != 1 {
		t.Errorf("outcome %+v, %v, %d agent calls", out, err, ba.calls())
	}
	tasks, _, log := loadState(t, dir)
	if st := status(t, tasks, "T1"); st != mdstate.Done || !strings.Contains(log.Recent[0].Get("note"), "a person marked T1 done") {
		t.Errorf("T1 %s, entry %+v", st, log.Recent[0])
	}
}
