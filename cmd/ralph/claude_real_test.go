//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
	"github.com/ralph-dev/ralph/mdstate"
)

// realClaudeBin finds the real Claude Code CLI: RALPH_CLAUDE_BIN, else
// claude on PATH, leaving out the folder where TestMain's fake claude
// lives. The test is skipped only when neither is there.
func realClaudeBin(t *testing.T) (bin, pathWithoutFake string) {
	t.Helper()
	var dirs []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		// testscript's folder of this binary's copies holds ralph-holdlock.
		if _, err := os.Stat(filepath.Join(d, "ralph-holdlock")); err == nil {
			continue
		}
		dirs = append(dirs, d)
	}
	path := strings.Join(dirs, string(filepath.ListSeparator))
	if p := os.Getenv("RALPH_CLAUDE_BIN"); p != "" {
		return p, path
	}
	for _, d := range dirs {
		p := filepath.Join(d, "claude")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, path
		}
	}
	t.Skip("Claude Code CLI not found: set RALPH_CLAUDE_BIN or put claude on PATH (.ci/run installs it)")
	return "", ""
}

var currentTaskRe = regexp.MustCompile(`## Current task\s+(T\d+):`)

// realClaudeFiles are the files the fake API has the CLI write, by task.
var realClaudeFiles = map[string]string{"T1": "one.txt", "T2": "two.txt"}

// realClaudeProject makes a two-task project, a HOME, and a PATH whose
// claude is the real one, starts api (its Route set here: for each task,
// one Write of that task's file, told apart by the current task in the
// prompt) on loopback, and returns the project folder and the environment
// for ralph.
func realClaudeProject(t *testing.T, api *agenttest.FakeAPI) (project string, env []string) {
	t.Helper()
	project, home, path := realClaudeDirs(t, "# Tasks\n\n- [ ] T1: Write one.txt\n- [ ] T2: Write two.txt\n  - after: T1\n")
	api.Route = func(text string) (string, string, bool) {
		m := currentTaskRe.FindStringSubmatch(text)
		if m == nil || realClaudeFiles[m[1]] == "" {
			return "", "", false
		}
		return filepath.Join(project, realClaudeFiles[m[1]]), "written for " + m[1] + "\n", true
	}
	url := api.Start(t)
	return project, agenttest.FakeAPIEnv(home, url, path)
}

