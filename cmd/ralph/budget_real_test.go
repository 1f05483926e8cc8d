//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/mdstate"
)

// TestRealClaudeBudget runs `ralph run --agent claude --max-tokens` with
// the real Claude Code CLI against a fake Messages API that answers every
// request, tool results included, with one more Write call: an agent
// that never finishes. ralph stops it within a second of the usage it
// streams crossing the limit, exits with 3, and records what it spent;
// the API gets no request after ralph is done.
func TestRealClaudeBudget(t *testing.T) {
	claude, path := realClaudeBin(t)
	tmp := t.TempDir()
	project, home, bin := filepath.Join(tmp, "project"), filepath.Join(tmp, "home"), filepath.Join(tmp, "bin")
	for _, d := range []string{project, home, bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(claude, filepath.Join(bin, "claude")); err != nil {
		t.Fatal(err)
	}
	tasks := "# Tasks\n\n- [ ] T1: Write files forever\n"
	if err := os.WriteFile(filepath.Join(project, mdstate.TasksFile), []byte(tasks), 0o644); err != nil {
		t.Fatal(err)
	}
	api := &agenttest.FakeAPI{Endless: func(n int) (string, string) {
		return filepath.Join(project, fmt.Sprintf("file%03d.txt", n)), "one more\n"
	}}
	url := api.Start(t)
	env := agenttest.FakeAPIEnv(home, url, bin+string(filepath.ListSeparator)+path)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	const limit = 1500
	ralph := buildRalph(t)
	start := time.Now()
	res, err := proc.Run(ctx, proc.Cmd{Name: ralph, Args: []string{"run", "--agent", "claude", "--model", "claude-sonnet-4-5", "--json",
		"--max-tokens", fmt.Sprint(limit)}, Dir: project, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	if res.ExitCode != 3 || !bytes.Contains(res.Stderr, []byte(fmt.Sprintf("ralph: reached --max-tokens %d", limit))) {
		t.Fatalf("exit %d after %s\nstdout: %s\nstderr: %s", res.ExitCode, wall, res.Stdout, res.Stderr)
	}
	posts := len(api.Posts())
	crossed, done := budgetTimes(t, res.Stdout, func(tokens int64, _ float64) bool { return tokens >= limit })
	late := done.Sub(crossed)
	if late > time.Second {
		t.Errorf("the CLI was stopped %s after the limit was crossed", late)
	}
	// Nothing of the CLI's is left asking the API for more.
	time.Sleep(time.Second)
	if n := len(api.Posts()); n != posts {
		t.Errorf("the API got %d more requests after ralph exited", n-posts)
	}

	cl, err := mdstate.Open(project).LoadChecklist(mdstate.TasksKind)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := cl.Session()
	if s == nil || s.Reason != "limit" || s.TokensIn+s.TokensOut < limit {
		t.Fatalf("session %+v", s)
	}
	if t1 := cl.Find("T1"); t1.Status != mdstate.Pending || t1.Attempts != 0 {
		t.Errorf("T1: %+v", t1)
	}
	in, out, _ := sumEntries(t, project)
	if in != s.TokensIn || out != s.TokensOut {
		t.Errorf("entries sum to %d in, %d out; the session says %d in, %d out", in, out, s.TokensIn, s.TokensOut)
	}
	t.Logf("real claude, --max-tokens %d: exit 3 after %s, %d model calls; the CLI was gone %s after the crossing; recorded %d tokens, $%.4f",
		limit, wall.Round(time.Millisecond), posts, late.Round(time.Millisecond), s.TokensIn+s.TokensOut, s.CostUSD)
}
