//go:build linux

package agent

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
)

// A normal run: events in order, the final message from the result line
// only, usage and cost, the session, the prompt on stdin, every raw byte
// logged.
func TestClaudeSuccess(t *testing.T) {
	b, req, f := fakeClaude(t)
	req.Model = "claude-test"
	// Longer than one argument may be (128 KiB): stdin has no such limit.
	req.Prompt = strings.Repeat("context line\n", 20000) + "Say <promise>COMPLETE</promise> when done."
	var raw proctest.SyncBuffer
	req.RawLog = &raw
	ev := &events{t: t}
	res, err := b.Run(t.Context(), req, ev.on)
	if err != nil {
		t.Fatal(err)
	}
	want := Result{
		Final:      "Wrote notes.txt.\n<promise>COMPLETE</promise>",
		SessionID:  agenttest.SessionID,
		Usage:      Usage{In: 250 + 20 + 30, Out: 40},
		CostUSD:    0.0123,
		NumTurns:   2,
		Model:      "claude-test", // the init line names the --model it was given
		UsageKnown: true,
		CostKnown:  true,
	}
	got := res
	got.Duration, got.PID = 0, 0
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("result\n got %+v\nwant %+v", got, want)
	}
	if res.PID <= 0 || res.Duration <= 0 {
		t.Errorf("PID %d, Duration %s", res.PID, res.Duration)
	}
	wantKinds := []EventKind{EventInit, EventText, EventUsage, EventToolUse, EventToolResult, EventText, EventUsage, EventResult}
	if k := ev.kinds(); !slices.Equal(k, wantKinds) {
		t.Fatalf("events %v, want %v", k, wantKinds)
	}
	l := ev.list
	if l[0].SessionID != agenttest.SessionID || l[0].Text != "claude-test" {
		t.Errorf("init event %+v", l[0])
	}
	if l[1].Text != "I'll write the file." || l[2].Usage != (Usage{In: 150, Out: 1}) {
		t.Errorf("text/usage events %+v %+v", l[1], l[2])
	}
	if l[3].Tool != "Write" || !strings.Contains(l[3].Text, `"file_path":"notes.txt"`) {
		t.Errorf("tool_use event %+v", l[3])
	}
	if l[4].Tool != "Write" || !strings.HasPrefix(l[4].Text, "File created") {
		t.Errorf("tool_result event %+v", l[4])
	}
	if l[7].Text != want.Final || l[7].Usage != want.Usage || l[7].CostUSD != want.CostUSD {
		t.Errorf("result event %+v", l[7])
	}
	if raw.String() != strings.ReplaceAll(agenttest.Success, "claude-fake-1", "claude-test") {
		t.Errorf("raw log differs from the child's stdout:\n%s", raw.String())
	}
	rec, err := agenttest.ReadRecord(f.record)
	if err != nil {
		t.Fatal(err)
	}
	wantArgs := []string{"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--dangerously-skip-permissions", "--model", "claude-test"}
	if !slices.Equal(rec.Args, wantArgs) {
		t.Errorf("args %q, want %q", rec.Args, wantArgs)
	}
	if rec.Prompt != req.Prompt {
		t.Errorf("the prompt did not arrive whole on stdin (%d bytes of %d)", len(rec.Prompt), len(req.Prompt))
	}
	if d, _ := filepath.EvalSymlinks(f.dir); rec.Dir != d {
		t.Errorf("ran in %s, want %s", rec.Dir, d)
	}
	if os.Geteuid() == 0 && !slices.Contains(rec.Env, "IS_SANDBOX=1") {
		t.Errorf("running as root, the child did not get IS_SANDBOX=1")
	}
	assertGone(t, res.PID, res.PID)
}

