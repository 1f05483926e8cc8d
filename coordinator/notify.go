package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/mdstate"
	"github.com/ralph-dev/ralph/mdstate/watch"
)

// Change is a state file's change on disk that ralph did not make, for
// Notify: what the file watcher saw.
type Change struct {
	File string // a state file's name, e.g. mdstate.TasksFile
	// Summary says what changed in the model's terms, on one line
	// ("RALPH_TASKS.md: T3 marked done, T7 added"); "" when the watcher
	// could not tell.
	Summary string
	Missing bool // the file is gone, and stayed gone past an editor's save
}

// Notify tells the engine that someone else changed a state file on disk
// (the file watcher calls it; ralph's own writes are not changes). It is
// announced as EventStateChanged; an edit of RALPH_TASKS.md re-arms the
// circuit breaker, and if a person marked the running task done, skipped
// or blocked, or removed it, its agent is stopped at once (SIGINT, then
// SIGKILL after proc.HardGrace) and the person's status stays. Everything
// else a person changes reaches the next iteration, which reads the files
// afresh. Notify may be called from any goroutine.
func (c *Coordinator) Notify(ch Change) {
	if ch.File == mdstate.TasksFile {
		c.edited.Store(true)
	}
	c.emit(Event{Kind: EventStateChanged, File: ch.File, Text: changeText(ch)})
	if ch.File == mdstate.TasksFile && !ch.Missing {
		c.stopIfTaken()
	}
}

// changed is the watcher's report of a change, told to Notify.
func (c *Coordinator) changed(ch watch.Change) {
	c.Notify(Change{File: ch.File, Summary: ch.Summary(), Missing: ch.Missing})
}

func changeText(ch Change) string {
	switch {
	case ch.Missing:
		return ch.File + " was removed"
	case ch.Summary != "":
		return ch.Summary
	}
	return ch.File + " was edited"
}

// personEdit is the cause of an iteration stopped because a person took
// its task: marked it done, skipped or blocked, or removed it (status
// ""). It wraps proc.ErrStopNow: the person has decided, so the agent gets
// proc.HardGrace.
type personEdit struct {
	task   string
	status mdstate.Status
}

func (p *personEdit) Error() string {
	if p.status == "" {
		return "a person removed " + p.task
	}
	return fmt.Sprintf("a person marked %s %s", p.task, p.status)
}

func (p *personEdit) Unwrap() error { return proc.ErrStopNow }

// personCause returns the person's edit that cancelled ctx, if one did.
func personCause(ctx context.Context) *personEdit {
	var p *personEdit
	if errors.As(context.Cause(ctx), &p) {
		return p
	}
	return nil
}

// stopIfTaken stops the running iteration when its task, in the task file
// as it is now, is one a person took. A file that went back to an older
// version (its Session section is not the one ralph last wrote) is not a
// person's decision about the task: the next write restores ralph's.
func (c *Coordinator) stopIfTaken() {
	c.ctl.Lock()
	id, stop, last := c.snap.Task, c.stopIter, c.snap.Session
	c.ctl.Unlock()
	if id == "" || stop == nil || last.Phase != mdstate.PhaseAgent {
		return // no agent at work: its outcome is being saved, or none runs
	}
	tasks, err := c.p.LoadChecklist(mdstate.TasksKind)
	if err != nil {
		return // mid-save, or unreadable: the iteration's own write will say
	}
	if s, _ := tasks.Session(); s == nil || !sameSession(*s, last) {
		return
	}
	why := &personEdit{task: id}
	switch t := tasks.Find(id); {
	case t == nil:
	case t.Status == mdstate.Done || t.Status == mdstate.Skipped || t.Status == mdstate.Blocked:
		why.status = t.Status
	default:
		return
	}
	c.emit(Event{Kind: EventNotice, Task: id, Text: why.Error() + "; stopping its agent"})
	stop(why)
}
