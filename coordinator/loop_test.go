//go:build linux

package coordinator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/mdstate"
)

// fakeAgent is an instant in-process agent: each call's result comes from
// reply (default: COMPLETE with a little usage), and it keeps every prompt
// it was given.
type fakeAgent struct {
	mu      sync.Mutex
	prompts []string
	// before runs at the start of call n (1-based), before the reply.
	before func(n int)
	reply  func(n int) agent.Result
}

func (a *fakeAgent) Name() string { return "fake" }

func (a *fakeAgent) Run(ctx context.Context, req agent.Request, onEvent func(agent.Event)) (agent.Result, error) {
	a.mu.Lock()
	a.prompts = append(a.prompts, req.Prompt)
	n := len(a.prompts)
	a.mu.Unlock()
	if a.before != nil {
		a.before(n)
	}
	res := agent.Result{Final: "Done.\n<promise>COMPLETE</promise>", Usage: agent.Usage{In: 100, Out: 10}, CostUSD: 0.01}
	if a.reply != nil {
		res = a.reply(n)
	}
	if onEvent != nil {
		onEvent(agent.Event{Kind: agent.EventText, Text: "working"})
		onEvent(agent.Event{Kind: agent.EventResult, Usage: res.Usage, CostUSD: res.CostUSD, Text: res.Final})
	}
	return res, nil
}

func (a *fakeAgent) prompt(n int) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n > len(a.prompts) {
		return ""
	}
	return a.prompts[n-1]
}

func (a *fakeAgent) calls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.prompts)
}

// tasksMD is a tasks file of n independent pending tasks T1…Tn.
func tasksMD(n int) string {
	var b strings.Builder
	b.WriteString("# Tasks\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "- [ ] T%d: Task number %d\n", i, i)
	}
	return b.String()
}

func newCoordinator(t testing.TB, opts Options) *Coordinator {
	t.Helper()
	co := openCoordinator(t, opts)
	t.Cleanup(co.Close)
	return co
}

// openCoordinator is newCoordinator for a caller that closes it: a
// benchmark that makes one an op. (A Cleanup would keep every op's
// coordinator, with its project, alive to the benchmark's end: 12 runs on
// 10,000 tasks kept about 100 MB, which at GOGC=400 let the heap grow to
// 500 MB of memory never touched before, and every large allocation of
// the runs measured faulted its pages in.)
func openCoordinator(t testing.TB, opts Options) *Coordinator {
	t.Helper()
	if opts.Command == "" {
		opts.Command = "test"
	}
	co, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return co
}

// runAll runs co to its end and returns the outcome and every event.
func runAll(t testing.TB, ctx context.Context, co *Coordinator) (Outcome, []Event) {
	t.Helper()
	var evs []Event
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range co.Events() {
			evs = append(evs, e)
			if e.Kind == EventStopped {
				return
			}
		}
	}()
	out, err := co.Run(ctx)
	<-done
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out, evs
}

// loadState parses the tasks file and the progress log, failing on any
// error or warning, and returns the tasks, the session and the log.
func loadState(t testing.TB, dir string) (*mdstate.Checklist, *mdstate.Session, *mdstate.Log) {
	t.Helper()
	p := mdstate.Open(dir)
	tasks, err := p.LoadChecklist(mdstate.TasksKind)
	if err != nil {
		t.Fatalf("RALPH_TASKS.md: %v", err)
	}
	s, warns := tasks.Session()
	if len(tasks.Warnings)+len(warns) > 0 {
		t.Errorf("RALPH_TASKS.md warnings: %v %v", tasks.Warnings, warns)
	}
	if s == nil {
		t.Fatalf("RALPH_TASKS.md has no session block:\n%s", tasks.Source())
	}
	log, err := p.ReadProgress(1000)
	if err != nil {
		t.Fatalf("RALPH_PROGRESS.md: %v", err)
	}
	if len(log.Warnings) > 0 {
		t.Errorf("RALPH_PROGRESS.md warnings: %v", log.Warnings)
	}
	// Per-iteration entries only: a session's summary entry is tested on
	// its own (TestRunSessionSummary).
	var iters []mdstate.Entry
	for _, e := range log.Recent {
		if strings.HasPrefix(e.Title, "session ") {
			log.Entries--
			continue
		}
		iters = append(iters, e)
	}
	log.Recent = iters
	return tasks, s, log
}

