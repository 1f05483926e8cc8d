package coordinator

import (
	"time"

	"github.com/ralph-dev/ralph/mdstate"
)

// Snapshot is everything a front end shows about the engine, at one
// instant.
type Snapshot struct {
	Running bool // a run is going on
	Paused  bool // Pause was called during this run and has not taken effect yet
	Agent   string
	Model   string
	// Session is the session as ralph last saved it.
	Session mdstate.Session
	// The iteration under way: Task is "" between iterations.
	Iteration int
	Task      string
	Title     string
	TaskSince time.Time
	Tool      string // the agent's last tool call
	TokensIn  int64  // the iteration's usage so far
	TokensOut int64
	CostUSD   float64
	// WaitUntil is set while the run waits for a usage or rate limit.
	WaitUntil time.Time
	// Guidance is the queued guidance, as RALPH_TASKS.md has it now.
	Guidance []string
	// Last is the last event, streaming detail included.
	Last Event
}

// Snapshot returns what the engine knows now. It is safe to call from any
// goroutine at any time.
func (c *Coordinator) Snapshot() Snapshot {
	c.ctl.Lock()
	s := c.snap
	s.Running, s.Paused = c.running, c.running && c.paused
	c.ctl.Unlock()
	// Read from the file, not remembered: a person may have edited the
	// queue, and the file is the queue.
	if tasks, err := c.p.LoadChecklist(mdstate.TasksKind); err == nil {
		for _, g := range tasks.Guidance() {
			s.Guidance = append(s.Guidance, g.Text)
		}
	}
	return s
}

// observe keeps the snapshot current with each event.
func (c *Coordinator) observe(e Event) {
	c.ctl.Lock()
	defer c.ctl.Unlock()
	s := &c.snap
	s.Last = e
	switch e.Kind {
	case EventTaskStarted:
		s.Iteration, s.Task, s.Title, s.TaskSince = e.Iteration, e.Task, e.Title, e.Time
		s.Tool, s.TokensIn, s.TokensOut, s.CostUSD, s.WaitUntil = "", 0, 0, 0, time.Time{}
	case EventToolUse:
		s.Tool = e.Tool
	case EventUsage:
		s.TokensIn, s.TokensOut, s.CostUSD = e.TokensIn, e.TokensOut, e.CostUSD
	case EventIterationDone, EventStopped:
		s.Task, s.Title, s.Tool = "", "", ""
	case EventWaiting:
		s.WaitUntil = e.Until
	}
}

// saved records the session ralph just wrote.
func (c *Coordinator) saved(s mdstate.Session) {
	c.ctl.Lock()
	defer c.ctl.Unlock()
	c.snap.Session = s
}

// waitOver clears a wait from the snapshot once it is over or cut short.
func (c *Coordinator) waitOver() {
	c.ctl.Lock()
	defer c.ctl.Unlock()
	c.snap.WaitUntil = time.Time{}
}
