package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/mdstate"
)

// A conversation turn: a person says something to the agent outside the
// task loop (ralph chat, at an idle prompt), and the agent answers with
// the project's context, free to change the code and the state files as
// asked. The conversation goes on across turns and across restarts: each
// turn's progress entry keeps the agent's own session id, and the next
// turn resumes it (claude --resume and the like). When the agent cannot
// resume (the exec agent, or a session its CLI no longer has), the turn
// starts a new one and its prompt replays the recent turns from the log.

// turnPrefix begins the title of a turn's progress entry.
const turnPrefix = "chat: "

// replayedTurns is how many earlier turns a new conversation's prompt
// replays from the progress log.
const replayedTurns = 6

// ErrTalking is returned by Start while a conversation turn runs, and by
// Talk while another turn or a run is under way: one agent at a time works
// in the project.
var ErrTalking = errors.New("the agent is answering a message")

// TurnOutcome is how a conversation turn ended.
type TurnOutcome string

// The outcomes of a turn.
const (
	TurnAnswered    TurnOutcome = "answered"
	TurnInterrupted TurnOutcome = "interrupted" // the person stopped it (Ctrl-C)
	TurnFailed      TurnOutcome = "failed"      // the agent failed before it answered
)

// Turn is what a conversation turn did.
type Turn struct {
	Outcome TurnOutcome
	// Answer is the agent's final message, without the report tags.
	Answer string
	// Note says why, when the turn was not answered.
	Note string
	// Conversation is the agent's session id: the next turn resumes it.
	Conversation string
	// Resumed is set when the turn continued an earlier conversation.
	Resumed   bool
	Files     []string // files the turn changed (git's view), state files included
	Decisions []string
	TokensIn  int64
	TokensOut int64
	CostUSD   float64
	// UsageUnknown is set when the agent's CLI reported no usage: the 0s
	// above are not figures.
	UsageUnknown bool
	Took         time.Duration
}

// Talk runs one conversation turn with the agent: text is what the person
// said. It refuses while a run is under way (ErrRunning) or another turn
// is (ErrTalking). Cancelling ctx stops the agent's tree; the turn is then
// recorded as interrupted. Its error is ralph's: the turn could not be
// run or recorded.
//
// A turn that began (no ErrRunning or ErrTalking) sends EventTurnStarted
// first and EventTurnDone last, after its progress entry is written and
// once Start may be called again: a front end that sees EventTurnDone has
// seen every event of the turn.
func (c *Coordinator) Talk(ctx context.Context, text string) (t Turn, err error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return Turn{}, errors.New("nothing to say: the message is empty")
	}
	if err := c.beginTalk(); err != nil {
		return Turn{}, err
	}
	c.emit(Event{Kind: EventTurnStarted, Text: text})
	defer func() { c.emit(turnDoneEvent(t, err)) }() // runs after endTalk
	defer c.endTalk()
	if err := c.p.CheckConflicts(); err != nil {
		return Turn{}, err
	}
	if err := lowDiskError(c.opts.Root, c.opts.Resources); err != nil {
		return Turn{}, err
	}
	log, _ := c.p.ReadProgress(50) // no log yet: a new conversation
	prev := lastConversation(log, c.opts.Agent.Name())
	t, a, err := c.runTurn(ctx, text, prev, log)
	if err != nil {
		return t, err
	}
	return t, c.recordTurn(text, t, a)
}

// beginTalk marks a turn as under way, unless something else works.
func (c *Coordinator) beginTalk() error {
	c.ctl.Lock()
	defer c.ctl.Unlock()
	if err := c.busyErr(); err != nil {
		return err
	}
	c.talking = true
	return nil
}

func (c *Coordinator) endTalk() {
	c.ctl.Lock()
	defer c.ctl.Unlock()
	c.talking = false
}

