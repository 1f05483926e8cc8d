// Package gitctxtest builds real git repositories for gitctx's tests and
// benchmarks, and gives them Runner, a plain os/exec gitctx.Runner, so
// that they need nothing from the layers above gitctx. Isolate keeps the
// machine's own git configuration out of the results.
package gitctxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Runner is a gitctx.Runner on os/exec alone: tests run short git
// commands, to completion or to a kill, and need no process groups.
type Runner struct{}

// LookPath is exec.LookPath.
func (Runner) LookPath(name string) (string, error) { return exec.LookPath(name) }

// Output runs name with args in dir; a failure's error carries standard
// error. When ctx ends the program is killed.
func (Runner) Output(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	return output(ctx, dir, nil, nil, name, args...)
}

// Start starts what Output runs and returns once it runs; wait returns
// what Output would.
func (Runner) Start(ctx context.Context, dir, name string, args ...string) (wait func() ([]byte, error), err error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return func() ([]byte, error) {
		err := cmd.Wait() // the output is complete only after it
		return stdout.Bytes(), commandErr(name, err, stderr.Bytes())
	}, nil
}

// output runs name with args in dir, with env (nil: inherit) and stdin
// (nil: none), and returns its standard output; a failure's error
// carries standard error.
func output(ctx context.Context, dir string, env []string, stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	return out, commandErr(name, err, stderr.Bytes())
}

