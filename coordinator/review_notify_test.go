//go:build linux

package coordinator

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/mdstate"
)

// Review (issue 9): a person marks the running task done in the moment
// after begin wrote "T1 in progress, phase agent" and before the
// iteration's stop function is registered (iterationContext). With
// --commit that moment includes `git status` (dirtyPaths), which takes as
// long as git takes; here a git that sleeps 1.5 s. The watcher reports the
// edit within that moment, stopIfTaken finds no stopIter and returns, and
// nothing looks again: the agent of a task the person took runs to its end.
func TestReviewTakenBeforeStopRegistered(t *testing.T) {
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	bin := t.TempDir()
	mark := filepath.Join(bin, "status-started")
	script := "#!/bin/sh\nfor a in \"$@\"; do if [ \"$a\" = status ]; then touch " + mark + "; sleep 1.5; break; fi; done\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
	ba := &blockingAgent{block: func(n int) bool { return n == 1 }, started: make(chan int, 8)}
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
	<-ba.started // call 1 starts after git status
	select {
	case n := <-ba.started:
		t.Logf("call %d started: T1's agent was stopped", n)
	case <-time.After(5 * time.Second):
		t.Errorf("T1's agent still runs 5 s after its start, though a person marked T1 done before it started (the watcher's report came while stopIter was nil)")
		co.Stop(true)
	}
	_, _ = co.Wait()
	<-col.stopped
}
