//go:build linux

package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
)

// The chat tests (issue 11): the real binary (the test binary, which
// testscript.Main puts on PATH as "ralph") on a real pseudo-terminal,
// driven by keystrokes, with an exec agent. The piped mode and the lock
// are testscripts (testdata/script/chat_*.txtar).

// chatAgent is the agent of these tests (`--agent exec --agent-cmd "sh
// agent.sh"`). It keeps the prompt it was given in prompt-T1 (by task),
// its pid in pid-T1, starts a sleep whose pid goes in sleep-T1, and, when
// wait-T1 exists, waits for go-T1 (at most about 20 s) before it
// completes.
const chatAgent = agentPrologue + chatTurn + `printf '%s\n' "$prompt" > "prompt-$task"
sleep 30 &
echo $! > "sleep-$task"
` + agentPidAndWait + `kill $! 2>/dev/null
echo "Did $task."
echo "<promise>COMPLETE</promise>"
`

// chatTurn is chatAgent's answer to a conversation turn: it appends the
// prompt to "turns" (then a "----" line), works as task "turn" (pid-turn,
// wait-turn, go-turn), adds T9 to RALPH_TASKS.md when asked to "add a
// task", and answers "You said: " and the message, with a decision.
const chatTurn = `case "$prompt" in
"# A message from the person"*)
	msg=$(printf '%s\n' "$prompt" | sed -n 3p)
	printf '%s\n----\n' "$prompt" >> turns
	task=turn
` + agentPidAndWait + `	case "$msg" in "add a task") printf -- '- [ ] T9: Added in chat\n' >> RALPH_TASKS.md ;; esac
	echo "You said: $msg"
	echo "<decision>answered: $msg</decision>"
	exit 0 ;;
esac
`

// chatTerm is `ralph chat` on a pseudo-terminal.
type chatTerm struct {
	agentDir
	cmd  *exec.Cmd
	pty  *os.File
	out  proctest.SyncBuffer
	done chan struct{}
	// seen is how much of the output expect has consumed.
	seen int
}

// csi matches the escape sequences readline draws with, so that the
// tests match what a person reads.
var csi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// chatProject is a project folder with chatAgent and the given tasks.
func chatProject(t testing.TB, tasks string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{"agent.sh": chatAgent, "RALPH_TASKS.md": tasks, "RALPH_TODO.md": "# To-do\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// startChat starts `ralph chat` with chatAgent in dir on a new pty.
func startChat(t testing.TB, dir string, args ...string) *chatTerm {
	t.Helper()
	return startOnPty(t, dir, nil, append([]string{"chat", "--agent", "exec", "--agent-cmd", "sh agent.sh", "--backoff", "0s"}, args...)...)
}

// startOnPty starts ralph with args in dir on a new pty (80x200, xterm,
// then env).
func startOnPty(t testing.TB, dir string, env []string, args ...string) *chatTerm {
	t.Helper()
	bin, err := exec.LookPath("ralph")
	if err != nil {
		t.Fatalf("the ralph test binary is not on PATH: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "TERM=xterm", "NO_COLOR=1", "RALPH_NOW=", "RALPH_AGENT=",
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Env = append(cmd.Env, env...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 80, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	c := &chatTerm{agentDir: agentDir{t: t, dir: dir}, cmd: cmd, pty: f, done: make(chan struct{})}
	go func() {
		_, _ = io.Copy(&c.out, f) // ends with EIO once the chat and its children are gone
	}()
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = cmd.Process.Kill()
			<-c.done
		}
		_ = f.Close()
		if t.Failed() {
			t.Logf("chat's terminal:\n%s", c.screen())
		}
	})
	return c
}

// screen is everything the chat printed, without escape sequences.
func (c *chatTerm) screen() string {
	return csi.ReplaceAllString(c.out.String(), "")
}

// expect waits at most 15 s for pattern in the output not yet consumed,
// consumes it up to the match's end, and returns the match.
func (c *chatTerm) expect(pattern string) string {
	c.t.Helper()
	re := regexp.MustCompile(pattern)
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		s := c.screen()
		if loc := re.FindStringIndex(s[c.seen:]); loc != nil {
			m := s[c.seen+loc[0] : c.seen+loc[1]]
			c.seen += loc[1]
			return m
		}
	}
	after := c.screen()[c.seen:]
	// A goroutine dump (printed by the cleanup with the terminal) says
	// where the chat hangs.
	_ = c.cmd.Process.Signal(syscall.SIGQUIT)
	time.Sleep(500 * time.Millisecond)
	c.t.Fatalf("no %q on the chat's terminal within 15 s; after what was consumed:\n%s", pattern, after)
	return ""
}

// send types keys.
func (c *chatTerm) send(keys string) {
	c.t.Helper()
	if _, err := c.pty.Write([]byte(keys)); err != nil {
		c.t.Fatal(err)
	}
}

// wait waits at most 15 s for the chat to exit and returns its code.
func (c *chatTerm) wait() int {
	c.t.Helper()
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		// A goroutine dump on the terminal says where it hangs.
		_ = c.cmd.Process.Signal(syscall.SIGQUIT)
		time.Sleep(500 * time.Millisecond)
		c.t.Fatalf("ralph chat still runs after 15 s")
	}
	return c.cmd.ProcessState.ExitCode()
}