// runTurn runs the agent on the person's text, resuming the conversation
// prev when there is one; when the agent cannot resume it, it starts a new
// one that replays the recent turns.
func (c *Coordinator) runTurn(ctx context.Context, text, prev string, log *mdstate.Log) (Turn, attempt, error) {
	before := DirtyPaths(ctx, c.opts.Root)
	started := c.opts.Now()
	a, err := c.askAgent(ctx, text, prev, log)
	if err == nil && prev != "" && lostSession(a) && ctx.Err() == nil {
		// The CLI no longer has the session (its files were removed, or
		// the agent was changed): a new conversation, with the replay.
		c.emit(Event{Kind: EventNotice, Text: "the agent could not resume the conversation (" + a.Note + "); starting a new one"})
		prev = ""
		a, err = c.askAgent(ctx, text, "", log)
	}
	if err != nil {
		return Turn{}, a, err
	}
	t := turnOf(ctx, a, prev)
	t.Took = c.opts.Now().Sub(started)
	for _, f := range DirtyPaths(context.WithoutCancel(ctx), c.opts.Root) {
		if !slices.Contains(before, f) {
			t.Files = append(t.Files, f)
		}
	}
	return t, a, nil
}

// lostSession reports whether a resumed turn's agent failed as a CLI does
// that cannot find the session to resume: it ended without an answer on
// its own (crashed, or exited 0 with none). An API error or a rate limit
// is not that: the conversation is kept for the next turn.
func lostSession(a attempt) bool {
	if a.Answered || a.Outcome != OutcomeFailed {
		return false
	}
	switch a.Result.ErrorKind {
	case agent.KindCrashed, agent.KindBadOutput:
		return true
	}
	return false
}

// turnDoneEvent is the event that ends a turn.
func turnDoneEvent(t Turn, err error) Event {
	e := Event{Kind: EventTurnDone, Text: t.Answer, Reason: t.Note, TokensIn: t.TokensIn, TokensOut: t.TokensOut, CostUSD: t.CostUSD}
	if err != nil {
		e.Reason = err.Error()
	}
	return e
}

// askAgent runs the agent once for a turn.
func (c *Coordinator) askAgent(ctx context.Context, text, resume string, log *mdstate.Log) (attempt, error) {
	prompt, err := c.turnPrompt(ctx, text, resume != "", log)
	if err != nil {
		return attempt{}, err
	}
	// What the conversation wrote is on disk before an agent starts
	// (mdstate.Project.FlushLater).
	if err := c.p.Sync(); err != nil {
		return attempt{}, err
	}
	started := c.opts.Now()
	return runAgent(ctx, c.opts, request{
		Prompt: prompt, Resume: resume,
		LogName: "chat-" + started.UTC().Format("20060102-150405.000") + ".log",
		Mark:    oneShotMark(c.opts.Root), // swept like a one-shot's if ralph dies
		OnEvent: c.forwardTurn,
		OnNotice: func(text string) {
			c.emit(Event{Kind: EventNotice, Text: text})
		},
	})
}

// forwardTurn passes a turn's agent events on, as an iteration's are.
func (c *Coordinator) forwardTurn(ev agent.Event) {
	switch ev.Kind {
	case agent.EventText:
		c.emit(Event{Kind: EventAgentText, Text: ev.Text})
	case agent.EventToolUse:
		c.emit(Event{Kind: EventToolUse, Tool: ev.Tool, Text: ev.Text})
	case agent.EventRetry:
		c.emit(Event{Kind: EventRetry, Text: ev.Text, Attempt: ev.Attempt, Delay: ev.Delay, APIStatus: ev.APIStatus})
	}
}

// turnOf reads how a turn's agent run ended.
func turnOf(ctx context.Context, a attempt, prev string) Turn {
	t := Turn{
		Answer:       a.Report.Body,
		Conversation: a.Result.SessionID,
		Resumed:      prev != "" && a.Result.SessionID != "",
		Decisions:    a.Report.Decisions,
		TokensIn:     a.Result.Usage.In,
		TokensOut:    a.Result.Usage.Out,
		CostUSD:      a.Result.CostUSD,
		UsageUnknown: !usageKnown(a.Result),
	}
	if t.Conversation == "" {
		t.Conversation = prev
	}
	switch {
	case a.Answered:
		t.Outcome = TurnAnswered
	case a.Outcome == OutcomeInterrupted || ctx.Err() != nil:
		t.Outcome, t.Note = TurnInterrupted, "stopped by the person"
	default:
		t.Outcome, t.Note = TurnFailed, a.Note
	}
	return t
}

