package coordinator

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/mdstate"
)

// This file keeps each agent run's raw output in .ralph/logs: redacted,
// readable by its owner only (mode 0600: an agent's output quotes the
// files and environment it saw), capped per run and pruned as a whole. One
// task that printed 300 MB once left 287 MB there, never removed.

// logsDir is the folder of the agents' raw logs.
func logsDir(root string) string { return filepath.Join(root, mdstate.RuntimeDir, "logs") }

// agentLog is one agent run's log as it is written: redactWriter →
// cappedLog → the file.
type agentLog struct {
	f      *os.File
	capped *cappedLog
	redact *redactWriter
	// onFail is told, once, of the first write that failed: the agent
	// goes on (a log must not stop it), but a person should know that its
	// log is incomplete, most often because the disk is full.
	onFail func(error)
	failed bool
	// book, when set, is told the log's size once it is closed.
	book *logBook
}

// Write writes p through the redactor and the cap to the file.
func (l *agentLog) Write(p []byte) (int, error) {
	n, err := l.redact.Write(p)
	if err != nil {
		l.fail(err)
	}
	return n, err
}

// fail tells onFail of err, the first time only.
func (l *agentLog) fail(err error) {
	if l.failed {
		return
	}
	l.failed = true
	if l.onFail != nil {
		l.onFail(err)
	}
}

// logFailedNotice says that the agent's log could not be written, and why.
func logFailedNotice(name string, err error) string {
	what := "ralph could not write the agent's log " + filepath.Join(mdstate.RuntimeDir, "logs", name)
	if mdstate.DiskFull(err) {
		return what + ": the disk is full; the agent goes on, but its log is incomplete; free some space"
	}
	return what + ": " + err.Error() + "; the agent goes on, but its log is incomplete"
}

// openLog prunes the logs folder when book says it may be over a bound
// (always, for a nil book), then creates the log name in it.
func openLog(root, name string, res Resources, red *redactor, book *logBook) (*agentLog, error) {
	res = res.withDefaults()
	dir := logsDir(root)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, ioError("create the agents' log folder", err)
	}
	keep := int64(res.LogsMaxTotal)
	if keep > 0 && res.LogMaxSize > 0 {
		keep = max(keep-int64(res.LogMaxSize), 0) // room for the log about to be written
	}
	if maxAge, now := time.Duration(res.LogsMaxAge), time.Now(); book.due(keep, maxAge, now) {
		book.pruned(pruneLogs(dir, maxAge, keep, now))
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, ioError("create the agent's log", err)
	}
	_ = f.Chmod(0o600) // a log of the same name from an older ralph was 0644
	l := &agentLog{f: f, book: book}
	var w io.Writer = f
	if res.LogMaxSize > 0 {
		head := int64(res.LogMaxSize) * 3 / 4
		l.capped = &cappedLog{f: f, head: head, tail: int64(res.LogMaxSize) - head}
		w = l.capped
	}
	l.redact = &redactWriter{w: w, r: red}
	return l, nil
}

// Close writes what the redactor holds and the cap's marker, and closes
// the file.
func (l *agentLog) Close() error {
	err := l.redact.Close()
	if l.capped != nil {
		err = errors.Join(err, l.capped.finish())
	}
	if fi, serr := l.f.Stat(); serr == nil {
		l.book.add(fi.Size(), fi.ModTime())
	}
	err = errors.Join(err, l.f.Close())
	if err != nil {
		l.fail(err)
	}
	return err
}

// cappedLog writes a log of at most about head+2*tail bytes however much
// goes through it: the first head bytes, then a marker line saying how
// much was cut, then about the last tail bytes (between tail and 2*tail).
// The tail is kept in the file, not in memory: once the file holds more
// than 2*tail after the head, its last tail bytes are moved up behind the
// head and the file is truncated there.
type cappedLog struct {
	f          *os.File
	head, tail int64
	size       int64 // the file's size
	received   int64 // bytes written through the log
	// tailAt is where the kept tail starts, after the head and the room
	// for the marker; 0 until something was cut.
	tailAt int64
	err    error
}

// markerRoom is the room kept for the marker line.
const markerRoom = 160

