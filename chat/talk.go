package chat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/coordinator/proc"
)

// Conversation turns: a plain line at an idle prompt goes to the agent
// (coordinator.Talk) in the background, so that the loop keeps reading
// keys. Lines typed while it answers wait for the next turn; Ctrl-C or
// /stop stops the answer. An urgent "!" line typed while work runs
// pauses the work, is answered as a turn, and then the work goes on with
// the message in the next agent's prompt, unless the person paused or
// stopped it meanwhile.

// turnEnd is how a turn goroutine ended, for the loop.
type turnEnd struct {
	turn coordinator.Turn
	err  error
}

// talking is the turn under way; the loop's own.
type talking struct {
	cancel context.CancelCauseFunc
	done   chan turnEnd
	// held are the agent's texts since its last tool call, not shown
	// yet: they are its answer if no tool call follows, and the answer is
	// shown whole, without its report tags, when the turn ends.
	held []string
	// end is what Talk returned, kept until its EventTurnDone is shown:
	// the turn's events and its return come by two roads.
	end *turnEnd
	// finished is set when EventTurnDone was shown.
	finished bool
}

// ask starts a turn with text.
func (s *session) ask(ctx context.Context, text string) {
	turnCtx, cancel := context.WithCancelCause(ctx)
	t := &talking{cancel: cancel, done: make(chan turnEnd, 1)}
	s.talk = t
	go func() {
		turn, err := s.co.Talk(turnCtx, text)
		t.done <- turnEnd{turn, err}
	}()
	s.updatePrompt()
}

// stopTalking stops the answer under way at once (the agent's tree is
// stopped, as a hard stop of the work is) and waits for the turn to be
// recorded.
func (s *session) stopTalking() {
	if s.talk == nil {
		return
	}
	s.talk.cancel(proc.ErrStopNow)
	timeout := time.After(10 * time.Second) // bounded: the turn ends with the agent
	for s.talk != nil {
		select {
		case end := <-s.turnDone():
			s.turnReturned(end)
		case ev, ok := <-s.co.Events():
			if !ok {
				s.talk = nil
				return
			}
			s.showTurn(ev)
		case <-timeout:
			s.talk = nil
		}
	}
}

// turnReturned is Talk's return. A turn that began is over once its
// EventTurnDone is shown too; one refused at once never sends it.
func (s *session) turnReturned(end turnEnd) {
	refused := errors.Is(end.err, coordinator.ErrRunning) || errors.Is(end.err, coordinator.ErrTalking) || errors.Is(end.err, coordinator.ErrClosed)
	if s.talk.finished || refused {
		s.answered(end)
		return
	}
	s.talk.end = &end
}

// turnDone returns the channel the turn under way reports on; nil when
// none runs, which the loop's select never picks.
func (s *session) turnDone() <-chan turnEnd {
	if s.talk == nil {
		return nil
	}
	return s.talk.done
}

// answered shows how a turn ended, and goes on: the next waiting line, or
// the work an urgent message paused.
func (s *session) answered(end turnEnd) {
	s.talk = nil
	s.turnFailed = end.err != nil || end.turn.Outcome == coordinator.TurnFailed
	switch t := end.turn; {
	case end.err != nil:
		s.say(fmt.Sprintf("the agent could not answer: %v\n", end.err))
	case t.Outcome == coordinator.TurnAnswered:
		s.sum.Turns++
		if strings.TrimSpace(t.Answer) == "" {
			s.say("(the agent answered nothing)\n")
		}
		s.say(turnFooter(t))
	default:
		s.sum.Turns++
		s.say(fmt.Sprintf("■ %s: %s%s", t.Outcome, t.Note, turnFooter(t)))
	}
	s.sum.TokensIn += end.turn.TokensIn
	s.sum.TokensOut += end.turn.TokensOut
	s.sum.CostUSD += end.turn.CostUSD
	if end.err == nil {
		s.sum.UsageKnown = s.sum.UsageKnown || !end.turn.UsageUnknown
		s.sum.CostKnown = s.sum.CostKnown || end.turn.CostUSD > 0
	}
	s.sum.Decisions = append(s.sum.Decisions, end.turn.Decisions...)
	s.afterTurn()
}

