package coordinator

import (
	"sync"
	"time"
)

// EventKind names what happened. Every kind is declared here, once.
type EventKind string

// The events a front end receives. The streaming kinds (agent text, tool
// calls and results, usage) may be dropped when the front end falls behind;
// every other kind is always delivered, in order.
const (
	EventResumed           EventKind = "resumed"            // a run continues an earlier session: Text says which
	EventTaskStarted       EventKind = "task_started"       // an iteration starts: Iteration, Task, Title
	EventAgentText         EventKind = "agent_text"         // streaming: the agent's text
	EventToolUse           EventKind = "tool_use"           // streaming: the agent calls Tool
	EventToolResult        EventKind = "tool_result"        // streaming: a tool's result, shortened
	EventUsage             EventKind = "usage"              // streaming: the iteration's usage so far
	EventRetry             EventKind = "retry"              // a retry: the agent's CLI retries an API call, or ralph backs off before the next attempt (Delay)
	EventWaiting           EventKind = "waiting"            // the run waits for a usage or rate limit until Until
	EventNotice            EventKind = "notice"             // something a person should know: Text
	EventIterationDone     EventKind = "iteration_done"     // an iteration ended: Outcome, Reason, usage
	EventStateWritten      EventKind = "state_written"      // ralph wrote File
	EventStateChanged      EventKind = "state_changed"      // someone else changed File (Notify)
	EventGuidanceQueued    EventKind = "guidance_queued"    // a message was queued: Text
	EventGuidanceDelivered EventKind = "guidance_delivered" // an iteration received and answered the messages in Delivered
	EventStopped           EventKind = "stopped"            // a run ended: Reason, Text; one per run, its last event
	EventTurnStarted       EventKind = "turn_started"       // a conversation turn starts (Talk): Text is the person's message
	EventTurnDone          EventKind = "turn_done"          // a conversation turn ended: Text is the answer, Reason why it was not answered, usage
)

// dropped reports whether events of kind k may be dropped for a slow
// front end: streaming detail only.
func (k EventKind) dropped() bool {
	switch k {
	case EventAgentText, EventToolUse, EventToolResult, EventUsage:
		return true
	}
	return false
}

// Event is one thing that happened, for a front end to show. Its payload
// is typed: no time or number is packed into Text.
type Event struct {
	Kind      EventKind        `json:"event"`
	Time      time.Time        `json:"time"`
	Iteration int              `json:"iteration,omitempty"`
	Task      string           `json:"task,omitempty"`
	Title     string           `json:"title,omitempty"`
	Text      string           `json:"text,omitempty"`
	Tool      string           `json:"tool,omitempty"`
	TokensIn  int64            `json:"tokens_in,omitempty"`
	TokensOut int64            `json:"tokens_out,omitempty"`
	CostUSD   float64          `json:"cost_usd,omitempty"`
	Outcome   IterationOutcome `json:"outcome,omitempty"`
	// Reason is why: an iteration's note (iteration_done), the stop
	// reason as text (stopped; Stop has it typed).
	Reason string `json:"reason,omitempty"`
	// Stop is why a run ended (stopped).
	Stop StopReason `json:"-"`
	// Session is the session's id (resumed).
	Session string `json:"session,omitempty"`
	File    string `json:"file,omitempty"` // state_written, state_changed
	// Until is the end of a wait (waiting).
	Until time.Time `json:"until,omitzero"`
	// Delay is a retry's wait before it starts (retry).
	Delay time.Duration `json:"delay_ns,omitempty"`
	// Attempt counts a retry's attempts (retry): the task's failed
	// attempts, or the CLI's own retry number when it says.
	Attempt int `json:"attempt,omitempty"`
	// APIStatus is the HTTP status a CLI's retry follows (retry).
	APIStatus int `json:"api_status,omitempty"`
	// Delivered lists the guidance an iteration received (guidance_delivered).
	Delivered []string `json:"delivered,omitempty"`
	// UsageUnknown and CostUnknown mark tokens and cost the agent's CLI
	// did not report (the exec agent's): JSON has null for them, never a
	// 0 that reads as free (MarshalJSON, jsonform.go).
	UsageUnknown, CostUnknown bool `json:"-"`
	// AgentSession is the agent's own session id (iteration_done,
	// turn_done), when its CLI gave one; Model the model it ran.
	AgentSession string `json:"agent_session,omitempty"`
	Model        string `json:"model,omitempty"`
	// Position and Total place a task_started among the run's tasks:
	// "task 2 of 5", Total counting those done in this run and those
	// still open (pending, in progress, blocked).
	Position int `json:"position,omitempty"`
	Total    int `json:"total,omitempty"`
}

// stream carries events from the engine to one front end for as long as
// the coordinator lives. The engine never blocks on it: events wait in an
// unbounded queue, except streaming detail, which is dropped once
// maxBacklog events wait (a front end that stalls loses text, never a turn
// end, a retry, a wait, a notice or a state change).
type stream struct {
	out chan Event

	mu      sync.Mutex
	queue   []Event
	closed  bool
	wake    chan struct{}
	drained chan struct{}
}

const maxBacklog = 256

func newStream() *stream {
	s := &stream{out: make(chan Event), wake: make(chan struct{}, 1), drained: make(chan struct{})}
	go s.pump()
	return s
}

// send queues e, or drops it when it is streaming detail and the front end
// is behind. Sends after close are dropped.
func (s *stream) send(e Event) {
	s.mu.Lock()
	if s.closed || (e.Kind.dropped() && len(s.queue) >= maxBacklog) {
		s.mu.Unlock()
		return
	}
	s.queue = append(s.queue, e)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// pump hands queued events to the front end in order, and closes out once
// the stream is closed and its queue is empty.
func (s *stream) pump() {
	defer close(s.drained)
	defer close(s.out)
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return
			}
			<-s.wake
			continue
		}
		e := s.queue[0]
		s.queue[0] = Event{}
		s.queue = s.queue[1:]
		s.mu.Unlock()
		s.out <- e
	}
}

// close ends the stream once every queued event is delivered; it waits at
// most a second for a front end that stopped reading.
func (s *stream) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	select {
	case <-s.drained:
	case <-time.After(time.Second):
		// Nobody reads: drain in the background so the pump can end.
		go func() {
			for range s.out {
			}
		}()
	}
}
