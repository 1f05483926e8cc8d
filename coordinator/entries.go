package coordinator

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/internal/lazyre"
	"github.com/ralph-dev/ralph/mdstate"
)

// This file is the one place that writes ralph's progress titles, fields
// and the notes it leaves under tasks, and the one place that reads them
// back: no other code, in this package or another, parses them.

// The titles of ralph's own entries, besides "ID: title" for an iteration.
func sessionEndedTitle(id string) string     { return "session " + id + " ended" }
func sessionRecoveredTitle(id string) string { return "session " + id + " recovered" }

const oneShotPrefix = "one-shot: "

func usageField(in, out int64) mdstate.Field {
	return mdstate.Field{Key: "tokens", Value: fmt.Sprintf("%d in, %d out", in, out)}
}

// unknownValue is a usage or cost an agent's CLI did not report: never
// written as 0, which would read as free.
const unknownValue = "unknown"

// conversationField is the entry field that keeps the agent's own
// session id (claude's session, codex's thread…): its transcript, and
// what a chat turn resumes.
const conversationField = "conversation"

// spentFields are an agent run's tokens and cost, "unknown" where its CLI
// did not say.
func spentFields(res agent.Result) []mdstate.Field {
	tokens, cost := usageField(res.Usage.In, res.Usage.Out), costField(res.CostUSD)
	if !usageKnown(res) {
		tokens.Value = unknownValue
	}
	if !costKnown(res) {
		cost.Value = unknownValue
	}
	return []mdstate.Field{tokens, cost}
}

// runModel is the model to name for an agent run: the one its CLI
// reported, else the one ralph asked for.
func runModel(asked string, res agent.Result) string {
	if res.Model != "" {
		return res.Model
	}
	return asked
}

func costField(usd float64) mdstate.Field {
	return mdstate.Field{Key: "cost", Value: fmt.Sprintf("$%.4f", usd)}
}

func durationField(d time.Duration) mdstate.Field {
	return mdstate.Field{Key: "duration", Value: d.Round(time.Second).String()}
}

// iterationEntry records one iteration of the loop.
func iterationEntry(now time.Time, task *mdstate.Item, iteration int, agentLabel string, a attempt, note string, guidance []string) mdstate.Entry {
	e := mdstate.Entry{Time: now, Title: task.ID + ": " + task.Title, Fields: []mdstate.Field{
		{Key: "outcome", Value: string(a.Outcome)},
		{Key: "agent", Value: agentLabel},
		{Key: "iteration", Value: strconv.Itoa(iteration)},
		durationField(a.Took),
	}}
	e.Fields = append(e.Fields, spentFields(a.Result)...)
	if a.Result.SessionID != "" {
		e.Fields = append(e.Fields, mdstate.Field{Key: conversationField, Value: a.Result.SessionID})
	}
	if note != "" {
		e.Fields = append(e.Fields, mdstate.Field{Key: "note", Value: note})
	}
	// No commit field: with --commit the entry is in the task's commit,
	// which cannot name itself (commit.go).
	if a.Answered {
		// An agent stopped before its answer left no summary: the last
		// thing it printed ("thinking…") is not one.
		e.Fields = appendReport(e.Fields, a.Report)
	}
	if len(guidance) > 0 {
		e.Fields = append(e.Fields, mdstate.Field{Key: "guidance", List: guidance})
	}
	return e
}

// redactEntry returns e with the secrets r knows replaced by Redacted in
// its title and fields: not only an agent's text (already redacted as it
// came in) but a task's title, a one-shot's request or a person's
// guidance may hold one too, and the progress log is often committed.
func redactEntry(e mdstate.Entry, r *redactor) mdstate.Entry {
	e.Title = r.redact(e.Title)
	fields := make([]mdstate.Field, len(e.Fields))
	for i, f := range e.Fields {
		f.Value = r.redact(f.Value)
		f.List = redactAll(f.List, r)
		fields[i] = f
	}
	e.Fields = fields
	return e
}

// appendReport adds the agent's summary and decisions.
func appendReport(fields []mdstate.Field, rep AgentReport) []mdstate.Field {
	if rep.Summary != "" {
		fields = append(fields, mdstate.Field{Key: "summary", Value: rep.Summary})
	}
	if len(rep.Decisions) > 0 {
		fields = append(fields, mdstate.Field{Key: "decisions", List: rep.Decisions})
	}
	return fields
}