// TestRunSessionSummary: a clean finish writes one summary entry with the
// session's totals; a pause does not (the session goes on later).
func TestRunSessionSummary(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
	fa := &fakeAgent{reply: func(int) agent.Result {
		return agent.Result{Final: "<promise>COMPLETE</promise>", Usage: agent.Usage{In: 100, Out: 10}, CostUSD: 0.5}
	}}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	runAll(t, t.Context(), co)
	lg, err := mdstate.Open(dir).ReadProgress(1)
	if err != nil {
		t.Fatal(err)
	}
	e := lg.Recent[0]
	if !strings.HasPrefix(e.Title, "session ") || !strings.HasSuffix(e.Title, " ended") || e.Get("outcome") != "ended (all_done)" ||
		e.Get("iterations") != "2" || e.Get("tasks") != "2 done" || e.Get("tokens") != "200 in, 20 out" ||
		e.Get("cost") != "$1.0000" || e.Get("commits") != "0" {
		t.Fatalf("summary entry %+v", e)
	}
}

func status(t testing.TB, tasks *mdstate.Checklist, id string) mdstate.Status {
	t.Helper()
	it := tasks.Find(id)
	if it == nil {
		t.Fatalf("no task %s", id)
	}
	return it.Status
}

// TestRunEventsInOrder: the events a front end sees for a two-task run,
// streaming detail left out.
func TestRunEventsInOrder(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}})
	out, evs := runAll(t, t.Context(), co)
	if out.Reason != StopAllDone || out.Iterations != 2 || out.TasksDone != 2 {
		t.Fatalf("outcome %+v", out)
	}
	var got []string
	for _, e := range evs {
		switch e.Kind {
		case EventAgentText, EventToolUse, EventUsage:
			continue
		case EventStateWritten:
			got = append(got, string(e.Kind)+" "+e.File)
		case EventStopped:
			got = append(got, string(e.Kind)+" "+e.Reason)
		default:
			got = append(got, string(e.Kind)+" "+e.Task)
		}
	}
	// The session's first write begins T1 (ahead.go); T1's outcome is
	// saved in the write that begins T2, and its entry appended beside
	// T2's agent, said once that agent is over; T2's write begins
	// nothing, as no task is left, and its entry goes in at once.
	want := []string{"state_written RALPH_TASKS.md", "task_started T1",
		"state_written RALPH_TASKS.md", "iteration_done T1", "task_started T2",
		"state_written RALPH_PROGRESS.md",
		"state_written RALPH_TASKS.md", "state_written RALPH_PROGRESS.md", "iteration_done T2"}
	// Ending: the summary entry, then the session ended.
	want = append(want, "state_written RALPH_PROGRESS.md", "state_written RALPH_TASKS.md", "stopped all_done")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	pos := 0
	for _, e := range evs {
		if e.Kind == EventIterationDone && (e.Outcome != "done" || e.TokensIn != 100 || e.TokensOut != 10 || e.CostUSD != 0.01) {
			t.Errorf("iteration_done %+v", e)
		}
		if e.Kind == EventTaskStarted {
			// "task 1 of 2", "task 2 of 2", the second begun ahead too.
			if pos++; e.Position != pos || e.Total != 2 || e.Iteration != pos {
				t.Errorf("task_started %+v, want position %d of 2", e, pos)
			}
		}
	}
}

