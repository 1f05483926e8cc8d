//go:build linux

package coordinator

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/gitctx"
	"github.com/ralph-dev/ralph/gitctx/gitctxtest"
	"github.com/ralph-dev/ralph/mdstate"
)

// --commit's edges: the state a kill leaves between a task's entry and its
// commit, or between a session's end and its last commit, then a new
// start; and a commit that fails.

// commitProject is a git repository with the tasks file, a goals file, a
// person's notes.txt and .ralph/ ignored, all committed as "base".
func commitProject(t *testing.T, tasks string) string {
	t.Helper()
	gitctxtest.Isolate(t)
	dir := projectDir(t, map[string]string{
		mdstate.TasksFile: tasks, mdstate.GoalsFile: "# Goals\n", "notes.txt": "original\n", ".gitignore": ".ralph/\n",
	})
	gitctxtest.Git(t, dir, "init", "-q", "-b", "main")
	gitctxtest.Commit(t, dir, "base", 1)
	return dir
}

// subjects lists the commits' subjects, newest first.
func subjects(t *testing.T, dir string) []string {
	t.Helper()
	return strings.Split(gitctxtest.Git(t, dir, "log", "--format=%s"), "\n")
}

// changed lists the paths commit rev changed.
func changed(t *testing.T, dir, rev string) []string {
	t.Helper()
	return strings.Split(gitctxtest.Git(t, dir, "show", "--name-only", "--format=", rev), "\n")
}

// ralphCommits makes the commit ralph makes, of paths, as it was before a
// kill; with staleIndex, a kill between the commit and its update of
// git's index: the index is put back as it was.
func ralphCommits(t *testing.T, dir, msg string, staleIndex bool, paths ...string) {
	t.Helper()
	index := filepath.Join(dir, ".git", "index")
	old, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if staleIndex {
		defer func() {
			if err := os.WriteFile(index, old, 0o644); err != nil {
				t.Fatal(err)
			}
		}()
	}
	repo, err := gitctx.Open(dir, proc.Runner{})
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	if _, err := repo.Commit(t.Context(), paths, msg+"\n", time.Now()); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Killed after T1 was marked done and before its commit, at each point:
// before its entry, after it, after the commit itself (before the record
// was dropped), and between the commit and its update of git's index. The
// next start makes the commit once, with the agent's file, T1's entry
// (once) and the state files, not the recovery's entry nor the person's
// notes.txt; a commit made already is not made again, though a person
// changed a state file since, and git's index is brought up to it.
func TestKilledBeforeTaskCommit(t *testing.T) {
	for _, tc := range []struct {
		name               string
		entry, made, stale bool
	}{
		{name: "before the entry"},
		{name: "after the entry", entry: true},
		{name: "after the commit", entry: true, made: true},
		{name: "before the index", entry: true, made: true, stale: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := commitProject(t, tasksMD(1))
			now := time.Now().UTC().Truncate(time.Second)
			write(t, dir, "notes.txt", "the person's work\n")
			before := DirtyPaths(t.Context(), dir)
			if !slices.Equal(before, []string{"notes.txt"}) {
				t.Fatalf("dirty before the task: %v", before)
			}
			pc := &pendingCommit{Session: "20261122-100000", Iteration: 1, Task: "T1", Message: "ralph: T1 Task number 1", Since: now, DirtyBefore: before}
			if err := keepCommit(dir, pc); err != nil {
				t.Fatal(err)
			}
			// The agent's work, and its touch on the person's file.
			write(t, dir, "out.txt", "T1's work\n")
			write(t, dir, "notes.txt", "the person's work\nand the agent's\n")
			writeTasks(t, dir, "# Tasks\n\n- [x] T1: Task number 1\n"+session("- status: running", "- phase: writing", "- iteration: 1", "- task: T1",
				"- updated: "+now.Format(time.RFC3339), "- result: done, 100 in, 10 out, $0.0100, 1s"))
			if tc.entry {
				e := mdstate.Entry{Time: now, Title: "T1: Task number 1", Fields: []mdstate.Field{{Key: "outcome", Value: "done"}, {Key: "iteration", Value: "1"}}}
				if err := mdstate.Open(dir).AppendProgress(e); err != nil {
					t.Fatal(err)
				}
			}
			if tc.made {
				ralphCommits(t, dir, pc.Message, tc.stale, "out.txt", mdstate.TasksFile, mdstate.ProgressFile)
				write(t, dir, mdstate.GoalsFile, "# Goals\n\n- [ ] G1: A person's goal\n")
			}

			co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}, Commit: true})
			if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
				t.Fatalf("outcome %+v", out)
			}
			want := []string{"ralph: session 20261122-100000 ended", "ralph: T1 Task number 1", "base"}
			if got := subjects(t, dir); !slices.Equal(got, want) {
				t.Fatalf("commits %q, want %q", got, want)
			}
			if got, want := changed(t, dir, "HEAD~1"), []string{mdstate.ProgressFile, mdstate.TasksFile, "out.txt"}; !slices.Equal(got, want) {
				t.Errorf("T1's commit changed %q, want %q", got, want)
			}
			log := gitctxtest.Git(t, dir, "show", "HEAD~1:"+mdstate.ProgressFile)
			if n := strings.Count(log, "— T1: Task number 1\n"); n != 1 || strings.Contains(log, "recovered") {
				t.Errorf("T1's commit has %d entries of T1 (want 1) and no recovery entry:\n%s", n, log)
			}
			_, s, lg := loadState(t, dir)
			n := 0
			for _, e := range lg.Recent {
				if e.Title == "T1: Task number 1" {
					n++
				}
			}
			if n != 1 || s.Commits != 1 {
				t.Errorf("%d entries of T1, %d commits counted; want 1 and 1", n, s.Commits)
			}
			if dirty := DirtyPaths(t.Context(), dir); !slices.Equal(dirty, []string{"notes.txt"}) {
				t.Errorf("dirty after the run: %v, want only the person's notes.txt", dirty)
			}
			if readPendingCommit(dir) != nil {
				t.Error("the commit's record is still there")
			}
		})
	}
}