// oneShotEntry records a one-shot run.
func oneShotEntry(now time.Time, task string, out OneShotResult, res agent.Result, rep AgentReport) mdstate.Entry {
	e := mdstate.Entry{Time: now, Title: oneShotPrefix + oneLineText(task), Fields: []mdstate.Field{
		{Key: "outcome", Value: string(out.Status)},
		{Key: "agent", Value: AgentLabel(out.Agent, out.Model)},
		durationField(time.Duration(out.DurationMS) * time.Millisecond),
	}}
	e.Fields = append(e.Fields, spentFields(res)...)
	if res.SessionID != "" {
		e.Fields = append(e.Fields, mdstate.Field{Key: conversationField, Value: res.SessionID})
	}
	if out.Reason != "" {
		e.Fields = append(e.Fields, mdstate.Field{Key: "note", Value: out.Reason})
	}
	if out.Summary != "" {
		e.Fields = append(e.Fields, mdstate.Field{Key: "summary", Value: out.Summary})
	}
	if len(out.FilesChanged) > 0 {
		e.Fields = append(e.Fields, mdstate.Field{Key: "files", Value: strings.Join(out.FilesChanged, ", ")})
	}
	if len(rep.Decisions) > 0 {
		e.Fields = append(e.Fields, mdstate.Field{Key: "decisions", List: rep.Decisions})
	}
	return e
}

// recoveredEntry records that a session's coordinator died and ralph
// cleaned up after it; killed names the agent's group it stopped, if any.
func recoveredEntry(now time.Time, old *mdstate.Session, killed int) mdstate.Entry {
	fields := []mdstate.Field{
		{Key: "outcome", Value: string(OutcomeRecovered)},
		{Key: "session", Value: old.ID},
		{Key: "iteration", Value: strconv.Itoa(old.Iteration)},
		{Key: "phase", Value: orNone(string(old.Phase))},
		{Key: "interrupted", Value: old.Updated.UTC().Format(time.RFC3339)},
	}
	if old.Task != "" {
		fields = append(fields, mdstate.Field{Key: "task", Value: old.Task})
	}
	if killed > 0 {
		fields = append(fields, mdstate.Field{Key: "stopped", Value: "agent process group " + strconv.Itoa(killed) + ", still running"})
	}
	return mdstate.Entry{Time: now, Title: sessionRecoveredTitle(old.ID), Fields: fields}
}

// restoredEntry is the entry of an iteration whose entry a kill lost,
// written from the session's saved result (nil for a session saved by an
// older ralph: a done task without duration, tokens or cost) and the
// report kept for it (keptreport.go), for its summary and decisions.
func restoredEntry(now time.Time, old *mdstate.Session, t *mdstate.Item, rep AgentReport, guidance []string) mdstate.Entry {
	fields := []mdstate.Field{
		{Key: "outcome", Value: string(OutcomeDone)},
		{Key: "agent", Value: AgentLabel(old.Agent, old.Model)},
		{Key: "iteration", Value: strconv.Itoa(old.Iteration)},
	}
	note := "written on recovery: ralph was stopped after saving the task's status and before writing this entry"
	if r := old.Result; r != nil {
		fields[0].Value = r.Outcome
		fields = append(fields, durationField(r.Duration), usageField(r.TokensIn, r.TokensOut), costField(r.CostUSD))
		if r.Outcome != string(OutcomeDone) && len(t.Notes) > 0 {
			note += "; the task's note: " + t.Notes[len(t.Notes)-1]
		}
	} else {
		note += "; its duration, tokens and cost were not recorded"
	}
	fields = append(fields, mdstate.Field{Key: "note", Value: note})
	fields = appendReport(fields, rep)
	if len(guidance) > 0 {
		fields = append(fields, mdstate.Field{Key: "guidance", List: guidance})
	}
	return mdstate.Entry{Time: now, Title: t.ID + ": " + t.Title, Fields: fields}
}

