//go:build linux

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
)

// heldRun starts b's child for req with a Hold, and returns the hold and
// where Run's result arrives.
func heldRun(ctx context.Context, b Backend, req Request, ev *events) (*Hold, <-chan heldEnd) {
	hold := NewHold()
	req.Hold = hold
	// Not used with a Hold: what Give brings is.
	req.Prompt, req.RawLog, req.OnStart = "", nil, func(int) { ev.t.Error("the request's own OnStart was called") }
	ended := make(chan heldEnd, 1)
	go func() {
		res, err := b.Run(ctx, req, ev.on)
		ended <- heldEnd{res, err}
	}()
	return hold, ended
}

type heldEnd struct {
	res Result
	err error
}

// journalOf waits until the fake's journal has n "up" entries, and
// returns it.
func journalOf(t *testing.T, path string, n int) []agenttest.JournalEntry {
	t.Helper()
	j, err := agenttest.AwaitJournal(path, agenttest.JournalUp, n, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func moments(j []agenttest.JournalEntry) []agenttest.Moment {
	var m []agenttest.Moment
	for _, e := range j {
		m = append(m, e.Moment)
	}
	return m
}

// A held child runs, gets nothing on stdin and is not read until Give;
// then it gets the given prompt, its output goes to the given log, and
// OnStart is the given one.
func TestHoldGivesThePromptLater(t *testing.T) {
	journal := filepath.Join(t.TempDir(), "journal")
	b, req, f := fakeClaude(t, "FAKE_CLAUDE_JOURNAL="+journal)
	ev := &events{t: t}
	hold, ended := heldRun(t.Context(), b, req, ev)
	up := journalOf(t, journal, 1)
	// The fake reads its stdin right after it notes "up": had it been
	// given anything, it would have noted "prompt" within milliseconds.
	time.Sleep(300 * time.Millisecond)
	if j := journalOf(t, journal, 1); !slices.Equal(moments(j), []agenttest.Moment{agenttest.JournalUp}) {
		t.Fatalf("before Give, journal %v", moments(j))
	}
	if k := ev.kinds(); len(k) != 0 {
		t.Fatalf("events before Give: %v", k)
	}
	var raw proctest.SyncBuffer
	var started int
	prompt := "Do the task.\nWhen done, say <promise>COMPLETE</promise>."
	hold.Give(Given{Prompt: prompt, RawLog: &raw, OnStart: func(pid int) { started = pid }})
	hold.Give(Given{Prompt: "a second Give does not count"})
	e := <-ended
	if e.err != nil || e.res.IsError || e.res.Final == "" {
		t.Fatalf("result %+v, error %v", e.res, e.err)
	}
	j := journalOf(t, journal, 1)
	if !slices.Equal(moments(j), []agenttest.Moment{agenttest.JournalUp, agenttest.JournalPrompt}) || j[1].PID != up[0].PID {
		t.Fatalf("journal %+v", j)
	}
	if started != up[0].PID || e.res.PID != up[0].PID {
		t.Errorf("OnStart got pid %d, the result says %d, the child was %d", started, e.res.PID, up[0].PID)
	}
	var rec agenttest.Record
	data, err := os.ReadFile(f.record)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Prompt != prompt {
		t.Errorf("the child read %q", rec.Prompt)
	}
	if raw.String() == "" || !ev.has(EventResult) {
		t.Errorf("raw log %q, events %v", raw.String(), ev.kinds())
	}
}

// A held child let go before Give is killed at once, not stopped with the
// grace (an hour here, for a child that ignores SIGINT): it never read a
// byte, and is gone when Run returns.
func TestHoldLetGoKillsAtOnce(t *testing.T) {
	journal := filepath.Join(t.TempDir(), "journal")
	b, req, _ := fakeClaude(t, "FAKE_CLAUDE_JOURNAL="+journal, "FAKE_CLAUDE_DEAF=1")
	req.Grace = time.Hour
	ctx, cancel := context.WithCancelCause(t.Context())
	ev := &events{t: t}
	_, ended := heldRun(ctx, b, req, ev)
	up := journalOf(t, journal, 1)
	cancel(errors.New("not needed"))
	var e heldEnd
	select {
	case e = <-ended:
	case <-time.After(time.Minute):
		t.Fatal("the held child was not killed at once")
	}
	if e.err != nil || e.res.ErrorKind != KindInterrupted {
		t.Fatalf("result %+v, error %v", e.res, e.err)
	}
	if j := journalOf(t, journal, 1); len(j) != 1 {
		t.Errorf("journal %+v: the child read a prompt", j)
	}
	if err := syscall.Kill(up[0].PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the child %d is still there: %v", up[0].PID, err)
	}
}

// A held child's deadline and watchdog run from its prompt: held longer
// than both, it still has the whole of each once given.
func TestHoldTimesFromThePrompt(t *testing.T) {
	journal := filepath.Join(t.TempDir(), "journal")
	b, req, _ := fakeClaude(t, "FAKE_CLAUDE_JOURNAL="+journal,
		script(t, "@sleep 300ms", agenttest.Success))
	req.NoOutputTimeout, req.Timeout = time.Second, 5*time.Second
	ev := &events{t: t}
	hold, ended := heldRun(t.Context(), b, req, ev)
	journalOf(t, journal, 1)
	time.Sleep(6 * time.Second)
	hold.Give(Given{Prompt: "Do the task."})
	e := <-ended
	if e.err != nil || e.res.IsError || e.res.Final == "" {
		t.Fatalf("result %+v, error %v", e.res, e.err)
	}
	if e.res.Duration >= 5*time.Second {
		t.Errorf("Duration %s counts the hold", e.res.Duration)
	}
}