// A record of an iteration that did not complete owes no commit: it is
// dropped, and the task's files stay as they are.
func TestFailedIterationOwesNoCommit(t *testing.T) {
	dir := commitProject(t, tasksMD(1))
	now := time.Now().UTC().Truncate(time.Second)
	if err := keepCommit(dir, &pendingCommit{Session: "20261122-100000", Iteration: 1, Task: "T1", Message: "ralph: T1 Task number 1", Since: now}); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "out.txt", "half of T1's work\n")
	writeTasks(t, dir, "# Tasks\n\n- [ ] T1: Task number 1\n  - attempts: 1\n"+session("- status: running", "- phase: writing", "- iteration: 1", "- task: T1",
		"- updated: "+now.Format(time.RFC3339), "- result: failed, 100 in, 10 out, $0.0100, 1s"))
	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{reply: func(int) agent.Result { return agent.Result{Final: "not yet"} }}, MaxAttempts: 2})
	runAll(t, t.Context(), co)
	if got := subjects(t, dir); !slices.Equal(got, []string{"base"}) {
		t.Errorf("commits %q, want only base", got)
	}
	if readPendingCommit(dir) != nil {
		t.Error("the commit's record is still there")
	}
}

// Killed while the session ended, or after it ended and before its last
// commit: the next start (here with nothing to do, and without --commit:
// the record is what owes the commit) makes that commit, with the summary
// entry and the ended session; once, though a person changed a state
// file after it was made, and with git's index brought up to it.
func TestKilledBeforeEndCommit(t *testing.T) {
	const id = "20261122-100000"
	for _, tc := range []struct {
		name  string
		ended bool // else killed in phase "ending", before the summary
		made  bool
		stale bool // killed before the commit updated git's index
	}{
		{name: "while ending"},
		{name: "after ending", ended: true},
		{name: "after the commit", ended: true, made: true},
		{name: "before the index", ended: true, made: true, stale: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := commitProject(t, tasksMD(1))
			now := time.Now().UTC().Truncate(time.Second)
			pc := &pendingCommit{Session: id, Message: "ralph: session " + id + " ended", Since: now}
			if err := keepCommit(dir, pc); err != nil {
				t.Fatal(err)
			}
			st := []string{"- status: running", "- phase: ending", "- iteration: 1", "- reason: all_done"}
			if tc.ended {
				st = []string{"- status: ended", "- iteration: 1", "- reason: all_done"}
				e := mdstate.Entry{Time: now, Title: "session " + id + " ended", Fields: []mdstate.Field{{Key: "outcome", Value: "ended (all_done)"}}}
				if err := mdstate.Open(dir).AppendProgress(e); err != nil {
					t.Fatal(err)
				}
			}
			writeTasks(t, dir, "# Tasks\n\n- [x] T1: Task number 1\n"+session(st...))
			if tc.made {
				ralphCommits(t, dir, pc.Message, tc.stale, mdstate.TasksFile, mdstate.ProgressFile)
				write(t, dir, mdstate.GoalsFile, "# Goals\n\n- [ ] G1: A person's goal\n")
			}

			co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
			if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
				t.Fatalf("outcome %+v", out)
			}
			if got, want := subjects(t, dir), []string{"ralph: session " + id + " ended", "base"}; !slices.Equal(got, want) {
				t.Fatalf("commits %q, want %q", got, want)
			}
			if got, want := changed(t, dir, "HEAD"), []string{mdstate.ProgressFile, mdstate.TasksFile}; !slices.Equal(got, want) {
				t.Errorf("the last commit changed %q, want %q", got, want)
			}
			if log := gitctxtest.Git(t, dir, "show", "HEAD:"+mdstate.ProgressFile); strings.Count(log, "— session "+id+" ended\n") != 1 {
				t.Errorf("the last commit's log has not one summary:\n%s", log)
			}
			if tasks := gitctxtest.Git(t, dir, "show", "HEAD:"+mdstate.TasksFile); !strings.Contains(tasks, "- status: ended\n") {
				t.Errorf("the last commit's session is not ended:\n%s", tasks)
			}
			want := []string(nil)
			if tc.made {
				want = []string{mdstate.GoalsFile} // the person's, after the commit
			}
			if dirty := DirtyPaths(t.Context(), dir); !slices.Equal(dirty, want) {
				t.Errorf("dirty after the run: %v, want %v", dirty, want)
			}
			if readPendingCommit(dir) != nil {
				t.Error("the commit's record is still there")
			}
		})
	}
}