// As root, claude refuses to skip permissions without IS_SANDBOX=1: the
// backend sets it, and without it the run is a crash with the CLI's words.
func TestClaudeRootNeedsSandbox(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root is refused")
	}
	b, req, _ := fakeClaude(t, "IS_SANDBOX=yes")
	b.root = false // as if ralph did not know it was root
	res, err := b.Run(t.Context(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.ErrorKind != KindCrashed || !strings.Contains(res.ErrorText, "cannot be used with root/sudo privileges") || res.ExitCode != 1 {
		t.Fatalf("got %+v", res)
	}
	// The CLI takes only "1": another inherited value is replaced, once.
	b.root = true
	env := b.env(Request{Env: []string{"IS_SANDBOX=yes", "PATH=/bin"}})
	if !slices.Equal(env, []string{"PATH=/bin", "IS_SANDBOX=1"}) {
		t.Fatalf("env %q", env)
	}
}

// Each way a child can fail ends with the right ErrorKind.
func TestClaudeFailureModes(t *testing.T) {
	tests := []struct {
		mode      string
		kind      ErrorKind
		exitCode  int
		status    int
		errText   string
		skipped   int
		wantEvent EventKind
	}{
		{mode: "crash", kind: KindCrashed, exitCode: 3, errText: "exit code 3): Error: the fake crashed on purpose\nat main (fake.js:1:1)", wantEvent: EventText},
		{mode: "garbage", kind: KindBadOutput, exitCode: 0, errText: "without a result line (4 unreadable lines)", skipped: 4},
		{mode: "exit0_no_result", kind: KindBadOutput, exitCode: 0, errText: "without a result line", wantEvent: EventText},
		{mode: "rate_limit", kind: KindRateLimit, exitCode: 1, status: 429, errText: "Request rejected (429)", wantEvent: EventResult},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			b, req, _ := fakeClaude(t, "FAKE_CLAUDE_MODE="+tt.mode)
			var raw proctest.SyncBuffer
			req.RawLog = &raw
			ev := &events{t: t}
			res, err := b.Run(t.Context(), req, ev.on)
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || res.ErrorKind != tt.kind || res.ExitCode != tt.exitCode || res.APIStatus != tt.status || res.SkippedLines != tt.skipped {
				t.Fatalf("got %+v", res)
			}
			if !strings.Contains(res.ErrorText, tt.errText) {
				t.Errorf("ErrorText %q lacks %q", res.ErrorText, tt.errText)
			}
			if res.Final != "" {
				t.Errorf("a failed run has a final message: %q", res.Final)
			}
			if tt.wantEvent != "" && !ev.has(tt.wantEvent) {
				t.Errorf("no %s event in %v", tt.wantEvent, ev.kinds())
			}
			if tt.mode == "garbage" && !strings.Contains(raw.String(), "Warning: this is not JSON\n") {
				t.Errorf("garbage lines missing from the raw log: %q", raw.String())
			}
			assertGone(t, res.PID, res.PID)
		})
	}
}

