//go:build !ralph_noprefault

package prefault

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/ralph-dev/ralph/cmd/ralph/internal/prefault/pagemap"
)

// atInit is what /proc/self/pagemap said of the image's pages as the
// package's init left them: this file's init runs right after the
// package's own (the go tool hands the compiler a package's files sorted
// by name).
var atInit struct {
	code, data []pagemap.Entry
	err        error
}

func init() {
	start, end := readOnlyImage()
	if atInit.code, atInit.err = pagemap.Entries(start, end); atInit.err != nil {
		return
	}
	start, end = dataImage()
	atInit.data, atInit.err = pagemap.Entries(start, end)
	if os.Getenv(childVar) != "" {
		reportCodeMapped()
	}
}

// childVar, in the environment, makes the test binary a child of
// TestSupervisorNotPrefaulted: it reports what its init left mapped and
// exits, before any test or other package's init runs.
const childVar = "RALPH_PREFAULT_TEST_CHILD"

// reportCodeMapped prints how many pages of the code were not mapped at
// init, or the error that kept it from knowing, and exits.
func reportCodeMapped() {
	if atInit.err != nil {
		fmt.Println("error:", atInit.err)
		os.Exit(1)
	}
	n, _ := pagemap.Count(atInit.code, func(e pagemap.Entry) bool { return !e.Present() })
	fmt.Println(n)
	os.Exit(0)
}

// TestImageMappedAtInit checks that once the package has initialised,
// every page of the test binary's code and read-only data is in its page
// tables, and every page of its data is there as a private copy (a
// MADV_POPULATE_READ would have left page cache pages). Without the
// package's madvise calls, hundreds of code pages are absent at that
// point, and most data pages are absent or shared.
func TestImageMappedAtInit(t *testing.T) {
	if atInit.err != nil {
		t.Fatal(atInit.err)
	}
	if n, first := pagemap.Count(atInit.code, func(e pagemap.Entry) bool { return !e.Present() }); n > 0 {
		start, _ := readOnlyImage()
		t.Errorf("%d of %d pages of the code not mapped after init, the first at %#x", n, len(atInit.code), start&^(pageSize-1)+uintptr(first)*pageSize)
	}
	if n, first := pagemap.Count(atInit.data, func(e pagemap.Entry) bool { return !e.Present() || e.FileOrShared() }); n > 0 {
		start, _ := dataImage()
		t.Errorf("%d of %d pages of the data not private copies after init, the first at %#x", n, len(atInit.data), start&^(pageSize-1)+uintptr(first)*pageSize)
	}
}

// TestMadviseReportsErrors checks that the raw system call returns the
// kernel's errno: an advice Linux does not know is EINVAL (22).
func TestMadviseReportsErrors(t *testing.T) {
	start, _ := readOnlyImage()
	if got := int64(madvise(start&^(pageSize-1), pageSize, 1<<20)); got != -22 {
		t.Errorf("madvise with an unknown advice = %d, want -22 (EINVAL)", got)
	}
	if got := madvise(start&^(pageSize-1), pageSize, madvPopulateRead); got != 0 {
		t.Errorf("madvise(MADV_POPULATE_READ) of one code page = %d, want 0", int64(got))
	}
}

// TestSupervisorNotPrefaulted runs this test binary again, as ralph's
// program is run as a supervisor (first argument SuperviseArg) and as
// a command: the supervisor's code is left to fault in (of this binary's,
// 84 pages were not mapped at init, the kernel's fault-around having
// mapped the rest), the command's is all mapped.
func TestSupervisorNotPrefaulted(t *testing.T) {
	unmapped := func(arg string) int {
		t.Helper()
		cmd := exec.Command(os.Args[0], arg)
		cmd.Env = append(os.Environ(), childVar+"=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", os.Args[0], arg, err, out)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("%s %s printed %q", os.Args[0], arg, out)
		}
		return n
	}
	if n := unmapped("status"); n != 0 {
		t.Errorf("as a command: %d pages of the code not mapped at init, want 0", n)
	}
	if n := unmapped(SuperviseArg); n == 0 {
		t.Error("as a supervisor: every page of the code mapped at init, as the prefault does")
	}
}

// TestCommandLine checks that the raw read of /proc/self/cmdline reads
// what os does, as far as its buffer goes.
func TestCommandLine(t *testing.T) {
	want, err := os.ReadFile("/proc/self/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var buf [64]byte
	got := commandLine(buf[:])
	if !bytes.Equal(got, want[:min(len(want), len(buf))]) {
		t.Errorf("commandLine read %q, want the start of %q", got, want)
	}
}

func TestIsSupervisor(t *testing.T) {
	for _, tc := range []struct {
		cmdline string
		want    bool
	}{
		{"/usr/bin/ralph\x00__ralph-supervise\x00", true},
		{"ralph\x00__ralph-supervise\x00extra\x00", true}, // the supervisor refuses it, but is one
		{"/usr/bin/ralph\x00run\x00__ralph-supervise\x00", false},
		{"/usr/bin/ralph\x00__ralph-supervisee\x00", false},
		{"/usr/bin/ralph\x00__ralph-supervis", false}, // cut short: not known to be one
		{"/usr/bin/ralph\x00__ralph-supervise", false},
		{"__ralph-supervise\x00", false}, // the program's own name
		{"/usr/bin/ralph\x00", false},
		{"", false},
	} {
		if got := isSupervisor([]byte(tc.cmdline)); got != tc.want {
			t.Errorf("isSupervisor(%q) = %v, want %v", tc.cmdline, got, tc.want)
		}
	}
}
