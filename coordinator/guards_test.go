//go:build linux

package coordinator

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/gitctx/gitctxtest"
	"github.com/ralph-dev/ralph/mdstate"
)

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want ByteSize
		str  string
	}{
		{"100MB", 100 * MB, "100MB"},
		{"100m", 100 * MB, "100MB"},
		{"1.5GB", 1536 * MB, "1536MB"},
		{"2GiB", 2 * GB, "2GB"},
		{"512KB", 512 * KB, "512KB"},
		{"4096", 4 * KB, "4KB"},
		{"100", 100, "100B"},
		{"0", Off, "off"},
		{"off", Off, "off"},
	}
	for _, tt := range tests {
		got, err := ParseByteSize(tt.in)
		if err != nil || got != tt.want || got.String() != tt.str {
			t.Errorf("ParseByteSize(%q) = %d (%s), %v; want %d (%s)", tt.in, got, got, err, tt.want, tt.str)
		}
	}
	for _, bad := range []string{"", "MB", "-1MB", "ten", "1e30GB"} {
		if _, err := ParseByteSize(bad); err == nil {
			t.Errorf("ParseByteSize(%q) accepted", bad)
		}
	}
	for in, want := range map[string]string{"30d": "30d", "12h": "12h0m0s", "0": "off", "off": "off", "1.5d": "36h0m0s"} {
		got, err := ParseAge(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseAge(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1d", "soon", "-3h"} {
		if _, err := ParseAge(bad); err == nil {
			t.Errorf("ParseAge(%q) accepted", bad)
		}
	}
}

// The free space ralph reads is what df reports as available.
func TestFreeDiskSpaceMatchesDf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("df's --output is GNU's")
	}
	dir := t.TempDir()
	got, err := freeDiskSpace(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("df", "-B1", "--output=avail", dir).Output()
	if err != nil {
		t.Skipf("df: %v", err)
	}
	fields := strings.Fields(string(out))
	df, err := strconv.ParseInt(fields[len(fields)-1], 10, 64)
	if err != nil {
		t.Fatalf("df printed %q", out)
	}
	// Other processes write meanwhile: a few megabytes either way.
	if diff := got - df; diff > 16<<20 || diff < -16<<20 {
		t.Errorf("freeDiskSpace = %d, df says %d", got, df)
	}
	if _, err := freeDiskSpace(filepath.Join(dir, "missing")); err == nil {
		t.Error("no error for a missing folder")
	}
}

// Below --min-disk-free, the run pauses before an agent starts: nothing
// runs, nothing changes but the session, which the next run continues.
func TestDiskGuardPausesBeforeAgent(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	free, err := freeDiskSpace(dir)
	if err != nil {
		t.Skipf("free space unknown here: %v", err)
	}
	fa := &fakeAgent{}
	co := newCoordinator(t, Options{Root: dir, Agent: fa, Resources: Resources{MinDiskFree: ByteSize(free + 1<<40)}})
	out, _ := runAll(t, t.Context(), co)
	co.Close()
	if out.Reason != StopLowDisk || !strings.Contains(out.Detail, "free some space") || !strings.Contains(out.Detail, "--min-disk-free") {
		t.Fatalf("outcome %+v", out)
	}
	if fa.calls() != 0 {
		t.Fatalf("an agent ran with too little disk space")
	}
	tasks, s, _ := loadState(t, dir)
	if status(t, tasks, "T1") != mdstate.Pending || s.Status != mdstate.SessionPaused || s.Reason != string(StopLowDisk) {
		t.Fatalf("T1 %s, session %+v", status(t, tasks, "T1"), s)
	}
	co = newCoordinator(t, Options{Root: dir, Agent: fa, Resources: Resources{MinDiskFree: Off}})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone || out.Session.ID != s.ID {
		t.Fatalf("the next run: %+v", out)
	}
}

