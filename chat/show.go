package chat

import (
	"fmt"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/coordinator"
)

// show prints one engine event above the prompt and keeps the session's
// account (running, the summary) current.
func (s *session) show(ev coordinator.Event) {
	s.count(ev)
	s.say(eventLine(ev))
	switch ev.Kind {
	case coordinator.EventAgentText, coordinator.EventToolUse, coordinator.EventToolResult, coordinator.EventUsage, coordinator.EventStateWritten:
		return // streaming detail and ralph's own writes: the prompt stays as it is
	}
	s.updatePrompt()
}

// count keeps the summary and the run's state.
func (s *session) count(ev coordinator.Event) {
	switch ev.Kind {
	case coordinator.EventTaskStarted:
		s.sum.Iterations++
	case coordinator.EventIterationDone:
		s.sum.TokensIn += ev.TokensIn
		s.sum.TokensOut += ev.TokensOut
		s.sum.CostUSD += ev.CostUSD
		s.sum.UsageKnown = s.sum.UsageKnown || !ev.UsageUnknown
		s.sum.CostKnown = s.sum.CostKnown || !ev.CostUnknown
		if ev.Outcome == coordinator.OutcomeDone {
			s.sum.Done = append(s.sum.Done, ev.Task)
		}
	case coordinator.EventStopped:
		s.running = false
		out, err := s.co.Wait()
		if err == nil {
			s.lastRun = &out
		} else {
			s.lastRun = &coordinator.Outcome{Reason: coordinator.StopError, Detail: err.Error()}
		}
	}
}

// eventLine is how an event shows: one line, or none.
func eventLine(ev coordinator.Event) string {
	switch ev.Kind {
	case coordinator.EventResumed:
		return "↻ " + ev.Text + "\n"
	case coordinator.EventTaskStarted:
		return StartLine(ev)
	case coordinator.EventAgentText:
		var b strings.Builder
		for _, l := range strings.Split(strings.TrimRight(ev.Text, "\n"), "\n") {
			b.WriteString("  │ " + l + "\n")
		}
		return b.String()
	case coordinator.EventToolUse:
		return "  ⚙ " + ev.Tool + "\n"
	case coordinator.EventRetry:
		return RetryLine(ev)
	case coordinator.EventWaiting:
		return fmt.Sprintf("⏸ usage or rate limit: waiting until %s (Ctrl-C stops)\n", ev.Until.Local().Format("15:04:05"))
	case coordinator.EventNotice:
		return "  ! " + ev.Text + "\n"
	case coordinator.EventStateChanged:
		return "  ✎ " + ev.Text + "\n"
	case coordinator.EventGuidanceDelivered:
		return fmt.Sprintf("  ✉ %s's agent received: %s\n", ev.Task, quoteAll(ev.Delivered))
	case coordinator.EventIterationDone:
		return IterationLine(ev)
	case coordinator.EventStopped:
		line := "■ " + Headline(ev.Stop)
		if ev.Text != "" {
			line += ": " + ev.Text
		}
		return line + "\n"
	}
	return "" // tool results, usage, ralph's own writes, the queue's echo of a line just acknowledged
}

// IterationLine is how an iteration's end reads, in chat and in `ralph
// run`'s display: its mark, task, outcome, reason and usage, on one line.
func IterationLine(ev coordinator.Event) string {
	mark := map[coordinator.IterationOutcome]string{coordinator.OutcomeDone: "✓", coordinator.OutcomeBlocked: "!", coordinator.OutcomeInterrupted: "■"}[ev.Outcome]
	if mark == "" {
		mark = "✗"
	}
	line := fmt.Sprintf("  %s %s: %s", mark, ev.Task, ev.Outcome)
	if ev.Reason != "" {
		line += " (" + ev.Reason + ")"
	}
	if ev.UsageUnknown {
		return line + " · tokens unknown\n" // the agent's CLI does not say
	}
	return fmt.Sprintf("%s · %d in, %d out tokens\n", line, ev.TokensIn, ev.TokensOut)
}

// StartLine is how an iteration's start reads, in chat and in `ralph
// run`'s display: the task, its iteration, and its place in the run.
func StartLine(ev coordinator.Event) string {
	line := fmt.Sprintf("▶ %s: %s (iteration %d)", ev.Task, ev.Title, ev.Iteration)
	if ev.Total > 1 {
		line += fmt.Sprintf(" · task %d of %d", ev.Position, ev.Total)
	}
	return line + "\n"
}

// headlines say how a run ended, in a person's words.
var headlines = map[coordinator.StopReason]string{
	coordinator.StopAllDone:     "Done",
	coordinator.StopNoneReady:   "Stopped",
	coordinator.StopLimit:       "Stopped at a limit",
	coordinator.StopInterrupted: "Interrupted",
	coordinator.StopPaused:      "Paused",
	coordinator.StopFailed:      "Failed",
	coordinator.StopLowDisk:     "Paused for disk space",
	coordinator.StopError:       "Stopped by an error",
}

// Headline is how a run that ended for r is announced, in chat and in
// `ralph run`'s summary: "Done", "Stopped at a limit"…
func Headline(r coordinator.StopReason) string {
	if h, ok := headlines[r]; ok {
		return h
	}
	return string(r)
}

// RetryLine is how a retry reads, in chat and in `ralph run`'s display:
// the agent's CLI retrying an API call ("retry 2/10 after HTTP 529 in
// 1.2s"), or ralph backing off before the next attempt.
func RetryLine(ev coordinator.Event) string {
	text := ev.Text
	if text == "" {
		text = fmt.Sprintf("retrying in %s", ev.Delay.Round(time.Second))
	}
	if ev.Task != "" {
		text = ev.Task + ": " + text
	}
	return "  ↻ " + text + "\n"
}

// updatePrompt sets the prompt to the current mode, when it changed.
func (s *session) updatePrompt() {
	if !s.term.interactive() {
		return
	}
	p := promptText(s.mode(), s.o.Color)
	if p != s.prompt {
		s.prompt = p
		s.term.setPrompt(p)
	}
}

// mode is what the engine is doing, in a few words: idle; answering;
// working on T3, iteration 4; pausing; paused; waiting until 14:05. Messages still
// queued are counted.
func (s *session) mode() string {
	snap := s.co.Snapshot()
	var m string
	switch {
	case s.talk != nil || s.urgentTurn != "":
		m = "answering"
		if s.resumeAfter {
			m += ", then working"
		}
		if n := len(s.waiting); n > 0 {
			m += fmt.Sprintf(", %d waiting", n)
		}
	case !s.running && s.lastRun != nil && (s.lastRun.Reason == coordinator.StopPaused || s.lastRun.Reason == coordinator.StopInterrupted):
		m = "paused"
	case !s.running:
		m = "idle"
	case !snap.WaitUntil.IsZero():
		m = "waiting until " + snap.WaitUntil.Local().Format("15:04")
	case snap.Task != "":
		m = fmt.Sprintf("working on %s, iteration %d", snap.Task, snap.Iteration)
	default:
		m = "working"
	}
	if s.running && snap.Paused {
		m += ", pausing after it"
	}
	if n := len(snap.Guidance); n > 0 {
		m += fmt.Sprintf(", %d queued", n)
	}
	return m
}

// promptText is the prompt for a mode, bold when color is allowed.
func promptText(mode string, color bool) string {
	if color {
		return "\033[1mralph\033[0m (" + mode + ") › "
	}
	return "ralph (" + mode + ") › "
}
