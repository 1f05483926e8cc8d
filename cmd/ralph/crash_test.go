//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
	"github.com/ralph-dev/ralph/mdstate"
)

// crashTasks is the task list of every round: eight tasks, some waiting
// for others, and a person's prose, comment, note and own meta line, which
// must all survive (crashHuman).
const crashTasks = `# Tasks

The shop's backend. Ask Ana before touching payments.

<!-- Ana: T3 waits for the sandbox keys. -->

- [ ] T1: Model the cart
- [ ] T2: Price the cart
  - after: T1
- [ ] T3: Take card payments
  - after: T2
  - owner: ana

  Card payments go through the sandbox first.
- [ ] T4: Write the README
- [ ] T5: Add refunds
  - after: T3
- [ ] T6: Send receipts
  - after: T3, T4
- [ ] T7: Log in
- [ ] T8: Ship it
  - after: T5, T6, T7
`

// crashAgent is the exec agent of the odd rounds: it finds its task in the
// prompt, records its pid before it sleeps 0-90 ms, records the run, and
// completes. It reports no usage.
const crashAgent = `prompt=$(cat)
task=$(printf '%s\n' "$prompt" | awk '/^## Current task/{f=1;next} f&&NF{print;exit}' | grep -o 'T[0-9][0-9]*' | head -n 1)
echo $$ >> agent-pids.log
sleep 0.0$(od -An -N1 -tu1 /dev/urandom | tr -d ' ' | cut -c1)
echo "$task $$ 0 0 0.0000" >> agent-runs.log
echo "<promise>COMPLETE</promise>"
`

// crashClaude stands in for `claude -p --output-format stream-json` in the
// even rounds, on PATH as "claude": it records its pid, streams a message
// that reports usage, sleeps 0-90 ms, records the run with the usage it is
// about to report, and ends with a result line of random usage and cost.
// About one run in five ends without the completion marker: a failed
// attempt.
const crashClaude = `#!/bin/sh
prompt=$(cat)
task=$(printf '%s\n' "$prompt" | awk '/^## Current task/{f=1;next} f&&NF{print;exit}' | grep -o 'T[0-9][0-9]*' | head -n 1)
echo $$ >> agent-pids.log
set -- $(od -An -N5 -tu1 /dev/urandom)
in=$(( $1 * 256 + $2 + 1 )); out=$(( $3 + 1 )); cost=$(( $4 % 90 + 10 ))
sid="crash-$$"
printf '%s\n' '{"type":"system","subtype":"init","session_id":"'$sid'","model":"claude-fake-1"}'
printf '%s\n' '{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"Working on '$task'."}],"usage":{"input_tokens":'$in',"output_tokens":1}},"session_id":"'$sid'"}'
sleep 0.0$(( $5 % 10 ))
final='Done.\n<promise>COMPLETE</promise>'
[ $(( $5 / 10 % 5 )) -eq 0 ] && final='I could not finish.'
echo "$task $$ $in $out 0.00$cost" >> agent-runs.log
printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"result":"'"$final"'","session_id":"'$sid'","total_cost_usd":0.00'$cost',"usage":{"input_tokens":'$in',"output_tokens":'$out'}}'
`

const (
	crashMinKills = 150
	crashTaskN    = 8
	// crashBudget bounds the test, should the rounds stop ending; it is
	// not a speed goal. Alone here the 150 kills take about 30 s, under
	// -race; in CI, beside the other packages building and testing on a
	// cold cache, up to twice that.
	crashBudget = 5 * time.Minute
	// crashWritesAt: a write-triggered kill comes at a run's k-th write
	// of RALPH_TASKS.md, k drawn from 1 to crashWritesAt. A fresh 8-task
	// run writes the file 12 times; a resumed one fewer. Larger values
	// let more runs end unkilled, and so more, shorter rounds.
	crashWritesAt = 9
)

// crashHuman are the lines of crashTasks a person wrote; the test adds
// more as it goes, editing the file while ralph is down.
var crashHuman = []string{
	"The shop's backend. Ask Ana before touching payments.",
	"<!-- Ana: T3 waits for the sandbox keys. -->",
	"  - owner: ana",
	"  Card payments go through the sandbox first.",
}