// hasIterationEntry reports whether the log has the entry of task id's
// iteration, written no earlier than since: by the task's ID, since a
// person may have renamed the task.
func hasIterationEntry(log *mdstate.Log, id string, iteration int, since time.Time) bool {
	it := strconv.Itoa(iteration)
	for i := len(log.Recent) - 1; i >= 0 && !log.Recent[i].Time.Before(since); i-- {
		if e := &log.Recent[i]; strings.HasPrefix(e.Title, id+": ") && e.Get("iteration") == it {
			return true
		}
	}
	return false
}

// summaryEntry records a session's end: how long it ran, how many
// iterations, tasks done, tokens, cost and commits. d is its duration, or
// negative when unknown.
func summaryEntry(now time.Time, s *mdstate.Session, reason string, d time.Duration, note string) mdstate.Entry {
	fields := []mdstate.Field{
		{Key: "outcome", Value: "ended (" + reason + ")"},
		{Key: "session", Value: s.ID},
	}
	if d >= 0 {
		fields = append(fields, durationField(d))
	}
	fields = append(fields,
		mdstate.Field{Key: "iterations", Value: strconv.Itoa(s.Iteration)},
		mdstate.Field{Key: "tasks", Value: strconv.Itoa(s.Done) + " done"})
	spent := spentFields(agent.Result{Usage: agent.Usage{In: s.TokensIn, Out: s.TokensOut}, CostUSD: s.CostUSD,
		UsageKnown: s.KnownUsage(), CostKnown: s.KnownCost()})
	// Totals some iterations left out say so, as the session block does.
	spent[0].Value = mdstate.MarkPartial(spent[0].Value, s.UsagePartial && s.KnownUsage())
	spent[1].Value = mdstate.MarkPartial(spent[1].Value, s.CostPartial && s.KnownCost())
	fields = append(fields, spent...)
	fields = append(fields, mdstate.Field{Key: "commits", Value: strconv.Itoa(s.Commits)})
	if note != "" {
		fields = append(fields, mdstate.Field{Key: "note", Value: note})
	}
	return mdstate.Entry{Time: now, Title: sessionEndedTitle(s.ID), Fields: fields}
}

// EndedSession is a session's summary entry in the progress log, read
// back.
type EndedSession struct {
	ID         string
	Outcome    string // "ended (all_done)"
	Iterations int
	TasksDone  int
	Figures    Figures // its tokens and cost, as EntryFigures reads them
	Entry      mdstate.Entry
}

// EndedSessions lists the summaries of ended sessions in log, oldest first.
func EndedSessions(log *mdstate.Log) []EndedSession {
	var out []EndedSession
	if log == nil {
		return out
	}
	for _, e := range log.Recent {
		if id, ok := endedID(e); ok {
			out = append(out, readSummary(id, e))
		}
	}
	return out
}

// readSummary reads what summaryEntry wrote; a value it cannot read (a
// person's edit) is zero.
func readSummary(id string, e mdstate.Entry) EndedSession {
	es := EndedSession{ID: id, Outcome: e.Get("outcome"), Entry: e}
	es.Iterations, _ = strconv.Atoi(e.Get("iterations"))
	es.TasksDone, _ = strconv.Atoi(strings.TrimSuffix(e.Get("tasks"), " done"))
	es.Figures = EntryFigures(e)
	return es
}

// Figures are the numbers of a progress entry, read back typed from the
// fields ralph writes (an iteration's, a one-shot's, a turn's, a session
// summary's): each is nil when the entry has no such field, when the
// agent's CLI did not report it ("unknown"), or when a person's edit left
// it unreadable. UsagePartial and CostPartial mark a session summary's
// totals that leave out iterations whose agents reported none.
type Figures struct {
	Iteration                 *int
	Duration                  *time.Duration
	TokensIn, TokensOut       *int64
	CostUSD                   *float64
	UsagePartial, CostPartial bool
}