// TestRunSessionCountersAreSums: before every iteration and at the end the
// files parse, and the session's counters are the sums of what the agent
// reported, as are the progress entries.
func TestRunSessionCountersAreSums(t *testing.T) {
	const n = 4
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(n)})
	usage := func(k int) (int64, int64, float64) { return int64(1000 * k), int64(7 * k), 0.125 * float64(k) }
	sums := func(upTo int) (in, out int64, cost float64) {
		for k := 1; k <= upTo; k++ {
			i, o, c := usage(k)
			in, out, cost = in+i, out+o, cost+c
		}
		return
	}
	check := func(iterations, entries int, inflight string) {
		t.Helper()
		tasks, s, log := loadState(t, dir)
		in, out, cost := sums(entries)
		if s.Iteration != iterations || s.TokensIn != in || s.TokensOut != out || math.Abs(s.CostUSD-cost) > 1e-9 {
			t.Errorf("after %d entries: session iteration %d, tokens %d/%d, cost %v; want %d, %d/%d, %v",
				entries, s.Iteration, s.TokensIn, s.TokensOut, s.CostUSD, iterations, in, out, cost)
		}
		// While an agent works, the last iteration's entry may still be
		// on its way (appended beside the agent's start, ahead.go): then
		// the session names that iteration's result, so that recovery
		// would write the entry. Every iteration is in one or the other.
		named := func(r *mdstate.IterationResult) bool {
			return inflight != "" && r != nil && r.Task == fmt.Sprintf("T%d", entries) && r.Iteration == entries
		}
		if log.Entries != entries && (log.Entries != entries-1 || !named(s.Result)) {
			t.Errorf("%d progress entries, want %d (or %d and the session naming the last result: %+v)", log.Entries, entries, entries-1, s.Result)
		}
		switch r := s.Result; {
		case r == nil:
		case named(r):
			// The write that saved the last iteration's result began
			// this one (ahead.go): the result names its iteration, and
			// the next write drops it.
		default:
			// Once an iteration's entry is written, the next write of
			// the session drops its result.
			t.Errorf("after %d entries: the session still has a result: %+v", entries, s.Result)
		}
		if inflight != "" && (status(t, tasks, inflight) != mdstate.InProgress || s.Task != inflight || s.Status != "running") {
			t.Errorf("during %s: status %v, session %+v", inflight, status(t, tasks, inflight), s)
		}
	}
	fa := &fakeAgent{reply: func(k int) agent.Result {
		in, out, cost := usage(k)
		return agent.Result{Final: "<promise>COMPLETE</promise>", Usage: agent.Usage{In: in, Out: out}, CostUSD: cost}
	}}
	fa.before = func(k int) { check(k, k-1, fmt.Sprintf("T%d", k)) }
	co := newCoordinator(t, Options{Root: dir, Agent: fa, Model: "m1"})
	out, _ := runAll(t, t.Context(), co)
	if out.Reason != StopAllDone || out.TasksDone != n {
		t.Fatalf("outcome %+v", out)
	}
	check(n, n, "")
	_, s, log := loadState(t, dir)
	if s.Status != "ended" || s.Reason != "all_done" || s.Agent != "fake" || s.Model != "m1" {
		t.Errorf("session %+v", s)
	}
	for k, e := range log.Recent {
		in, out, cost := usage(k + 1)
		if e.Get("tokens") != fmt.Sprintf("%d in, %d out", in, out) || e.Get("cost") != fmt.Sprintf("$%.4f", cost) ||
			e.Get("outcome") != "done" || e.Get("agent") != "fake (m1)" {
			t.Errorf("entry %d: %+v", k+1, e)
		}
	}
}

// TestRunPause: Pause during an iteration lets it finish, then stops with
// StopPaused and a paused session.
func TestRunPause(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(3)})
	fa := &fakeAgent{}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	fa.before = func(int) { co.Pause() }
	out, _ := runAll(t, t.Context(), co)
	if out.Reason != StopPaused || out.Iterations != 1 || out.TasksDone != 1 || fa.calls() != 1 {
		t.Fatalf("outcome %+v, %d calls", out, fa.calls())
	}
	tasks, s, _ := loadState(t, dir)
	if s.Status != "paused" || s.Reason != "paused" || s.Phase != "" {
		t.Errorf("session %+v", s)
	}
	if status(t, tasks, "T1") != mdstate.Done || status(t, tasks, "T2") != mdstate.Pending {
		t.Errorf("tasks:\n%s", tasks.Source())
	}
}

