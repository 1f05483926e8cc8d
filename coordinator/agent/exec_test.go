//go:build linux

package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
)

// agentScript writes a shell script that records its arguments and stdin
// in the folder it runs in, then runs body.
func agentScript(t *testing.T, body string) string {
	t.Helper()
	// A space in the path: the command line must quote it.
	dir := filepath.Join(t.TempDir(), "my agents")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "agent.sh")
	src := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > args.txt\ncat > prompt.txt\n" + body + "\n"
	if err := os.WriteFile(path, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExecRun(t *testing.T) {
	path := agentScript(t, `
echo "You said: $(head -n 1 prompt.txt) <promise>COMPLETE</promise>"
echo
echo "Working on it."
echo "Still working."
printf '\n\n'
echo "Done: wrote the file."
echo "<promise>COMPLETE</promise>"
printf '\n\n'`)
	b, err := Exec(`sh "` + path + `" 'first arg' "second \"quoted\" arg" plain\ word`)
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != "exec" {
		t.Errorf("Name() = %q", b.Name())
	}
	dir := t.TempDir()
	var raw proctest.SyncBuffer
	ev := &events{t: t}
	prompt := strings.Repeat("a long prompt line\n", 10000) // > 128 KiB
	res, err := b.Run(t.Context(), Request{Prompt: prompt, Dir: dir, RawLog: &raw, NoOutputTimeout: 10 * time.Second, Grace: 200 * time.Millisecond}, ev.on)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || res.ExitCode != 0 || res.PID <= 0 {
		t.Fatalf("got %+v", res)
	}
	// The last paragraph only: the echoed prompt above carries the marker
	// too and must not be taken for the answer.
	if want := "Done: wrote the file.\n<promise>COMPLETE</promise>"; res.Final != want {
		t.Errorf("Final = %q, want %q", res.Final, want)
	}
	gotPrompt, _ := os.ReadFile(filepath.Join(dir, "prompt.txt"))
	if string(gotPrompt) != prompt {
		t.Errorf("the prompt did not arrive whole on stdin (%d of %d bytes)", len(gotPrompt), len(prompt))
	}
	args, _ := os.ReadFile(filepath.Join(dir, "args.txt"))
	if want := "first arg\nsecond \"quoted\" arg\nplain word\n"; string(args) != want {
		t.Errorf("args %q, want %q", args, want)
	}
	if !strings.Contains(raw.String(), "Working on it.\nStill working.\n\n\nDone") {
		t.Errorf("raw log %q", raw.String())
	}
	k := ev.kinds()
	if len(k) != 6 || k[0] != EventText || k[5] != EventResult || ev.list[5].Text != res.Final {
		t.Errorf("events %v", ev.list)
	}
	assertGone(t, res.PID, res.PID)
}

// A person's extra arguments (Request.Args, from their agent settings)
// come after the command's own, in the command shown and the one run.
func TestExecArgs(t *testing.T) {
	path := agentScript(t, "echo done")
	b, err := Exec("sh '" + path + "' own")
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Prompt: "p", Dir: t.TempDir(), Args: []string{"--extra", "two words"}, NoOutputTimeout: 10 * time.Second, Grace: 200 * time.Millisecond}
	if got, want := b.Command(req), []string{"sh", path, "own", "--extra", "two words"}; !slices.Equal(got, want) {
		t.Errorf("Command = %q, want %q", got, want)
	}
	res, err := b.Run(t.Context(), req, nil)
	if err != nil || res.IsError || res.Final != "done" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	args, _ := os.ReadFile(filepath.Join(req.Dir, "args.txt"))
	if want := "own\n--extra\ntwo words\n"; string(args) != want {
		t.Errorf("args %q, want %q", args, want)
	}
	// The backend is shared by runs: one's arguments stay its own.
	if got, want := b.Command(Request{}), []string{"sh", path, "own"}; !slices.Equal(got, want) {
		t.Errorf("Command without Args = %q, want %q", got, want)
	}
	assertGone(t, res.PID, res.PID)
}

func TestExecFailures(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		noOut   time.Duration
		kind    ErrorKind
		exit    int
		errText string
		final   string
	}{
		{name: "crash", body: "echo partial work\necho 'fatal: out of cheese' >&2\nexit 4", kind: KindCrashed, exit: 4, errText: "exit code 4: fatal: out of cheese", final: "partial work"},
		{name: "silent", body: "exit 0", kind: KindBadOutput, errText: "without printing anything"},
		{name: "hang", body: "echo started\nexec sleep 30", noOut: 300 * time.Millisecond, kind: KindNoOutput, exit: -1, final: "started"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Exec("sh '" + agentScript(t, tt.body) + "'")
			if err != nil {
				t.Fatal(err)
			}
			req := Request{Prompt: "p", Dir: t.TempDir(), NoOutputTimeout: 10 * time.Second, Grace: 200 * time.Millisecond}
			if tt.noOut > 0 {
				req.NoOutputTimeout = tt.noOut
			}
			start := time.Now()
			res, err := b.Run(t.Context(), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || res.ErrorKind != tt.kind || res.ExitCode != tt.exit || res.Final != tt.final || !strings.Contains(res.ErrorText, tt.errText) {
				t.Fatalf("got %+v", res)
			}
			if tt.noOut > 0 && time.Since(start) > tt.noOut+req.Grace+time.Second {
				t.Errorf("stopped after %s", time.Since(start))
			}
			assertGone(t, res.PID, res.PID)
		})
	}
}

