package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/mdstate"
	"github.com/ralph-dev/ralph/projectdetect"
)

// Options configure a chat session. The entry point reads the
// environment and the terminal; the session only uses what it is given.
type Options struct {
	// Coordinator is the project's engine, opened by the caller (which
	// took the lock with it) and closed by the caller after Run.
	Coordinator *coordinator.Coordinator
	In          io.Reader
	Out         io.Writer
	// Terminal is true when In and Out are a terminal that takes escape
	// codes (not TERM=dumb): readline, a prompt, Ctrl-C as a key.
	Terminal bool
	// Color allows color in the prompt (NO_COLOR unset).
	Color bool
	// RunCommand runs one of ralph's CLI commands in-process (args without
	// the program name; the caller adds the project folder), writing what
	// it prints, errors included, to out. It returns the exit code.
	RunCommand func(ctx context.Context, args []string, out io.Writer) int
	// Signals are the signals the entry point catches for the session:
	// SIGINT, SIGHUP and SIGTERM.
	Signals <-chan os.Signal
	// Git locates the user's git configuration, for the welcome's report.
	Git projectdetect.GitConfig
	// PickAgent finds the agent named name (/agent NAME [MODEL]) with
	// the person's settings, the model to use ("" for its default) and
	// its permission mode.
	PickAgent func(name, model string) (coordinator.Agent, string, agent.Permission, error)
}

// LeaveReason is why a session ended.
type LeaveReason string

// How a session ends.
const (
	LeftQuit      LeaveReason = "quit"      // /quit
	LeftEOF       LeaveReason = "eof"       // Ctrl-D, or the end of piped input
	LeftInterrupt LeaveReason = "interrupt" // Ctrl-C twice at an idle, empty prompt
	LeftSignal    LeaveReason = "signal"    // SIGHUP, SIGTERM, or SIGINT without a terminal
)

// Result is how a session ended, for the entry point's exit code.
type Result struct {
	Left   LeaveReason
	Signal os.Signal // with LeftSignal
	// LastRun is how the session's last run ended; nil when none ran.
	LastRun *coordinator.Outcome
	// TurnFailed is set when the last conversation turn failed.
	TurnFailed bool
	Summary    Summary
}

// Summary is what the session did, printed when it ends.
type Summary struct {
	Duration   time.Duration
	Iterations int
	Turns      int      // conversation turns with the agent
	Done       []string // the tasks completed, by ID
	Commits    int      // commits the session's runs made (--commit)
	TokensIn   int64
	TokensOut  int64
	CostUSD    float64
	Queued     []string // messages still queued for the agents
	Decisions  []string // the decisions the agents reported in conversation turns
	// UsageKnown and CostKnown are set when an agent reported its usage
	// or cost: without either, the 0s above are not figures.
	UsageKnown, CostKnown bool
}

// session is one chat. Every field is the loop's own: no other goroutine
// touches them.
type session struct {
	o     Options
	co    *coordinator.Coordinator
	term  terminal
	cmds  []command
	start time.Time

	running  bool // a run is under way (set by Start, cleared by its stopped event)
	draining bool // the input has ended: leave once the run ends
	ctrlC    int  // Ctrl-C presses in a row at an idle, empty prompt
	lastRun  *coordinator.Outcome
	prompt   string
	// talk is the conversation turn under way (nil when none); waiting
	// are the lines typed while it answers, for the next turns.
	talk    *talking
	waiting []string
	// deferred is piped input read while a turn ran: a script's next
	// line waits for the answer, as it would in a shell.
	deferred []input
	// urgentTurn is an urgent message to answer once the paused run has
	// stopped; resumeAfter starts the work again after that answer.
	urgentTurn  string
	resumeAfter bool
	turnFailed  bool // the last turn failed
	// startSession is the engine's session when the chat started: the
	// summary counts the commits made since.
	startSession mdstate.Session
	sum          Summary
	leave        LeaveReason
	signal       os.Signal
}

