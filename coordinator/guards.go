package coordinator

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ralph-dev/ralph/mdstate"
)

// This file holds the guards ralph checks before it starts an agent: free
// disk space, and that the state files the agent's report goes to will
// take it. Both are found before the work, not after it: a full disk was
// reported as "check the permissions of the file", and a RALPH_TODO.md
// that is a folder was discovered once the agent had run, its work lost.

// Resources bounds the disk a run uses. Zero fields take the defaults;
// Off turns a bound off.
type Resources struct {
	// MinDiskFree: before each iteration (and a one-shot) ralph checks the
	// free space on the project's disk and, below this, pauses the run
	// (StopLowDisk) instead of starting an agent. Default 100 MB.
	MinDiskFree ByteSize
	// LogMaxSize caps one agent run's log in .ralph/logs: its first three
	// quarters and about its last quarter are kept, with a line saying how
	// much was cut between them. Default 20 MB.
	LogMaxSize ByteSize
	// LogsMaxTotal bounds .ralph/logs as a whole: before each agent run
	// the oldest logs are removed until the folder holds at most this
	// much. Default 200 MB.
	LogsMaxTotal ByteSize
	// LogsMaxAge: logs older than this are removed. Default 30 days.
	LogsMaxAge Age
}

// The defaults of Resources.
const (
	DefaultMinDiskFree  ByteSize = 100 * MB
	DefaultLogMaxSize   ByteSize = 20 * MB
	DefaultLogsMaxTotal ByteSize = 200 * MB
	DefaultLogsMaxAge   Age      = Age(30 * 24 * time.Hour)
)

// DefaultResources are the bounds a zero Resources stands for; a front
// end shows them as its flags' defaults.
func DefaultResources() Resources {
	return Resources{MinDiskFree: DefaultMinDiskFree, LogMaxSize: DefaultLogMaxSize, LogsMaxTotal: DefaultLogsMaxTotal, LogsMaxAge: DefaultLogsMaxAge}
}

func (r Resources) withDefaults() Resources {
	d := DefaultResources()
	if r.MinDiskFree == 0 {
		r.MinDiskFree = d.MinDiskFree
	}
	if r.LogMaxSize == 0 {
		r.LogMaxSize = d.LogMaxSize
	}
	if r.LogsMaxTotal == 0 {
		r.LogsMaxTotal = d.LogsMaxTotal
	}
	if r.LogsMaxAge == 0 {
		r.LogsMaxAge = d.LogsMaxAge
	}
	return r
}

// ByteSize is a number of bytes, written "100MB", "1.5GB", "512KB" or
// "4096" (units of 1024). As a flag, "0" or "off" is Off.
type ByteSize int64

// Units of ByteSize.
const (
	KB ByteSize = 1 << 10
	MB ByteSize = 1 << 20
	GB ByteSize = 1 << 30
)

// Off, in a field of Resources, turns that bound off.
const Off = -1

var sizeUnits = []struct {
	suffix string
	n      ByteSize
}{{"GIB", GB}, {"GB", GB}, {"G", GB}, {"MIB", MB}, {"MB", MB}, {"M", MB}, {"KIB", KB}, {"KB", KB}, {"K", KB}, {"B", 1}}

// ParseByteSize reads a size such as "100MB"; "0" and "off" are Off.
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	if t == "OFF" {
		return Off, nil
	}
	unit := ByteSize(1)
	for _, u := range sizeUnits {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, unit = strings.TrimSpace(rest), u.n
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || f*float64(unit) > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is not a size like 100MB, 1.5GB, 512KB or off", s)
	}
	if f == 0 {
		return Off, nil
	}
	return ByteSize(math.Round(f * float64(unit))), nil
}

