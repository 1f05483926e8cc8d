package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
	"github.com/ralph-dev/ralph/coordinator/proc"
)

// TestMain lets the test binary run as the real ralph: testscript puts a
// copy of it named "ralph" on the scripts' PATH, beside a fake "claude"
// (agenttest.FakeClaudeMain, steered by FAKE_CLAUDE_* variables).
func TestMain(m *testing.M) {
	// The agents' supervisor first, like run (proc.Supervise); the copy
	// named "ralph" gets there through run.
	proc.Supervise()
	if strings.HasSuffix(filepath.Base(os.Args[0]), ".test") {
		isolateUserFolders()
	}
	testscript.Main(m, map[string]func(){
		"ralph":          func() { os.Exit(run()) },
		"ralph-holdlock": holdLock,
		"claude":         func() { os.Exit(agenttest.FakeClaudeMain()) },
	})
}

// isolateUserFolders points the tests' ralph at folders of their own for
// what it keeps per user (agent settings, the registry of projects), so
// that a developer's own XDG_CONFIG_HOME and XDG_STATE_HOME are neither
// read nor written. The testscripts have their own environment already;
// the Go tests that start the binary pass theirs on.
func isolateUserFolders() {
	// One folder for every run of the tests (its registry is locked and
	// tolerant), so that runs leave nothing new behind.
	dir := filepath.Join(os.TempDir(), "ralph-test-user")
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
}

// holdLock is a stand-in coordinator for the scripts: ralph-holdlock DIR
// READY takes DIR's coordinator lock, writes READY once it holds it, and
// sleeps until it is killed. Run it in the background (exec … &name&),
// wait for READY with waitfile, and kill it to simulate a crash.
func holdLock() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: ralph-holdlock dir readyfile")
		os.Exit(2)
	}
	since := time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)
	l, err := coordinator.AcquireLock(os.Args[1], coordinator.LockInfo{PID: os.Getpid(), Host: "test", Command: "ralph run", Since: since})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ralph-holdlock:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[2], []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "ralph-holdlock:", err)
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	l.Release()
	os.Exit(0)
}

// TestScript runs the end-to-end scripts in testdata/script: each one is a
// user's session with ralph, checked the way the user would see it.
func TestScript(t *testing.T) {
	testscript.Run(t, params("testdata/script"))
}

func params(dir string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		Setup:               setup,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode":  cmdExitcode,
			"bom":       cmdBOM,
			"unescape":  cmdUnescape,
			"mkbig":     cmdMkbig,
			"snapshot":  cmdSnapshot,
			"unchanged": cmdUnchanged,
			"waitfile":  cmdWaitfile,
			"progress":  cmdProgress,
			"fits":      cmdFits,
		},
	}
}

// setup gives every script a fresh HOME, a fixed clock and time zone, and
// a git that reads no configuration but its own.
func setup(env *testscript.Env) error {
	home := filepath.Join(env.WorkDir, ".home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	// ralph looks upwards for RALPH_TASKS.md and .git: a stray one above
	// the scripts' folder would change every root they see.
	for d := filepath.Dir(env.WorkDir); ; d = filepath.Dir(d) {
		for _, name := range []string{"RALPH_TASKS.md", ".git"} {
			if _, err := os.Lstat(filepath.Join(d, name)); err == nil {
				return fmt.Errorf("%s exists above the test folder and would be taken for the project root; set TMPDIR elsewhere", filepath.Join(d, name))
			}
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	// The git scripts find before a wrapper of theirs on PATH.
	if git, err := exec.LookPath("git"); err == nil {
		env.Setenv("REALGIT", git)
	}
	for k, v := range map[string]string{
		"HOME":                home,
		"XDG_CONFIG_HOME":     filepath.Join(home, ".config"),
		"RALPH_NOW":           "2026-11-21T10:00:00Z",
		"TZ":                  "UTC",
		"GIT_CONFIG_GLOBAL":   filepath.Join(home, ".gitconfig"),
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_COUNT":    "1",
		"GIT_CONFIG_KEY_0":    "init.defaultBranch",
		"GIT_CONFIG_VALUE_0":  "main",
		"GIT_AUTHOR_NAME":     "Ralph Test",
		"GIT_AUTHOR_EMAIL":    "ralph@example.com",
		"GIT_COMMITTER_NAME":  "Ralph Test",
		"GIT_COMMITTER_EMAIL": "ralph@example.com",
		// Fixed dates make commit hashes the same on every run, so
		// scripts can compare output that names commits exactly.
		"GIT_AUTHOR_DATE":    "2026-11-20T09:00:00Z",
		"GIT_COMMITTER_DATE": "2026-11-20T09:00:00Z",
	} {
		env.Setenv(k, v)
	}
	// Under -race every ralph the scripts run is a race-enabled binary,
	// which sleeps a second at exit (atexit_sleep_ms) before reporting:
	// 1,000 commands, 1,000 seconds. Races are still reported.
	env.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	return nil
}

// exitcode N PROG ARGS... runs PROG like exec and checks that it exits
// with code N exactly. Its stdout and stderr can be checked afterwards.
func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exitcode")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N prog args...")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %q is not a number", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

// bom FILE puts a UTF-8 byte-order mark at the start of FILE.
func cmdBOM(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: bom file")
	}
	name := ts.MkAbs(args[0])
	data, err := os.ReadFile(name)
	ts.Check(err)
	ts.Check(os.WriteFile(name, append([]byte("\xef\xbb\xbf"), data...), 0o644))
}

var hexEscape = regexp.MustCompile(`\\x[0-9a-fA-F]{2}`)

// unescape FILE replaces every \xNN in FILE with the byte it names: how a
// script writes a NUL byte or invalid UTF-8, which txtar cannot hold.
func cmdUnescape(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: unescape file")
	}
	name := ts.MkAbs(args[0])
	data, err := os.ReadFile(name)
	ts.Check(err)
	data = hexEscape.ReplaceAllFunc(data, func(m []byte) []byte {
		n, _ := strconv.ParseUint(string(m[2:]), 16, 8)
		return []byte{byte(n)}
	})
	ts.Check(os.WriteFile(name, data, 0o644))
}

