//go:build unix

package agentconfig_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/agentconfig"
	"github.com/ralph-dev/ralph/coordinator/proc"
)

// TestInspect reports on fake CLIs that are real programs: one answers
// --version, one fails, one is not installed, one is found through its
// bin.
func TestInspect(t *testing.T) {
	dir := t.TempDir()
	scripts := map[string]string{
		"claude": "#!/bin/sh\necho '2.1.330 (Claude Code)'\necho second line\n",
		"codex":  "#!/bin/sh\necho 'error: no config' >&2\nexit 3\n",
	}
	for name, s := range scripts {
		write(t, filepath.Join(dir, name), s)
		if err := os.Chmod(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gemini := fakeCLI(t, "gemini-nightly", "#!/bin/sh\necho \"gemini $GEMINI_FLAVOUR\"\n")
	s := settings("## Agents\n### codex\n- model: gpt-5.5\n- args: --search\n",
		"- default: codex\n## gemini\n- bin: "+gemini+"\n- env: GEMINI_FLAVOUR=nightly\n")
	look := func(name string) (string, error) {
		if !strings.Contains(name, "/") {
			name = filepath.Join(dir, name) // the folder is PATH
		}
		return lookPath(nil)(name)
	}
	r := s.Inspect(context.Background(), agentconfig.Asked{}, look, 200)
	if r.Default != "codex" || r.DefaultFrom.String() != "agents.md:1" || r.DefaultErr != nil {
		t.Errorf("default %q from %q, %v", r.Default, r.DefaultFrom, r.DefaultErr)
	}
	if got := names(r.Agents); !slices.Equal(got, agent.CLINames()) {
		t.Fatalf("agents %q, want %q", got, agent.CLINames())
	}
	byName := map[string]agentconfig.Status{}
	for _, st := range r.Agents {
		byName[st.Name] = st
	}
	cl := byName["claude"]
	if cl.Path != filepath.Join(dir, "claude") || cl.Version != "2.1.330 (Claude Code)" || cl.VersionErr != nil || cl.Default {
		t.Errorf("claude: %+v", cl)
	}
	if cl.Command[0] != cl.Path || !slices.Contains(cl.Command, "--max-turns") {
		t.Errorf("claude's command: %q", cl.Command)
	}
	cx := byName["codex"]
	if !cx.Default || cx.Version != "" || cx.VersionErr == nil || cx.VersionErr.Error() != "--version exited with 3: error: no config" {
		t.Errorf("codex: %+v", cx)
	}
	if cx.Command[0] != cx.Path || !slices.Contains(cx.Command, "--search") || !slices.Contains(cx.Command, "gpt-5.5") {
		t.Errorf("codex's command: %q", cx.Command)
	}
	g := byName["gemini"]
	if g.Path != gemini || g.Version != "gemini nightly" || g.Env.From.String() != "agents.md:4" {
		t.Errorf("gemini (its bin, its env): %+v", g)
	}
	op := byName["opencode"]
	if op.Path != "" || op.Version != "" || op.VersionErr != nil || op.Install == "" || op.Command[0] != "opencode" {
		t.Errorf("opencode, not installed: %+v", op)
	}
	// --agent makes another the default.
	r = s.Inspect(context.Background(), agentconfig.Asked{Agent: "claude"}, look, 0)
	if r.Default != "claude" || r.DefaultFrom.String() != "--agent" {
		t.Errorf("with --agent claude: default %q from %q", r.Default, r.DefaultFrom)
	}
	// A bin that is not there is shown, not fatal.
	s = settings("", "## claude\n- bin: "+filepath.Join(dir, "gone")+"\n")
	r = s.Inspect(context.Background(), agentconfig.Asked{}, look, 0)
	if r.DefaultErr == nil || r.Default != "" || r.Agents[0].PathErr == nil || r.Agents[0].Path != "" {
		t.Errorf("with a missing bin: %+v", r)
	}
}

// TestVersionHangs: a CLI that does not answer is stopped after
// VersionTimeout, and so is what it started.
func TestVersionHangs(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	bin := fakeCLI(t, "hangs", "#!/bin/sh\nsleep 120 &\necho $! > "+pidfile+"\nwait\n")
	start := time.Now()
	_, err := agentconfig.Version(context.Background(), bin, nil)
	if err == nil || err.Error() != "--version gave no answer within 10s" {
		t.Fatalf("Version = %v", err)
	}
	if d := time.Since(start); d < agentconfig.VersionTimeout || d > agentconfig.VersionTimeout+20*time.Second {
		t.Errorf("Version returned after %s", d)
	}
	data, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the CLI's child %d still runs", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func names(sts []agentconfig.Status) []string {
	out := make([]string, len(sts))
	for i, st := range sts {
		out[i] = st.Name
	}
	return out
}

func TestBin(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "my-codex")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho codex 9\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A bin makes its agent installed for detection, ahead of the ones
	// after it on PATH.
	s := settings("", "## codex\n- bin: "+prog+"\n")
	name, from, err := s.DefaultAgent(agentconfig.Asked{}, lookPath([]string{"gemini"}))
	if err != nil || name != "codex" || from.String() != "first installed (bin at agents.md:2)" {
		t.Errorf("DefaultAgent = %q from %q, %v", name, from, err)
	}
	if p, err := s.Path("codex", lookPath(nil)); err != nil || p != prog {
		t.Errorf("Path = %q, %v", p, err)
	}
	// A bin that is not there is an error naming the file, never PATH's
	// program instead.
	for _, tt := range []struct{ bin, want string }{
		{filepath.Join(dir, "gone"), "agents.md:2: bin " + filepath.Join(dir, "gone") + " for codex does not exist or cannot be run: fix the path there, or remove the line to use codex from PATH"},
		{"~/bin/codex", "agents.md:2: bin ~/bin/codex: ~ is not expanded; write the full path of codex"},
		{"bin/codex", "agents.md:2: bin bin/codex is a relative path; write the full path of codex"},
	} {
		s := settings("", "## codex\n- bin: "+tt.bin+"\n")
		if _, err := s.Path("codex", lookPath([]string{"codex"})); err == nil || err.Error() != tt.want {
			t.Errorf("Path with bin %s: %v, want %s", tt.bin, err, tt.want)
		}
		if _, err := s.Choose(agentconfig.Asked{Agent: "codex"}, lookPath([]string{"codex"})); err == nil {
			t.Errorf("Choose with bin %s: no error", tt.bin)
		}
		// Detection meets it too (claude is not installed, codex is next).
		if _, _, err := s.DefaultAgent(agentconfig.Asked{}, lookPath([]string{"gemini"})); err == nil {
			t.Errorf("detection with bin %s: no error", tt.bin)
		}
	}
	// A bare name is looked for on PATH.
	s = settings("", "## codex\n- bin: codex-beta\n")
	if p, err := s.Path("codex", onPath("codex-beta")); err != nil || p != "/bin/fake/codex-beta" {
		t.Errorf("Path with bin codex-beta = %q, %v", p, err)
	}
}

// lookPath finds real files by path (proc.LookPath) and fakes names.
func lookPath(names []string) agentconfig.LookPath {
	return func(name string) (string, error) {
		if strings.Contains(name, "/") {
			return proc.LookPath(name)
		}
		return onPath(names...)(name)
	}
}