// waitFile waits at most 15 s for the agent to write name.
func (c *chatTerm) waitFile(name string) {
	c.t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if _, err := os.Stat(c.path(name)); err == nil {
			return
		}
	}
	c.t.Fatalf("%s never appeared\n%s", name, c.screen())
}

const chatTasks = "# Tasks\n\n- [ ] T1: First\n- [ ] T2: Second\n- [ ] T3: Third\n"

// A chat that finds a session a dead ralph left running recovers it
// before its welcome (the task back to pending, the session paused, a
// recovered entry) and says so; /run continues it; /quit prints the
// summary.
func TestChatWelcomeAfterInterrupt(t *testing.T) {
	dir := chatProject(t, "# Tasks\n\n- [x] T1: First\n- [/] T2: Second\n\n## Session\n\n- id: 20261120-093000\n- status: running\n"+
		"- phase: agent\n- iteration: 3\n- task: T2\n- started: 2026-11-20T09:30:00Z\n")
	c := startChat(t, dir)
	// Recovered before the welcome: the agent a dead ralph left is stopped,
	// T2 is back to pending, the session paused for /run.
	c.expect(`↻ recovered session 20261120-093000, interrupted at iteration 3: T2 is back to pending; /run continues it`)
	c.expect(`ralph chat · .*\n`)
	c.expect(`tasks      2: 1 pending, 0 in progress, 1 done, 0 blocked, 0 skipped`)
	c.expect(`session    20261120-093000 paused at iteration 3; /run continues it`)
	c.expect(`ralph \(idle\) › `)
	if tasks := c.read("RALPH_TASKS.md"); !strings.Contains(tasks, "- [ ] T2: Second\n") || !strings.Contains(tasks, "- status: paused\n") {
		t.Errorf("not recovered at start:\n%s", tasks)
	}
	if p := c.read("RALPH_PROGRESS.md"); !strings.Contains(p, "session 20261120-093000 recovered") {
		t.Errorf("no recovered entry:\n%s", p)
	}
	c.send("/run\r")
	c.expect(`↻ resuming session 20261120-093000 \(paused at iteration 3, task T2\)`)
	c.expect(`✓ T2: done`)
	c.expect(`■ Done: every task is done`)
	c.expect(`ralph \(idle\) › `)
	c.send("/quit\r")
	c.expect(`Session: \d+s, 0 turns, 1 iteration, 1 task done \(T2\), tokens and cost unknown`)
	if code := c.wait(); code != 0 {
		t.Fatalf("exit %d after /quit", code)
	}
	tasks := c.read("RALPH_TASKS.md")
	for _, want := range []string{"- [x] T2: Second\n", "- id: 20261120-093000\n"} {
		if !strings.Contains(tasks, want) {
			t.Errorf("RALPH_TASKS.md lacks %q:\n%s", want, tasks)
		}
	}
	if _, err := os.Stat(c.path(".ralph/chat_history")); err != nil {
		t.Errorf("no history: %v", err)
	}
}

