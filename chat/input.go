package chat

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/chzyer/readline"
)

// inputKind says what a person did at the prompt.
type inputKind int

const (
	inputLine      inputKind = iota // a line, Enter pressed
	inputInterrupt                  // Ctrl-C; text is what the line held
	inputEOF                        // Ctrl-D at an empty prompt, or the end of piped input
)

// input is one thing from the person.
type input struct {
	kind inputKind
	text string
}

// terminal is where the session reads lines and prints. Only the session's
// loop calls print, setPrompt and next.
type terminal interface {
	// inputs delivers what the person does. After each one the reader
	// waits for next before it reads again.
	inputs() <-chan input
	next()
	// print writes text (whole lines) above the prompt.
	print(text string)
	setPrompt(prompt string)
	// interactive reports a person at a terminal: a prompt, keys.
	interactive() bool
	close()
}

// lineReader reads plain lines: stdin is a pipe or a file, or the
// terminal is too dumb for line editing. It writes no escape codes.
type lineReader struct {
	in   chan input
	ack  chan struct{}
	out  io.Writer
	done chan struct{}
}

func newLineReader(r io.Reader, w io.Writer) *lineReader {
	l := &lineReader{in: make(chan input), ack: make(chan struct{}, 1), out: w, done: make(chan struct{})}
	go l.read(r)
	return l
}

// read hands each line over and waits for the loop before the next: a
// script's lines are taken one at a time, in order.
func (l *lineReader) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 64*1024)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			if !l.send(input{kind: inputLine, text: strings.TrimRight(line, "\r\n")}) {
				return
			}
		}
		if err != nil {
			l.send(input{kind: inputEOF})
			return
		}
	}
}

func (l *lineReader) send(in input) bool {
	select {
	case l.in <- in:
	case <-l.done:
		return false
	}
	select {
	case <-l.ack:
		return true
	case <-l.done:
		return false
	}
}

func (l *lineReader) inputs() <-chan input { return l.in }
func (l *lineReader) next() {
	select {
	case l.ack <- struct{}{}:
	default: // already told
	}
}
func (l *lineReader) print(text string) { _, _ = io.WriteString(l.out, text) }
func (l *lineReader) setPrompt(string)  {}
func (l *lineReader) interactive() bool { return false }

// close stops the reader; a read that blocks on stdin is left to the
// process's exit.
func (l *lineReader) close() { close(l.done) }

// lineEditor reads lines with chzyer/readline on a terminal.
type lineEditor struct {
	rl *readline.Instance
	// stdin is closed first on close: readline closes only its own
	// buffer in front of it, and its terminal's reader would wait on the
	// read under way for ever.
	stdin io.Closer
	in    chan input
	// stopped is closed when the reader has ended.
	stopped chan struct{}
	ack     chan struct{}
	done    chan struct{}
	// start starts the reader, at the first inputs(): the prompt shows
	// once the session has printed its welcome, so nothing the person
	// types is taken (and no line readline resets) while the session
	// still prints through readline from another goroutine.
	start sync.Once
}

// newLineEditor opens readline on the terminal. It installs no signal
// handler (CaptureExitSignal is never called): Ctrl-C in raw mode is
// readline.ErrInterrupt, and the session's own handler takes SIGINT.
func newLineEditor(stdin io.Reader, stdout io.Writer, history, prompt string, complete readline.AutoCompleter) (*lineEditor, error) {
	rc, ok := stdin.(io.ReadCloser)
	if !ok {
		rc = io.NopCloser(stdin)
	}
	stdinR := readline.NewCancelableStdin(rc)
	rl, err := readline.NewEx(&readline.Config{
		Prompt:                 prompt,
		Stdin:                  stdinR,
		Stdout:                 stdout,
		Stderr:                 stdout,
		HistoryFile:            history,
		HistoryLimit:           1000,
		AutoComplete:           complete,
		InterruptPrompt:        "^C",
		EOFPrompt:              "\n",
		DisableAutoSaveHistory: false,
		HistorySearchFold:      true,
	})
	if err != nil {
		return nil, fmt.Errorf("open the line editor: %w", err)
	}
	e := &lineEditor{rl: rl, stdin: stdinR, in: make(chan input), ack: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	return e, nil
}

func (e *lineEditor) read() {
	defer close(e.stopped)
	for {
		line, err := e.rl.Readline()
		var in input
		switch {
		case errors.Is(err, readline.ErrInterrupt):
			in = input{kind: inputInterrupt, text: line}
		case err != nil:
			in = input{kind: inputEOF}
		default:
			in = input{kind: inputLine, text: line}
		}
		select {
		case e.in <- in:
		case <-e.done:
			return
		}
		if in.kind == inputEOF {
			return
		}
		select {
		case <-e.ack:
		case <-e.done:
			return
		}
	}
}

func (e *lineEditor) inputs() <-chan input {
	e.start.Do(func() { go e.read() })
	return e.in
}
func (e *lineEditor) next() {
	select {
	case e.ack <- struct{}{}:
	default:
	}
}

// print goes through readline's writer: while a line is being read it
// clears it, prints, and draws the prompt and the typed text again.
// (readline's raw mode keeps OPOST, so a newline still returns the
// carriage.)
func (e *lineEditor) print(text string) {
	_, _ = e.rl.Write([]byte(text))
}

func (e *lineEditor) setPrompt(prompt string) {
	e.rl.SetPrompt(prompt)
	e.rl.Refresh()
}

func (e *lineEditor) interactive() bool { return true }

func (e *lineEditor) close() {
	e.start.Do(func() { close(e.stopped) }) // never started: nothing to wait for
	close(e.done)
	_ = e.stdin.Close()
	// A Readline under way returns io.EOF; the reader ends before the
	// terminal leaves raw mode, which readline does not guard against a
	// Readline still entering it.
	e.rl.Operation.Close()
	select {
	case <-e.stopped:
	case <-time.After(time.Second):
	}
	_ = e.rl.Close()
}