// Run holds the session until the person leaves; ctx bounds the runs it
// starts (the caller keeps Ctrl-C out of it: the session handles that).
func Run(ctx context.Context, o Options) (Result, error) {
	s := &session{o: o, co: o.Coordinator, cmds: commands(), start: time.Now()}
	s.startSession = savedSession(s.co.Project())
	term, err := s.openTerminal()
	if err != nil {
		return Result{}, err
	}
	s.term = term
	defer term.close()
	// A session a dead ralph left is recovered first: the welcome and
	// the conversation read the state after the crash.
	recovered, err := s.co.Recover()
	if err != nil {
		term.print(fmt.Sprintf("  ! could not recover the interrupted session: %v\n", err))
	}
	if recovered != "" {
		term.print("↻ " + recovered + "\n")
	}
	term.print(s.welcome(ctx))
	s.updatePrompt()
	s.loop(ctx)
	return s.finish(), nil
}

// openTerminal chooses readline on a terminal, plain lines otherwise.
func (s *session) openTerminal() (terminal, error) {
	if !s.o.Terminal {
		return newLineReader(s.o.In, s.o.Out), nil
	}
	history := filepath.Join(s.co.Project().Root, ".ralph", "chat_history")
	if err := os.MkdirAll(filepath.Dir(history), 0o755); err != nil {
		return nil, fmt.Errorf("create .ralph for the chat history: %w", err)
	}
	// The first prompt is readline's from the start: set afterwards, it
	// can miss the first draw and show only once a key is pressed.
	s.prompt = promptText(s.mode(), s.o.Color)
	return newLineEditor(s.o.In, s.o.Out, history, s.prompt, completer{s.co.Project(), s.cmds})
}

// loop is the one goroutine that reads input, shows events and prints,
// until the session ends.
func (s *session) loop(ctx context.Context) {
	events := s.co.Events()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	inputs := s.term.inputs()
	for s.leave == "" {
		select {
		case in := <-inputs:
			s.handleInput(ctx, in)
			if in.kind == inputEOF {
				inputs = nil // the reader has stopped
			} else {
				s.term.next()
			}
		case ev, ok := <-events:
			if !ok {
				s.leave = LeftEOF
				return
			}
			if s.talk != nil {
				s.showTurn(ev)
			} else {
				s.show(ev)
			}
			if ev.Kind == coordinator.EventStopped {
				s.runEnded(ctx)
			}
			if s.draining && !s.busy() {
				s.leave = LeftEOF
			}
		case end := <-s.turnDone():
			s.turnReturned(end)
			if s.draining && !s.busy() {
				s.leave = LeftEOF
			}
		case sig := <-s.o.Signals:
			s.handleSignal(sig)
		case <-tick.C:
			if s.running {
				s.updatePrompt()
			}
		}
	}
}

// handleInput acts on one thing the person did.
func (s *session) handleInput(ctx context.Context, in input) {
	if s.talk != nil && !s.term.interactive() {
		s.deferred = append(s.deferred, in)
		return
	}
	switch in.kind {
	case inputEOF:
		s.endOfInput()
		return
	case inputInterrupt:
		s.interrupt(in.text)
		return
	}
	s.ctrlC = 0
	line := strings.TrimSpace(in.text)
	switch {
	case line == "":
	case strings.HasPrefix(line, "/"):
		s.slash(ctx, line)
	case s.running:
		s.guide(line)
	case s.talk != nil || s.urgentTurn != "":
		s.waiting = append(s.waiting, strings.TrimSpace(strings.TrimPrefix(line, "!")))
		s.say(fmt.Sprintf("(the agent is answering; your message comes next: %d waiting)\n", len(s.waiting)))
	default:
		s.ask(ctx, strings.TrimSpace(strings.TrimPrefix(line, "!")))
	}
	s.updatePrompt()
}

// busy reports whether work or a conversation turn is under way.
func (s *session) busy() bool {
	return s.running || s.talk != nil || s.urgentTurn != ""
}

// endOfInput: Ctrl-D leaves; the end of a script waits for the run it
// started, so that `printf '/run\n' | ralph chat` is a run.
func (s *session) endOfInput() {
	if s.term.interactive() || !s.busy() {
		s.leave = LeftEOF
		return
	}
	s.draining = true
}