// afterTurn starts what waits for the agent: the next line typed during
// the answer, else the work an urgent message paused.
func (s *session) afterTurn() {
	for len(s.deferred) > 0 && s.talk == nil {
		in := s.deferred[0]
		s.deferred = s.deferred[1:]
		s.handleInput(context.Background(), in)
	}
	if s.talk != nil {
		return // a deferred line started the next turn
	}
	if len(s.waiting) > 0 {
		next := s.waiting[0]
		s.waiting = s.waiting[1:]
		s.say("› " + next + "\n")
		s.ask(context.Background(), next)
		return
	}
	if s.resumeAfter {
		s.resumeAfter = false
		if err := s.startRun(context.Background(), 0); err != nil {
			s.say(err.Error() + "\n")
		}
	}
	s.updatePrompt()
}

// turnFooter is the line under an answer: how long, what it cost, what
// it changed.
func turnFooter(t coordinator.Turn) string {
	parts := []string{t.Took.Round(100 * time.Millisecond).String(), fmt.Sprintf("%d in, %d out tokens", t.TokensIn, t.TokensOut)}
	if t.UsageUnknown {
		parts[1] = "tokens unknown"
	}
	if t.CostUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.4f", t.CostUSD))
	}
	if len(t.Files) > 0 {
		parts = append(parts, "changed "+strings.Join(t.Files, ", "))
	}
	return "  (" + strings.Join(parts, " · ") + ")\n"
}

// showTurn shows an event of the turn under way: its tool calls as they
// come, each after the texts that led to it, and the answer when the turn
// ends.
func (s *session) showTurn(ev coordinator.Event) {
	t := s.talk
	switch ev.Kind {
	case coordinator.EventTurnStarted, coordinator.EventUsage, coordinator.EventToolResult, coordinator.EventStateWritten:
	case coordinator.EventAgentText:
		t.held = append(t.held, ev.Text)
	case coordinator.EventToolUse:
		s.flushHeld()
		s.say("  ⚙ " + ev.Tool + "\n")
	case coordinator.EventTurnDone:
		if ev.Text != "" {
			s.say(strings.TrimRight(ev.Text, "\n") + "\n")
		}
		t.held, t.finished = nil, true
		if t.end != nil {
			s.answered(*t.end)
		}
	default:
		s.say(eventLine(ev))
	}
}

// flushHeld shows the held text as narration: something came after it,
// so it is not the answer.
func (s *session) flushHeld() {
	var b strings.Builder
	for _, text := range s.talk.held {
		for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			b.WriteString("  │ " + l + "\n")
		}
	}
	s.say(b.String())
	s.talk.held = nil
}

// urgent handles "!TEXT" while work runs: the work pauses (the current
// iteration stops, its task back to pending), the message is answered as
// a turn once it has, and the work then goes on by itself with the
// message in the next agent's prompt.
func (s *session) urgent(text string) {
	s.co.Pause()
	if err := s.co.Queue(coordinator.Guidance{Text: text, Urgent: true}); err != nil {
		s.co.Resume(context.Background()) //nolint:errcheck // a run is going on: Resume only takes the pause back
		if errors.Is(err, coordinator.ErrEmptyGuidance) {
			s.say("(an empty message: nothing queued)\n")
			return
		}
		s.say(fmt.Sprintf("could not queue the message: %v\n", err))
		return
	}
	s.urgentTurn, s.resumeAfter = text, true
	s.say(fmt.Sprintf("✉ urgent: stopping the current iteration to answer %q; the work goes on after the answer (/pause keeps it paused)\n", text))
}

// runEnded is called when a run's stopped event is shown: an urgent
// message waiting for it is answered now.
func (s *session) runEnded(ctx context.Context) {
	if s.urgentTurn == "" {
		return
	}
	text := s.urgentTurn
	s.urgentTurn = ""
	s.ask(ctx, text)
}