// turnPrompt is what the agent reads for a turn: the person's message,
// how to answer, and the project's context (shorter when the agent
// remembers the conversation), or a replay of the recent turns when it
// starts a new conversation.
func (c *Coordinator) turnPrompt(ctx context.Context, text string, resumed bool, log *mdstate.Log) (string, error) {
	budget, progress := 4000, 3
	if resumed {
		budget, progress = 1500, 1 // it has the context of the earlier turns
	}
	r, err := BuildReport(ctx, c.opts.Root, ReportOptions{Commits: 3, Progress: progress, Git: c.opts.Git, Project: c.p, Scanned: c.scanned})
	if err != nil {
		return "", err
	}
	ctxText, _ := r.Prompt(PromptOptions{Budget: budget, NoTask: true})
	var b strings.Builder
	b.WriteString("# A message from the person you work with\n\n")
	b.WriteString(text + "\n\n")
	b.WriteString(TalkProtocol + "\n")
	if !resumed {
		b.WriteString(replay(log))
	}
	b.WriteString(ctxText + "\n")
	return b.String(), nil
}

// TalkProtocol tells the agent how a conversation turn works.
const TalkProtocol = `## How to answer

This is a conversation through ralph chat, not a task from the list:
answer the person. Do what they ask; nothing more. When they ask for work
to be planned, add it to RALPH_TASKS.md as "- [ ] T<next number>: title"
lines (goals go in RALPH_GOALS.md, follow-ups in RALPH_TODO.md); ralph's
loop does the tasks when they say /run, so do not start working through
the list. Your final message is what they read: keep it short.

Anywhere in your final message you may add, one per tag:

<learning>something every future agent should know about working in this project</learning>
<todo>a follow-up worth doing</todo>
<decision>a choice you made, and why</decision>
`

// replay is the recent turns of the conversation, for an agent that
// starts a new one: what was asked and answered, oldest first.
func replay(log *mdstate.Log) string {
	var turns []mdstate.Entry
	if log != nil {
		for _, e := range log.Recent {
			if strings.HasPrefix(e.Title, turnPrefix) {
				turns = append(turns, e)
			}
		}
	}
	if len(turns) > replayedTurns {
		turns = turns[len(turns)-replayedTurns:]
	}
	if len(turns) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## The conversation so far\n\n")
	for _, e := range turns {
		asked := e.Get("asked")
		if asked == "" {
			asked = strings.TrimPrefix(e.Title, turnPrefix)
		}
		fmt.Fprintf(&b, "- They said: %s\n  You answered: %s\n", asked, orNone(e.Get("answer")))
	}
	return b.String() + "\n"
}

// lastConversation is the session id of the last turn with the agent
// named name, to resume; "" when there is none.
func lastConversation(log *mdstate.Log, name string) string {
	if log == nil || name == "exec" { // a plain program has no session to resume
		return ""
	}
	for i := len(log.Recent) - 1; i >= 0; i-- {
		e := log.Recent[i]
		if !strings.HasPrefix(e.Title, turnPrefix) {
			continue
		}
		agentName, _, _ := strings.Cut(e.Get("agent"), " ")
		if agentName != name {
			return "" // the agent changed: a new conversation
		}
		return e.Get(conversationField)
	}
	return ""
}