// interrupt is Ctrl-C: a hard stop while work runs; at an idle, empty
// prompt, a hint, and a second press in a row leaves.
func (s *session) interrupt(typed string) {
	if s.running || s.talk != nil {
		s.ctrlC = 0
		s.stopAll()
		return
	}
	if strings.TrimSpace(typed) != "" {
		s.ctrlC = 0 // Ctrl-C dropped the typed line, as in a shell
		return
	}
	s.ctrlC++
	if s.ctrlC >= 2 {
		s.leave = LeftInterrupt
		return
	}
	s.say("(to leave: Ctrl-C again, Ctrl-D or /quit)\n")
}

// handleSignal: SIGINT is the Ctrl-C key (the terminal sends it when no
// line is being read); SIGHUP and SIGTERM leave. Without a terminal there
// is no key: SIGINT leaves too.
func (s *session) handleSignal(sig os.Signal) {
	if sig == os.Interrupt && s.term.interactive() {
		s.interrupt("")
		s.updatePrompt()
		return
	}
	s.leave, s.signal = LeftSignal, sig
}

// stopAll is Ctrl-C while something runs: the work and the answer under
// way stop, and nothing waiting starts.
func (s *session) stopAll() {
	if n := len(s.waiting); n > 0 {
		s.say("(dropped " + plural(n, "message") + " waiting for the agent)\n")
	}
	s.waiting, s.resumeAfter, s.urgentTurn = nil, false, ""
	if s.running {
		s.stopWork()
	}
	if s.talk != nil {
		s.stopTalking()
	}
	s.updatePrompt()
}

// stopWork stops the run now and shows its last events; the state is
// saved when Stop returns.
func (s *session) stopWork() {
	began := time.Now()
	s.co.Stop(true)
	s.drainRun()
	s.say(fmt.Sprintf("work stopped in %s; /run continues the session\n", time.Since(began).Round(time.Millisecond)))
	s.updatePrompt()
}

// drainRun shows the events of a run that has ended (Stop returned, or
// the session leaves) up to its stopped event. The engine queued that
// event before Stop returned; the bound is for a stream already closed.
func (s *session) drainRun() {
	timeout := time.After(5 * time.Second)
	for s.running {
		select {
		case ev, ok := <-s.co.Events():
			if !ok {
				s.running = false
				return
			}
			s.show(ev)
		case <-timeout:
			s.running = false
			return
		}
	}
}

// guide queues a line typed while work runs; "!" makes it urgent.
func (s *session) guide(line string) {
	if rest, ok := strings.CutPrefix(line, "!"); ok {
		s.urgent(strings.TrimSpace(rest))
		return
	}
	g := coordinator.Guidance{Text: line}
	if err := s.co.Queue(g); err != nil {
		if errors.Is(err, coordinator.ErrEmptyGuidance) {
			s.say("(an empty message: nothing queued)\n")
			return
		}
		s.say(fmt.Sprintf("could not queue the message: %v\n", err))
		return
	}
	s.say(fmt.Sprintf("✉ queued for the next agent: %q\n", g.Text))
}

// slash runs a slash command.
func (s *session) slash(ctx context.Context, line string) {
	words, err := splitArgs(strings.TrimPrefix(line, "/"))
	if err != nil {
		s.say(fmt.Sprintf("%s: %v\n", line, err))
		return
	}
	if len(words) == 0 {
		s.say("type /help for the commands\n")
		return
	}
	name, args := strings.ToLower(words[0]), words[1:]
	c, ok := findCommand(s.cmds, name)
	if !ok {
		msg := fmt.Sprintf("unknown command /%s", name)
		if sug := suggest(s.cmds, name); len(sug) > 0 {
			msg += "; did you mean " + strings.Join(sug, " or ") + "?"
		}
		s.say(msg + " (/help lists them)\n")
		return
	}
	if c.cli != nil {
		s.runCLI(ctx, c.cli(args))
		return
	}
	if err := c.run(s, args); err != nil {
		s.say(err.Error() + "\n")
	}
}

// runCLI runs a CLI command in-process and prints what it printed.
func (s *session) runCLI(ctx context.Context, args []string) {
	var b strings.Builder
	s.o.RunCommand(ctx, args, &b)
	out := b.String()
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	s.say(out)
}

