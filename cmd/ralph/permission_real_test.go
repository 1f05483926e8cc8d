//go:build linux

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
	"github.com/ralph-dev/ralph/coordinator/proc"
)

// TestRealClaudeAcceptEdits runs a one-shot with --permission-mode
// accept-edits and the real Claude Code CLI against a fake Messages API
// that has it write a file: the CLI takes the mode ralph maps it to
// (--permission-mode acceptEdits), needs no IS_SANDBOX even as root, and
// its Write tool may edit the project.
func TestRealClaudeAcceptEdits(t *testing.T) {
	project, home, path := realClaudeDirs(t, "")
	greeting := filepath.Join(project, "greeting.txt")
	api := &agenttest.FakeAPI{Route: func(text string) (string, string, bool) {
		return greeting, "hello\n", strings.Contains(text, "write the greeting")
	}}
	url := api.Start(t)
	env := slices.DeleteFunc(agenttest.FakeAPIEnv(home, url, path),
		func(kv string) bool { return strings.HasPrefix(kv, "IS_SANDBOX=") })
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	res, err := proc.Run(ctx, proc.Cmd{Name: buildRalph(t), Args: []string{"write the greeting file", "--agent", "claude",
		"--model", "claude-sonnet-4-5", "--permission-mode", "accept-edits", "--json"}, Dir: project, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !bytes.Contains(res.Stdout, []byte(`"status": "complete"`)) {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if !bytes.Contains(res.Stderr, []byte("permission mode accept-edits (--permission-mode acceptEdits)")) {
		t.Errorf("the header does not show the mode:\n%s", res.Stderr)
	}
	if data, err := os.ReadFile(greeting); err != nil || string(data) != "hello\n" {
		t.Errorf("greeting.txt: %q, %v", data, err)
	}
	if posts := api.Posts(); len(posts) != 2 || posts[1].ToolResultFor != agenttest.FakeToolID {
		t.Errorf("the API got %d requests (%+v), want the tool call and the answer", len(posts), posts)
	}
}
