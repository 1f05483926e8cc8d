package coordinator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/mdstate"
)

// This file is the one pipeline the loop and the one-shot share: run an
// agent on a request, keep its raw output in a log (logs.go), clean what it
// hands back (agenttext.go), and classify how it ended; then file what it
// reported.

// request is one agent run.
type request struct {
	Prompt  string
	LogName string // the raw log's file name under .ralph/logs
	Resume  string // the agent's session to continue (agent.Request.Resume)
	OnStart func(pid int)
	// OnProcess is given the agent's process once it runs
	// (agent.Request.OnProcess).
	OnProcess func(*proc.Process)
	Mark      string // the session's mark on the agent's processes (sessionMark)
	OnEvent   func(agent.Event)
	// OnNotice is told what a person should know that is not the agent's
	// (its log could not be written); nil: no one is told.
	OnNotice func(text string)
	// Logs is the run's account of its logs folder; nil: the folder is
	// read before every agent run.
	Logs *logBook
	// Log is the log opened ahead (LogName, Logs); nil: runAgent opens it.
	Log *logAhead
}

// attempt is how one agent run ended, classified.
type attempt struct {
	Result  agent.Result
	Report  AgentReport
	Outcome IterationOutcome
	// Note says why, when the outcome is not done: one line.
	Note string
	// Answered is set when the agent ended its turn with a final message
	// (done, blocked, or failed without the completion marker): it read
	// its prompt to the end.
	Answered bool
	// Urgent is set when an urgent message cut the run short.
	Urgent bool
	// Taken is set when a person took the task (marked it done, skipped
	// or blocked, or removed it) and so cut the run short.
	Taken bool
	Took  time.Duration
}

// runAgent runs o.Agent on req. Its error is ralph's (the log cannot be
// created); an agent that cannot start is a failed attempt. Everything the
// agent hands back, its events included, is agent text (cleanResult).
func runAgent(ctx context.Context, o Options, req request) (attempt, error) {
	red := o.redactor()
	raw, err := req.rawLog(o, red)
	if err != nil {
		return attempt{}, err
	}
	defer raw.Close() // a failure is told through onFail
	start := o.Now()
	ar := agentRequest(o, req)
	ar.Prompt, ar.RawLog, ar.OnStart = req.Prompt, raw, req.OnStart
	res, runErr := o.Agent.Run(ctx, ar, req.events(red))
	return ended(ctx, o, red, res, runErr, start), nil
}

// rawLog is the log of req's agent: the one opened ahead, or one opened
// now. A failure to write it is told through req.OnNotice.
func (req request) rawLog(o Options, red *redactor) (*agentLog, error) {
	var raw *agentLog
	var err error
	if req.Log != nil {
		raw, err = req.Log.take()
	} else {
		raw, err = openLog(o.Root, req.LogName, o.Resources, red, req.Logs)
	}
	if err != nil {
		return nil, err
	}
	if req.OnNotice != nil {
		raw.onFail = func(err error) { req.OnNotice(logFailedNotice(req.LogName, err)) }
	}
	return raw, nil
}

// events is where the agent's events go: req.OnEvent, cleaned.
func (req request) events(red *redactor) func(agent.Event) {
	if req.OnEvent == nil {
		return func(agent.Event) {}
	}
	return func(ev agent.Event) { req.OnEvent(cleanEvent(ev, red)) }
}

// agentRequest is the agent's request for req, but for the prompt and
// what goes with it (its log, OnStart): the same for a warm agent
// (warm.go), which gets those later.
func agentRequest(o Options, req request) agent.Request {
	return agent.Request{
		Dir: o.Root, Model: o.Model, Env: o.Env,
		NoOutputTimeout: o.NoOutputTimeout, Timeout: o.IterationTimeout, Grace: o.Grace,
		Mark: req.Mark, MaxTurns: o.MaxTurns, Permission: o.Permission, Resume: req.Resume,
		OnProcess: req.OnProcess,
	}
}

// ended classifies the end of an agent run begun at start.
func ended(ctx context.Context, o Options, red *redactor, res agent.Result, runErr error, start time.Time) attempt {
	a := classify(ctx, cleanResult(res, red), runErr)
	a.Note = cleanAgentText(a.Note, red) // a start error may quote the command line
	a.Took = o.Now().Sub(start)
	return a
}