// recordTurn files what the agent reported and appends the turn's
// progress entry.
func (c *Coordinator) recordTurn(text string, t Turn, a attempt) error {
	unfiled, err := fileReport(c.p, a.Report, nil)
	if err != nil {
		return err
	}
	e := turnEntry(c.opts.Now(), text, t, AgentLabel(c.opts.Agent.Name(), runModel(c.opts.Model, a.Result)), a.Result)
	e.Fields = append(e.Fields, unfiled.fields()...)
	return c.p.AppendProgress(redactEntry(e, c.opts.redactor()))
}

// maxAnswerField bounds the answer kept in a turn's entry: the log is a
// record, the agent's own session has the whole text.
const maxAnswerField = 400

// turnEntry records a conversation turn.
func turnEntry(now time.Time, text string, t Turn, agentLabel string, res agent.Result) mdstate.Entry {
	asked := oneLineText(text)
	e := mdstate.Entry{Time: now, Title: turnPrefix + shortenText(asked, 80), Fields: []mdstate.Field{
		{Key: "outcome", Value: string(t.Outcome)},
		{Key: "agent", Value: agentLabel},
	}}
	if t.Conversation != "" {
		e.Fields = append(e.Fields, mdstate.Field{Key: conversationField, Value: t.Conversation})
	}
	e.Fields = append(e.Fields, durationField(t.Took))
	e.Fields = append(e.Fields, spentFields(res)...)
	if asked != shortenText(asked, 80) {
		e.Fields = append(e.Fields, mdstate.Field{Key: "asked", Value: asked})
	}
	if t.Answer != "" {
		e.Fields = append(e.Fields, mdstate.Field{Key: "answer", Value: shortenText(oneLineText(t.Answer), maxAnswerField)})
	}
	if t.Note != "" {
		e.Fields = append(e.Fields, mdstate.Field{Key: "note", Value: t.Note})
	}
	if len(t.Files) > 0 {
		e.Fields = append(e.Fields, mdstate.Field{Key: "files", Value: strings.Join(t.Files, ", ")})
	}
	if len(t.Decisions) > 0 {
		e.Fields = append(e.Fields, mdstate.Field{Key: "decisions", List: t.Decisions})
	}
	return e
}

// ChatSummary is what a chat session did, for the progress entry it
// leaves when it ends.
type ChatSummary struct {
	Duration   time.Duration
	Turns      int
	Iterations int
	Done       []string // tasks completed, by ID
	Commits    int
	TokensIn   int64
	TokensOut  int64
	CostUSD    float64
	Decisions  []string
	Queued     []string // messages still queued for the agents
	Left       string   // how the person left: quit, eof, interrupt, signal
	// UsageUnknown and CostUnknown: no agent of the session reported
	// them, so the entry says "unknown", not 0.
	UsageUnknown, CostUnknown bool
}

// RecordChat appends a chat session's summary to the progress log.
func (c *Coordinator) RecordChat(s ChatSummary) error {
	e := mdstate.Entry{Time: c.opts.Now(), Title: "chat session ended", Fields: []mdstate.Field{
		durationField(s.Duration),
		{Key: "left", Value: orNone(s.Left)},
		{Key: "turns", Value: fmt.Sprint(s.Turns)},
		{Key: "iterations", Value: fmt.Sprint(s.Iterations)},
		{Key: "done", Value: orNone(strings.Join(s.Done, ", "))},
	}}
	e.Fields = append(e.Fields, spentFields(agent.Result{Usage: agent.Usage{In: s.TokensIn, Out: s.TokensOut}, CostUSD: s.CostUSD,
		UsageKnown: !s.UsageUnknown, CostKnown: !s.CostUnknown})...)
	if s.Commits > 0 {
		e.Fields = append(e.Fields, mdstate.Field{Key: "commits", Value: fmt.Sprint(s.Commits)})
	}
	if len(s.Decisions) > 0 {
		e.Fields = append(e.Fields, mdstate.Field{Key: "decisions", List: s.Decisions})
	}
	if len(s.Queued) > 0 {
		e.Fields = append(e.Fields, mdstate.Field{Key: "queued", List: s.Queued})
	}
	return c.p.AppendProgress(redactEntry(e, c.opts.redactor()))
}