// mkbig FILE SIZE writes a file of one line of SIZE bytes (a number with
// an optional K or M suffix), ended by a newline.
func cmdMkbig(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: mkbig file size")
	}
	s, mult := args[1], 1
	switch {
	case strings.HasSuffix(s, "M"):
		s, mult = strings.TrimSuffix(s, "M"), 1<<20
	case strings.HasSuffix(s, "K"):
		s, mult = strings.TrimSuffix(s, "K"), 1<<10
	}
	n, err := strconv.Atoi(s)
	if err != nil || n*mult < 2 {
		ts.Fatalf("mkbig: bad size %q", args[1])
	}
	data := bytes.Repeat([]byte("a"), n*mult)
	copy(data, "# ")
	data[len(data)-1] = '\n'
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), data, 0o644))
}

// snapshots holds each script's last snapshot.
var snapshots sync.Map // *testscript.TestScript → map[string]fileState

type fileState struct {
	data string
	mode fs.FileMode
}

// snapshot [DIR] records every file under DIR (default: the current
// folder) with its bytes and mode, leaving out ralph's runtime folder
// .ralph and git's .git.
func cmdSnapshot(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) > 1 {
		ts.Fatalf("usage: snapshot [dir]")
	}
	snapshots.Store(ts, walkFiles(ts, args))
}

// unchanged [DIR] checks that the files under DIR are exactly those of the
// last snapshot: the same names, bytes and modes.
func cmdUnchanged(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) > 1 {
		ts.Fatalf("usage: unchanged [dir]")
	}
	v, ok := snapshots.Load(ts)
	if !ok {
		ts.Fatalf("unchanged: no snapshot taken")
	}
	before, after := v.(map[string]fileState), walkFiles(ts, args)
	var diffs []string
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			diffs = append(diffs, name+" was removed")
		case a.data != b.data:
			diffs = append(diffs, name+" changed")
		case a.mode != b.mode:
			diffs = append(diffs, fmt.Sprintf("%s changed mode from %v to %v", name, b.mode, a.mode))
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			diffs = append(diffs, name+" was created")
		}
	}
	if len(diffs) > 0 {
		ts.Fatalf("files changed since the snapshot: %s", strings.Join(diffs, "; "))
	}
}

func walkFiles(ts *testscript.TestScript, args []string) map[string]fileState {
	root := "."
	if len(args) == 1 {
		root = args[0]
	}
	root = ts.MkAbs(root)
	files := map[string]fileState{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch d.Name() {
			case ".ralph", ".git", ".home", ".tmp":
				return filepath.SkipDir
			}
			files[rel+"/"] = fileState{mode: d.Type()}
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		files[rel] = fileState{data: string(data), mode: fi.Mode()}
		return nil
	})
	ts.Check(err)
	return files
}

// waitfile FILE waits until FILE exists, for at most ten seconds: how a
// script knows a background program (ralph-holdlock) is ready.
func cmdWaitfile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile file")
	}
	name := ts.MkAbs(args[0])
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(name); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitfile: %s did not appear within 10s", args[0])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// progress FILE N writes N older progress entries into FILE before its
// first entry (or at its end), one a day from 2026-10-01, titled "Entry 1"
// to "Entry N", each with an outcome and a summary: a long history behind
// the entries the script wrote by hand.
func cmdProgress(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: progress file n")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 1 {
		ts.Fatalf("progress: bad count %q", args[1])
	}
	name := ts.MkAbs(args[0])
	data, err := os.ReadFile(name)
	ts.Check(err)
	var b strings.Builder
	start := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "## %s — Entry %d\n- outcome: done\n- summary: Entry %d did a piece of the work and wrote down what it found.\n\n",
			start.AddDate(0, 0, i-1).Format(time.RFC3339), i, i)
	}
	s := string(data)
	at := strings.Index(s, "\n## ") + 1
	if at == 0 { // no entry yet
		s = strings.TrimRight(s, "\n") + "\n\n"
		at = len(s)
	}
	ts.Check(os.WriteFile(name, []byte(s[:at]+b.String()+s[at:]), 0o644))
}

// fits N checks that the last command's standard output fits a budget of
// N tokens as ralph estimates them (four bytes a token).
func cmdFits(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: fits n")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("fits: bad budget %q", args[0])
	}
	got := coordinator.EstimateTokens(ts.ReadFile("stdout"))
	if (got <= n) == neg {
		ts.Fatalf("stdout is about %d tokens; budget %d", got, n)
	}
}