// TestRunQueue: queued guidance goes into the next prompt only.
func TestRunQueue(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(3)})
	fa := &fakeAgent{}
	co := newCoordinator(t, Options{Root: dir, Agent: fa})
	if err := co.Queue(Guidance{Text: "Use tabs,\n  not spaces"}); err != nil {
		t.Fatal(err)
	}
	fa.before = func(n int) {
		if n == 2 {
			if err := co.Queue(Guidance{Text: "Keep the API stable"}); err != nil {
				t.Error(err)
			}
		}
	}
	runAll(t, t.Context(), co)
	if fa.calls() != 3 {
		t.Fatalf("%d calls, want 3", fa.calls())
	}
	const heading = "## Guidance from the user"
	p1, p2, p3 := fa.prompt(1), fa.prompt(2), fa.prompt(3)
	if !strings.Contains(p1, heading+"\n\n- Use tabs, not spaces\n") {
		t.Errorf("prompt 1 lacks the guidance:\n%s", p1)
	}
	if strings.Contains(p2, heading) || strings.Contains(p2, "tabs") {
		t.Errorf("prompt 2 repeats the guidance:\n%s", p2)
	}
	if !strings.Contains(p3, heading+"\n\n- Keep the API stable\n") || strings.Contains(p3, "tabs") {
		t.Errorf("prompt 3 guidance wrong:\n%s", p3)
	}
	for i, p := range []string{p1, p2, p3} {
		if !strings.HasSuffix(p, Protocol) || !strings.Contains(p, fmt.Sprintf("## Current task\n\nT%d: ", i+1)) {
			t.Errorf("prompt %d is not the task's context and the protocol:\n%s", i+1, p)
		}
	}
}

// fakeClock is a clock the agent moves forward.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

func (c *fakeClock) add(d time.Duration) { c.ns.Add(int64(d)) }

func TestRunLimits(t *testing.T) {
	cases := []struct {
		name       string
		opts       Options
		iterations int
		detail     string
	}{
		{"max iterations", Options{MaxIterations: 2}, 2, "reached the iteration limit (2 of 2)"},
		// 0.1 a call: 0.2 is under the limit, 0.3 passes it.
		{"max cost", Options{MaxCost: 0.25}, 3, "reached --max-cost $0.25 (spent $0.3000)"},
		// A minute a call: 2m is under the limit, 3m reaches it.
		{"max time", Options{MaxTime: 150 * time.Second}, 3, "reached --max-time 2m30s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(5)})
			clock := &fakeClock{}
			clock.ns.Store(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC).UnixNano())
			fa := &fakeAgent{reply: func(int) agent.Result {
				clock.add(time.Minute)
				return agent.Result{Final: "<promise>COMPLETE</promise>", Usage: agent.Usage{In: 1, Out: 1}, CostUSD: 0.1}
			}}
			opts := tc.opts
			opts.Root, opts.Agent, opts.Now = dir, fa, clock.now
			co := newCoordinator(t, opts)
			out, evs := runAll(t, t.Context(), co)
			if out.Reason != StopLimit || out.Iterations != tc.iterations || out.Detail != tc.detail || fa.calls() != tc.iterations {
				t.Fatalf("outcome %+v after %d calls; want limit after %d: %q", out, fa.calls(), tc.iterations, tc.detail)
			}
			if last := evs[len(evs)-1]; last.Kind != EventStopped || last.Reason != string(StopLimit) || last.Text != tc.detail {
				t.Errorf("last event %+v", last)
			}
			tasks, s, _ := loadState(t, dir)
			if s.Status != "ended" || s.Reason != "limit" || s.Iteration != tc.iterations {
				t.Errorf("session %+v", s)
			}
			if status(t, tasks, fmt.Sprintf("T%d", tc.iterations+1)) != mdstate.Pending {
				t.Errorf("tasks:\n%s", tasks.Source())
			}
		})
	}
}