// crashStats are the figures the test reports.
type crashStats struct {
	kills, survived, corrupted, redone, orphans int
	rounds                                      int
	restored                                    int             // entries resume wrote after a kill
	toFirstTask                                 []time.Duration // recovery runs: start to first task_started
	// phases counts kills by where ralph was, as the files tell it.
	phases map[string]int
	// tokensIn, tokensOut: the usage summed over all rounds' entries.
	tokensIn, tokensOut int64
	// handEdits counts the person's edits made between runs; humanLost
	// the lines of theirs found missing.
	handEdits, humanLost int
	// commitRounds ran with --commit in a git repository; commits counts
	// the task commits made there; staleLocks the kills that left
	// .git/index.lock behind (git's own way: the next commit says so).
	commitRounds, commits, staleLocks int
}

// eventWatch is ralph run --json's stdout: it records when the first
// task_started event appears, and closes fired at the want-th event line
// that contains trigger.
type eventWatch struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	scanned int
	first   time.Time
	trigger []byte
	want    int
	seen    int
	fired   chan struct{}
}

func newEventWatch(trigger string, want int) *eventWatch {
	return &eventWatch{trigger: []byte(trigger), want: want, fired: make(chan struct{})}
}

func (w *eventWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	data := w.buf.Bytes()
	for {
		i := bytes.IndexByte(data[w.scanned:], '\n')
		if i < 0 {
			break
		}
		line := data[w.scanned : w.scanned+i]
		w.scanned += i + 1
		if w.first.IsZero() && bytes.Contains(line, []byte(`"event":"task_started"`)) {
			w.first = time.Now()
		}
		if len(w.trigger) > 0 && bytes.Contains(line, w.trigger) {
			if w.seen++; w.seen == w.want {
				close(w.fired)
			}
		}
	}
	return len(p), nil
}

func (w *eventWatch) firstAt() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first
}

func (w *eventWatch) output() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.buf.Bytes())
}