// Ctrl-C while an agent works stops its whole tree, puts the task back to
// pending, saves the session, and gives the prompt back; at the idle
// prompt a first Ctrl-C says how to leave and a second one leaves.
func TestChatCtrlCStopsWork(t *testing.T) {
	dir := chatProject(t, chatTasks)
	c := startChat(t, dir)
	c.touch("wait-T1")
	c.expect(`ralph \(idle\) › `)
	c.send("/run\r")
	c.waitFile("pid-T1")
	c.expect(`ralph \(working on T1, iteration 1\) › `)
	agent, sleep := c.pidIn("pid-T1"), c.pidIn("sleep-T1")
	began := time.Now()
	c.send("\x03")
	c.expect(`ralph \(paused\) › `)
	took := time.Since(began)
	t.Logf("Ctrl-C to the idle prompt: %s", took)
	for _, pid := range []int{agent, sleep} {
		if proctest.Alive(pid) {
			t.Errorf("pid %d still runs once the prompt is back", pid)
		}
	}
	tasks := c.read("RALPH_TASKS.md")
	for _, want := range []string{"- [ ] T1: First\n", "- status: paused\n", "  - note: interrupted at "} {
		if !strings.Contains(tasks, want) {
			t.Errorf("RALPH_TASKS.md lacks %q:\n%s", want, tasks)
		}
	}
	c.send("\x03")
	c.expect(`to leave: Ctrl-C again, Ctrl-D or /quit`)
	c.send("\x03")
	c.expect(`Session: `)
	if code := c.wait(); code != 0 {
		t.Fatalf("exit %d after Ctrl-C twice", code)
	}
}

// A line typed while an agent works is queued, acknowledged, and reaches
// the next agent's prompt, and that one only.
func TestChatGuidanceReachesNextAgentOnce(t *testing.T) {
	dir := chatProject(t, chatTasks)
	c := startChat(t, dir)
	c.touch("wait-T1")
	c.expect(`ralph \(idle\) › `)
	c.send("/run\r")
	c.waitFile("pid-T1")
	c.send("use tabs, not spaces\r")
	c.expect(`✉ queued for the next agent: "use tabs, not spaces"`)
	c.expect(`ralph \(working on T1, iteration 1, 1 queued\) › `)
	c.touch("go-T1")
	c.expect(`✉ T2's agent received: "use tabs, not spaces"`)
	c.expect(`■ Done: every task is done`)
	for task, want := range map[string]int{"T1": 0, "T2": 1, "T3": 0} {
		if got := strings.Count(c.read("prompt-"+task), "use tabs, not spaces"); got != want {
			t.Errorf("%s's prompt has the message %d times, want %d", task, got, want)
		}
	}
	if strings.Contains(c.read("RALPH_TASKS.md"), "use tabs") {
		t.Errorf("the message is still queued:\n%s", c.read("RALPH_TASKS.md"))
	}
	c.send("\x04")
	c.expect(`Session: \d+s, 0 turns, 3 iterations, 3 tasks done \(T1, T2, T3\)`)
	if code := c.wait(); code != 0 {
		t.Fatalf("exit %d after Ctrl-D", code)
	}
}

