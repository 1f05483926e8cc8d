//go:build linux

package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
)

// TestMain lets the test binary be the fake claude: with RALPH_FAKE_CLAUDE=1
// it runs agenttest.FakeClaudeMain instead of the tests. It is the
// agents' supervisor first, like ralph's main (proc.Supervise).
func TestMain(m *testing.M) {
	proc.Supervise()
	if os.Getenv("RALPH_FAKE_CLAUDE") == "1" {
		os.Exit(agenttest.FakeClaudeMain())
	}
	os.Exit(m.Run())
}

// fake describes one run of the fake claude.
type fake struct {
	dir    string // the project root
	record string // FAKE_CLAUDE_RECORD
	pids   string // FAKE_CLAUDE_PIDFILE
}

// fakeClaude returns the Claude backend pointed at this test binary and a
// request that runs the fake with the given FAKE_CLAUDE_* settings.
func fakeClaude(t *testing.T, settings ...string) (claudeBackend, Request, fake) {
	t.Helper()
	tmp := t.TempDir()
	f := fake{dir: filepath.Join(tmp, "project"), record: filepath.Join(tmp, "record.json"), pids: filepath.Join(tmp, "pids")}
	if err := os.Mkdir(f.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"RALPH_FAKE_CLAUDE=1",
		"FAKE_CLAUDE_RECORD="+f.record,
		"FAKE_CLAUDE_PIDFILE="+f.pids,
		// A race-enabled fake would sleep a second at exit.
		"GORACE=atexit_sleep_ms=0",
	)
	env = append(env, settings...)
	b := Claude(os.Args[0]).(claudeBackend)
	req := Request{
		Prompt:          "Do the task.\nWhen done, say <promise>COMPLETE</promise>.",
		Dir:             f.dir,
		Env:             env,
		NoOutputTimeout: 10 * time.Second,
		Timeout:         20 * time.Second,
		Grace:           200 * time.Millisecond,
	}
	return b, req, f
}

// script writes a FAKE_CLAUDE_SCRIPT file and returns its setting.
func script(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return "FAKE_CLAUDE_SCRIPT=" + path
}

// events collects what onEvent receives; it checks that calls never
// overlap.
type events struct {
	mu     sync.Mutex
	list   []Event
	inCall bool
	t      *testing.T
}

func (e *events) on(ev Event) {
	e.mu.Lock()
	if e.inCall {
		e.t.Errorf("onEvent called concurrently")
	}
	e.inCall = true
	e.list = append(e.list, ev)
	e.inCall = false
	e.mu.Unlock()
}

func (e *events) kinds() []EventKind {
	e.mu.Lock()
	defer e.mu.Unlock()
	var k []EventKind
	for _, ev := range e.list {
		k = append(k, ev.Kind)
	}
	return k
}

func (e *events) has(kind EventKind) bool {
	for _, k := range e.kinds() {
		if k == kind {
			return true
		}
	}
	return false
}

// groupMembers lists the live processes in process group pgid.
func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, _, pg, ok := proctest.Stat(pid); ok && pg == pgid && st != 'Z' {
			pids = append(pids, pid)
		}
	}
	return pids
}

// assertGone checks, right away, that the pids and the child's process
// group are gone: Run promises nothing is left when it returns. A short
// wait covers the kernel finishing a SIGKILL already delivered.
func assertGone(t *testing.T, group int, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(500 * time.Millisecond)
	for {
		var left []int
		for _, p := range pids {
			if proctest.Alive(p) {
				left = append(left, p)
			}
		}
		left = append(left, groupMembers(group)...)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			t.Fatalf("processes left after Run returned: %v (group %d)", left, group)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readPids waits for the fake to have written n pids.
func readPids(t *testing.T, path string, n int) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		var pids []int
		for _, f := range strings.Fields(string(data)) {
			p, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("pid file: %v", err)
			}
			pids = append(pids, p)
		}
		if len(pids) >= n {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fake wrote %d pids, want %d", len(pids), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFind(t *testing.T) {
	tests := []struct {
		name      string
		installed []string
		wantName  string
		wantErr   []string // substrings of the error
		notFound  bool     // errors.Is(err, ErrNotInstalled)
	}{
		{name: "", installed: []string{"gemini", "claude"}, wantName: "claude"},
		{name: "claude", installed: []string{"claude"}, wantName: "claude"},
		{name: "", installed: []string{"opencode", "gemini"}, wantName: "opencode"},
		{name: "", installed: []string{"gemini", "codex"}, wantName: "codex"},
		{name: "", installed: []string{"gemini"}, wantName: "gemini"},
		{name: "", installed: nil, notFound: true, wantErr: []string{"npm install -g @anthropic-ai/claude-code", `--agent exec --agent-cmd "PROGRAM ARGS"`, "claude, codex, opencode and gemini"}},
		{name: "claude", installed: []string{"codex"}, notFound: true, wantErr: []string{"claude is not on PATH", "npm install -g @anthropic-ai/claude-code"}},
		{name: "codex", installed: []string{"codex"}, wantName: "codex"},
		{name: "gemini", notFound: true, wantErr: []string{"gemini is not on PATH", "npm install -g @google/gemini-cli"}},
		{name: "opencode", installed: []string{"claude"}, notFound: true, wantErr: []string{"opencode is not on PATH", "npm install -g opencode-ai"}},
		{name: "exec", wantErr: []string{"--agent-cmd"}},
		{name: "aider", wantErr: []string{`unknown agent "aider": use claude, codex, opencode, gemini, exec`}},
	}
	for _, tt := range tests {
		lookPath := func(name string) (string, error) {
			for _, n := range tt.installed {
				if n == name {
					return "/opt/bin/" + name, nil
				}
			}
			return "", errors.New("not found")
		}
		b, err := Find(tt.name, lookPath)
		if tt.wantName != "" {
			if err != nil || b.Name() != tt.wantName {
				t.Errorf("Find(%q) with %v = %v, %v; want %s", tt.name, tt.installed, b, err, tt.wantName)
			}
			if cb, ok := b.(claudeBackend); ok && cb.bin != "/opt/bin/claude" {
				t.Errorf("Find(%q) runs %q, want the path lookPath found", tt.name, cb.bin)
			}
			continue
		}
		if err == nil {
			t.Errorf("Find(%q) with %v: no error", tt.name, tt.installed)
			continue
		}
		for _, want := range tt.wantErr {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Find(%q) with %v: error %q lacks %q", tt.name, tt.installed, err, want)
			}
		}
		if errors.Is(err, ErrNotInstalled) != tt.notFound {
			t.Errorf("Find(%q) with %v: errors.Is(ErrNotInstalled) = %v", tt.name, tt.installed, !tt.notFound)
		}
	}
}
