//go:build linux

package coordinator

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent/agenttest"
	"github.com/ralph-dev/ralph/coordinator/proc"
)

// warmOptions are fakeClaudeOptions for n tasks, with the fake's journal.
func warmOptions(t *testing.T, n int) (opts Options, journal string) {
	t.Helper()
	opts, _ = fakeClaudeOptions(t, "")
	if err := os.WriteFile(filepath.Join(opts.Root, "RALPH_TASKS.md"), []byte(tasksMD(n)), 0o644); err != nil {
		t.Fatal(err)
	}
	journal = filepath.Join(t.TempDir(), "journal")
	opts.Env = append(opts.Env, "FAKE_CLAUDE_JOURNAL="+journal)
	opts.MaxIterations = 0
	return opts, journal
}

// onWarm sets warmProbe to call f with the number of warm agents started
// so far, once the last one is up (its journal says so).
func onWarm(t *testing.T, journal string, f func(n int)) {
	t.Helper()
	n := 0
	warmProbe = func() {
		n++
		// The first agent started cold: n warm ones make n+1.
		if _, err := agenttest.AwaitJournal(journal, agenttest.JournalUp, n+1, 30*time.Second); err != nil {
			t.Error(err)
		}
		f(n)
	}
	t.Cleanup(func() { warmProbe = nil })
}

// byPID is a journal's entries by process, in the order each came up.
func byPID(t *testing.T, journal string) (pids []int, entries map[int][]agenttest.JournalEntry) {
	t.Helper()
	j, err := agenttest.ReadJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	entries = map[int][]agenttest.JournalEntry{}
	for _, e := range j {
		if _, ok := entries[e.PID]; !ok {
			pids = append(pids, e.PID)
		}
		entries[e.PID] = append(entries[e.PID], e)
	}
	return pids, entries
}

// The agent of an iteration begun in the write of the last one's outcome
// starts before that write (held there by the probe until it is up), and
// reads its prompt only once its task is in progress in the file and the
// last one's done.
func TestWarmAgentUpBeforeItsIteration(t *testing.T) {
	opts, journal := warmOptions(t, 3)
	onWarm(t, journal, func(int) {})
	co := newCoordinator(t, opts)
	out, _ := runAll(t, t.Context(), co)
	if out.Reason != StopAllDone || out.TasksDone != 3 {
		t.Fatalf("outcome %+v", out)
	}
	pids, entries := byPID(t, journal)
	if len(pids) != 3 {
		t.Fatalf("%d agents: %v", len(pids), entries)
	}
	for i, pid := range pids {
		e := entries[pid]
		if len(e) != 2 || e[0].Moment != agenttest.JournalUp || e[1].Moment != agenttest.JournalPrompt {
			t.Fatalf("agent %d: %+v", i+1, e)
		}
		task := "T" + strconv.Itoa(i+1)
		var before []string
		for k := 1; k <= i; k++ {
			before = append(before, "T"+strconv.Itoa(k))
		}
		if p := e[1]; !slices.Equal(p.Done, before) || !slices.Equal(p.Doing, []string{task}) {
			t.Errorf("agent %d got its prompt with done %v, in progress %v; want %v and [%s]", i+1, p.Done, p.Doing, before, task)
		}
		if i == 0 {
			continue
		}
		// Up while the last task was still in progress: before the write
		// that began its own iteration.
		if u := e[0]; len(u.Done) != i-1 || !slices.Equal(u.Doing, []string{"T" + strconv.Itoa(i)}) {
			t.Errorf("warm agent %d came up with done %v, in progress %v", i+1, u.Done, u.Doing)
		}
	}
	checkGone(t, pids)
}

// A warm agent the run does not need is killed before it reads a byte:
// when a person's edit leaves no task for the next iteration, or the run
// is stopped, before the outcome's write.
func TestWarmAgentLetGo(t *testing.T) {
	for _, tc := range []struct {
		name string
		then func(t *testing.T, opts Options, stop context.CancelFunc)
		want StopReason
	}{
		{"no task left", func(t *testing.T, opts Options, _ context.CancelFunc) {
			path := filepath.Join(opts.Root, "RALPH_TASKS.md")
			data, err := os.ReadFile(path)
			if err == nil {
				err = os.WriteFile(path, []byte(strings.Replace(string(data), "- [ ] T2", "- [-] T2", 1)), 0o644)
			}
			if err != nil {
				t.Error(err)
			}
		}, StopAllDone},
		{"stopped", func(_ *testing.T, _ Options, stop context.CancelFunc) { stop() }, StopInterrupted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, journal := warmOptions(t, 2)
			ctx, stop := context.WithCancel(t.Context())
			defer stop()
			onWarm(t, journal, func(int) { tc.then(t, opts, stop) })
			co := newCoordinator(t, opts)
			out, _ := runAll(t, ctx, co)
			if out.Reason != tc.want || out.TasksDone != 1 {
				t.Fatalf("outcome %+v", out)
			}
			pids, entries := byPID(t, journal)
			if len(pids) != 2 || len(entries[pids[1]]) != 1 || entries[pids[1]][0].Moment != agenttest.JournalUp {
				t.Fatalf("journal %+v", entries)
			}
			checkGone(t, pids)
			tasks, _, _ := loadState(t, opts.Root)
			if t2 := tasks.Find("T2"); t2 == nil || t2.Status == "done" || t2.Status == "in_progress" {
				t.Errorf("T2 %+v", t2)
			}
		})
	}
}