// A person's edit from another terminal shows as a one-line notice, and
// the half-typed line survives it.
func TestChatHandEditNotice(t *testing.T) {
	dir := chatProject(t, chatTasks)
	c := startChat(t, dir)
	c.expect(`ralph \(idle\) › `)
	c.send("/sta")
	c.expect(`/sta`)
	tasks := strings.Replace(chatTasks, "- [ ] T2: Second", "- [x] T2: Second", 1) + "- [ ] Fourth\n"
	if err := os.WriteFile(c.path("RALPH_TASKS.md"), []byte(tasks), 0o644); err != nil {
		t.Fatal(err)
	}
	c.expect(`✎ RALPH_TASKS.md: [^\n]*T2 marked done`)
	// readline draws the prompt and the typed text again below the notice.
	c.expect(`ralph \(idle\) › /sta`)
	c.send("tus\r")
	c.expect(`tasks      4: 3 pending, 0 in progress, 1 done`)
	c.send("/quit\r")
	if code := c.wait(); code != 0 {
		t.Fatalf("exit %d after /quit", code)
	}
}

// A closed terminal (SIGHUP) stops the work like Ctrl-C, prints the
// summary, and exits with 129.
func TestChatHangup(t *testing.T) {
	dir := chatProject(t, chatTasks)
	c := startChat(t, dir)
	c.touch("wait-T1")
	c.expect(`ralph \(idle\) › `)
	c.send("/run\r")
	c.waitFile("pid-T1")
	agent := c.pidIn("pid-T1")
	if err := c.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	c.expect(`Session: `)
	if code := c.wait(); code != 129 {
		t.Fatalf("exit %d after SIGHUP, want 129", code)
	}
	if proctest.Alive(agent) {
		t.Errorf("the agent (pid %d) outlived the chat", agent)
	}
	if tasks := c.read("RALPH_TASKS.md"); !strings.Contains(tasks, "- [ ] T1: First\n") || !strings.Contains(tasks, "- status: paused\n") {
		t.Errorf("T1 not back to pending, or the session not paused:\n%s", tasks)
	}
	if p := c.read("RALPH_PROGRESS.md"); !strings.Contains(p, "— chat session ended\n") || !strings.Contains(p, "- left: signal\n") {
		t.Errorf("the summary is not in the progress log:\n%s", p)
	}
}

// Plain `ralph` on a terminal is the chat (with the agent found on PATH:
// here the fake claude the tests put there).
func TestChatBareRalph(t *testing.T) {
	c := startOnPty(t, chatProject(t, chatTasks), nil)
	c.expect(`ralph chat · `)
	c.expect(`ralph \(idle\) › `)
	c.send("/quit\r")
	if code := c.wait(); code != 0 {
		t.Fatalf("exit %d after /quit", code)
	}
}

// A line starting with ! stops the current iteration and is answered as
// a conversation turn; then the work goes on by itself: the task goes
// first again, with the message in its prompt, once.
func TestChatUrgentMessage(t *testing.T) {
	dir := chatProject(t, chatTasks)
	c := startChat(t, dir)
	c.touch("wait-T1")
	c.expect(`ralph \(idle\) › `)
	c.send("/run\r")
	c.waitFile("pid-T1")
	first := c.pidIn("pid-T1")
	if err := os.Remove(c.path("pid-T1")); err != nil {
		t.Fatal(err)
	}
	c.send("!the API changed: use v2\r")
	c.expect(`✉ urgent: stopping the current iteration to answer "the API changed: use v2"`)
	c.expect(`■ T1: interrupted`)
	c.expect(`You said: the API changed: use v2\r?\n`)
	c.expect(`▶ T1: First \(iteration 2\)`)
	c.waitFile("pid-T1")
	if proctest.Alive(first) {
		t.Errorf("the first agent (pid %d) still runs", first)
	}
	// Once as guidance; the turn's progress entry may show it too.
	if n := strings.Count(c.read("prompt-T1"), "## Guidance from the user\n\n- the API changed: use v2\n"); n != 1 {
		t.Errorf("T1's second prompt has the message as guidance %d times, want 1:\n%s", n, c.read("prompt-T1"))
	}
	if !strings.Contains(c.read("turns"), "\n\nthe API changed: use v2\n") {
		t.Errorf("the turn's prompt lacks the message:\n%s", c.read("turns"))
	}
	c.touch("go-T1")
	c.expect(`■ Done: every task is done`)
	c.send("/quit\r")
	c.expect(`Session: \d+s, 1 turn, 4 iterations, 3 tasks done \(T1, T2, T3\)`)
	if code := c.wait(); code != 0 {
		t.Fatalf("exit %d after /quit", code)
	}
}