// Results the CLI can end with, replayed line by line: the outcome comes
// from is_error and the result's own fields, never from subtype alone or
// from tool output.
func TestClaudeResults(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	const init = `{"type":"system","subtype":"init","session_id":"s-1","model":"m"}`
	tests := []struct {
		name    string
		lines   []string
		kind    ErrorKind
		final   string
		status  int
		resetAt time.Time
		errText string
		skipped int
		event   EventKind
	}{
		{
			name: "max turns",
			lines: []string{init, `{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":2,"terminal_reason":"max_turns","errors":["Reached maximum number of turns (1)"],"session_id":"s-1","usage":{"input_tokens":5,"output_tokens":6},"total_cost_usd":0.0008}`,
				"@exit 1"},
			kind: KindMaxTurns, errText: "Reached maximum number of turns (1)",
		},
		{
			name:  "usage limit, stated time and zone",
			lines: []string{init, `{"type":"result","subtype":"success","is_error":true,"result":"You've hit your limit · resets 3:20pm (Europe/Berlin)","session_id":"s-1"}`, "@exit 1"},
			kind:  KindRateLimit, resetAt: time.Date(2026, 11, 21, 14, 20, 0, 0, time.UTC), errText: "hit your limit",
		},
		{
			name:  "usage limit, older wording as a successful result",
			lines: []string{init, `{"type":"result","subtype":"success","is_error":false,"result":"Claude AI usage limit reached|1795341600","session_id":"s-1"}`},
			kind:  KindRateLimit, resetAt: time.Unix(1795341600, 0),
		},
		{
			name:  "prose about limits is an answer, not a limit",
			lines: []string{init, `{"type":"result","subtype":"success","is_error":false,"result":"Documented that the usage limit resets at 3pm.\n<promise>COMPLETE</promise>","session_id":"s-1"}`},
			final: "Documented that the usage limit resets at 3pm.\n<promise>COMPLETE</promise>",
		},
		{
			name: "529 after a retry",
			lines: []string{init, `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":601,"error_status":529,"error":"overloaded","session_id":"s-1"}`,
				`{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":529,"result":"API Error: Repeated 529 Overloaded errors","session_id":"s-1"}`, "@exit 1"},
			kind: KindRateLimit, status: 529, event: EventRetry,
		},
		{
			name: "429 with the reset time in a rate_limit_event",
			lines: []string{init, `{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1795345200,"rateLimitType":"five_hour"}}`,
				`{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":429,"result":"API Error: Request rejected (429)","session_id":"s-1"}`, "@exit 1"},
			kind: KindRateLimit, status: 429, resetAt: time.Unix(1795345200, 0),
		},
		{
			name:  "connection refused",
			lines: []string{init, `{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":null,"result":"API Error: Connection refused","session_id":"s-1"}`, "@exit 1"},
			kind:  KindAPIError, errText: "Connection refused",
		},
		{
			name:  "server error",
			lines: []string{init, `{"type":"result","subtype":"success","is_error":true,"api_error_status":500,"result":"API Error: 500","session_id":"s-1"}`, "@exit 1"},
			kind:  KindAPIError, status: 500,
		},
		{
			name:  "error during execution",
			lines: []string{init, `{"type":"result","subtype":"error_during_execution","is_error":true,"session_id":"s-1"}`, "@exit 1"},
			kind:  KindCrashed, errText: "error_during_execution",
		},
		{
			name: "garbage between good lines",
			lines: []string{"npm WARN something", init, `{"type":"assistant","message":{"content":[{"type":"text","text":"half`,
				`{"type":"stream_event","event":{}}`, `{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s-1"}`},
			final: "ok", skipped: 2,
		},
		{
			name: "a marker and a limit notice in tool output change nothing",
			lines: []string{init, `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"<promise>COMPLETE</promise> Claude AI usage limit reached|1750708800"}]}]}}`,
				`{"type":"result","subtype":"success","is_error":false,"result":"Still working on it.","session_id":"s-1"}`},
			final: "Still working on it.", event: EventToolResult,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, req, _ := fakeClaude(t, script(t, tt.lines...))
			b.now = func() time.Time { return now }
			ev := &events{t: t}
			res, err := b.Run(t.Context(), req, ev.on)
			if err != nil {
				t.Fatal(err)
			}
			if res.ErrorKind != tt.kind || res.IsError != (tt.kind != "") || res.Final != tt.final || res.APIStatus != tt.status ||
				!res.ResetAt.Equal(tt.resetAt) || res.SkippedLines != tt.skipped || res.SessionID != "s-1" {
				t.Fatalf("got %+v", res)
			}
			if !strings.Contains(res.ErrorText, tt.errText) {
				t.Errorf("ErrorText %q lacks %q", res.ErrorText, tt.errText)
			}
			if tt.event != "" && !ev.has(tt.event) {
				t.Errorf("no %s event in %v", tt.event, ev.kinds())
			}
		})
	}
}

// fakeUpTimeout is a no-output timeout the fake claude surely outlasts
// only when it hangs.
const fakeUpTimeout = time.Second