// A commit that fails (git's index is locked, as by an agent's own git
// at work) does not stop the run: it is told, and noted under the task,
// whose entry is written already; the next task is committed as usual,
// and so is the session's end.
func TestCommitFailureIsNoted(t *testing.T) {
	dir := commitProject(t, tasksMD(2))
	lock := filepath.Join(dir, ".git", "index.lock")
	fa := &fakeAgent{before: func(n int) {
		write(t, dir, "out-"+string(rune('0'+n))+".txt", "work\n")
		var err error
		if n == 1 {
			err = os.WriteFile(lock, nil, 0o644)
		} else {
			err = os.Remove(lock)
		}
		if err != nil {
			t.Error(err)
		}
	}}
	co := newCoordinator(t, Options{Root: dir, Agent: fa, Commit: true})
	out, evs := runAll(t, t.Context(), co)
	if out.Reason != StopAllDone {
		t.Fatalf("outcome %+v", out)
	}
	if got, want := subjects(t, dir), []string{"ralph: session " + out.Session.ID + " ended", "ralph: T2 Task number 2", "base"}; !slices.Equal(got, want) {
		t.Fatalf("commits %q, want %q", got, want)
	}
	told := false
	for _, e := range evs {
		told = told || (e.Kind == EventNotice && e.Task == "T1" && strings.Contains(e.Text, "ralph could not commit T1"))
	}
	tasks, s, _ := loadState(t, dir)
	t1 := tasks.Find("T1")
	if !told || len(t1.Notes) != 1 || !strings.Contains(t1.Notes[0], "commit failed at ") || s.Commits != 1 {
		t.Errorf("told %v, T1's notes %q, %d commits counted", told, t1.Notes, s.Commits)
	}
	// T1's work was dirty when T2 began: not T2's to commit.
	if dirty := DirtyPaths(t.Context(), dir); !slices.Equal(dirty, []string{"out-1.txt"}) {
		t.Errorf("dirty after the run: %v, want T1's uncommitted work", dirty)
	}
}
