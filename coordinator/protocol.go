package coordinator

import (
	"strings"

	"github.com/ralph-dev/ralph/coordinator/internal/lazyre"
)

// Protocol is the reporting protocol every child agent is told, appended to
// its prompt. ralph reads the agent's final message only, never its raw
// output: echoed prompts and file contents carry these markers too
// (snarktank/ralph PR #31, frankbria/ralph-claude-code#183).
const Protocol = `## How to report

Work on the current task only. Leave ralph's state files to ralph: do not
edit, reset, check out or stash AGENT.md, RALPH_GOALS.md, RALPH_TASKS.md,
RALPH_PROGRESS.md or RALPH_TODO.md; report through the tags below instead.

When the task is done, end your final message with

<promise>COMPLETE</promise>

If you cannot finish it, end your final message with

<promise>BLOCKED: the reason, in one line</promise>

Anywhere in your final message you may also add, one per tag:

<learning>something every future agent should know about working in this project</learning>
<todo>a follow-up worth doing that is outside this task</todo>
<decision>a choice you made, and why</decision>

Only your final message is read; say nothing else is done if it is not.
`

// Verdict is what an agent's final message says about its task.
type Verdict string

// The verdicts.
const (
	VerdictComplete Verdict = "complete"
	VerdictBlocked  Verdict = "blocked"
	VerdictNone     Verdict = "" // no marker: not completion, whatever the exit code
)

// AgentReport is what ralph takes from a final message.
type AgentReport struct {
	Verdict   Verdict
	Reason    string // for blocked
	Learnings []string
	Todos     []string
	Decisions []string
	Summary   string // the message without the tags, shortened to one line
	// Body is the message without the tags, its lines kept: an answer to
	// show a person.
	Body string
}

var (
	promiseRe  = lazyre.New(`(?s)<promise>\s*(.*?)\s*</promise>`)
	learningRe = lazyre.New(`(?s)<learning>\s*(.*?)\s*</learning>`)
	todoRe     = lazyre.New(`(?s)<todo>\s*(.*?)\s*</todo>`)
	decisionRe = lazyre.New(`(?s)<decision>\s*(.*?)\s*</decision>`)
	anyTagRe   = lazyre.New(`(?s)<(promise|learning|todo|decision)>.*?</(promise|learning|todo|decision)>`)
)

// ParseReport reads an agent's final message. The last promise counts, and
// only if it is the end of the message: a marker quoted mid-text (the agent
// explaining the protocol back) is not a verdict.
func ParseReport(final string) AgentReport {
	var r AgentReport
	trimmed := strings.TrimSpace(final)
	if ms := promiseRe().FindAllStringSubmatchIndex(trimmed, -1); len(ms) > 0 {
		m := ms[len(ms)-1]
		if strings.TrimSpace(trimmed[m[1]:]) == "" {
			body := strings.TrimSpace(trimmed[m[2]:m[3]])
			switch {
			case strings.EqualFold(body, "COMPLETE"):
				r.Verdict = VerdictComplete
			case len(body) >= 7 && strings.EqualFold(body[:7], "BLOCKED"):
				r.Verdict = VerdictBlocked
				r.Reason = strings.TrimSpace(strings.TrimLeft(body[7:], ": -"))
				if r.Reason == "" {
					r.Reason = "the agent gave no reason"
				}
			}
		}
	}
	for _, m := range learningRe().FindAllStringSubmatch(trimmed, -1) {
		if s := oneLineText(m[1]); s != "" {
			r.Learnings = append(r.Learnings, s)
		}
	}
	for _, m := range todoRe().FindAllStringSubmatch(trimmed, -1) {
		if s := oneLineText(m[1]); s != "" {
			r.Todos = append(r.Todos, s)
		}
	}
	for _, m := range decisionRe().FindAllStringSubmatch(trimmed, -1) {
		if s := oneLineText(m[1]); s != "" {
			r.Decisions = append(r.Decisions, s)
		}
	}
	r.Body = strings.TrimSpace(anyTagRe().ReplaceAllString(trimmed, " "))
	r.Summary = oneLineText(r.Body)
	if len(r.Summary) > 300 {
		r.Summary = r.Summary[:strings.LastIndex(r.Summary[:300], " ")+1] + "…"
	}
	return r
}

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }
