// Package agenttest holds stand-ins for real agent CLIs, for the tests of
// ralph's packages and for its testscript scenarios, and fake model
// servers for the real CLIs to talk to (FakeAPI, FakeResponses, FakeChat,
// FakeGemini: one Script runs against each), with what every test of a
// real CLI needs (CLI, RealCLI, RealDirs).
//
// FakeClaudeMain behaves like `claude -p --output-format stream-json
// --verbose` closely enough to drive ralph: it checks its flags the way the
// real CLI does, reads the prompt from stdin, and prints stream-json lines,
// steered by environment variables:
//
//	FAKE_CLAUDE_MODE    what to do (default: a successful one-tool turn)
//	                    hang               print nothing, never exit
//	                    hang_after_output  print init and a message, then hang
//	                    hang_after_result  a whole successful turn, then hang
//	                    crash              print a little, complain on stderr, exit 3
//	                    garbage            only non-JSON lines, exit 0
//	                    exit0_no_result    init and a message, exit 0
//	                    rate_limit         the CLI's 429 result, exit 1
//	                    huge               one 100 MB line (FAKE_CLAUDE_SIZE bytes), then a result
//	                    ignore_sigint      ignore SIGINT, start a grandchild that
//	                                       ignores it too, print init, hang
//	                    endless            an agent that never finishes: a tool
//	                                       call with its usage and its result,
//	                                       over and over (see @endless)
//
// With --include-partial-messages, @endless also prints the API's stream
// events, as the real CLI does, and only they carry a call's real output
// count.
//
//	FAKE_CLAUDE_SCRIPT  a file replayed instead of a mode (see Replay)
//	FAKE_CLAUDE_RECORD  a file to write what the fake was given (see Record)
//	FAKE_CLAUDE_PIDFILE a file to write the pids of the fake and of any
//	                    grandchild it starts, one a line
//	FAKE_CLAUDE_JOURNAL a file to append a line to as the fake comes up,
//	                    before it reads stdin, and once it has read it
//	                    (see Journal)
//	FAKE_CLAUDE_DEAF    "1": ignore SIGINT from the start, before stdin
//
// Register it in a test binary's TestMain (or in testscript.Main as
// "claude") and point the code under test at the test binary.
package agenttest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Record is what the fake writes to FAKE_CLAUDE_RECORD: how it was called.
type Record struct {
	Args   []string `json:"args"`
	Prompt string   `json:"prompt"` // read from stdin, or the prompt argument
	Dir    string   `json:"dir"`
	Env    []string `json:"env"`
}

// ReadRecord reads the record the fake wrote to path.
func ReadRecord(path string) (Record, error) {
	var r Record
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(data, &r)
}

// SessionID is the session id of the fake's built-in conversations.
const SessionID = "5e55f0a1-fa4e-4c1a-9d1e-000000000001"

// The endless mode's model, and the usage of each of its model calls: 1,000
// input tokens (200 of them written to the cache, 300 read from it) and
// 100 output tokens, one call every EndlessInterval.
const (
	EndlessModel                                                     = "claude-sonnet-4-5-20250929"
	EndlessInput, EndlessCacheWrite, EndlessCacheRead, EndlessOutput = 500, 200, 300, 100
	EndlessInterval                                                  = 10 * time.Millisecond
)

// The built-in conversations, in the script format of Replay. The tool
// result of the default one carries a completion marker and a usage-limit
// notice: ralph must read neither from tool output.
const (
	lineInit      = `{"type":"system","subtype":"init","cwd":"/fake","session_id":"` + SessionID + `","tools":["Write"],"model":"claude-fake-1","permissionMode":"bypassPermissions","claude_code_version":"fake"}`
	lineText      = `{"type":"assistant","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-fake-1","content":[{"type":"text","text":"I'll write the file."}],"usage":{"input_tokens":100,"cache_creation_input_tokens":20,"cache_read_input_tokens":30,"output_tokens":1}},"session_id":"` + SessionID + `"}`
	lineToolUse   = `{"type":"assistant","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-fake-1","content":[{"type":"tool_use","id":"toolu_01","name":"Write","input":{"file_path":"notes.txt","content":"<promise>COMPLETE</promise>"}}],"usage":{"input_tokens":100,"cache_creation_input_tokens":20,"cache_read_input_tokens":30,"output_tokens":1}},"session_id":"` + SessionID + `"}`
	lineResult    = `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_01","type":"tool_result","content":"File created: <promise>COMPLETE</promise>. Claude AI usage limit reached|1750708800"}]},"session_id":"` + SessionID + `"}`
	lineFinal     = `{"type":"assistant","message":{"id":"msg_02","type":"message","role":"assistant","model":"claude-fake-1","content":[{"type":"text","text":"Wrote notes.txt.\n<promise>COMPLETE</promise>"}],"usage":{"input_tokens":150,"output_tokens":1}},"session_id":"` + SessionID + `"}`
	lineSuccess   = `{"type":"result","subtype":"success","is_error":false,"duration_ms":1234,"num_turns":2,"result":"Wrote notes.txt.\n<promise>COMPLETE</promise>","stop_reason":"end_turn","session_id":"` + SessionID + `","total_cost_usd":0.0123,"usage":{"input_tokens":250,"cache_creation_input_tokens":20,"cache_read_input_tokens":30,"output_tokens":40},"terminal_reason":"completed","api_error_status":null}`
	line429Text   = `{"type":"assistant","message":{"id":"e1","model":"<synthetic>","role":"assistant","type":"message","content":[{"type":"text","text":"API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit"}]},"session_id":"` + SessionID + `","error":"rate_limit","is_api_error_message":true,"api_error_status":429}`
	line429Result = `{"type":"result","subtype":"success","is_error":true,"num_turns":1,"result":"API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit","session_id":"` + SessionID + `","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0},"terminal_reason":"api_error","api_error_status":429}`

	// lineEndlessInit names a model the price table knows, so that a
	// cost can be estimated from the usage @endless streams.
	lineEndlessInit = `{"type":"system","subtype":"init","cwd":"/fake","session_id":"` + SessionID + `","tools":["Bash"],"model":"` + EndlessModel + `","permissionMode":"bypassPermissions","claude_code_version":"fake"}`

	// Success is the default conversation: a tool call, its result, a final
	// message with a completion marker, and the result line.
	Success = lineInit + "\n" + lineText + "\n" + lineToolUse + "\n" + lineResult + "\n" + lineFinal + "\n" + lineSuccess + "\n"
)

var modes = map[string]string{
	"":                  Success,
	"hang":              "@hang\n",
	"hang_after_output": lineInit + "\n" + lineText + "\n@hang\n",
	"hang_after_result": Success + "@hang\n",
	"crash":             lineInit + "\n" + lineText + "\n@stderr Error: the fake crashed on purpose\n@stderr     at main (fake.js:1:1)\n@exit 3\n",
	"garbage":           "Warning: this is not JSON\n{\"type\":\"assistant\",\"message\n[1,2,3]\n\x00\x01 binary noise\n",
	"exit0_no_result":   lineInit + "\n" + lineText + "\n",
	"rate_limit":        lineInit + "\n" + line429Text + "\n" + line429Result + "\n@exit 1\n",
	"huge":              lineInit + "\n@huge\n" + lineFinal + "\n" + lineSuccess + "\n",
	"ignore_sigint":     "@ignore_sigint\n@grandchild\n" + lineInit + "\n@hang\n",
	"endless":           lineEndlessInit + "\n@endless\n",
	"grandchild":        "@ignore_sigint\n@hang\n",
}

// FakeClaudeMain runs the fake claude and returns its exit code.
func FakeClaudeMain() int {
	args := os.Args[1:]
	mode := os.Getenv("FAKE_CLAUDE_MODE")
	if mode == "grandchild" {
		return Replay(strings.NewReader(modes[mode]), os.Stdout, os.Stderr)
	}
	partialMessages = hasArg(args, "--include-partial-messages")
	if msg := checkArgs(args); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
		return 1
	}
	if os.Getenv("FAKE_CLAUDE_DEAF") == "1" {
		signal.Ignore(syscall.SIGINT)
	}
	journal := os.Getenv("FAKE_CLAUDE_JOURNAL")
	if journal != "" {
		appendLine(journal, journalLine(JournalUp))
	}
	prompt := lastPositional(args)
	if prompt == "" {
		data, _ := io.ReadAll(os.Stdin)
		prompt = string(data)
	}
	if journal != "" {
		appendLine(journal, journalLine(JournalPrompt))
	}
	if rec := os.Getenv("FAKE_CLAUDE_RECORD"); rec != "" {
		dir, _ := os.Getwd()
		data, _ := json.Marshal(Record{Args: args, Prompt: prompt, Dir: dir, Env: os.Environ()})
		if err := os.WriteFile(rec, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "fake claude:", err)
			return 1
		}
	}
	if strings.TrimSpace(prompt) == "" {
		fmt.Fprintln(os.Stderr, "Error: Input must be provided either through stdin or as a prompt argument when using --print")
		return 1
	}
	if pf := os.Getenv("FAKE_CLAUDE_PIDFILE"); pf != "" {
		appendLine(pf, strconv.Itoa(os.Getpid()))
	}
	var script io.Reader
	if path := os.Getenv("FAKE_CLAUDE_SCRIPT"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake claude:", err)
			return 1
		}
		defer f.Close()
		script = f
	} else {
		s, ok := modes[mode]
		if !ok {
			fmt.Fprintf(os.Stderr, "fake claude: unknown FAKE_CLAUDE_MODE %q\n", mode)
			return 2
		}
		script = strings.NewReader(s)
	}
	if m := argValue(args, "--model"); m != "" {
		// The real CLI names the model it was given in its lines.
		data, _ := io.ReadAll(script)
		script = strings.NewReader(strings.ReplaceAll(string(data), `"model":"claude-fake-1"`, `"model":"`+m+`"`))
	}
	return Replay(script, os.Stdout, os.Stderr)
}

// Moment is when a fake claude notes a JournalEntry.
type Moment string

// The moments of a journal.
const (
	JournalUp     Moment = "up"     // it runs, and has not read stdin yet
	JournalPrompt Moment = "prompt" // it has read its prompt
)

// JournalEntry is one line of a fake claude's journal (FAKE_CLAUDE_JOURNAL):
// a moment of the fake's, its parent (a supervisor, when contained), and
// the tasks its working directory's RALPH_TASKS.md had done and in
// progress then.
type JournalEntry struct {
	Moment Moment   `json:"moment"`
	PID    int      `json:"pid"`
	PPID   int      `json:"ppid"`
	Done   []string `json:"done"`  // the ids of the "- [x]" tasks
	Doing  []string `json:"doing"` // the ids of the "- [/]" tasks
}

// journalLine is the journal's line for the moment m, now.
func journalLine(m Moment) string {
	e := JournalEntry{Moment: m, PID: os.Getpid(), PPID: os.Getppid()}
	data, _ := os.ReadFile("RALPH_TASKS.md")
	for _, line := range strings.Split(string(data), "\n") {
		id, _, _ := strings.Cut(line[min(len(line), 6):], ":")
		switch {
		case strings.HasPrefix(line, "- [x] "):
			e.Done = append(e.Done, id)
		case strings.HasPrefix(line, "- [/] "):
			e.Doing = append(e.Doing, id)
		}
	}
	out, _ := json.Marshal(e)
	return string(out)
}

// AwaitJournal waits, at most limit, until the journal at path has n
// entries of the moment m, and returns it whole.
func AwaitJournal(path string, m Moment, n int, limit time.Duration) ([]JournalEntry, error) {
	deadline := time.Now().Add(limit)
	for {
		j, err := ReadJournal(path)
		if err != nil {
			return nil, err
		}
		seen := 0
		for _, e := range j {
			if e.Moment == m {
				seen++
			}
		}
		if seen >= n {
			return j, nil
		}
		if time.Now().After(deadline) {
			return j, fmt.Errorf("%s: %d of %d %q entries after %s", path, seen, n, m, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ReadJournal reads a fake claude's journal.
func ReadJournal(path string) ([]JournalEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var out []JournalEntry
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var e JournalEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// checkArgs refuses what the real CLI refuses (messages as 2.1.330 prints
// them).
func checkArgs(args []string) string {
	has := func(flag string) bool { return hasArg(args, flag) }
	if !has("-p") && !has("--print") {
		return "fake claude: only print mode (-p) is faked"
	}
	if has("--include-partial-messages") && !has("stream-json") && !has("--output-format=stream-json") {
		return "Error: --include-partial-messages requires --print and --output-format=stream-json."
	}
	if has("--dangerously-skip-permissions") && os.Geteuid() == 0 && os.Getenv("IS_SANDBOX") != "1" {
		return "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons"
	}
	for i, a := range args {
		if (a == "--output-format" && i+1 < len(args) && args[i+1] == "stream-json") || a == "--output-format=stream-json" {
			if !has("--verbose") {
				return "Error: When using --print, --output-format=stream-json requires --verbose"
			}
		}
		value := ""
		if i+1 < len(args) {
			value = args[i+1]
		}
		switch a {
		case "--permission-mode":
			switch value {
			case "acceptEdits", "bypassPermissions", "default", "dontAsk", "plan":
			default:
				return fmt.Sprintf("error: option '--permission-mode <mode>' argument '%s' is invalid. Allowed choices are acceptEdits, bypassPermissions, default, dontAsk, plan.", value)
			}
		case "--max-turns":
			if n, err := strconv.Atoi(value); err != nil || n < 1 {
				return fmt.Sprintf("error: --max-turns needs a positive number, not %q", value)
			}
		}
	}
	return ""
}

func hasArg(args []string, flag string) bool {
	for _, a := range args {
		if a == flag {
			return true
		}
	}
	return false
}

// partialMessages says whether the fake was asked for the API's stream
// events (--include-partial-messages).
var partialMessages bool

// lastPositional returns a prompt given as an argument, if any.
func lastPositional(args []string) string {
	takesValue := map[string]bool{"--output-format": true, "--model": true, "--max-turns": true, "--append-system-prompt": true, "--session-id": true, "--resume": true, "--input-format": true, "--permission-mode": true}
	var pos string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case takesValue[a]:
			i++
		case strings.HasPrefix(a, "-"):
		default:
			pos = a
		}
	}
	return pos
}

// Replay plays a script: each line is printed to stdout as it is, except
//
//	# comment         ignored, like blank lines
//	@sleep DURATION   wait (time.ParseDuration syntax)
//	@stderr TEXT      print TEXT to stderr
//	@exit N           exit with code N (the default is 0 at the end)
//	@hang             wait forever
//	@huge             print one stream-json line of FAKE_CLAUDE_SIZE bytes
//	                  (default 100 MB)
//	@ignore_sigint    ignore SIGINT from here on
//	@grandchild       start a copy of the fake that ignores SIGINT and
//	                  hangs, in the same process group
//	@endless          never end: every EndlessInterval, one model call as
//	                  the real CLI prints it (an assistant line with a Bash
//	                  tool call and the usage of the call's start, whose
//	                  output count is a placeholder 1, a new message id
//	                  each time, then the tool's result); with
//	                  --include-partial-messages, between stream events:
//	                  message_start with that usage before the assistant
//	                  line, message_delta with EndlessOutput and
//	                  message_stop after it
//
// and returns the exit code.
func Replay(script io.Reader, stdout, stderr io.Writer) int {
	out := bufio.NewWriterSize(stdout, 64<<10)
	defer out.Flush()
	sc := bufio.NewScanner(script)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		directive, arg, _ := strings.Cut(line, " ")
		switch {
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
			continue
		case !strings.HasPrefix(line, "@"):
			out.WriteString(line + "\n")
			// Each line reaches the reader as it is written, like the
			// real CLI's.
			out.Flush()
			continue
		}
		out.Flush()
		switch directive {
		case "@sleep":
			d, err := time.ParseDuration(arg)
			if err != nil {
				fmt.Fprintln(stderr, "fake claude: bad @sleep:", err)
				return 2
			}
			time.Sleep(d)
		case "@stderr":
			fmt.Fprintln(stderr, arg)
		case "@exit":
			n, err := strconv.Atoi(arg)
			if err != nil {
				fmt.Fprintln(stderr, "fake claude: bad @exit:", err)
				return 2
			}
			return n
		case "@hang":
			select {}
		case "@huge":
			if err := writeHuge(out); err != nil {
				return 1
			}
		case "@ignore_sigint":
			signal.Ignore(syscall.SIGINT)
		case "@grandchild":
			if err := startGrandchild(); err != nil {
				fmt.Fprintln(stderr, "fake claude:", err)
				return 1
			}
		case "@endless":
			endless(out)
		default:
			fmt.Fprintf(stderr, "fake claude: unknown directive %s\n", directive)
			return 2
		}
	}
	return 0
}

// endless prints one model call after another, forever (see @endless).
func endless(out *bufio.Writer) {
	for n := 1; ; n++ {
		start := fmt.Sprintf(`{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":1}`,
			EndlessInput, EndlessCacheWrite, EndlessCacheRead)
		if partialMessages {
			fmt.Fprintf(out, `{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_endless_%d","type":"message","role":"assistant","model":"%s","content":[],"usage":%s}},"session_id":"%s"}`+"\n",
				n, EndlessModel, start, SessionID)
		}
		fmt.Fprintf(out, `{"type":"assistant","message":{"id":"msg_endless_%d","type":"message","role":"assistant","model":"%s",`+
			`"content":[{"type":"tool_use","id":"toolu_endless_%d","name":"Bash","input":{"command":"ls"}}],"usage":%s},"session_id":"%s"}`+"\n",
			n, EndlessModel, n, start, SessionID)
		if partialMessages {
			fmt.Fprintf(out, `{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":%d}},"session_id":"%s","api_message_id":"msg_endless_%d"}`+"\n",
				EndlessOutput, SessionID, n)
			fmt.Fprintf(out, `{"type":"stream_event","event":{"type":"message_stop"},"session_id":"%s","api_message_id":"msg_endless_%d"}`+"\n", SessionID, n)
		}
		fmt.Fprintf(out, `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_endless_%d","type":"tool_result","content":"notes.txt"}]},"session_id":"%s"}`+"\n",
			n, SessionID)
		if out.Flush() != nil {
			return // the reader is gone
		}
		time.Sleep(EndlessInterval)
	}
}

// writeHuge prints one valid assistant line of FAKE_CLAUDE_SIZE bytes
// (default 100 MB), in 1 MiB pieces.
func writeHuge(out *bufio.Writer) error {
	size := 100 << 20
	if s := os.Getenv("FAKE_CLAUDE_SIZE"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return err
		}
		size = n
	}
	head := `{"type":"assistant","message":{"id":"msg_huge","content":[{"type":"text","text":"`
	tail := `"}]},"session_id":"` + SessionID + `"}` + "\n"
	if _, err := out.WriteString(head); err != nil {
		return err
	}
	piece := []byte(strings.Repeat("x", 1<<20))
	for left := size - len(head) - len(tail); left > 0; left -= len(piece) {
		if left < len(piece) {
			piece = piece[:left]
		}
		if _, err := out.Write(piece); err != nil {
			return err
		}
	}
	if _, err := out.WriteString(tail); err != nil {
		return err
	}
	return out.Flush()
}

// startGrandchild starts a copy of this program that ignores SIGINT and
// hangs: an agent's tool process. It stays in the fake's process group and
// has no parent-death signal, so only a group kill ends it. It uses
// os.StartProcess rather than package proc on purpose: proc would give it
// a group of its own.
func startGrandchild() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// os.StartProcess keeps duplicate variables and getenv takes the
	// first: drop the mode before setting it.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FAKE_CLAUDE_MODE=") {
			env = append(env, kv)
		}
	}
	env = append(env, "FAKE_CLAUDE_MODE=grandchild")
	p, err := os.StartProcess(self, []string{os.Args[0]}, &os.ProcAttr{Env: env})
	if err != nil {
		return err
	}
	if pf := os.Getenv("FAKE_CLAUDE_PIDFILE"); pf != "" {
		appendLine(pf, strconv.Itoa(p.Pid))
	}
	return p.Release()
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	f.WriteString(line + "\n")
}

// argValue is the value of flag in args ("" when it is not there).
func argValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}