func TestRunTaskID(t *testing.T) {
	const tasks = "# Tasks\n\n- [ ] T1: First\n- [ ] T2: Second\n  - after: T1\n- [x] T3: Third\n"
	cases := []struct {
		id     string
		reason StopReason
		detail string
		calls  int
	}{
		// --task runs the task it names, whatever it waits for.
		{"T2", StopAllDone, "ran T2", 1},
		{"T3", StopAllDone, "nothing to do, T3 is already done", 0},
		{"T9", StopNoneReady, "no task T9 in RALPH_TASKS.md", 0},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasks})
			fa := &fakeAgent{}
			co := newCoordinator(t, Options{Root: dir, Agent: fa, TaskID: tc.id})
			out, _ := runAll(t, t.Context(), co)
			if out.Reason != tc.reason || out.Detail != tc.detail || fa.calls() != tc.calls {
				t.Fatalf("outcome %+v after %d calls; want %s %q after %d", out, fa.calls(), tc.reason, tc.detail, tc.calls)
			}
			if tc.calls == 1 && !strings.Contains(fa.prompt(1), "## Current task\n\nT2: Second") {
				t.Errorf("prompt:\n%s", fa.prompt(1))
			}
			if tc.calls == 0 {
				// Nothing to do: no session opened, nothing written.
				if data, _ := os.ReadFile(filepath.Join(dir, "RALPH_TASKS.md")); string(data) != tasks {
					t.Fatalf("RALPH_TASKS.md changed:\n%s", data)
				}
				return
			}
			cl, _, _ := loadState(t, dir)
			want := map[string]mdstate.Status{"T1": mdstate.Pending, "T2": mdstate.Pending, "T3": mdstate.Done}
			if tc.id == "T2" {
				want["T2"] = mdstate.Done
			}
			for id, st := range want {
				if got := status(t, cl, id); got != st {
					t.Errorf("%s is %v, want %v", id, got, st)
				}
			}
		})
	}
}

// TestNewLocked: New refuses with *ErrLocked while another process holds
// the project, and writes nothing.
func TestNewLocked(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	holder := startHolder(t, dir)
	before, _ := os.ReadFile(filepath.Join(dir, "RALPH_TASKS.md"))
	co, err := New(Options{Root: dir, Agent: &fakeAgent{}, Command: "ralph run"})
	var locked *ErrLocked
	if !errors.As(err, &locked) {
		if co != nil {
			co.Close()
		}
		t.Fatalf("New while locked: %v, want *ErrLocked", err)
	}
	if locked.Holder.PID != holder.Pid() {
		t.Errorf("holder %+v, want pid %d", locked.Holder, holder.Pid())
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "RALPH_TASKS.md")); string(after) != string(before) {
		t.Errorf("RALPH_TASKS.md changed:\n%s", after)
	}
}

// TestRunFailuresAreAttempts: an agent error or a missing marker is a
// failed attempt with a note; the task stays pending.
func TestRunFailuresAreAttempts(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	results := []agent.Result{
		{Final: "I think it works.", ExitCode: 0},
		// A rate limit that resets at once: waited for, not an attempt.
		{IsError: true, ErrorKind: agent.KindRateLimit, APIStatus: 429, ErrorText: "API Error: Request rejected (429)", ResetAt: time.Now().Add(500 * time.Millisecond)},
		{IsError: true, ErrorKind: agent.KindCrashed, ExitCode: 3, ErrorText: "boom"},
	}
	fa := &fakeAgent{reply: func(n int) agent.Result { return results[n-1] }}
	co := newCoordinator(t, Options{Root: dir, Agent: fa, MaxIterations: 3, MaxAttempts: 10})
	out, _ := runAll(t, t.Context(), co)
	if out.Reason != StopLimit || out.Iterations != 3 {
		t.Fatalf("outcome %+v", out)
	}
	tasks, _, log := loadState(t, dir)
	it := tasks.Find("T1")
	want := []string{
		"the agent ended without <promise>COMPLETE</promise> (exit code 0 is not completion)",
		"usage or rate limit (HTTP 429): API Error: Request rejected (429); waiting until " + results[1].ResetAt.UTC().Format(time.RFC3339),
		"the agent crashed (exit code 3): boom",
	}
	if it.Status != mdstate.Pending || it.Attempts != 2 || strings.Join(it.Notes, "\n") != strings.Join(want, "\n") {
		t.Errorf("T1: %v, %d attempts, notes %q", it.Status, it.Attempts, it.Notes)
	}
	outcomes := []string{"failed", "rate_limited", "failed"}
	for i, e := range log.Recent {
		if e.Get("outcome") != outcomes[i] || e.Get("note") != want[i] {
			t.Errorf("entry %d: %+v", i+1, e)
		}
	}
}