// A plain line at the idle prompt is a conversation turn: the answer
// shows, the agent's change to the tasks shows as a notice, the second
// turn continues the first (an exec agent has no session: the turn is
// replayed), each turn and the session's summary are in the progress log.
func TestChatConversation(t *testing.T) {
	dir := chatProject(t, chatTasks)
	c := startChat(t, dir)
	c.expect(`ralph \(idle\) › `)
	c.send("hello there\r")
	c.expect(`You said: hello there\r?\n`)
	c.expect(`\(\d+(\.\d+)?m?s · tokens unknown\)`)
	c.expect(`ralph \(idle\) › `)
	c.send("add a task\r")
	// The watcher's notice comes 50 ms after the agent's write: before
	// its answer or after it, as the machine's load has it.
	c.expect(`(?s)You said: add a task\r?\n.*✎ RALPH_TASKS.md: T9 added|✎ RALPH_TASKS.md: T9 added.*You said: add a task\r?\n`)
	c.expect(`ralph \(idle\) › `)
	turns := strings.Split(c.read("turns"), "----\n")
	if len(turns) != 3 || !strings.Contains(turns[1], "They said: hello there\n  You answered: You said: hello there") {
		t.Errorf("the second turn's prompt does not replay the first:\n%s", c.read("turns"))
	}
	c.send("/log\r")
	c.expect(`## .* — chat: add a task\r?\n- outcome: answered`)
	c.send("/quit\r")
	c.expect(`Session: \d+s, 2 turns, 0 iterations, no task done`)
	c.expect(`Decided: answered: hello there\r?\nDecided: answered: add a task\r?\n`)
	if code := c.wait(); code != 0 {
		t.Fatalf("exit %d after /quit", code)
	}
	progress := c.read("RALPH_PROGRESS.md")
	for _, want := range []string{"— chat: hello there\n- outcome: answered\n- agent: exec\n", "- answer: You said: hello there\n",
		"— chat session ended\n", "- left: quit\n- turns: 2\n- iterations: 0\n- done: none\n", "  - answered: add a task\n"} {
		if !strings.Contains(progress, want) {
			t.Errorf("RALPH_PROGRESS.md lacks %q:\n%s", want, progress)
		}
	}
	if !strings.Contains(c.read("RALPH_TASKS.md"), "- [ ] T9: Added in chat\n") {
		t.Errorf("T9 is gone:\n%s", c.read("RALPH_TASKS.md"))
	}
}

// Ctrl-C while the agent answers stops it, its whole tree, at once; the
// turn is recorded as interrupted and the prompt comes back.
func TestChatCtrlCStopsAnswer(t *testing.T) {
	dir := chatProject(t, chatTasks)
	c := startChat(t, dir)
	c.touch("wait-turn")
	c.expect(`ralph \(idle\) › `)
	c.send("think about it\r")
	c.waitFile("pid-turn")
	c.expect(`ralph \(answering\) › `)
	c.send("and this too\r")
	c.expect(`the agent is answering; your message comes next: 1 waiting`)
	agent := c.pidIn("pid-turn")
	began := time.Now()
	c.send("\x03")
	c.expect(`dropped 1 message waiting for the agent`)
	c.expect(`■ interrupted: stopped by the person`)
	c.expect(`ralph \(idle\) › `)
	t.Logf("Ctrl-C to the idle prompt during an answer: %s", time.Since(began))
	if proctest.Alive(agent) {
		t.Errorf("the answering agent (pid %d) still runs", agent)
	}
	if p := c.read("RALPH_PROGRESS.md"); !strings.Contains(p, "— chat: think about it\n- outcome: interrupted\n") {
		t.Errorf("no interrupted turn in the log:\n%s", p)
	}
	c.send("/quit\r")
	if code := c.wait(); code != 0 {
		t.Fatalf("exit %d after /quit", code)
	}
}