// commandErr is the error of a run of name that ended with err and wrote
// stderr: err with stderr when the program failed, nil when it did not.
func commandErr(name string, err error, stderr []byte) error {
	var exitErr *exec.ExitError
	if msg := bytes.TrimSpace(stderr); errors.As(err, &exitErr) && len(msg) > 0 {
		return fmt.Errorf("%s: %w: %s", name, err, msg)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Epoch is the author and committer date Isolate sets; Commit dates its
// commits from here, one minute apart, so date order is history order.
var Epoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// Isolate points git at an empty global config in a temporary HOME, turns
// off the system config and fixes author, committer and dates, for the rest
// of the test (t.Setenv: the test must not be parallel). It returns the
// global config file so a test can add settings to it. gitctx's own git
// children inherit all of this, as they inherit ralph's environment.
func Isolate(tb testing.TB) string {
	tb.Helper()
	home := tb.TempDir()
	global := filepath.Join(home, "gitconfig")
	if err := os.WriteFile(global, nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	date := strconv.FormatInt(Epoch.Unix(), 10) + " +0000"
	for k, v := range map[string]string{
		"HOME":                home,
		"XDG_CONFIG_HOME":     filepath.Join(home, ".config"),
		"GIT_CONFIG_GLOBAL":   global,
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME":     "Ralph Test",
		"GIT_AUTHOR_EMAIL":    "ralph@example.com",
		"GIT_COMMITTER_NAME":  "Ralph Test",
		"GIT_COMMITTER_EMAIL": "ralph@example.com",
		"GIT_AUTHOR_DATE":     date,
		"GIT_COMMITTER_DATE":  date,
		"GIT_TERMINAL_PROMPT": "0",
	} {
		tb.Setenv(k, v)
	}
	return global
}

// Git runs git in dir and returns its trimmed standard output, failing the
// test on error.
func Git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	out, err := GitEnv(dir, nil, args...)
	if err != nil {
		tb.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// GitEnv runs git in dir with extra environment entries on top of the
// inherited ones (later entries win) and returns its trimmed output.
func GitEnv(dir string, extra []string, args ...string) (string, error) {
	var env []string
	if len(extra) > 0 {
		env = append(os.Environ(), extra...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := output(ctx, dir, env, nil, "git", args...)
	return strings.TrimRight(string(out), "\n"), err
}

// Commit stages everything in dir and commits it with message msg, dated
// Epoch plus seq minutes, and returns the new commit's hash.
func Commit(tb testing.TB, dir, msg string, seq int) string {
	tb.Helper()
	Git(tb, dir, "add", "-A")
	GitAt(tb, dir, seq, "commit", "-q", "--allow-empty", "-m", msg)
	return Git(tb, dir, "rev-parse", "HEAD")
}

// GitAt runs git with author and committer dates Epoch plus seq minutes,
// for commands that make commits (merge, tag -a).
func GitAt(tb testing.TB, dir string, seq int, args ...string) string {
	tb.Helper()
	date := strconv.FormatInt(Epoch.Add(time.Duration(seq)*time.Minute).Unix(), 10) + " +0000"
	out, err := GitEnv(dir, []string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date}, args...)
	if err != nil {
		tb.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// WriteFile writes content to dir/name, creating parent directories.
func WriteFile(tb testing.TB, dir, name, content string) {
	tb.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// CacheDir is where BigRepo's repositories are kept between runs.
func CacheDir(files, commits int) string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("ralph-bigrepo-%d-%d", files, commits))
}

// completeMarker is written last, inside .git so that it is not an
// untracked file; a directory without it is a build that died half-way.
const completeMarker = "ralph-bigrepo-complete"

// BigPath is the path of file i in a BigRepo: three levels of directories
// so that no tree is huge (a flat 100,000-entry tree would be rewritten,
// megabytes at a time, by every commit). File 0 is RALPH_PROGRESS.md at
// the root, touched by every 100th commit, so state-file walks have
// something to find.
func BigPath(i int) string {
	if i == 0 {
		return "RALPH_PROGRESS.md"
	}
	return fmt.Sprintf("d%03d/d%02d/f%06d.txt", i/2500, i/50%50, i)
}

// BigRepo makes dir a checked-out repository with files tracked files and
// commits commits, unless a complete one is already there. The first
// commit adds every file; each later one rewrites one file. History is
// fed to `git fast-import`, which writes one pack directly in seconds;
// checking out the files takes most of the time (15-50 s for 100,000
// files on a 2-core machine, depending on the disk). The repository is
// built next to dir and renamed into place, so concurrent or interrupted
// runs never see a half-built one.
func BigRepo(tb testing.TB, dir string, files, commits int) {
	tb.Helper()
	if files < 1 || commits < 1 {
		tb.Fatalf("BigRepo: need at least one file and one commit, got %d, %d", files, commits)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", completeMarker)); err == nil {
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		tb.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".building-")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	start := time.Now()
	env := []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull}
	run := func(stdin []byte, args ...string) {
		tb.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		if _, err := output(ctx, tmp, append(os.Environ(), env...), stdin, "git", args...); err != nil {
			tb.Fatalf("BigRepo: git %s: %v", args[0], err)
		}
	}
	run(nil, "init", "-q", "-b", "main")
	run(fastImportStream(files, commits), "fast-import", "--quiet", "--done")
	run(nil, "reset", "-q", "--hard", "main")
	// Files written in the same instant as the index are "racily clean"
	// and git would re-hash all of them on every status; a refresh after
	// the clock has moved on settles the index as a user's repo would be.
	time.Sleep(1100 * time.Millisecond)
	run(nil, "update-index", "-q", "--refresh")
	if err := os.WriteFile(filepath.Join(tmp, ".git", completeMarker), nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, ".git", completeMarker)); serr == nil {
			return // another run finished first
		}
		tb.Fatal(err)
	}
	tb.Logf("BigRepo: built %s (%d files, %d commits) in %s", dir, files, commits, time.Since(start).Round(time.Millisecond))
}

// fastImportStream writes the fast-import input: all blobs of the first
// commit by mark, then one commit per step rewriting one file inline.
func fastImportStream(files, commits int) []byte {
	var b bytes.Buffer
	b.Grow(files*64 + commits*256)
	data := func(s string) { fmt.Fprintf(&b, "data %d\n%s\n", len(s), s) }
	for i := 0; i < files; i++ {
		fmt.Fprintf(&b, "blob\nmark :%d\n", i+1)
		data(fmt.Sprintf("file %d\nrevision 0\n", i))
	}
	when := Epoch.Unix()
	for c := 0; c < commits; c++ {
		fmt.Fprintf(&b, "commit refs/heads/main\ncommitter Ralph Bench <bench@example.com> %d +0000\n", when+int64(c)*60)
		if c == 0 {
			data(fmt.Sprintf("initial import of %d files", files))
			for i := 0; i < files; i++ {
				fmt.Fprintf(&b, "M 100644 :%d %s\n", i+1, BigPath(i))
			}
		} else {
			i := c * 7919 % files // a prime stride spreads edits over the tree
			if c%100 == 0 {
				i = 0
			}
			data(fmt.Sprintf("change %d", c))
			fmt.Fprintf(&b, "M 100644 inline %s\n", BigPath(i))
			data(fmt.Sprintf("file %d\nrevision %d\n", i, c))
		}
		b.WriteString("\n")
	}
	b.WriteString("done\n")
	return b.Bytes()
}

// RunWithoutGitConfig runs a test binary's tests with HOME an empty
// temporary folder and no system git config, so that the machine's git
// configuration (a global excludes file, say) stays out of them, and
// returns m.Run's exit code. Call it from TestMain.
func RunWithoutGitConfig(m *testing.M) int {
	home, err := os.MkdirTemp("", "ralph-test-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(home)
	os.Setenv("HOME", home)
	os.Unsetenv("XDG_CONFIG_HOME")
	os.Unsetenv("GIT_CONFIG_GLOBAL")
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	return m.Run()
}

// Gitignore is a 30-line .gitignore of common shapes, for the benchmarks
// of the matcher (gitctx/ignore) and of the walks that use it
// (projectdetect). It hides the ".txt" files and one "sub09" directory a
// package, so that most entries are checked against all its rules.
const Gitignore = `# build output
/bin/
/dist/
*.o
*.a
*.so
*.exe
*.test
*.out
coverage.*
.DS_Store
Thumbs.db
*.swp
*~
.idea/
.vscode/
node_modules/
__pycache__/
*.py[cod]
.env
.env.*
!.env.example
tmp*
**/testdata/golden/*.new
docs/_build/
pkg*/sub09/
*.txt
!important.txt
/vendor/
*.log
`