// EntryFigures reads what the iteration field, durationField, usageField
// and costField wrote in e.
func EntryFigures(e mdstate.Entry) Figures {
	var f Figures
	if n, err := strconv.Atoi(e.Get("iteration")); err == nil {
		f.Iteration = &n
	}
	if d, err := time.ParseDuration(e.Get("duration")); err == nil {
		f.Duration = &d
	}
	var in, out int64
	tokens, usagePartial := mdstate.CutPartial(e.Get("tokens"))
	if n, _ := fmt.Sscanf(tokens, "%d in, %d out", &in, &out); n == 2 {
		f.TokensIn, f.TokensOut, f.UsagePartial = &in, &out, usagePartial
	}
	cost, costPartial := mdstate.CutPartial(e.Get("cost"))
	if cost, ok := strings.CutPrefix(cost, "$"); ok {
		if usd, err := strconv.ParseFloat(cost, 64); err == nil && !math.IsNaN(usd) && !math.IsInf(usd, 0) {
			f.CostUSD, f.CostPartial = &usd, costPartial
		}
	}
	return f
}

// endedID reads a summary entry's session id.
func endedID(e mdstate.Entry) (string, bool) {
	rest, ok := strings.CutPrefix(e.Title, "session ")
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, " ended")
	return id, ok
}

// summaryReason is why the session of summary entry e ended, as
// summaryEntry wrote it ("ended (all_done)"); or, when a person's edit
// left it unreadable, otherwise.
func summaryReason(e mdstate.Entry, otherwise string) string {
	rest, ok := strings.CutPrefix(e.Get("outcome"), "ended (")
	reason, closed := strings.CutSuffix(rest, ")")
	if !ok || !closed || reason == "" {
		return otherwise
	}
	return reason
}

// isSummaryOf reports whether e is session id's summary entry.
func isSummaryOf(e mdstate.Entry, id string) bool {
	got, ok := endedID(e)
	return ok && got == id
}

// giveUp is why ralph skipped a task.
type giveUp int

const (
	giveUpPolicy   giveUp = iota // --on-failure skip
	giveUpAttempts               // --max-attempts used up
)

// skippedNote is the end of the note ralph leaves on a task it gives up
// on; gaveUp finds it, and ClearGaveUp takes it off a reopened task.
func skippedNote(why giveUp, attempts int) string {
	if why == giveUpPolicy {
		return "; skipped (--on-failure skip)"
	}
	return fmt.Sprintf("; skipped after %d failed attempts", attempts)
}

var skippedAfterRe = lazyre.New(`; skipped after [0-9]+ failed attempts$`)

// gaveUp lists the skipped tasks ralph gave up on, by the note it left
// (skippedNote): they keep a run from reporting "all done", also after a
// restart. A task a person skipped does not count.
func gaveUp(tasks *mdstate.Checklist) []string {
	var ids []string
	for _, t := range tasks.All() {
		if t.Status != mdstate.Skipped || len(t.Notes) == 0 {
			continue
		}
		if last := t.Notes[len(t.Notes)-1]; strings.HasSuffix(last, skippedNote(giveUpPolicy, 0)) || skippedAfterRe().MatchString(last) {
			ids = append(ids, t.ID)
		}
	}
	return ids
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// lastEntryFor is the newest entry about task id: an iteration's ("ID:
// title"), or one naming it in a task field.
func lastEntryFor(lg *mdstate.Log, id string) *mdstate.Entry {
	if lg == nil {
		return nil
	}
	for i := len(lg.Recent) - 1; i >= 0; i-- {
		e := &lg.Recent[i]
		if EntryIsAbout(*e, id) {
			return e
		}
	}
	return nil
}

// EntryIsAbout reports whether progress entry e is about task id: an
// iteration's ("ID: title"), or one naming it in a task field.
func EntryIsAbout(e mdstate.Entry, id string) bool {
	return e.Get("task") == id || strings.HasPrefix(e.Title, id+":") || strings.HasPrefix(e.Title, id+" ")
}

// progressLine is an entry as the prompt shows it: time, title, outcome,
// summary.
func progressLine(e mdstate.Entry) string {
	s := "- "
	if !e.Time.IsZero() {
		s += e.Time.UTC().Format("2006-01-02 15:04") + " "
	}
	s += e.Title
	if o := e.Get("outcome"); o != "" {
		s += " [" + o + "]"
	}
	if sum := e.Get("summary"); sum != "" {
		s += ": " + sum
	}
	return s
}

// lastSummaryOf is the agent's summary in the newest entry about task id.
func lastSummaryOf(lg *mdstate.Log, id string) string {
	if e := lastEntryFor(lg, id); e != nil {
		return e.Get("summary")
	}
	return ""
}