// TestCrashRecovery SIGKILLs `ralph run` (ralph alone, as a crash would)
// at random moments, over and over, and checks after every kill that the
// state files parse, that the session reads as interrupted, and that no
// agent outlived ralph; then that the work finishes with every task done
// exactly once and the session's counters right. Rounds on fresh projects
// repeat until at least crashMinKills kills. RALPH_CRASH_SEED fixes the
// random delays.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: -short; the crash test kills ralph 150+ times and takes about 30 s")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RALPH_CRASH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RALPH_CRASH_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (rerun with RALPH_CRASH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	bin := buildRalph(t)
	agents := t.TempDir()
	if err := os.WriteFile(filepath.Join(agents, "claude"), []byte(crashClaude), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+t.TempDir(), "PATH="+agents+string(os.PathListSeparator)+os.Getenv("PATH"))
	st := crashStats{phases: map[string]int{}}
	start := time.Now()
	for st.kills < crashMinKills {
		if time.Since(start) > crashBudget {
			t.Fatalf("only %d kills in %s (want %d)", st.kills, crashBudget, crashMinKills)
		}
		st.rounds++
		crashRound(t, bin, env, rng, &st)
		if t.Failed() {
			break
		}
	}

	slices.Sort(st.toFirstTask)
	median := time.Duration(0)
	if len(st.toFirstTask) > 0 {
		median = st.toFirstTask[len(st.toFirstTask)/2]
	}
	var phases []string
	for k, n := range st.phases {
		phases = append(phases, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(phases)
	report := fmt.Sprintf("seed %d: %d rounds in %s; kills inflicted %d; crashes survived %d; files corrupted %d; completed tasks redone %d; orphaned children %d; "+
		"hand edits between runs %d, a person's lines lost %d; rounds with --commit %d (task commits %d, kills that left index.lock %d); "+
		"entries restored on recovery %d; tokens in entries %d in, %d out (= the sessions' totals); recovery to first task_started: median %s over %d runs; kills by phase: %s",
		seed, st.rounds, time.Since(start).Round(time.Second), st.kills, st.survived, st.corrupted, st.redone, st.orphans, st.handEdits, st.humanLost, st.commitRounds, st.commits, st.staleLocks, st.restored, st.tokensIn, st.tokensOut,
		median.Round(time.Microsecond), len(st.toFirstTask), strings.Join(phases, ", "))
	t.Log(report)
	fmt.Println("crash-recovery: " + report)
	if st.survived != st.kills || st.corrupted != 0 || st.redone != 0 || st.orphans != 0 || st.humanLost != 0 {
		t.Errorf("want every kill survived and nothing corrupted, redone, orphaned or lost")
	}
}

// crashRound runs one fresh project to completion under random kills.
func crashRound(t *testing.T, bin string, env []string, rng *rand.Rand, st *crashStats) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{mdstate.TasksFile: crashTasks, "agent.sh": crashAgent} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"run", "--json", "--backoff", "0s", "--max-attempts", "100"}
	if st.rounds%2 == 1 {
		args = append(args, "--agent", "exec", "--agent-cmd", "sh agent.sh")
	} else {
		args = append(args, "--agent", "claude")
	}
	// Every third round is a git repository and commits each task: a kill
	// may land in the middle of a commit.
	commit := st.rounds%3 == 0
	if commit {
		crashGit(t, dir, env, "init", "-q")
		crashGit(t, dir, env, "add", "-A")
		crashGit(t, dir, env, "commit", "-qm", "base")
		args = append(args, "--commit")
		st.commitRounds++
	}
	checkedPids := 0
	human := slices.Clone(crashHuman)
	recovering := false // the last run was killed
	ended := false
	for run := 0; !ended; run++ {
		if run > 200 {
			t.Fatalf("round %d: no end after %d runs", st.rounds, run)
		}
		// Past the minimum, a round is let run to completion.
		kill := st.kills < crashMinKills
		// Half the kills come after a random delay (mostly while an agent
		// runs); the other half right after ralph's k-th write of
		// RALPH_TASKS.md, at once or after 0-1.5 ms, which lands them in
		// the short phases: just before the agent starts, between a
		// task's status and its progress entry, between tasks.
		stdout := newEventWatch("", 0)
		var fire <-chan time.Time
		var jitter time.Duration
		if rng.IntN(2) == 0 {
			fire = time.After(time.Duration(rng.IntN(81)) * time.Millisecond)
		} else {
			stdout = newEventWatch(`"file":"RALPH_TASKS.md"`, 1+rng.IntN(crashWritesAt))
			if rng.IntN(2) == 0 {
				jitter = time.Duration(rng.IntN(1501)) * time.Microsecond
			}
		}
		var stderr bytes.Buffer
		started := time.Now()
		p, err := proc.Start(context.Background(), proc.Cmd{Name: bin, Args: args, Dir: dir, Env: env}, stdout, &stderr)
		if err != nil {
			t.Fatal(err)
		}
		killed := false
		if kill {
			select {
			case <-p.Done():
			case <-fire:
			case <-stdout.fired:
				time.Sleep(jitter)
			}
			select {
			case <-p.Done():
			default:
				// ESRCH: ralph exited (and was reaped) just now, unkilled.
				if err := p.Signal(syscall.SIGKILL); err == nil {
					killed = true
				} else if !errors.Is(err, syscall.ESRCH) {
					t.Fatalf("kill ralph: %v", err)
				}
			}
		}
		werr := p.Wait(30 * time.Second)
		code := p.ExitCode()
		if first := stdout.firstAt(); recovering && !first.IsZero() {
			st.toFirstTask = append(st.toFirstTask, first.Sub(started))
		}
		if recovering {
			// The previous kill is survived when this run recovered: it
			// ran until we killed it, or to a clean end.
			if killed || code == 0 {
				st.survived++
			} else {
				tasks, _ := os.ReadFile(filepath.Join(dir, mdstate.TasksFile))
				t.Errorf("round %d run %d: ralph run after a kill: exit %d, %v\n%s\n%s:\n%s", st.rounds, run, code, werr, stderr.Bytes(), mdstate.TasksFile, tasks)
				return
			}
		}
		if !killed {
			if code != 0 {
				t.Fatalf("round %d run %d: ralph run: exit %d, %v\n%s", st.rounds, run, code, werr, stderr.Bytes())
			}
			if out := stdout.output(); !bytes.Contains(out, []byte(`"reason":"all_done"`)) {
				t.Fatalf("round %d run %d: ralph run exited 0 without all_done:\n%s", st.rounds, run, out)
			}
			break
		}
		st.kills++
		recovering = true
		status := crashCheckKill(t, bin, env, dir, st, &checkedPids)
		crashCheckHuman(t, dir, human, st)
		if commit {
			crashCheckRepo(t, dir, env, st)
		}
		// While ralph is down, a person edits the tasks file now and then:
		// a note at its end, or a line of their own in the session list.
		if !t.Failed() && rng.IntN(3) == 0 {
			human = append(human, crashHandEdit(t, dir, st))
		}
		if t.Failed() {
			t.Logf("round %d run %d: killed after a delay; stderr:\n%s", st.rounds, run, stderr.Bytes())
			return
		}
		// A run killed after it saved "ended" finished the session: another
		// `ralph run` would start a new one.
		ended = status == "ended"
	}
	crashCheckEnd(t, dir, st)
	crashCheckHuman(t, dir, human, st)
	if commit {
		crashCheckRepo(t, dir, env, st)
		out := crashGit(t, dir, env, "log", "--format=%s")
		st.commits += strings.Count(out, "ralph: T")
	}
	if ended && !t.Failed() {
		// The last kill came after the session ended; the end checks
		// are its recovery.
		st.survived++
	}
}