// TestRunLastIterationFinishesEverything: a limit stops a run that has
// work left only; completing the last task in the last allowed iteration
// is all done.
func TestRunLastIterationFinishesEverything(t *testing.T) {
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
	co := newCoordinator(t, Options{Root: dir, Agent: &fakeAgent{}, MaxIterations: 1, MaxCost: 0.01})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone || out.TasksDone != 1 {
		t.Fatalf("outcome %+v, want all_done", out)
	}
}

// TestRunTaskIDNotCompleted: --task on a task the agent does not finish,
// or that is interrupted, is not "all done".
func TestRunTaskIDNotCompleted(t *testing.T) {
	t.Run("failed", func(t *testing.T) {
		dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
		fa := &fakeAgent{reply: func(int) agent.Result { return agent.Result{Final: "<promise>BLOCKED: no network</promise>"} }}
		co := newCoordinator(t, Options{Root: dir, Agent: fa, TaskID: "T2"})
		if out, _ := runAll(t, t.Context(), co); out.Reason != StopNoneReady || out.Detail != "T2 was not completed" {
			t.Fatalf("outcome %+v", out)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(2)})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		fa := &fakeAgent{reply: func(int) agent.Result {
			cancel()
			return agent.Result{IsError: true, ErrorKind: agent.KindInterrupted, ExitCode: -1}
		}}
		co := newCoordinator(t, Options{Root: dir, Agent: fa, TaskID: "T1"})
		out, _ := runAll(t, ctx, co)
		if out.Reason != StopInterrupted {
			t.Fatalf("outcome %+v, want interrupted", out)
		}
		tasks, s, _ := loadState(t, dir)
		if status(t, tasks, "T1") != mdstate.Pending || s.Status != "paused" {
			t.Errorf("T1 %v, session %+v", status(t, tasks, "T1"), s)
		}
	})
}

// TestRunFailurePolicy: retry until MaxAttempts then skip, skip at once, or
// abort; a run that gave up on a task does not report all done.
func TestRunFailurePolicy(t *testing.T) {
	tests := []struct {
		name       string
		policy     FailurePolicy
		attempts   int
		iterations int
		status     mdstate.Status
		reason     StopReason
		note       string
	}{
		{"retry then skip", "retry", 3, 3, mdstate.Skipped, StopFailed, "skipped after 3 failed attempts"},
		{"skip", "skip", 3, 1, mdstate.Skipped, StopFailed, "skipped (--on-failure skip)"},
		{"abort", "abort", 3, 1, mdstate.Pending, StopFailed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasksMD(1)})
			fa := &fakeAgent{reply: func(int) agent.Result { return agent.Result{Final: "not done"} }}
			co := newCoordinator(t, Options{Root: dir, Agent: fa, OnFailure: tt.policy, MaxAttempts: tt.attempts, MaxIterations: 10})
			out, _ := runAll(t, t.Context(), co)
			if out.Reason != tt.reason || out.Iterations != tt.iterations {
				t.Fatalf("outcome %s after %d iterations (%s), want %s after %d", out.Reason, out.Iterations, out.Detail, tt.reason, tt.iterations)
			}
			tasks, _, _ := loadState(t, dir)
			it := tasks.Find("T1")
			if it.Status != tt.status || !strings.Contains(strings.Join(it.Notes, "\n"), tt.note) {
				t.Fatalf("T1 %s, notes %q", it.Status, it.Notes)
			}
		})
	}
}

