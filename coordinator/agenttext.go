package coordinator

import (
	"strings"
	"unicode/utf8"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/mdstate"
)

// Agent text is data. What an agent hands back (its final message, error
// text, the events it streams) is repaired and redacted once, here, as it
// comes in, before anything reaches a file, an event or a commit: invalid
// UTF-8 and control characters become U+FFFD (mdstate.CleanText), secrets
// become Redacted. One bad byte in a <learning> once aborted a run with
// "AGENT.md:12: is not valid UTF-8 … This is a bug in ralph", blaming a
// file that was fine.

// redactor is the redactor of o's secrets and of those in o.Env.
func (o Options) redactor() *redactor {
	return newRedactor(append(append([]string(nil), o.Secrets...), SecretsFromEnv(o.Env)...))
}

// cleanAgentText repairs and redacts one text from an agent.
func cleanAgentText(s string, red *redactor) string {
	return red.redact(mdstate.CleanText(s))
}

// cleanResult cleans the texts of an agent's result.
func cleanResult(res agent.Result, red *redactor) agent.Result {
	res.Final = cleanAgentText(res.Final, red)
	res.ErrorText = cleanAgentText(res.ErrorText, red)
	return res
}

// cleanEvent cleans the texts of an agent's event before a front end
// shows it.
func cleanEvent(ev agent.Event, red *redactor) agent.Event {
	ev.Text = cleanAgentText(ev.Text, red)
	ev.Tool = cleanAgentText(ev.Tool, red)
	return ev
}

// maxReportItem bounds one learning, to-do, decision or reason: a state
// file's line has a limit (mdstate.MaxLineBytes), and a learning is read
// by every later agent.
const maxReportItem = 4 << 10

// boundReport shortens what a report holds to maxReportItem each.
func boundReport(r AgentReport) AgentReport {
	r.Reason = shortenText(r.Reason, maxReportItem)
	for _, l := range []*[]string{&r.Learnings, &r.Todos, &r.Decisions} {
		for i, s := range *l {
			(*l)[i] = shortenText(s, maxReportItem)
		}
	}
	return r
}

// shortenText cuts s to at most max bytes on a rune boundary, marking the
// cut with "…".
func shortenText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimSpace(s[:cut]) + "…"
}
