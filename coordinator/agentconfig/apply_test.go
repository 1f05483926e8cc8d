//go:build unix

package agentconfig_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/agentconfig"
)

// printArgs is an agent program that prints each argument and then its
// environment, one a line.
const printArgs = `#!/bin/sh
for a in "$@"; do echo "arg=$a"; done
env | sed 's/^/env=/'
`

// fakeCLI writes an executable script into a new folder and returns its
// path.
func fakeCLI(t *testing.T, name, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestApply runs a real child through a real backend (claude's, on a
// script that prints what it got): the settings' arguments come after
// ralph's own, their environment is added to the request's, and Command
// shows the same arguments.
func TestApply(t *testing.T) {
	bin := fakeCLI(t, "claude", printArgs)
	s := settings("## Agents\n### claude\n- args: --append-system-prompt 'be brief' --verbose\n",
		"## claude\n- env: RALPH_TEST_KEY='two words'\n- env: RALPH_TEST_OLD=new\n")
	a := s.Agent("claude")
	b := agentconfig.Apply(agent.Claude(bin), a)
	var raw bytes.Buffer
	req := agent.Request{Prompt: "do it", Dir: t.TempDir(), Model: "sonnet", RawLog: &raw,
		Env:             []string{"PATH=" + os.Getenv("PATH"), "RALPH_TEST_OLD=old", "RALPH_TEST_KEEP=kept"},
		NoOutputTimeout: 30 * time.Second, Timeout: time.Minute}
	if _, err := b.Run(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	var args, env []string
	for _, l := range strings.Split(raw.String(), "\n") {
		if v, ok := strings.CutPrefix(l, "arg="); ok {
			args = append(args, v)
		}
		if v, ok := strings.CutPrefix(l, "env="); ok {
			env = append(env, v)
		}
	}
	if n := len(args); n < 3 || !slices.Equal(args[n-3:], []string{"--append-system-prompt", "be brief", "--verbose"}) || !slices.Contains(args, "sonnet") {
		t.Errorf("the child got %q", args)
	}
	for _, kv := range []string{"RALPH_TEST_KEY=two words", "RALPH_TEST_OLD=new", "RALPH_TEST_KEEP=kept"} {
		if !slices.Contains(env, kv) {
			t.Errorf("the child's environment lacks %s: %q", kv, env)
		}
	}
	if slices.Contains(env, "RALPH_TEST_OLD=old") {
		t.Errorf("the settings' RALPH_TEST_OLD did not replace the request's: %q", env)
	}
	// What a person reads is what ran.
	cmd := b.Command(req)
	if cmd[0] != bin || !slices.Equal(cmd[1:], args) {
		t.Errorf("Command = %q, the child got %q", cmd, args)
	}
	if b.Name() != "claude" {
		t.Errorf("Name = %q", b.Name())
	}
	// A request without an environment is ralph's, with the settings'.
	t.Setenv("RALPH_TEST_INHERITED", "yes")
	raw.Reset()
	req.Env = nil
	if _, err := b.Run(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"env=RALPH_TEST_INHERITED=yes", "env=RALPH_TEST_KEY=two words"} {
		if !strings.Contains(raw.String(), want+"\n") {
			t.Errorf("the child's output lacks %s:\n%s", want, raw.String())
		}
	}
}

// TestApplyNothing: without args or env the backend is the same.
func TestApplyNothing(t *testing.T) {
	b := agent.Claude("claude")
	if got := agentconfig.Apply(b, agentconfig.Agent{Name: "claude"}); reflect.TypeOf(got) != reflect.TypeOf(b) {
		t.Errorf("Apply without settings wrapped the backend: %T", got)
	}
}

func TestMergeEnv(t *testing.T) {
	got := agentconfig.MergeEnv([]string{"A=1", "B=2", "C=3=3", "B=0"}, []string{"B=two", "D="})
	if want := []string{"A=1", "C=3=3", "B=two", "D="}; !slices.Equal(got, want) {
		t.Errorf("MergeEnv = %q, want %q", got, want)
	}
}
