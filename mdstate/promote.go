package mdstate

import (
	"errors"
	"fmt"
	"io/fs"
)

// PromoteResult is what Promote did.
type PromoteResult struct {
	TodoID string
	TaskID string // the task the to-do became (or had become)
	Title  string
	// Already is true when the to-do had been promoted before: nothing
	// was written.
	Already bool
	// Warnings are those of RALPH_TODO.md and RALPH_TASKS.md as Promote
	// read them, for the caller to show.
	Warnings []Warning
}

// Promote turns to-do todoID into a task: it adds a task with the to-do's
// title, marked "- from: D3", to RALPH_TASKS.md, then ticks the to-do and
// marks it "- promoted: T7". The task is written first, so that after a
// crash in between, running Promote again finds the task by its "from:"
// line and only finishes the to-do; it never adds a second task.
func (p *Project) Promote(todoID string) (PromoteResult, error) {
	id := normID(todoID)
	res := PromoteResult{TodoID: id}
	todos, err := p.LoadChecklist(TodoKind)
	if errors.Is(err, fs.ErrNotExist) {
		return res, &MissingError{File: TodoFile, Root: p.Root}
	}
	if err != nil {
		return res, err
	}
	res.Warnings = append(res.Warnings, todos.Warnings...)
	todo := todos.Find(id)
	if todo == nil {
		return res, todos.notFound(id)
	}
	res.Title = todo.Title
	if todo.Promoted != "" {
		res.TaskID, res.Already = todo.Promoted, true
		return res, nil
	}
	tasks, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error {
		taskID, err := addPromoted(e, id, res.Title)
		res.TaskID = taskID
		return err
	})
	if tasks != nil {
		res.Warnings = append(res.Warnings, tasks.Warnings...)
	}
	if err != nil {
		var missing *MissingError
		if errors.As(err, &missing) {
			return res, fmt.Errorf("%w (needed to promote %s)", err, id)
		}
		return res, err
	}
	_, err = p.UpdateChecklist(TodoKind, func(e *ChecklistEdit) error {
		return markPromoted(e, id, res.TaskID)
	})
	return res, err
}

// addPromoted adds the task for to-do id, unless a task already says it
// came from id (a promotion cut short), and returns the task's ID.
func addPromoted(e *ChecklistEdit, id, title string) (string, error) {
	for _, it := range e.Checklist().All() {
		if it.From == id {
			return it.ID, nil
		}
	}
	return e.Add(title, MetaKV{Key: "from", Value: id})
}

// markPromoted ticks to-do id and records the task it became, unless a
// promotion that ran meanwhile already did.
func markPromoted(e *ChecklistEdit, id, taskID string) error {
	todo := e.Checklist().Find(id)
	if todo == nil {
		return e.NotFound(id)
	}
	if todo.Promoted != "" {
		return nil
	}
	if err := e.SetStatus(id, Done); err != nil {
		return err
	}
	return e.AddMeta(id, "promoted", taskID)
}