// A chat killed with SIGKILL mid-iteration leaves nothing running; the
// next chat says the session was interrupted and /run recovers and
// finishes it.
func TestChatKilledThenRecovered(t *testing.T) {
	dir := chatProject(t, chatTasks)
	c := startChat(t, dir)
	c.touch("wait-T1")
	c.expect(`ralph \(idle\) › `)
	c.send("/run\r")
	c.waitFile("pid-T1")
	agent, sleep := c.pidIn("pid-T1"), c.pidIn("sleep-T1")
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.wait()
	for _, pid := range []int{agent, sleep} {
		for deadline := time.Now().Add(5 * time.Second); proctest.Alive(pid) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if proctest.Alive(pid) {
			t.Errorf("pid %d outlived the killed chat by 5 s", pid)
		}
	}
	c.touch("go-T1")
	c2 := startChat(t, dir)
	c2.expect(`↻ recovered session \d+-\d+, interrupted at iteration 1: T1 is back to pending; /run continues it`)
	c2.expect(`session    \d+-\d+ paused at iteration 1`)
	c2.expect(`ralph \(idle\) › `)
	if tasks := c2.read("RALPH_TASKS.md"); !strings.Contains(tasks, "- [ ] T1: First\n") {
		t.Errorf("T1 not back to pending at the chat's start:\n%s", tasks)
	}
	c2.send("/run\r")
	c2.expect(`↻ resuming session \d+-\d+ \(paused at iteration 1, task T1`)
	c2.expect(`■ Done: every task is done`)
	c2.send("/quit\r")
	c2.expect(`Session: \d+s, 0 turns, 3 iterations, 3 tasks done \(T1, T2, T3\)`)
	if code := c2.wait(); code != 0 {
		t.Fatalf("exit %d after /quit", code)
	}
}

// On a terminal too dumb for line editing (TERM=dumb), chat reads plain
// lines: no prompt, no escape codes.
func TestChatDumbTerminal(t *testing.T) {
	c := startOnPty(t, chatProject(t, chatTasks), []string{"TERM=dumb"}, "chat", "--agent", "exec", "--agent-cmd", "sh agent.sh")
	c.expect(`Type /help for the commands`)
	c.send("/tasks\n")
	c.expect(`T3 +pending +Third`)
	c.send("/quit\n")
	c.expect(`Session: `)
	if code := c.wait(); code != 0 {
		t.Fatalf("exit %d after /quit", code)
	}
	if out := c.out.String(); strings.Contains(out, "\x1b") || strings.Contains(out, "ralph (idle)") {
		t.Errorf("escape codes or a prompt on a dumb terminal:\n%q", out)
	}
}

// A run does not end the chat's watch of the state files: in the next run,
// a person who marks the running task done stops its agent at once, as in
// the first.
func TestChatSecondRunSeesPersonsEdit(t *testing.T) {
	dir := chatProject(t, "# Tasks\n\n- [ ] T1: First\n")
	c := startChat(t, dir)
	c.expect(`ralph \(idle\) › `)
	c.send("/run\r")
	c.expect(`■ Done: every task is done`)
	c.expect(`ralph \(idle\) › `)
	c.touch("wait-T2")
	if err := os.WriteFile(c.path("RALPH_TASKS.md"), []byte(c.read("RALPH_TASKS.md")+"- [ ] T2: Second\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.send("/run\r")
	c.waitFile("pid-T2")
	tasks := strings.Replace(c.read("RALPH_TASKS.md"), "- [/] T2: Second", "- [x] T2: Second", 1)
	if err := os.WriteFile(c.path("RALPH_TASKS.md"), []byte(tasks), 0o644); err != nil {
		t.Fatal(err)
	}
	// The agent waits 20 s for go-T2, which never comes.
	c.expect(`a person marked T2 done`)
	c.send("/quit\r")
	if code := c.wait(); code != 0 {
		t.Fatalf("exit %d after /quit", code)
	}
}