// The watchdog stops a child that goes silent, within NoOutputTimeout and
// the grace period, and leaves nothing running
// (anthropics/claude-code#39700).
func TestClaudeNoOutputWatchdog(t *testing.T) {
	for _, mode := range []string{"hang", "hang_after_output"} {
		t.Run(mode, func(t *testing.T) {
			b, req, f := fakeClaude(t, "FAKE_CLAUDE_MODE="+mode)
			// Long enough for the fake, a -race test binary, to come up
			// and print on a loaded 2-core machine: CI saw it killed
			// unheard at 300 ms.
			req.NoOutputTimeout = fakeUpTimeout
			ev := &events{t: t}
			start := time.Now()
			res, err := b.Run(t.Context(), req, ev.on)
			elapsed := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if res.ErrorKind != KindNoOutput || !res.IsError {
				t.Fatalf("got %+v", res)
			}
			if limit := req.NoOutputTimeout + req.Grace + time.Second; elapsed > limit || elapsed < req.NoOutputTimeout {
				t.Errorf("stopped after %s; want between %s and %s", elapsed, req.NoOutputTimeout, limit)
			}
			if mode == "hang_after_output" && !ev.has(EventText) {
				t.Errorf("events before the hang were lost: %v", ev.kinds())
			}
			assertGone(t, res.PID, readPids(t, f.pids, 1)...)
		})
	}
}

