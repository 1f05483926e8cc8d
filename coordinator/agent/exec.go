package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ralph-dev/ralph/coordinator/proc"
)

// Exec returns a backend that runs any program as the agent
// (`--agent exec --agent-cmd "PROGRAM ARGS"`): the prompt on stdin, plain
// text on stdout. command is split like a shell would split it (quotes and
// backslashes, SplitCommand), but no shell runs it. Request.Args (a
// person's settings) come after its own arguments; Request.Model is not
// passed on.
//
// The final message is the last non-empty paragraph of stdout (lines after
// the last blank line, trimmed; at most 64 KiB, keeping the end). Not all of
// stdout, even when it is short: a program that echoes the prompt first
// would otherwise hand back the prompt's completion marker as its answer
// (snarktank/ralph PR #31). Each non-empty stdout line is also a "text"
// event.
func Exec(command string) (Backend, error) {
	argv, err := SplitCommand(command)
	if err != nil {
		return nil, fmt.Errorf("--agent-cmd %q: %w", command, err)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf(`--agent-cmd is empty: give the program to run, e.g. --agent-cmd "my-agent --flag"`)
	}
	// A path is found when the child starts, relative to the project root;
	// a bare name must be on PATH now.
	if !strings.Contains(argv[0], "/") {
		if _, err := proc.LookPath(argv[0]); err != nil {
			return nil, fmt.Errorf("--agent-cmd: %s is not on PATH; install it or give its path", argv[0])
		}
	}
	return execBackend{argv: argv}, nil
}

type execBackend struct {
	contained
	argv []string
}

func (execBackend) Name() string { return "exec" }

// Command is the program and its arguments, as given, then req.Args; the
// prompt goes on stdin.
func (b execBackend) Command(req Request) []string { return slices.Concat(b.argv, req.Args) }

func (b execBackend) Run(ctx context.Context, req Request, onEvent func(Event)) (Result, error) {
	s := &textStream{streamState: newStreamState(onEvent)}
	name := b.argv[0]
	if strings.Contains(name, "/") && !filepath.IsAbs(name) && req.Dir != "" {
		name = filepath.Join(req.Dir, name) // relative to the project root, as documented
	}
	// A new slice: Runs may share b.
	args := slices.Concat(b.argv[1:], req.Args)
	end, err := runChild(ctx, proc.Cmd{Name: name, Args: args, Env: req.Env}, req, s)
	if err != nil {
		if errors.Is(err, proc.ErrNotFound) {
			return Result{}, fmt.Errorf("--agent-cmd: %s not found; install it or give its path", b.argv[0])
		}
		return Result{}, fmt.Errorf("start %s: %w", b.argv[0], err)
	}
	r := s.result(end)
	r.Final = s.final()
	switch {
	case end.stoppedFirst():
		markStopped(&r, end.stopped)
	case end.exitCode != 0:
		r.IsError, r.ErrorKind = true, KindCrashed
		r.ErrorText = b.argv[0] + ": " + exitText(end.exitCode)
		if tail := lastLines(end.stderrTail, 5, 500); tail != "" {
			r.ErrorText += ": " + tail
		}
	case r.Final == "":
		r.IsError, r.ErrorKind = true, KindBadOutput
		r.ErrorText = b.argv[0] + " exited 0 without printing anything"
	}
	s.onEvent(Event{Kind: EventResult, Text: r.Final})
	return r, nil
}

// maxParagraph bounds the final message kept from plain-text output.
const maxParagraph = 64 << 10

// textStream follows plain-text output, keeping only the paragraph being
// written and the last finished one. It has no session, and no answer
// before the child ends: it is never settled.
type textStream struct {
	streamState
	cur, last     []byte
	curHasContent bool
}

func (s *textStream) tooLong() {
	s.skipped++
	// A huge line is part of the paragraph being written; keep its place
	// so the paragraph is not mistaken for finished.
	s.curHasContent = true
}

func (s *textStream) line(b []byte) {
	b = bytes.TrimRight(b, "\r")
	if len(bytes.TrimSpace(b)) == 0 {
		if s.curHasContent {
			s.last = append(s.last[:0], s.cur...)
		}
		s.cur, s.curHasContent = s.cur[:0], false
		return
	}
	s.sendText(string(b))
	s.cur = append(s.cur, b...)
	s.cur = append(s.cur, '\n')
	s.curHasContent = true
	if len(s.cur) > maxParagraph {
		// Keep the end: that is where an agent states its outcome.
		cut := len(s.cur) - maxParagraph
		for cut < len(s.cur) && !utf8RuneStart(s.cur[cut]) {
			cut++
		}
		s.cur = append(s.cur[:0], s.cur[cut:]...)
	}
}

func (s *textStream) final() string {
	if s.curHasContent {
		return strings.TrimSpace(string(s.cur))
	}
	return strings.TrimSpace(string(s.last))
}

// SplitCommand splits a command line the way a POSIX shell splits words,
// for --agent-cmd and for the args and env of a person's agent settings:
// blanks (and newlines) separate words; single quotes keep everything
// literally; double quotes keep blanks, with \" \\ \$ \` escaped; a
// backslash outside quotes escapes the next character, and before a
// newline continues the line. No expansion of any kind happens.
func SplitCommand(s string) ([]string, error) {
	var (
		args    []string
		cur     strings.Builder
		inWord  bool
		quote   rune // 0, '\'' or '"'
		escaped bool
	)
	for _, r := range s {
		switch {
		case escaped:
			// In double quotes a backslash only escapes " \ $ ` and a
			// newline; before anything else it is kept.
			if quote == '"' && !strings.ContainsRune("\"\\$`\n", r) {
				cur.WriteByte('\\')
			}
			if r != '\n' { // backslash-newline continues the line
				cur.WriteRune(r)
			}
			escaped, inWord = false, true
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case quote == '"':
			if r == '"' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	switch {
	case quote != 0:
		return nil, fmt.Errorf("unterminated %c quote", quote)
	case escaped:
		return nil, errors.New("ends with a lone backslash")
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args, nil
}