// classify reads how an agent run ended.
func classify(ctx context.Context, res agent.Result, runErr error) attempt {
	a := attempt{Result: res, Report: boundReport(ParseReport(res.Final)), Outcome: OutcomeFailed}
	switch {
	case runErr != nil:
		a.Note = "the agent could not start: " + runErr.Error()
	case res.ErrorKind == agent.KindInterrupted || (ctx.Err() != nil && (res.IsError || res.ErrorKind != "" || a.Report.Verdict == VerdictNone)):
		// Stopped before it answered. An answer that came in before the
		// stop counts: the work is not thrown away.
		a.Outcome, a.Note = OutcomeInterrupted, "stopped"
		if errors.Is(context.Cause(ctx), errUrgent) {
			a.Urgent, a.Note = true, "stopped for an urgent message from the user"
		}
		if p := personCause(ctx); p != nil {
			a.Taken, a.Note = true, "stopped: "+p.Error()
		}
	case res.ErrorKind == agent.KindRateLimit:
		// Not the task's fault: the caller waits for the reset.
		a.Outcome, a.Note = OutcomeRateLimited, failureNote(res)
	case res.IsError || res.ErrorKind != "":
		a.Note = failureNote(res)
	case a.Report.Verdict == VerdictComplete:
		a.Outcome, a.Answered = OutcomeDone, true
	case a.Report.Verdict == VerdictBlocked:
		a.Outcome, a.Note, a.Answered = OutcomeBlocked, a.Report.Reason, true
	default:
		a.Note, a.Answered = "the agent ended without <promise>COMPLETE</promise>", true
		if res.ExitCode == 0 {
			a.Note += " (exit code 0 is not completion)"
		}
	}
	// A note is one line in the files; the event's reason must be too (a
	// crashed child's stderr tail has several).
	a.Note = oneLineText(a.Note)
	return a
}

func failureNote(res agent.Result) string {
	switch res.ErrorKind {
	case agent.KindNoOutput:
		return "the agent printed nothing for too long and was stopped"
	case agent.KindTimeout:
		return "the agent ran past the iteration timeout and was stopped"
	case agent.KindRateLimit:
		return fmt.Sprintf("usage or rate limit (HTTP %d): %s", res.APIStatus, res.ErrorText)
	case agent.KindCrashed:
		return fmt.Sprintf("the agent crashed (exit code %d): %s", res.ExitCode, res.ErrorText)
	}
	if res.ErrorText != "" {
		return "the agent reported an error: " + res.ErrorText
	}
	return "the agent reported an error (" + string(res.ErrorKind) + ")"
}

// filed is what fileReport added to the state files, the to-dos and
// learnings it could not add (their file is missing), and those the files
// had already: the last two go in the progress entry.
type filed struct {
	learnings, todos   []string
	unfiled, unlearned []string
	known              []string // "to-do D3: text", "learning: text"
	// readded and relearned are ralph's own to-dos and learnings that an
	// older copy of their file had dropped, put back in the same write as
	// the new ones (fileReportWith).
	readded, relearned []string
}

// fields are the progress entry's record of what could not be filed, and
// of what was known already.
func (f filed) fields() []mdstate.Field {
	var out []mdstate.Field
	if len(f.unlearned) > 0 {
		out = append(out, mdstate.Field{Key: "learnings", List: f.unlearned})
	}
	if len(f.unfiled) > 0 {
		out = append(out, mdstate.Field{Key: "todos", List: f.unfiled})
	}
	if len(f.known) > 0 {
		out = append(out, mdstate.Field{Key: "known", List: f.known})
	}
	return out
}

// missingNotice says where an agent's report goes without its file.
func missingNotice(file, what string) string {
	return file + " is missing, so the agent's " + what + " are only in the progress log; `ralph init` creates it again"
}