// realClaudeDirs makes a project folder (with tasks as its
// RALPH_TASKS.md, when given), a HOME, and a PATH on which the first
// claude is the real one and the fake is not.
func realClaudeDirs(t *testing.T, tasks string) (project, home, path string) {
	t.Helper()
	claude, rest := realClaudeBin(t)
	tmp := t.TempDir()
	project, home, bin := filepath.Join(tmp, "project"), filepath.Join(tmp, "home"), filepath.Join(tmp, "bin")
	for _, d := range []string{project, home, bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// `ralph run --agent claude` finds claude on PATH: the real one.
	if err := os.Symlink(claude, filepath.Join(bin, "claude")); err != nil {
		t.Fatal(err)
	}
	if tasks != "" {
		if err := os.WriteFile(filepath.Join(project, mdstate.TasksFile), []byte(tasks), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return project, home, bin + string(filepath.ListSeparator) + rest
}

// TestRealClaudeLoop runs the real ralph binary, `ralph run --agent
// claude`, over two tasks with the real Claude Code CLI against a fake
// Messages API on loopback. For each task the API has the CLI write that
// task's file with its own Write tool, then answer COMPLETE; it tells the
// tasks apart by the current task named in the prompt.
func TestRealClaudeLoop(t *testing.T) {
	api := &agenttest.FakeAPI{}
	project, env := realClaudeProject(t, api)
	files := realClaudeFiles
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	ralph := buildRalph(t)
	res, err := proc.Run(ctx, proc.Cmd{Name: ralph, Args: []string{"run", "--agent", "claude", "--model", "claude-sonnet-4-5"},
		Dir: project, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ralph run with the real claude: exit %d in %s\nstdout: %s\nstderr: %s", res.ExitCode, res.Wall.Round(time.Millisecond), res.Stdout, res.Stderr)
	if res.ExitCode != 0 {
		t.Fatalf("ralph run exited %d", res.ExitCode)
	}
	for id, name := range files {
		data, err := os.ReadFile(filepath.Join(project, name))
		if err != nil || string(data) != "written for "+id+"\n" {
			t.Errorf("%s: %q, %v", name, data, err)
		}
	}
	posts := api.Posts()
	if len(posts) != 4 {
		t.Errorf("the API got %d POSTs, want 4 (a tool call and a final answer per task)", len(posts))
	}
	for _, c := range posts {
		if c.Model != "claude-sonnet-4-5" {
			t.Errorf("a request for model %q", c.Model)
		}
	}

	p := mdstate.Open(project)
	cl, err := p.LoadChecklist(mdstate.TasksKind)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"T1", "T2"} {
		if it := cl.Find(id); it == nil || it.Status != mdstate.Done {
			t.Errorf("%s is not done:\n%s", id, cl.Source())
		}
	}
	s, _ := cl.Session()
	if s == nil || s.Status != "ended" || s.Reason != "all_done" || s.Iteration != 2 || s.TokensIn <= 0 || s.TokensOut <= 0 {
		t.Errorf("session %+v", s)
	}
	log, err := p.ReadProgress(10)
	if err != nil {
		t.Fatal(err)
	}
	// One entry per task, then the session's summary.
	if log.Entries != 3 {
		t.Fatalf("%d progress entries, want 3", log.Entries)
	}
	for i, e := range log.Recent[:2] {
		if e.Get("outcome") != "done" || !strings.HasPrefix(e.Title, []string{"T1", "T2"}[i]+":") || e.Get("tokens") == "0 in, 0 out" {
			t.Errorf("entry %d: %+v", i+1, e)
		}
	}
	if sum := log.Recent[2]; sum.Get("outcome") != "ended (all_done)" || sum.Get("tasks") != "2 done" || sum.Get("tokens") != fmt.Sprintf("%d in, %d out", s.TokensIn, s.TokensOut) {
		t.Errorf("summary entry %+v", sum)
	}
}

// TestRealClaudeCrashResume kills ralph with SIGKILL while the real Claude
// Code CLI is in the middle of an answer, then starts `ralph run` again:
// the CLI does not outlive ralph by more than a second, the session reads
// as interrupted, and the next run resumes it (same id, iteration counter
// going on, the task back with attempts+1 and a note) and finishes, with
// the session's token totals the sum of its entries.
func TestRealClaudeCrashResume(t *testing.T) {
	// The first request hangs mid-answer: the kill comes then.
	var stalled atomic.Bool
	api := &agenttest.FakeAPI{Stall: func(agenttest.APICall) bool { return stalled.CompareAndSwap(false, true) }}
	project, env := realClaudeProject(t, api)
	files := realClaudeFiles
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	ralph := buildRalph(t)
	args := []string{"run", "--agent", "claude", "--model", "claude-sonnet-4-5"}

	var out1, err1 bytes.Buffer
	p, err := proc.Start(ctx, proc.Cmd{Name: ralph, Args: args, Dir: project, Env: env}, &out1, &err1)
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the CLI's stalled request (recorded by the API only once it
	// ends), and its pid in the session.
	var child int
	for deadline := time.Now().Add(90 * time.Second); child == 0 || !stalled.Load(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			p.Signal(syscall.SIGKILL)
			p.Wait(5 * time.Second)
			t.Fatalf("the CLI never reached the API; ralph's stderr:\n%s", err1.Bytes())
		}
		if rec, ok := coordinator.RunningAgent(project); ok {
			child = rec.PID
		}
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.Wait(10 * time.Second)
	killed := time.Now()
	for proctest.Alive(child) {
		if time.Since(killed) > time.Second {
			syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("the claude CLI (pid %d) outlived ralph by more than a second", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the claude CLI (pid %d) was gone %s after ralph's SIGKILL", child, time.Since(killed).Round(time.Millisecond))

	res, err := proc.Run(ctx, proc.Cmd{Name: ralph, Args: []string{"status", "--json"}, Dir: project, Env: env})
	if err != nil || res.ExitCode != 0 || !bytes.Contains(res.Stdout, []byte(`"status": "interrupted"`)) {
		t.Fatalf("ralph status --json after the kill: exit %d, %v\n%s", res.ExitCode, err, res.Stdout)
	}
	before, _ := mdstate.Open(project).LoadChecklist(mdstate.TasksKind)
	was, _ := before.Session()

	res, err = proc.Run(ctx, proc.Cmd{Name: ralph, Args: args, Dir: project, Env: env})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("ralph run after the kill: exit %d, %v\nstderr: %s", res.ExitCode, err, res.Stderr)
	}
	if !bytes.Contains(res.Stderr, []byte("resuming session "+was.ID+" (interrupted at iteration 1, task T1, phase agent)")) {
		t.Errorf("the second run did not say it resumed:\n%s", res.Stderr)
	}
	for id, name := range files {
		if data, err := os.ReadFile(filepath.Join(project, name)); err != nil || string(data) != "written for "+id+"\n" {
			t.Errorf("%s: %q, %v", name, data, err)
		}
	}
	cl, err := mdstate.Open(project).LoadChecklist(mdstate.TasksKind)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := cl.Session()
	if s.ID != was.ID || s.Status != "ended" || s.Iteration != 3 {
		t.Errorf("session %+v, want %s ended at iteration 3", s, was.ID)
	}
	// Done, its attempt count dropped (the progress log keeps it); the
	// note says what happened to the interrupted iteration.
	if t1 := cl.Find("T1"); t1.Status != mdstate.Done || t1.Attempts != 0 || len(t1.Notes) != 1 || !strings.Contains(t1.Notes[0], "during phase agent (iteration 1)") {
		t.Errorf("T1: %+v", t1)
	}
	log, err := mdstate.Open(project).ReadProgress(20)
	if err != nil {
		t.Fatal(err)
	}
	var in, outTok int64
	var titles []string
	for _, e := range log.Recent {
		titles = append(titles, e.Title+" ["+e.Get("outcome")+"]")
		var i, o int64
		if _, err := fmt.Sscanf(e.Get("tokens"), "%d in, %d out", &i, &o); err == nil && strings.HasPrefix(e.Title, "T") {
			in, outTok = in+i, outTok+o
		}
	}
	want := "session " + was.ID + " recovered [recovered]|T1: Write one.txt [done]|T2: Write two.txt [done]|session " + was.ID + " ended [ended (all_done)]"
	if got := strings.Join(titles, "|"); got != want {
		t.Errorf("progress entries\n%s\nwant\n%s", got, want)
	}
	if in == 0 || in != s.TokensIn || outTok != s.TokensOut {
		t.Errorf("entries sum to %d in, %d out; the session says %d in, %d out", in, outTok, s.TokensIn, s.TokensOut)
	}
	if n := len(api.Posts()); n != 5 {
		t.Errorf("the API got %d requests, want 5 (the stalled one, then two per task)", n)
	}
}