// mountTmpfs mounts a tmpfs of size bytes for the test, or skips it where
// that is not possible (not root, no mount).
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root on Linux")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.FormatInt(size, 10), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// A tiny disk filling up: the first agent fills it, and the guard pauses
// the run before the second starts.
func TestDiskGuardTmpfs(t *testing.T) {
	dir := mountTmpfs(t, 16<<20)
	gitctxtest.WriteFile(t, dir, mdstate.TasksFile, tasksMD(2))
	fa := &fakeAgent{before: func(n int) {
		if err := os.WriteFile(filepath.Join(dir, "big.bin"), make([]byte, 10<<20), 0o644); err != nil {
			t.Error(err)
		}
	}}
	co := newCoordinator(t, Options{Root: dir, Agent: fa, Resources: Resources{MinDiskFree: 8 * MB}})
	out, _ := runAll(t, t.Context(), co)
	if out.Reason != StopLowDisk || fa.calls() != 1 {
		t.Fatalf("outcome %+v after %d agents", out, fa.calls())
	}
	tasks, s, log := loadState(t, dir)
	if status(t, tasks, "T1") != mdstate.Done || status(t, tasks, "T2") != mdstate.Pending || s.Status != mdstate.SessionPaused || log.Entries != 1 {
		t.Errorf("T1 %s, T2 %s, session %s, %d entries", status(t, tasks, "T1"), status(t, tasks, "T2"), s.Status, log.Entries)
	}
}

// A state file the agent's report goes to that cannot take it (a folder,
// a read-only file) stops the run before its agent starts, with a message
// naming each file and what to do; nothing is lost, and once fixed the
// same session goes on.
func TestPreflightRefuses(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1), "AGENT.md": "# Agent\n\n## Learnings\n\n- Keep it.\n"})
	if err := os.Chmod(filepath.Join(dir, "AGENT.md"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "RALPH_TODO.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	fa := &fakeAgent{reply: func(int) agent.Result {
		return agent.Result{Final: "<learning>A new one.</learning><todo>Later.</todo><promise>COMPLETE</promise>"}
	}}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	_, err := co.Run(t.Context())
	co.Close()
	var fe *mdstate.FileError
	if err == nil || !errors.As(err, &fe) {
		t.Fatalf("Run: %v", err)
	}
	for _, want := range []string{"not starting the agent", "AGENT.md: is read-only; make it writable (chmod u+w AGENT.md)", "RALPH_TODO.md: is a directory, not a file; ralph writes to it: move the folder out of the way"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\ndoes not say %q", err, want)
		}
	}
	if fa.calls() != 0 {
		t.Fatal("the agent ran")
	}
	p := mdstate.Open(dir)
	tasks, err := p.LoadChecklist(mdstate.TasksKind)
	if err != nil || status(t, tasks, "T1") != mdstate.Pending {
		t.Fatalf("T1 after the refusal: %v", err)
	}
	if err := os.Chmod(filepath.Join(dir, "AGENT.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "RALPH_TODO.md")); err != nil {
		t.Fatal(err)
	}
	co = newCoordinator(t, Options{Root: dir, Agent: fa})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
		t.Fatalf("after the fix: %+v", out)
	}
	a, err := p.LoadAgent()
	if err != nil || len(a.Learnings) != 2 || a.Learnings[1].Text != "A new one." {
		t.Errorf("learnings %+v, %v", a, err)
	}
}

// The one-shot checks the same before its agent starts.
func TestOneShotPreflight(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	if err := os.Mkdir(filepath.Join(dir, "RALPH_PROGRESS.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	fa := &fakeAgent{}
	_, err := OneShot(t.Context(), Options{Root: dir, Agent: fa}, "fix the thing")
	if err == nil || !strings.Contains(err.Error(), "RALPH_PROGRESS.md: is a directory") || fa.calls() != 0 {
		t.Fatalf("OneShot: %v, %d agents", err, fa.calls())
	}
	free, ferr := freeDiskSpace(dir)
	if ferr != nil {
		return
	}
	if err := os.Remove(filepath.Join(dir, "RALPH_PROGRESS.md")); err != nil {
		t.Fatal(err)
	}
	_, err = OneShot(t.Context(), Options{Root: dir, Agent: fa, Resources: Resources{MinDiskFree: ByteSize(free + 1<<40)}}, "fix the thing")
	if err == nil || !strings.Contains(err.Error(), "free some space") || fa.calls() != 0 {
		t.Fatalf("OneShot on a full disk: %v, %d agents", err, fa.calls())
	}
}