// fileReport files an agent's learnings and to-dos. emit, when set, is
// told of each file written. Agents repeat what they were told, and
// recovery may file a report again (a kill cut it short): a learning or
// to-do that says the same as one in its file (mdstate.SameKey) is not
// added again, only listed as known. Only `ralph init` creates a state
// file: with RALPH_TODO.md gone, the to-dos are only in the progress
// entry, and emit is told so.
func fileReport(p *mdstate.Project, rep AgentReport, emit func(Event)) (filed, error) {
	return fileReportWith(p, rep, emit, lostOwn{})
}

// lostOwn says, of a file as a write finds it, which of ralph's own
// additions an older copy of it dropped (owned.go); nil: none looked for.
type lostOwn struct {
	todos     func(*mdstate.Checklist) []string
	learnings func(*mdstate.Agent) []string
}

// fileReportWith is fileReport whose writes of AGENT.md and RALPH_TODO.md
// first add back what lost returns of the file each write is made on.
// Put back in the same write as the new additions, they cannot be hidden
// behind them by a stale save that came just before it.
func fileReportWith(p *mdstate.Project, rep AgentReport, emit func(Event), lost lostOwn) (filed, error) {
	if emit == nil {
		emit = func(Event) {}
	}
	var f filed
	var missing *mdstate.MissingError
	if len(rep.Learnings) > 0 {
		added, known, relearned, err := p.LearnAll(rep.Learnings, lost.learnings)
		switch {
		case errors.As(err, &missing):
			emit(Event{Kind: EventNotice, Text: missingNotice(mdstate.AgentFile, "learnings")})
			f.unlearned = rep.Learnings
		case err != nil:
			return f, fmt.Errorf("file the learnings the agent reported: %w", err)
		default:
			f.learnings, f.relearned = added, relearned
			for _, l := range known {
				f.known = append(f.known, "learning: "+oneLineText(l))
			}
			if len(added)+len(relearned) > 0 {
				emit(Event{Kind: EventStateWritten, File: mdstate.AgentFile})
			}
		}
	}
	if len(rep.Todos) == 0 {
		return f, nil
	}
	todos, known, readded, err := addTodosAgain(p, rep.Todos, lost.todos)
	if errors.As(err, &missing) {
		emit(Event{Kind: EventNotice, Text: missingNotice(mdstate.TodoFile, "to-dos")})
		f.unfiled = rep.Todos
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("file the to-dos the agent reported: %w", err)
	}
	f.todos, f.readded = todos, readded
	f.known = append(f.known, known...)
	if len(todos)+len(readded) > 0 {
		emit(Event{Kind: EventStateWritten, File: mdstate.TodoFile})
	}
	return f, nil
}

// addTodos adds to RALPH_TODO.md, in one write, the to-dos it does not
// have yet (ChecklistEdit.AddOnce), and returns them, and the others as
// the progress entry lists them.
func addTodos(p *mdstate.Project, todos []string) (added, known []string, err error) {
	added, known, _, err = addTodosAgain(p, todos, nil)
	return added, known, err
}

// addTodosAgain is addTodos that first adds back, in the same write, the
// to-dos lost returns of the list the write is made on (each time the
// save makes its edit, on the version it makes it on), and returns those
// it added back. lost may be nil.
func addTodosAgain(p *mdstate.Project, todos []string, lost func(*mdstate.Checklist) []string) (added, known, readded []string, err error) {
	_, err = p.UpdateChecklist(mdstate.TodoKind, func(e *mdstate.ChecklistEdit) error {
		added, known, readded = nil, nil, nil
		if lost != nil {
			for _, t := range lost(e.Checklist()) {
				if _, err := e.AddOnce(t); err == nil {
					readded = append(readded, t)
				} else if !errors.As(err, new(*mdstate.DuplicateError)) {
					return err
				}
			}
		}
		for _, t := range todos {
			_, err := e.AddOnce(t)
			var dup *mdstate.DuplicateError
			switch {
			case errors.As(err, &dup):
				known = append(known, "to-do "+dup.ID+": "+oneLineText(t))
			case err != nil:
				return err
			default:
				added = append(added, t)
			}
		}
		return nil
	})
	return added, known, readded, err
}

// AgentLabel is how an agent is named in the files: "claude (sonnet)".
func AgentLabel(name, model string) string {
	if model == "" {
		return name
	}
	return name + " (" + model + ")"
}