// say prints text above the prompt. Only the loop calls it.
func (s *session) say(text string) {
	if text == "" {
		return
	}
	if s.o.Color && s.term.interactive() {
		text = Colorize(text)
	}
	s.term.print(text)
}

// finish stops what still runs, saves, and prints the summary.
func (s *session) finish() Result {
	s.waiting, s.resumeAfter, s.urgentTurn = nil, false, ""
	if s.running {
		s.co.Stop(true)
		s.drainRun()
	}
	if s.talk != nil {
		s.stopTalking()
	}
	s.sum.Duration = time.Since(s.start)
	snap := s.co.Snapshot()
	s.sum.Queued = snap.Guidance
	if snap.Session.ID == s.startSession.ID {
		s.sum.Commits = snap.Session.Commits - s.startSession.Commits
	} else {
		s.sum.Commits = snap.Session.Commits
	}
	s.say(s.sum.String())
	if err := s.co.RecordChat(s.sum.record(s.leave)); err != nil {
		s.say(fmt.Sprintf("could not write the session's summary to the progress log: %v\n", err))
	}
	return Result{Left: s.leave, Signal: s.signal, LastRun: s.lastRun, Summary: s.sum, TurnFailed: s.turnFailed}
}

// savedSession is the session RALPH_TASKS.md holds; zero when none.
func savedSession(p *mdstate.Project) mdstate.Session {
	tasks, err := p.LoadChecklist(mdstate.TasksKind)
	if err != nil {
		return mdstate.Session{}
	}
	if s, _ := tasks.Session(); s != nil {
		return *s
	}
	return mdstate.Session{}
}

// record is the summary as the progress log keeps it.
func (m Summary) record(left LeaveReason) coordinator.ChatSummary {
	return coordinator.ChatSummary{Duration: m.Duration, Turns: m.Turns, Iterations: m.Iterations, Done: m.Done,
		Commits: m.Commits, TokensIn: m.TokensIn, TokensOut: m.TokensOut, CostUSD: m.CostUSD,
		Decisions: m.Decisions, Queued: m.Queued, Left: string(left),
		UsageUnknown: !m.UsageKnown && m.Turns+m.Iterations > 0, CostUnknown: !m.CostKnown && m.CostUSD == 0 && m.Turns+m.Iterations > 0}
}

// String is the summary's text.
func (m Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Session: %s, %s, %s, ", m.Duration.Round(time.Second), plural(m.Turns, "turn"), plural(m.Iterations, "iteration"))
	if len(m.Done) == 0 {
		b.WriteString("no task done")
	} else {
		fmt.Fprintf(&b, "%s done (%s)", plural(len(m.Done), "task"), strings.Join(m.Done, ", "))
	}
	if m.Commits > 0 {
		fmt.Fprintf(&b, ", %s", plural(m.Commits, "commit"))
	}
	b.WriteString(", " + m.spent() + "\n")
	for _, d := range m.Decisions {
		fmt.Fprintf(&b, "Decided: %s\n", d)
	}
	if len(m.Queued) > 0 {
		fmt.Fprintf(&b, "Still queued for the next agent: %s\n", quoteAll(m.Queued))
	}
	return b.String()
}

// spent is the session's tokens and cost, or that they are unknown.
func (m Summary) spent() string {
	if !m.UsageKnown && m.Turns+m.Iterations > 0 {
		return "tokens and cost unknown"
	}
	text := fmt.Sprintf("%d tokens in, %d out", m.TokensIn, m.TokensOut)
	if !m.CostKnown && m.CostUSD == 0 && m.Turns+m.Iterations > 0 {
		return text + ", cost unknown"
	}
	return text + fmt.Sprintf(", $%.4f", m.CostUSD)
}

// plural is "1 turn", "2 turns".
func plural(n int, word string) string { return coordinator.CountOf(n, word) }

func quoteAll(texts []string) string {
	q := make([]string, len(texts))
	for i, t := range texts {
		q[i] = fmt.Sprintf("%q", t)
	}
	return strings.Join(q, ", ")
}