func (c *cappedLog) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.f.WriteAt(p, c.size)
	c.size += int64(n)
	c.received += int64(n)
	if err != nil {
		c.err = err
		return n, err
	}
	start := c.tailAt
	if start == 0 {
		start = c.head + markerRoom
	}
	if c.size > start+2*c.tail {
		c.err = c.compact(start)
	}
	return n, c.err
}

// compact moves the file's last tail bytes to start and truncates it there.
func (c *cappedLog) compact(start int64) error {
	from := c.size - c.tail
	if _, err := io.Copy(io.NewOffsetWriter(c.f, start), io.NewSectionReader(c.f, from, c.tail)); err != nil {
		return err
	}
	c.tailAt, c.size = start, start+c.tail
	return c.f.Truncate(c.size)
}

// finish writes the marker into its room, once something was cut.
func (c *cappedLog) finish() error {
	if c.tailAt == 0 || c.err != nil {
		return c.err
	}
	cut := c.received - c.head - (c.size - c.tailAt)
	m := fmt.Sprintf("\n[ralph: %d bytes of the agent's output cut here; the log keeps its first %d and its last %d bytes]",
		cut, c.head, c.size-c.tailAt)
	if len(m)+1 > markerRoom {
		m = m[:markerRoom-1]
	}
	m += strings.Repeat(" ", markerRoom-1-len(m)) + "\n"
	_, err := c.f.WriteAt([]byte(m), c.head)
	return err
}

// pruneLogs removes the logs in dir older than maxAge, then the oldest
// until the rest hold at most maxTotal bytes (a negative bound is off).
// Ages are file times, so they go by the system's clock. What cannot be
// removed stays; pruning never stops a run. It returns the bytes the logs
// left hold and the oldest one's time (zero when none is left).
func pruneLogs(dir string, maxAge time.Duration, maxTotal int64, now time.Time) (total int64, oldest time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, time.Time{}
	}
	type logFile struct {
		path string
		size int64
		mod  time.Time
	}
	var logs []logFile
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		logs = append(logs, logFile{filepath.Join(dir, e.Name()), fi.Size(), fi.ModTime()})
	}
	slices.SortFunc(logs, func(a, b logFile) int { return cmp.Or(a.mod.Compare(b.mod), cmp.Compare(a.path, b.path)) })
	for _, l := range logs {
		total += l.size
	}
	for _, l := range logs {
		old := maxAge > 0 && now.Sub(l.mod) > maxAge
		if !old && (maxTotal < 0 || total <= maxTotal) {
			oldest = keepOldest(oldest, l.mod)
			continue
		}
		if err := os.Remove(l.path); err == nil || errors.Is(err, fs.ErrNotExist) {
			total -= l.size
			continue
		}
		oldest = keepOldest(oldest, l.mod)
	}
	return total, oldest
}

// keepOldest is the earlier of a time kept so far (zero: none) and t.
func keepOldest(kept, t time.Time) time.Time {
	if kept.IsZero() || t.Before(kept) {
		return t
	}
	return kept
}

// logAhead is an agent's log opened while its iteration builds the
// prompt: creating a file waits on the file system's journal behind the
// iteration's own flushes (a few tenths of a millisecond on ext4), a wait
// the prompt's work covers.
type logAhead struct {
	done  chan struct{}
	log   *agentLog
	err   error
	taken bool
}

// openLogAhead starts openLog; take gives its result.
func openLogAhead(root, name string, res Resources, red *redactor, book *logBook) *logAhead {
	a := &logAhead{done: make(chan struct{})}
	go func() {
		defer close(a.done)
		a.log, a.err = openLog(root, name, res, red, book)
	}()
	return a
}

// take waits for the log and hands it over.
func (a *logAhead) take() (*agentLog, error) {
	<-a.done
	a.taken = true
	return a.log, a.err
}

// discard removes the log of an agent that did not start; a log taken is
// its agent run's to close.
func (a *logAhead) discard() {
	if a == nil || a.taken {
		return
	}
	<-a.done
	if a.log != nil {
		_ = a.log.f.Close()
		_ = os.Remove(a.log.f.Name())
	}
}