// String writes the size as ParseByteSize reads it.
func (b ByteSize) String() string {
	switch {
	case b < 0:
		return "off"
	case b >= GB && b%GB == 0:
		return strconv.FormatInt(int64(b/GB), 10) + "GB"
	case b >= MB && b%MB == 0:
		return strconv.FormatInt(int64(b/MB), 10) + "MB"
	case b >= 10*MB:
		return strconv.FormatFloat(float64(b)/float64(MB), 'f', 1, 64) + "MB"
	case b >= KB && b%KB == 0:
		return strconv.FormatInt(int64(b/KB), 10) + "KB"
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// Set and Type make a *ByteSize a command-line flag's value.
func (b *ByteSize) Set(s string) error {
	v, err := ParseByteSize(s)
	if err == nil {
		*b = v
	}
	return err
}

// Type names the flag's value in help text.
func (*ByteSize) Type() string { return "size" }

// Age is how old something may get, written "30d", "12h" or "90m" (or any
// Go duration). As a flag, "0" or "off" is Off.
type Age time.Duration

// ParseAge reads an age such as "30d"; "0" and "off" are Off.
func ParseAge(s string) (Age, error) {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "off") || t == "0" {
		return Off, nil
	}
	if days, ok := strings.CutSuffix(t, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil || n < 0 || n > 100*365 {
			return 0, fmt.Errorf("%q is not an age like 30d, 12h or off", s)
		}
		if n == 0 {
			return Off, nil
		}
		return Age(time.Duration(n * float64(24*time.Hour))), nil
	}
	d, err := time.ParseDuration(t)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not an age like 30d, 12h or off", s)
	}
	if d == 0 {
		return Off, nil
	}
	return Age(d), nil
}

func (a Age) String() string {
	d := time.Duration(a)
	switch {
	case a < 0:
		return "off"
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// Set and Type make an *Age a command-line flag's value.
func (a *Age) Set(s string) error {
	v, err := ParseAge(s)
	if err == nil {
		*a = v
	}
	return err
}

// Type names the flag's value in help text.
func (*Age) Type() string { return "age" }

// diskGuard says whether the project's disk has too little free space to
// start an agent, and what to do about it. A disk whose free space cannot
// be read (a platform without statfs) is not guarded.
func diskGuard(root string, res Resources) (StopReason, string) {
	res = res.withDefaults()
	if res.MinDiskFree < 0 {
		return "", ""
	}
	free, err := freeDiskSpace(root)
	if err != nil || free >= int64(res.MinDiskFree) {
		return "", ""
	}
	return StopLowDisk, fmt.Sprintf("only %s free on the disk holding %s, below the %s ralph keeps free (--min-disk-free): "+
		"free some space, then `ralph run` continues the session", ByteSize(free), root, res.MinDiskFree)
}

// lowDiskError is diskGuard's verdict as an error, for a one-shot, which
// has no session to pause.
func lowDiskError(root string, res Resources) error {
	if r, detail := diskGuard(root, res); r != "" {
		return errors.New("not starting the agent: " + strings.Replace(detail, ", then `ralph run` continues the session", " and run again", 1))
	}
	return nil
}

// loopFiles are the state files an iteration's outcome and report go to;
// oneShotFiles those of a one-shot.
var (
	loopFiles    = []string{mdstate.TasksFile, mdstate.AgentFile, mdstate.TodoFile, mdstate.ProgressFile}
	oneShotFiles = []string{mdstate.AgentFile, mdstate.TodoFile, mdstate.ProgressFile}
)

// checkStateFiles refuses to start an agent whose report could not be
// written: a state file that is a folder, read-only, or unreadable.
func checkStateFiles(p *mdstate.Project, names []string) error {
	return notStarting(p.CheckWritable(names...))
}

// notStarting says why an agent is not started: err, the files that would
// refuse its report; nil when there are none.
func notStarting(err error) error {
	if err != nil {
		return fmt.Errorf("not starting the agent, since ralph could not write its report:\n%w", err)
	}
	return nil
}

// runtimeDirError says why .ralph, the folder of ralph's runtime files (the
// lock, the logs), could not be created, and what to do.
func runtimeDirError(err error) error {
	if errors.Is(err, syscall.ENOTDIR) {
		return &mdstate.FileError{File: mdstate.RuntimeDir, Msg: "is a file, not a folder",
			Hint: "ralph keeps its lock and the agents' logs in it: move the file out of the way (ralph creates the folder)", Err: err}
	}
	return &mdstate.FileError{File: mdstate.RuntimeDir, Msg: "cannot be created: " + err.Error(), Hint: "check the permissions of the project's folder", Err: err}
}

// preflight is what an iteration checks before its agent starts: the
// state files its outcome and report go to.
func (c *Coordinator) preflight() error {
	return checkStateFiles(c.p, loopFiles)
}

// lowDisk is the loop's disk guard.
func (c *Coordinator) lowDisk() (StopReason, string) {
	return diskGuard(c.opts.Root, c.opts.Resources)
}

// ioError wraps an error of ralph's own files (a log, the report it
// keeps): a full disk says so.
func ioError(what string, err error) error {
	if mdstate.DiskFull(err) {
		return fmt.Errorf("%s: the disk is full (%w); free some space, then run again", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