// crashCheckKill checks the project right after a kill and returns the
// session status `ralph status --json` reports.
func crashCheckKill(t *testing.T, bin string, env []string, dir string, st *crashStats, checkedPids *int) string {
	t.Helper()
	// RALPH_TASKS.md is only ever replaced atomically: it parses as is,
	// before any recovery.
	raw, err := os.ReadFile(filepath.Join(dir, mdstate.TasksFile))
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := mdstate.ParseChecklist(mdstate.TasksKind, raw)
	if err != nil {
		st.corrupted++
		t.Errorf("%s does not parse without recovery: %v\n%s", mdstate.TasksFile, err, raw)
		return ""
	}
	if n := len(tasks.Items()); n != crashTaskN {
		st.corrupted++
		t.Errorf("%s has %d tasks, want %d:\n%s", mdstate.TasksFile, n, crashTaskN, raw)
	}
	sess, _ := tasks.Session()

	res, err := proc.Run(context.Background(), proc.Cmd{Name: bin, Args: []string{"status", "--json"}, Dir: dir, Env: env})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("ralph status --json: exit %d, %v\n%s", res.ExitCode, err, res.Stderr)
	}
	var sj struct {
		Session *struct {
			Status string `json:"status"`
		} `json:"session"`
	}
	if err := json.Unmarshal(res.Stdout, &sj); err != nil {
		t.Fatalf("ralph status --json: %v\n%s", err, res.Stdout)
	}
	status := ""
	switch {
	case sj.Session == nil && sess == nil:
		// Killed before the new session's first write: nothing to resume.
	case sj.Session == nil:
		t.Errorf("ralph status --json shows no session; %s has one", mdstate.TasksFile)
	case sj.Session.Status != "interrupted" && sj.Session.Status != "ended":
		t.Errorf("after a kill, ralph status --json says the session is %q, want interrupted (or ended)", sj.Session.Status)
	default:
		status = sj.Session.Status
	}

	// Every state file parses once a torn append is finished.
	p := mdstate.Open(dir)
	if err := p.Recover(); err != nil {
		st.corrupted++
		t.Errorf("Recover: %v", err)
	}
	for _, k := range []struct {
		kind mdstate.Kind
		file string
	}{{mdstate.TasksKind, mdstate.TasksFile}, {mdstate.GoalsKind, mdstate.GoalsFile}, {mdstate.TodoKind, mdstate.TodoFile}} {
		data, err := os.ReadFile(filepath.Join(dir, k.file))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err == nil {
			_, err = mdstate.ParseChecklist(k.kind, data)
		}
		if err != nil {
			st.corrupted++
			t.Errorf("%s: %v", k.file, err)
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, mdstate.AgentFile)); err == nil {
		if _, err := mdstate.ParseAgent(data); err != nil {
			st.corrupted++
			t.Errorf("%s: %v", mdstate.AgentFile, err)
		}
	}
	log, err := p.ReadProgress(1 << 20)
	if err != nil {
		st.corrupted++
		t.Errorf("%s: %v", mdstate.ProgressFile, err)
		return status
	}
	if len(log.Recent) != log.Entries {
		t.Errorf("%s: read %d of %d entries", mdstate.ProgressFile, len(log.Recent), log.Entries)
	}
	// The record of an iteration's agent stays until the next one's
	// replaces it: only the session's current iteration's counts.
	rec, recorded := coordinator.RunningAgent(dir)
	recorded = recorded && sess != nil && rec.Session == sess.ID && rec.Iteration == sess.Iteration
	st.phases[crashPhase(sess, recorded, log)]++

	// Every agent started so far is gone within a second (the
	// parent-death signal), or a zombie.
	pids := strings.Fields(string(crashRead(t, filepath.Join(dir, "agent-pids.log"))))
	for _, line := range pids[*checkedPids:] {
		pid, err := strconv.Atoi(line)
		if err != nil {
			t.Errorf("agent-pids.log: %q", line)
			continue
		}
		deadline := time.Now().Add(time.Second)
		for proctest.Alive(pid) {
			if time.Now().After(deadline) {
				st.orphans++
				t.Errorf("agent %d is still running a second after ralph was killed", pid)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	*checkedPids = len(pids)
	return status
}

// crashGit runs git in dir and returns its output.
func crashGit(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	env = append(env, "GIT_AUTHOR_NAME=Ana", "GIT_AUTHOR_EMAIL=ana@example.com", "GIT_COMMITTER_NAME=Ana", "GIT_COMMITTER_EMAIL=ana@example.com")
	res, err := proc.Run(context.Background(), proc.Cmd{Name: "git", Args: args, Dir: dir, Env: env})
	if err != nil || res.ExitCode != 0 {
		t.Errorf("git %s: exit %d, %v\n%s", strings.Join(args, " "), res.ExitCode, err, res.Stderr)
	}
	return string(res.Stdout)
}

// crashCheckRepo checks that a kill left the git repository whole: HEAD
// resolves, the index reads, fsck finds no error.
func crashCheckRepo(t *testing.T, dir string, env []string, st *crashStats) {
	t.Helper()
	failed := t.Failed()
	crashGit(t, dir, env, "rev-parse", "--verify", "HEAD")
	crashGit(t, dir, env, "ls-files", "--stage")
	crashGit(t, dir, env, "fsck", "--no-progress")
	if !failed && t.Failed() {
		st.corrupted++
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "index.lock")); err == nil {
		st.staleLocks++
		// A person would remove it, as git's message says; so does the
		// test, for the round to go on committing.
		_ = os.Remove(filepath.Join(dir, ".git", "index.lock"))
	}
}

// crashHandEdit edits RALPH_TASKS.md as a person would, in place, and
// returns the line they wrote: a line of their own right under the session
// list's first item, or else a paragraph at the end of the file.
func crashHandEdit(t *testing.T, dir string, st *crashStats) string {
	t.Helper()
	path := filepath.Join(dir, mdstate.TasksFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st.handEdits++
	text := string(data)
	if i := strings.Index(text, "\n- id: "); i >= 0 && !strings.Contains(text, "- checked-by: ") {
		line := fmt.Sprintf("- checked-by: ana, edit %d", st.handEdits)
		j := i + 1 + strings.IndexByte(text[i+1:], '\n') + 1
		text = text[:j] + line + "\n" + text[j:]
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return line
	}
	line := fmt.Sprintf("A person's note, edit %d.", st.handEdits)
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if err := os.WriteFile(path, []byte(text+"\n"+line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return line
}

// crashCheckHuman checks that every line the person wrote is still in
// RALPH_TASKS.md, word for word.
func crashCheckHuman(t *testing.T, dir string, human []string, st *crashStats) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, mdstate.TasksFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for _, h := range human {
		if !slices.Contains(lines, h) {
			st.humanLost++
			t.Errorf("round %d: the person's line %q is gone from %s:\n%s", st.rounds, h, mdstate.TasksFile, data)
		}
	}
}

// crashPhase names where ralph was when it was killed, from the session it
// saved last, whether it recorded its agent in .ralph/, and the progress log.
func crashPhase(s *mdstate.Session, agentRecorded bool, log *mdstate.Log) string {
	switch {
	case s == nil:
		return "before-session"
	case s.Phase == "agent" && s.Result != nil && s.Result.Task != "" && !crashLogged(log, s.Result.Task, s.Result.Iteration):
		// The write that saved the last task's outcome began this
		// iteration; the last task's entry is not written yet.
		return "writing-entry-ahead"
	case s.Phase == "agent" && !agentRecorded:
		return "spawning"
	case s.Phase == "agent":
		return "agent-running"
	case s.Phase == "writing" && crashLogged(log, s.Task, s.Iteration):
		return "between-tasks"
	case s.Phase == "writing":
		return "writing-entry"
	case s.Phase == "":
		return string(s.Status)
	}
	return string(s.Phase)
}

// crashLogged reports whether the last task entry of the log is task's
// in iteration.
func crashLogged(log *mdstate.Log, task string, iteration int) bool {
	for i := len(log.Recent) - 1; i >= 0; i-- {
		e := &log.Recent[i]
		if strings.HasPrefix(e.Title, "session ") {
			continue
		}
		return strings.HasPrefix(e.Title, task+": ") && e.Get("iteration") == strconv.Itoa(iteration)
	}
	return false
}

// crashSummaries counts session id's summary entries in log.
func crashSummaries(log *mdstate.Log, id string) int {
	n := 0
	for _, e := range log.Recent {
		if e.Title == "session "+id+" ended" {
			n++
		}
	}
	return n
}

// crashRead reads a file an agent appends to; nil if none was written.
func crashRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return data
}

var (
	crashTaskTitle = regexp.MustCompile(`^(T[0-9]+): `)
	crashTokens    = regexp.MustCompile(`^([0-9]+) in, ([0-9]+) out$`)
)

// crashCheckEnd checks a finished round: every task done, each exactly
// once in the progress log, and the session's counters.
func crashCheckEnd(t *testing.T, dir string, st *crashStats) {
	t.Helper()
	p := mdstate.Open(dir)
	if err := p.Recover(); err != nil {
		t.Fatal(err)
	}
	tasks, err := p.LoadChecklist(mdstate.TasksKind)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range tasks.Items() {
		if it.Status != mdstate.Done {
			t.Errorf("round %d: %s is %s, want done", st.rounds, it.ID, it.Status)
		}
	}
	sess, _ := tasks.Session()
	if sess == nil || sess.Status != "ended" {
		t.Fatalf("round %d: session %+v, want ended", st.rounds, sess)
	}
	log, err := p.ReadProgress(1 << 20)
	if err != nil {
		t.Fatal(err)
	}

	// The iteration counter. iterate increments it and saves it in the
	// same atomic write that marks the task in progress; an iteration
	// exists from that write on. It then ends in one of two ways: its own
	// "Tn: title" entry (with "iteration: N"), or a kill, after which the
	// next start's resume writes a "session … recovered" entry naming the
	// iteration the session was at ("iteration: N") before the session can
	// go on to N+1. (A kill during resume itself leaves the session
	// "running" at N, so the next start writes that entry again; a kill
	// after the Tn entry but before iteration N+1's first write names N a
	// second time too.) So the iterations named by task and recovered
	// entries are exactly 1..final, and no two task entries name the same
	// iteration. Recovered entries naming 0 come from kills before the
	// first iteration.
	named := map[int]bool{}
	taskIters := map[int]string{}
	doneCount := map[string]int{}
	var tokIn, tokOut int64
	var cost float64
	restored := 0
	// Every agent run that reported a result is in agent-runs.log as
	// "task pid in out cost"; each task entry (restored ones too) must
	// carry the usage of one of them.
	runs := map[string]int{}
	nruns := 0
	for _, line := range strings.Split(strings.TrimSpace(string(crashRead(t, filepath.Join(dir, "agent-runs.log")))), "\n") {
		if f := strings.Fields(line); len(f) == 5 {
			runs[f[0]+" "+f[2]+" in, "+f[3]+" out $"+f[4]]++
			nruns++
		}
	}
	for _, e := range log.Recent {
		n, _ := strconv.Atoi(e.Get("iteration"))
		if m := crashTaskTitle.FindStringSubmatch(e.Title); m != nil {
			if prev, dup := taskIters[n]; dup {
				t.Errorf("round %d: iteration %d has two task entries (%s, %s)", st.rounds, n, prev, m[1])
			}
			taskIters[n] = m[1]
			named[n] = true
			if e.Get("outcome") == "done" {
				doneCount[m[1]]++
			}
			if strings.HasPrefix(e.Get("note"), "written on recovery") {
				// Restored by resume after a kill between the task's
				// status write and its entry.
				restored++
			}
			// The exec agent reports no usage: its entries say "unknown",
			// which counts as nothing; a claude round's entry saying so
			// matches no run of its agent below.
			tokens, costText := e.Get("tokens"), e.Get("cost")
			if tokens == "unknown" && costText == "unknown" {
				tokens, costText = "0 in, 0 out", "$0.0000"
			}
			tm := crashTokens.FindStringSubmatch(tokens)
			c, cerr := strconv.ParseFloat(strings.TrimPrefix(costText, "$"), 64)
			if tm == nil || cerr != nil {
				t.Errorf("round %d: %s: tokens %q, cost %q", st.rounds, e.Title, e.Get("tokens"), e.Get("cost"))
				continue
			}
			in, _ := strconv.ParseInt(tm[1], 10, 64)
			out, _ := strconv.ParseInt(tm[2], 10, 64)
			tokIn, tokOut, cost = tokIn+in, tokOut+out, cost+c
			if key := m[1] + " " + tokens + " " + costText; runs[key] > 0 {
				runs[key]--
			} else {
				t.Errorf("round %d: entry %q (iteration %d) has usage %s, cost %s, which no run of its agent reported", st.rounds, e.Title, n, e.Get("tokens"), e.Get("cost"))
			}
			continue
		}
		if e.Get("outcome") == "recovered" {
			if e.Get("session") != sess.ID {
				t.Errorf("round %d: recovered entry for session %s, the session is %s", st.rounds, e.Get("session"), sess.ID)
			}
			if n > 0 {
				named[n] = true
			}
		}
	}
	// The session's summary is written once: a kill after it and before
	// the session's last save is ended on the next start, not resumed.
	if n := crashSummaries(log, sess.ID); n != 1 {
		t.Errorf("round %d: %d summaries of session %s, want 1", st.rounds, n, sess.ID)
	}
	for i := 1; i <= sess.Iteration; i++ {
		if !named[i] {
			t.Errorf("round %d: iteration %d of %d has no progress entry", st.rounds, i, sess.Iteration)
		}
	}
	for n := range named {
		if n > sess.Iteration {
			t.Errorf("round %d: progress names iteration %d, the session counter is %d", st.rounds, n, sess.Iteration)
		}
	}
	for _, it := range tasks.Items() {
		switch c := doneCount[it.ID]; {
		case c > 1:
			st.redone += c - 1
			t.Errorf("round %d: %s has %d done entries", st.rounds, it.ID, c)
		case c == 0:
			t.Errorf("round %d: %s is [x] but has no done entry in %s", st.rounds, it.ID, mdstate.ProgressFile)
		}
	}
	// The session's totals are the sums of the recorded iterations. The
	// exec agent reports no usage; the claude stand-in always does.
	if sess.TokensIn != tokIn || sess.TokensOut != tokOut || fmt.Sprintf("%.4f", sess.CostUSD) != fmt.Sprintf("%.4f", cost) {
		t.Errorf("round %d: session tokens %d in, %d out, cost $%.4f; its entries sum to %d in, %d out, $%.4f",
			st.rounds, sess.TokensIn, sess.TokensOut, sess.CostUSD, tokIn, tokOut, cost)
	}
	if claude := sess.Agent == "claude"; claude != (tokIn > 0) {
		t.Errorf("round %d: agent %s, %d tokens in", st.rounds, sess.Agent, tokIn)
	}
	st.tokensIn, st.tokensOut = st.tokensIn+tokIn, st.tokensOut+tokOut
	st.restored += restored
	t.Logf("round %d: session %s (%s), %d iterations, %d task entries (%d restored on recovery), %d agent runs recorded, %d progress entries, %d in, %d out, $%.4f",
		st.rounds, sess.ID, sess.Agent, sess.Iteration, len(taskIters), restored, nruns, log.Entries, tokIn, tokOut, cost)
}