func TestExecNotFound(t *testing.T) {
	_, err := Exec("no-such-agent-ralph --flag")
	if err == nil || !strings.Contains(err.Error(), "no-such-agent-ralph is not on PATH") {
		t.Fatalf("Exec = %v", err)
	}
	for _, cmd := range []string{"", "   ", `agent "unclosed`, `agent \`} {
		if _, err := Exec(cmd); err == nil {
			t.Errorf("Exec(%q): no error", cmd)
		}
	}
	// A path is looked for when the child starts, in the project root.
	b, err := Exec("./missing-agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Run(t.Context(), Request{Prompt: "p", Dir: t.TempDir()}, nil)
	if err == nil || !strings.Contains(err.Error(), "./missing-agent.sh not found") {
		t.Fatalf("Run = %v", err)
	}
}

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"agent", []string{"agent"}},
		{"  agent  -v\t--x=1 ", []string{"agent", "-v", "--x=1"}},
		{`agent 'single quoted' "double quoted"`, []string{"agent", "single quoted", "double quoted"}},
		{`agent 'it''s' "a \"b\" \\ \$HOME \x"`, []string{"agent", "its", `a "b" \ $HOME \x`}},
		{`agent it\'s back\\slash \ space`, []string{"agent", "it's", `back\slash`, " space"}},
		{`agent '' ""`, []string{"agent", "", ""}},
		{`agent 'no $expansion' "nor *"`, []string{"agent", "no $expansion", "nor *"}},
		{"agent a\\\nb", []string{"agent", "ab"}},
		{`a"b"'c'd`, []string{"abcd"}},
		{"", nil},
	}
	for _, tt := range tests {
		got, err := SplitCommand(tt.in)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{`a 'b`, `a "b`, `a b\`} {
		if _, err := SplitCommand(bad); err == nil {
			t.Errorf("SplitCommand(%q): no error", bad)
		}
	}
}

// The same split reads the args and env of a person's agent settings
// (agentconfig), and its errors are shown to them as they are.
func TestSplitCommandSettings(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  string
	}{
		{"", nil, ""},
		{"--verbose", []string{"--verbose"}, ""},
		{"  -c  a=b\t--x ", []string{"-c", "a=b", "--x"}, ""},
		{`--prompt 'two words' "and $HOME" back\ slash`, []string{"--prompt", "two words", "and $HOME", "back slash"}, ""},
		{`"say \"hi\" \n"`, []string{`say "hi" \n`}, ""},
		{`'it'\''s'`, []string{"it's"}, ""},
		{`''`, []string{""}, ""},
		{`'open`, nil, "unterminated ' quote"},
		{`"open`, nil, `unterminated " quote`},
		{`end\`, nil, "ends with a lone backslash"},
	}
	for _, tt := range tests {
		got, err := SplitCommand(tt.in)
		switch {
		case tt.err != "":
			if err == nil || err.Error() != tt.err {
				t.Errorf("SplitCommand(%q) error = %v, want %q", tt.in, err, tt.err)
			}
		case err != nil || !slices.Equal(got, tt.want):
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestFinalParagraph(t *testing.T) {
	tests := []struct {
		out, want string
	}{
		{"one line", "one line"},
		{"a\n\nb\nc\n", "b\nc"},
		{"a\n\nb\n\n\n   \n", "b"},
		{"a\r\n\r\nlast\r\n", "last"},
		{"\n\n", ""},
	}
	for _, tt := range tests {
		s := &textStream{streamState: newStreamState(nil)}
		for _, l := range strings.Split(tt.out, "\n") {
			s.line([]byte(l))
		}
		if got := s.final(); got != tt.want {
			t.Errorf("final of %q = %q, want %q", tt.out, got, tt.want)
		}
	}
	// A paragraph that never ends keeps its last 64 KiB.
	s := &textStream{streamState: newStreamState(nil)}
	for range 10000 {
		s.line([]byte(strings.Repeat("z", 99)))
	}
	s.line([]byte("the end"))
	if got := s.final(); len(got) > maxParagraph || !strings.HasSuffix(got, "\nthe end") {
		t.Errorf("long paragraph: %d bytes, ends %q", len(got), got[len(got)-20:])
	}
}

// A relative program path is found in the project root, where the child
// runs, not in ralph's working folder.
func TestExecRelativePath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "agent.sh"), []byte("#!/bin/sh\ncat >/dev/null\necho from the project\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := Exec("./agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Run(t.Context(), Request{Prompt: "p", Dir: dir}, nil)
	if err != nil || res.IsError || res.Final != "from the project" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
}