// preparingAgent is a fakeAgent that counts its Prepare calls and when
// the first came, in agent calls made before it.
type preparingAgent struct {
	fakeAgent
	prepared     atomic.Int32
	callsAtFirst atomic.Int32
}

func (a *preparingAgent) Prepare() {
	if a.prepared.Add(1) == 1 {
		a.mu.Lock()
		a.callsAtFirst.Store(int32(len(a.prompts)))
		a.mu.Unlock()
	}
}

// A run that has a task to do has its agent get ready as it opens, before
// the first agent call, once; a run with nothing to do does not.
func TestRunPreparesTheAgent(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "RALPH_TASKS.md"), []byte(tasksMD(2)), 0o644); err != nil {
		t.Fatal(err)
	}
	ag := &preparingAgent{}
	co := openCoordinator(t, Options{Root: dir, Agent: ag})
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone || out.Iterations != 2 {
		t.Fatalf("outcome %+v", out)
	}
	if n := ag.prepared.Load(); n != 1 {
		t.Errorf("Prepare called %d times in a run of 2 tasks, want 1", n)
	}
	if ag.callsAtFirst.Load() != 0 {
		t.Errorf("Prepare came after %d agent calls, want before the first", ag.callsAtFirst.Load())
	}
	// All done now: the next run has nothing for an agent.
	if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone || out.Iterations != 0 {
		t.Fatalf("second run's outcome %+v", out)
	}
	if n := ag.prepared.Load(); n != 1 {
		t.Errorf("a run with nothing to do prepared the agent (%d calls in all)", n)
	}
}

// Prepare, called before the coordinator opens, has the agent of a run
// with a task to do (or a --task) get ready, and that of a run with
// nothing to do not.
func TestPrepareBeforeTheRun(t *testing.T) {
	for _, tc := range []struct {
		tasks, task string
		want        int32
	}{
		{tasksMD(1), "", 1},
		{"# Tasks\n\n- [x] T1: Done already\n", "", 0},
		{"# Tasks\n\n- [x] T1: Done already\n", "T1", 1},
	} {
		dir := projectDir(t, map[string]string{mdstate.TasksFile: tc.tasks})
		ag := &preparingAgent{}
		Prepare(Options{Root: dir, Agent: ag, Project: mdstate.Open(dir), TaskID: tc.task})
		if got := ag.prepared.Load(); got != tc.want {
			t.Errorf("tasks %q, --task %q: Prepare called %d times, want %d", tc.tasks, tc.task, got, tc.want)
		}
	}
}

// OneProc narrows the process to one processor while the loop runs its
// agents, and gives back the count it found once the loop is over; without
// it the count is left alone.
func TestRunOneProc(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3)) // more than one, on any machine
	for _, one := range []bool{false, true} {
		var seen []int // by the agents, on the loop's goroutine
		fa := &fakeAgent{before: func(int) { seen = append(seen, runtime.GOMAXPROCS(0)) }}
		dir := projectDir(t, map[string]string{mdstate.TasksFile: tasksMD(2)})
		co := newCoordinator(t, Options{Root: dir, Agent: fa, OneProc: one})
		if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
			t.Fatalf("OneProc %v: %+v", one, out)
		}
		want := 3
		if one {
			want = 1
		}
		if !slices.Equal(seen, []int{want, want}) {
			t.Errorf("OneProc %v: the agents ran with GOMAXPROCS %v, want %d", one, seen, want)
		}
		if got := runtime.GOMAXPROCS(0); got != 3 {
			t.Errorf("OneProc %v: GOMAXPROCS %d after the run, want 3", one, got)
		}
	}
}
