package coordinator

import (
	"errors"
	"strings"

	"github.com/ralph-dev/ralph/mdstate"
)

// Guidance is a person's message for the agents.
type Guidance struct {
	Text string
	// Urgent stops the current iteration (its task goes back to pending,
	// without counting an attempt, and goes first again), so that the
	// message reaches the next agent at once. The run goes on.
	Urgent bool
}

// ErrEmptyGuidance is Queue's answer to a message with no text.
var ErrEmptyGuidance = errors.New("the message is empty")

// Queue queues guidance for the next agent. It is written to
// RALPH_TASKS.md's "## Guidance" list at once, where a person can see,
// edit or delete it; it goes into the prompt of every iteration that
// starts while it is queued, and leaves the list once an iteration that
// received it ends with the agent's answer, recorded in that iteration's
// progress entry. It survives a crash, since it is in the file.
func (c *Coordinator) Queue(g Guidance) error {
	text := oneLineText(g.Text)
	if text == "" {
		return ErrEmptyGuidance
	}
	if _, err := c.p.UpdateChecklist(mdstate.TasksKind, func(e *mdstate.ChecklistEdit) error {
		return e.QueueGuidance(text)
	}); err != nil {
		return err
	}
	c.emit(Event{Kind: EventStateWritten, File: mdstate.TasksFile})
	c.emit(Event{Kind: EventGuidanceQueued, Text: text})
	if g.Urgent {
		c.ctl.Lock()
		stop := c.stopIter
		c.ctl.Unlock()
		if stop != nil {
			stop(errUrgent)
		}
	}
	return nil
}

// guidanceBlock is the prompt's section for queued guidance.
func guidanceBlock(texts []string) string {
	if len(texts) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Guidance from the user\n\n")
	for _, t := range texts {
		b.WriteString("- " + oneLineText(t) + "\n")
	}
	return b.String()
}