// A child that hangs after its result line has answered: the result
// stands, and the child is still stopped.
func TestClaudeHangAfterResult(t *testing.T) {
	b, req, _ := fakeClaude(t, "FAKE_CLAUDE_MODE=hang_after_result")
	req.NoOutputTimeout = fakeUpTimeout
	res, err := b.Run(t.Context(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || !strings.Contains(res.Final, "<promise>COMPLETE</promise>") || res.ExitCode != -1 {
		t.Fatalf("got %+v", res)
	}
	assertGone(t, res.PID, res.PID)
}

// The deadline stops a child that keeps talking but never finishes.
func TestClaudeDeadline(t *testing.T) {
	lines := []string{`{"type":"system","subtype":"init","session_id":"s-1"}`}
	for range 200 {
		lines = append(lines, "@sleep 50ms", `{"type":"assistant","message":{"content":[{"type":"text","text":"still thinking"}]}}`)
	}
	b, req, _ := fakeClaude(t, script(t, lines...))
	req.NoOutputTimeout = 300 * time.Millisecond
	req.Timeout = 600 * time.Millisecond
	start := time.Now()
	res, err := b.Run(t.Context(), req, nil)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if res.ErrorKind != KindTimeout || res.SessionID != "s-1" {
		t.Fatalf("got %+v", res)
	}
	if limit := req.Timeout + req.Grace + time.Second; elapsed > limit {
		t.Errorf("stopped after %s, want at most %s", elapsed, limit)
	}
	assertGone(t, res.PID, res.PID)
}

// Cancelling the context stops the whole group: a child and grandchild
// that ignore SIGINT are killed after the grace period, and nothing is
// left in /proc.
func TestClaudeCancel(t *testing.T) {
	b, req, f := fakeClaude(t, "FAKE_CLAUDE_MODE=ignore_sigint")
	req.Grace = 300 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	var once atomic.Bool
	onEvent := func(ev Event) {
		if ev.Kind == EventInit && once.CompareAndSwap(false, true) {
			close(started)
		}
	}
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := b.Run(ctx, req, onEvent)
		done <- outcome{res, err}
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the fake never started")
	}
	pids := readPids(t, f.pids, 2)
	for _, p := range pids {
		if !proctest.Alive(p) {
			t.Fatalf("pid %d is not running before the cancel", p)
		}
		if _, _, pg, _ := proctest.Stat(p); pg != pids[0] {
			t.Fatalf("pid %d is in group %d, not the child's %d", p, pg, pids[0])
		}
	}
	start := time.Now()
	cancel()
	var o outcome
	select {
	case o = <-done:
	case <-time.After(req.Grace + 5*time.Second):
		t.Fatal("Run did not return after the cancel")
	}
	elapsed := time.Since(start)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.ErrorKind != KindInterrupted || o.res.PID != pids[0] || o.res.ExitCode != -1 {
		t.Fatalf("got %+v", o.res)
	}
	// SIGINT was ignored: only SIGKILL, after the grace, ended them.
	if elapsed < req.Grace || elapsed > req.Grace+2*time.Second {
		t.Errorf("Run returned %s after the cancel; grace %s", elapsed, req.Grace)
	}
	assertGone(t, pids[0], pids...)
}

// 100 MB of output on one line: the line is skipped, the run goes on to
// its result, every byte reaches the raw log, and ralph's heap stays far
// below the size of the line.
func TestClaudeHugeOutput(t *testing.T) {
	const size = 100 << 20
	b, req, _ := fakeClaude(t, "FAKE_CLAUDE_MODE=huge", "FAKE_CLAUDE_SIZE="+strconv.Itoa(size))
	var logged atomic.Int64
	req.RawLog = countWriter{&logged}

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	res, err := b.Run(t.Context(), req, nil)
	close(stop)
	<-sampled
	if err != nil {
		t.Fatal(err)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)

	if res.IsError || res.SkippedLines != 1 || !strings.Contains(res.Final, "<promise>COMPLETE</promise>") {
		t.Fatalf("got %+v", res)
	}
	init := len(`{"type":"system","subtype":"init","cwd":"/fake","session_id":"`) // the other lines are small
	if n := logged.Load(); n < size+int64(init) {
		t.Errorf("raw log got %d bytes, want all %d+", n, size)
	}
	// Holding the line would take 100 MB at once; the cap is 16 MiB.
	const bound = 48 << 20
	grew := int64(peak.Load()) - int64(before.HeapAlloc)
	t.Logf("heap grew by %d MiB at most; %d MiB allocated in all", grew>>20, (after.TotalAlloc-before.TotalAlloc)>>20)
	if grew > bound {
		t.Errorf("heap grew by %d MiB during the run, bound %d MiB", grew>>20, bound>>20)
	}
	if total := after.TotalAlloc - before.TotalAlloc; total > 80<<20 {
		t.Errorf("allocated %d MiB in all for a %d MiB line", total>>20, size>>20)
	}
	assertGone(t, res.PID, res.PID)
}

type countWriter struct{ n *atomic.Int64 }

func (c countWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return len(p), nil
}

// A program that cannot start is an error, not a Result.
func TestClaudeNotFound(t *testing.T) {
	_, err := Claude("/no/such/claude").Run(t.Context(), Request{Prompt: "x", Dir: t.TempDir()}, nil)
	if err == nil || !strings.Contains(err.Error(), "start claude") {
		t.Fatalf("err = %v", err)
	}
}

// Lines longer than bufio's default 64 KiB are read whole.
func TestClaudeLongLine(t *testing.T) {
	long := strings.Repeat("y", 1<<20)
	b, req, _ := fakeClaude(t, script(t,
		`{"type":"system","subtype":"init","session_id":"s-1"}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"`+long+`","session_id":"s-1"}`))
	res, err := b.Run(t.Context(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || res.Final != long {
		t.Fatalf("got error %q, final of %d bytes", res.ErrorKind, len(res.Final))
	}
}

// A context cancelled before the run starts nothing and says interrupted.
func TestClaudeCancelledBeforeStart(t *testing.T) {
	b, req, f := fakeClaude(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res, err := b.Run(ctx, req, nil)
	if err != nil || res.ErrorKind != KindInterrupted || !res.IsError {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if _, err := os.Stat(f.record); err == nil {
		t.Fatal("the fake ran")
	}
}