// A warm agent held past warmLimit (the outcome's write took that long)
// is let go unprompted, and the iteration starts its agent anew: Claude
// Code gives up on a stdin that brings nothing for 3 s.
func TestWarmAgentHeldTooLong(t *testing.T) {
	opts, journal := warmOptions(t, 2)
	onWarm(t, journal, func(int) { time.Sleep(warmLimit + 200*time.Millisecond) })
	co := newCoordinator(t, opts)
	out, _ := runAll(t, t.Context(), co)
	if out.Reason != StopAllDone || out.TasksDone != 2 {
		t.Fatalf("outcome %+v", out)
	}
	pids, entries := byPID(t, journal)
	var got []int
	for _, pid := range pids {
		got = append(got, len(entries[pid]))
	}
	// The first agent, the warm one let go, the one started anew.
	if !slices.Equal(got, []int{2, 1, 2}) {
		t.Fatalf("journal %+v", entries)
	}
	if p := entries[pids[2]][1]; !slices.Equal(p.Done, []string{"T1"}) || !slices.Equal(p.Doing, []string{"T2"}) {
		t.Errorf("the agent started anew got its prompt with done %v, in progress %v", p.Done, p.Doing)
	}
	checkGone(t, pids)
}

// lingerOptions are warmOptions whose fake claude waits for linger after
// its successful turn's result line before it exits.
func lingerOptions(t *testing.T, n int, linger string) (opts Options, journal string) {
	t.Helper()
	opts, journal = warmOptions(t, n)
	script := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(script, []byte(agenttest.Success+"@sleep "+linger+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts.Env = append(opts.Env, "FAKE_CLAUDE_SCRIPT="+script)
	return opts, journal
}

// The next agent is ordered at its predecessor's complete answer, while
// that one still runs (here it lingers after its result line, as Claude
// Code may while it shuts down), and is started by the same supervisor
// once it has ended: every agent after the first was ordered so and used,
// none was started for nothing, all ran under the first one's supervisor
// (without Cmd.After, one ordered while its predecessor ran would take a
// supervisor of its own), and each read its prompt with its own task in
// progress and the earlier ones done.
func TestNextAgentOrderedAtTheAnswer(t *testing.T) {
	opts, journal := lingerOptions(t, 3, "400ms")
	var mu sync.Mutex
	var running []bool // whether the predecessor ran as the next agent was ordered
	earlyProbe = func(p *proc.Process) {
		mu.Lock()
		defer mu.Unlock()
		select {
		case <-p.Done():
			running = append(running, false)
		default:
			running = append(running, true)
		}
	}
	t.Cleanup(func() { earlyProbe = nil })
	co := newCoordinator(t, opts)
	out, _ := runAll(t, t.Context(), co)
	if out.Reason != StopAllDone || out.TasksDone != 3 {
		t.Fatalf("outcome %+v", out)
	}
	mu.Lock()
	if !slices.Equal(running, []bool{true, true}) {
		t.Errorf("next agents ordered while the last one ran: %v, want [true true] (agents 2 and 3)", running)
	}
	mu.Unlock()
	pids, entries := byPID(t, journal)
	if len(pids) != 3 {
		t.Fatalf("%d agents: %v", len(pids), entries)
	}
	for i, pid := range pids {
		e := entries[pid]
		var before []string
		for k := 1; k <= i; k++ {
			before = append(before, "T"+strconv.Itoa(k))
		}
		if len(e) != 2 || !slices.Equal(e[1].Done, before) || !slices.Equal(e[1].Doing, []string{"T" + strconv.Itoa(i+1)}) {
			t.Errorf("agent %d: %+v; want its prompt with done %v and T%d in progress", i+1, e, before, i+1)
		}
		if sup := entries[pids[0]][0].PPID; e[0].PPID != sup {
			t.Errorf("agent %d ran under %d, the first under %d", i+1, e[0].PPID, sup)
		}
	}
	checkGone(t, pids)
}

// An agent ordered at its predecessor's complete answer is killed before
// it reads a byte when the run is not to go on after all: here a pause
// asked for while the predecessor lingers after its result line.
func TestNextAgentOrderedAtTheAnswerLetGo(t *testing.T) {
	opts, journal := lingerOptions(t, 2, "200ms")
	co := newCoordinator(t, opts)
	ordered := make(chan struct{}, 2)
	earlyProbe = func(*proc.Process) {
		ordered <- struct{}{}
		co.Pause()
	}
	t.Cleanup(func() { earlyProbe = nil })
	out, _ := runAll(t, t.Context(), co)
	if out.Reason != StopPaused || out.TasksDone != 1 {
		t.Fatalf("outcome %+v", out)
	}
	if len(ordered) != 1 {
		t.Errorf("%d agents ordered at an answer, want 1", len(ordered))
	}
	// The second agent may be killed before it even came up.
	pids, entries := byPID(t, journal)
	if len(pids) < 1 || len(pids) > 2 || len(entries[pids[0]]) != 2 || (len(pids) == 2 && len(entries[pids[1]]) != 1) {
		t.Fatalf("journal %+v", entries)
	}
	checkGone(t, pids)
	tasks, _, _ := loadState(t, opts.Root)
	if t2 := tasks.Find("T2"); t2 == nil || t2.Status != "pending" {
		t.Errorf("T2 %+v", t2)
	}
}
