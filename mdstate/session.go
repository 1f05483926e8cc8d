package mdstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/yuin/goldmark/ast"
)

// Session is the coordinator's record of the work it is doing, kept in a
// "## Session" section of RALPH_TASKS.md where a person looks first:
//
//	## Session
//
//	- id: 20261122-100312
//	- status: running
//	- phase: agent
//	- iteration: 3 of 20
//	- task: T4
//	- tokens: 12034 in, 3201 out
//	- cost: $0.4123
//	- baseline: 3f9c2e1a…
//	- agent: claude (sonnet)
//	- started: 2026-11-22T10:03:12Z
//	- updated: 2026-11-22T10:15:40Z
//	- pid: 4242
//	- child: 4250
//
// Tokens and cost say "unknown" while no agent of the session has reported
// them (the exec agent's CLI reports none), and end "(not counting
// iterations that reported none)" once some have and some have not.
//
// It lives in the task file, not the progress log, so that rewriting it
// costs the same however long the history grows. It holds every counter the
// coordinator needs to resume after a crash.
type Session struct {
	ID            string
	Status        SessionStatus
	Phase         Phase // empty between iterations
	Iteration     int
	MaxIterations int // 0: no limit
	Task          string
	TokensIn      int64
	TokensOut     int64
	CostUSD       float64
	// UsageUnknown and CostUnknown are set while the session's agents
	// have reported no usage (or cost) at all: the block then says
	// "unknown", not 0, which would read as free.
	UsageUnknown, CostUnknown bool
	// UsagePartial and CostPartial are set once some of the session's
	// iterations reported the figure and others did not (claude, then
	// the exec agent): the total is what was reported, and the block says
	// it leaves the others out ("1200 in, 300 out (not counting
	// iterations that reported none)") rather than pass it off as all.
	UsagePartial, CostPartial bool
	Done                      int // tasks the session completed
	Commits                   int // commits it made (--commit)
	Baseline                  string
	Agent                     string
	Model                     string
	Started                   time.Time
	Updated                   time.Time
	PID                       int // the coordinator's
	Child                     int // the child agent's process (and group) ID; 0 when none
	// ChildStart is the child's start time in clock ticks since boot, so
	// that recovery kills that process and never another that reused its
	// pid.
	ChildStart uint64
	Reason     string
	// WaitUntil is set while the session waits for a usage or rate limit
	// to reset: a restart during the wait goes on waiting.
	WaitUntil time.Time
	// Result is the outcome and usage of the iteration that has just
	// ended. It is saved with the task's new status (phase "writing", or
	// phase "agent" when the same write began the next iteration: the
	// result then names its own) and dropped by the next write, once the
	// iteration's progress entry is in the log: if ralph dies in between,
	// the next start writes the entry from it, so every token the session
	// counts is in some entry.
	Result *IterationResult
	// Report is what the agent of the iteration Result is of reported,
	// saved and dropped with Result: if ralph dies before the entry is
	// written, the next start files the learnings and to-dos and writes
	// the entry, with the summary, decisions and guidance, from it.
	Report *IterationReport
	Line   int // 1-based line of the "## Session" heading
	// Extra keeps lines ralph does not know, in order, so they survive.
	Extra []Field
}

// SessionStatus is where a session stands, written as "- status: running".
type SessionStatus string

// The session statuses.
const (
	// SessionRunning: a coordinator works on it. Recorded so, but with no
	// ralph holding the project's lock, it was interrupted.
	SessionRunning SessionStatus = "running"
	// SessionPaused: stopped on purpose (Ctrl-C, pause), to be resumed.
	SessionPaused SessionStatus = "paused"
	// SessionInterrupted: stopped by a crash or a kill; what status and
	// context report for a running session whose ralph is gone.
	SessionInterrupted SessionStatus = "interrupted"
	// SessionEnded: over, with its reason; a new run starts a new session.
	SessionEnded SessionStatus = "ended"
)

// Phase is what a running session is doing within an iteration, written as
// "- phase: agent". A crash's recovery reads it to know what was cut
// short. The empty phase is none: between iterations, or stopped.
type Phase string

// The phases, in the order an iteration goes through them.
const (
	PhaseStarting Phase = "starting" // the session is being set up or recovered
	PhaseAgent    Phase = "agent"    // a child agent runs
	PhaseWriting  Phase = "writing"  // the outcome is saved; its progress entry is being written
	PhaseWaiting  Phase = "waiting"  // waiting for a usage or rate limit to reset
	PhaseEnding   Phase = "ending"   // the session is being ended
)

// IterationResult is what one iteration came to: written in the session
// block as "- result: done, 1200 in, 300 out, $0.0123, 12s". The result of
// an iteration before the session's current one (saved in the write that
// began the next, until its progress entry is in the log) names it:
// "- result: iteration 3, T4: done, 1200 in, 300 out, $0.0123, 12s".
type IterationResult struct {
	Outcome   string // done, failed, blocked, interrupted, rate_limited
	TokensIn  int64
	TokensOut int64
	CostUSD   float64
	Duration  time.Duration // whole seconds
	// Iteration and Task name the iteration the result is of, when it is
	// not the session's current one; 0 and "" when it is.
	Iteration int
	Task      string
}

func (r *IterationResult) String() string {
	figures := fmt.Sprintf("%s, %d in, %d out, $%.4f, %s", r.Outcome, r.TokensIn, r.TokensOut, r.CostUSD, r.Duration.Round(time.Second))
	if r.Task == "" {
		return figures
	}
	return fmt.Sprintf("iteration %d, %s: %s", r.Iteration, r.Task, figures)
}

func parseIterationResult(val string) (*IterationResult, error) {
	bad := fmt.Errorf("result %q is not like \"done, 1200 in, 300 out, $0.0123, 12s\" or \"iteration 3, T4: done, 1200 in, 300 out, $0.0123, 12s\"", val)
	var it int
	var task string
	if of, figures, ok := strings.Cut(val, ":"); ok {
		n, id, ok := strings.Cut(strings.TrimPrefix(of, "iteration "), ",")
		var err error
		if it, err = strconv.Atoi(strings.TrimSpace(n)); !ok || err != nil || it < 1 || !strings.HasPrefix(of, "iteration ") {
			return nil, bad
		}
		if task = strings.ToUpper(strings.TrimSpace(id)); task == "" {
			return nil, bad
		}
		val = figures
	}
	f := strings.Split(val, ",")
	if len(f) != 5 {
		return nil, bad
	}
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	r := &IterationResult{Outcome: f[0], Iteration: it, Task: task}
	in, ok1 := strings.CutSuffix(f[1], " in")
	out, ok2 := strings.CutSuffix(f[2], " out")
	cost, ok3 := strings.CutPrefix(f[3], "$")
	var err1, err2, err3, err4 error
	r.TokensIn, err1 = strconv.ParseInt(in, 10, 64)
	r.TokensOut, err2 = strconv.ParseInt(out, 10, 64)
	r.CostUSD, err3 = strconv.ParseFloat(cost, 64)
	r.Duration, err4 = time.ParseDuration(f[4])
	if r.Outcome == "" || !ok1 || !ok2 || !ok3 || errors.Join(err1, err2, err3, err4) != nil {
		return nil, bad
	}
	return r, nil
}

// IterationReport is what an iteration's agent reported, and the queued
// guidance it answered, written in the session block under its result:
//
//   - summary: Built the cart.
//   - learnings: ["Run make first."]
//   - todos: ["Price the cart."]
//   - decisions: ["Kept floats."]
//   - guidance: ["Use tabs."]
//
// The summary is one line; the lists are JSON arrays of strings, one line
// each whatever their text holds. A part with nothing in it has no line.
type IterationReport struct {
	Summary   string
	Learnings []string
	Todos     []string
	Decisions []string
	Guidance  []string
}

// reportLists are the list parts of an IterationReport, by key, in the
// order they are written.
var reportLists = []struct {
	key  string
	part func(r *IterationReport) *[]string
}{
	{"learnings", func(r *IterationReport) *[]string { return &r.Learnings }},
	{"todos", func(r *IterationReport) *[]string { return &r.Todos }},
	{"decisions", func(r *IterationReport) *[]string { return &r.Decisions }},
	{"guidance", func(r *IterationReport) *[]string { return &r.Guidance }},
}

// reportList writes a list part as a one-line JSON array.
func reportList(items []string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "<" stays "<" for the person reading
	_ = enc.Encode(items)    // strings always encode
	return strings.TrimSuffix(b.String(), "\n")
}

// setReport reads one part of the report into s.
func (s *Session) setReport(key, val string) error {
	r := IterationReport{}
	if s.Report != nil {
		r = *s.Report
	}
	if key == "summary" {
		r.Summary = val
		s.Report = &r
		return nil
	}
	for _, l := range reportLists {
		if l.key != key {
			continue
		}
		var items []string
		if err := json.Unmarshal([]byte(val), &items); err != nil {
			return fmt.Errorf("%s %q is not a list like [\"Run make first.\"]", key, val)
		}
		*l.part(&r) = items
		s.Report = &r
	}
	return nil
}

// clearReport unsets one part of the report, and the report once nothing
// is left of it.
func (s *Session) clearReport(key string) {
	if s.Report == nil {
		return
	}
	r := *s.Report
	if key == "summary" {
		r.Summary = ""
	}
	for _, l := range reportLists {
		if l.key == key {
			*l.part(&r) = nil
		}
	}
	s.Report = &r
	if r.Summary == "" && len(r.Learnings)+len(r.Todos)+len(r.Decisions)+len(r.Guidance) == 0 {
		s.Report = nil
	}
}

// SessionHeading is the heading text that marks the session section.
const SessionHeading = "Session"

// Session finds and reads the session section of a tasks file; nil
// when there is none. Malformed values are warnings, never errors.
func (c *Checklist) Session() (*Session, []Warning) {
	md := c.md
	var warns []Warning
	for n := md.doc.FirstChild(); n != nil; n = n.NextSibling() {
		h, ok := n.(*ast.Heading)
		if !ok || !strings.EqualFold(md.headingText(h), SessionHeading) {
			continue
		}
		s := &Session{Line: c.src.line(md.pos(h))}
		// One list only: the one SetSession writes.
		if l := c.sessionList(h); l != nil {
			for li := l.FirstChild(); li != nil; li = li.NextSibling() {
				key, at, ok := c.sessionItem(li)
				if !ok {
					continue
				}
				line := c.src.src[at:c.src.contentEnd(at)]
				_, vs, ve, _ := splitKeyValue(line)
				if err := s.set(key, string(line[vs:ve])); err != nil {
					warns = append(warns, Warning{File: TasksFile, Line: c.src.line(at), Message: "session " + err.Error() + " (ignored)"})
				}
			}
		}
		return s, warns
	}
	return nil, nil
}

// set reads one item into s. A value that does not read changes nothing
// (the error says why); an empty one unsets the key.
func (s *Session) set(key, val string) error {
	t := *s
	if val == "" && sessionKeys[key] {
		t.clear(key)
	} else if err := t.apply(key, val); err != nil {
		return err
	}
	*s = t
	return nil
}

// clear unsets one of ralph's keys.
func (s *Session) clear(key string) {
	z := Session{}
	switch key {
	case "id":
		s.ID = z.ID
	case "status":
		s.Status = z.Status
	case "phase":
		s.Phase = z.Phase
	case "iteration":
		s.Iteration, s.MaxIterations = 0, 0
	case "task":
		s.Task = z.Task
	case "tokens":
		s.TokensIn, s.TokensOut, s.UsageUnknown, s.UsagePartial = 0, 0, false, false
	case "cost":
		s.CostUSD, s.CostUnknown, s.CostPartial = 0, false, false
	case "done":
		s.Done = 0
	case "commits":
		s.Commits = 0
	case "baseline":
		s.Baseline = z.Baseline
	case "agent":
		s.Agent, s.Model = "", ""
	case "started":
		s.Started = z.Started
	case "updated":
		s.Updated = z.Updated
	case "pid":
		s.PID = 0
	case "child":
		s.Child, s.ChildStart = 0, 0
	case "wait":
		s.WaitUntil = z.WaitUntil
	case "reason":
		s.Reason = z.Reason
	case "result":
		s.Result = nil
	case "summary", "learnings", "todos", "decisions", "guidance":
		s.clearReport(key)
	}
}

func (s *Session) apply(key, val string) error {
	var err error
	switch key {
	case "id":
		s.ID = val
	case "status":
		s.Status = SessionStatus(strings.ToLower(val))
	case "phase":
		s.Phase = Phase(val)
	case "iteration":
		cur, max, _ := strings.Cut(val, " of ")
		if s.Iteration, err = strconv.Atoi(strings.TrimSpace(cur)); err != nil {
			return fmt.Errorf("iteration %q is not like \"3 of 20\"", val)
		}
		if max != "" {
			if s.MaxIterations, err = strconv.Atoi(strings.TrimSpace(max)); err != nil {
				return fmt.Errorf("iteration %q is not like \"3 of 20\"", val)
			}
		}
	case "task":
		s.Task = strings.ToUpper(val)
	case "tokens":
		return s.parseTokens(val)
	case "cost":
		return s.parseCost(val)
	case "done", "commits":
		n, nerr := strconv.Atoi(val)
		if nerr != nil || n < 0 {
			return fmt.Errorf("%s %q is not a count", key, val)
		}
		if key == "done" {
			s.Done = n
		} else {
			s.Commits = n
		}
	case "baseline":
		s.Baseline = val
	case "agent":
		name, model, _ := strings.Cut(val, " (")
		s.Agent, s.Model = strings.TrimSpace(name), strings.TrimSuffix(model, ")")
	case "started", "updated":
		t, terr := time.Parse(time.RFC3339, val)
		if terr != nil {
			return fmt.Errorf("%s %q is not an RFC 3339 time", key, val)
		}
		if key == "started" {
			s.Started = t
		} else {
			s.Updated = t
		}
	case "pid", "child":
		if key == "child" {
			if pid, rest, ok := strings.Cut(val, " (start "); ok {
				start, serr := strconv.ParseUint(strings.TrimSuffix(rest, ")"), 10, 64)
				if serr != nil {
					return fmt.Errorf("child %q is not like \"4250 (start 8812345)\"", val)
				}
				s.ChildStart = start
				val = pid
			}
		}
		n, perr := strconv.Atoi(val)
		if perr != nil || n < 0 {
			return fmt.Errorf("%s %q is not a process ID", key, val)
		}
		if key == "pid" {
			s.PID = n
		} else {
			s.Child = n
		}
	case "wait":
		t, terr := time.Parse(time.RFC3339, strings.TrimSpace(strings.TrimPrefix(val, "until")))
		if terr != nil {
			return fmt.Errorf("wait %q is not like \"until 2026-11-22T10:32:00Z\"", val)
		}
		s.WaitUntil = t
	case "reason":
		s.Reason = val
	case "result":
		s.Result, err = parseIterationResult(val)
		return err
	case "summary", "learnings", "todos", "decisions", "guidance":
		return s.setReport(key, val)
	default:
		s.Extra = append(s.Extra, Field{Key: key, Value: val})
	}
	return nil
}

// sessionKeys are the keys ralph writes in the session list; other
// "key: value" items there are a person's and are kept as they are.
var sessionKeys = map[string]bool{
	"id": true, "status": true, "phase": true, "iteration": true, "task": true, "tokens": true, "cost": true,
	"done": true, "commits": true, "baseline": true, "agent": true, "started": true, "updated": true, "pid": true, "child": true, "wait": true,
	"reason": true, "result": true,
	"summary": true, "learnings": true, "todos": true, "decisions": true, "guidance": true,
}

// parseTokens reads "1200 in, 300 out", "unknown", or a partial total
// (MarkPartial).
func (s *Session) parseTokens(val string) error {
	s.TokensIn, s.TokensOut, s.UsageUnknown, s.UsagePartial = 0, 0, val == unknownFigure, false
	if s.UsageUnknown {
		return nil
	}
	total, partial := CutPartial(val)
	in, out, _ := strings.Cut(total, ",")
	var err error
	s.TokensIn, err = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(in), " in")), 10, 64)
	if err == nil {
		s.TokensOut, err = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(out), " out")), 10, 64)
	}
	if err != nil {
		return fmt.Errorf("tokens %q is not like \"1200 in, 300 out\"", val)
	}
	s.UsagePartial = partial
	return nil
}

// parseCost reads "$0.42", "unknown", or a partial total (MarkPartial).
func (s *Session) parseCost(val string) error {
	s.CostUSD, s.CostUnknown, s.CostPartial = 0, val == unknownFigure, false
	if s.CostUnknown {
		return nil
	}
	total, partial := CutPartial(val)
	var err error
	if s.CostUSD, err = strconv.ParseFloat(strings.TrimPrefix(total, "$"), 64); err != nil {
		return fmt.Errorf("cost %q is not like \"$0.42\"", val)
	}
	s.CostPartial = partial
	return nil
}

// AddUsage counts one iteration's tokens in the session's totals; known
// says whether its agent's CLI reported them. The totals are unknown while
// no iteration has reported any, and partial once some have and some have
// not.
func (s *Session) AddUsage(in, out int64, known bool) {
	s.TokensIn += in
	s.TokensOut += out
	if (known && s.UsageUnknown) || (!known && s.TokensIn+s.TokensOut > 0) {
		s.UsagePartial = true
	}
	s.UsageUnknown = !known && s.TokensIn+s.TokensOut == 0
}

// AddCost counts one iteration's cost as AddUsage counts its tokens.
func (s *Session) AddCost(usd float64, known bool) {
	s.CostUSD += usd
	if (known && s.CostUnknown) || (!known && s.CostUSD > 0) {
		s.CostPartial = true
	}
	s.CostUnknown = !known && s.CostUSD == 0
}

// KnownUsage reports whether the session's token totals are figures: not
// while its agents have reported none.
func (s *Session) KnownUsage() bool { return !s.UsageUnknown || s.TokensIn+s.TokensOut > 0 }

// KnownCost reports whether the session's cost is a figure.
func (s *Session) KnownCost() bool { return !s.CostUnknown || s.CostUSD > 0 }

// unknownFigure is a usage or cost no agent reported.
const unknownFigure = "unknown"

// partialMark ends a total that leaves out the iterations whose agents
// reported no figure.
const partialMark = " (not counting iterations that reported none)"

// MarkPartial is total as the session block, and a session's summary
// entry, write it: marked as leaving some iterations out when partial.
func MarkPartial(total string, partial bool) string {
	if partial {
		return total + partialMark
	}
	return total
}

// CutPartial is MarkPartial undone: the total, and whether it was marked.
func CutPartial(val string) (total string, partial bool) {
	return strings.CutSuffix(val, partialMark)
}

// Render returns the session section's list as ralph writes it, Extra
// items last.
func (s *Session) Render(eol string) []byte {
	b := s.render(eol)
	for _, f := range s.Extra {
		if f.Value != "" {
			b = append(b, "- "+f.Key+": "+cleanLine(f.Value)+eol...)
		}
	}
	return b
}

// fields are ralph's own items, in the order it writes them.
func (s *Session) fields() []Field {
	var fs []Field
	kv := func(k, v string) {
		if v != "" {
			fs = append(fs, Field{Key: k, Value: cleanLine(v)})
		}
	}
	kv("id", s.ID)
	kv("status", string(s.Status))
	kv("phase", string(s.Phase))
	it := strconv.Itoa(s.Iteration)
	if s.MaxIterations > 0 {
		it += " of " + strconv.Itoa(s.MaxIterations)
	}
	kv("iteration", it)
	kv("task", s.Task)
	if s.KnownUsage() {
		kv("tokens", MarkPartial(fmt.Sprintf("%d in, %d out", s.TokensIn, s.TokensOut), s.UsagePartial))
	} else {
		kv("tokens", unknownFigure)
	}
	if s.KnownCost() {
		kv("cost", MarkPartial(fmt.Sprintf("$%.4f", s.CostUSD), s.CostPartial))
	} else {
		kv("cost", unknownFigure)
	}
	if s.Done > 0 {
		kv("done", strconv.Itoa(s.Done))
	}
	if s.Commits > 0 {
		kv("commits", strconv.Itoa(s.Commits))
	}
	kv("baseline", s.Baseline)
	agent := s.Agent
	if s.Model != "" {
		agent += " (" + s.Model + ")"
	}
	kv("agent", agent)
	if !s.Started.IsZero() {
		kv("started", s.Started.UTC().Format(time.RFC3339))
	}
	if !s.Updated.IsZero() {
		kv("updated", s.Updated.UTC().Format(time.RFC3339))
	}
	if s.PID > 0 {
		kv("pid", strconv.Itoa(s.PID))
	}
	if s.Child > 0 {
		child := strconv.Itoa(s.Child)
		if s.ChildStart > 0 {
			child += " (start " + strconv.FormatUint(s.ChildStart, 10) + ")"
		}
		kv("child", child)
	}
	if !s.WaitUntil.IsZero() {
		kv("wait", "until "+s.WaitUntil.UTC().Format(time.RFC3339))
	}
	kv("reason", s.Reason)
	if s.Result != nil {
		kv("result", s.Result.String())
	}
	if r := s.Report; r != nil {
		kv("summary", r.Summary)
		for _, l := range reportLists {
			if items := *l.part(r); len(items) > 0 {
				kv(l.key, reportList(items))
			}
		}
	}
	return fs
}

// render writes ralph's own items as a "- key: value" list.
func (s *Session) render(eol string) []byte {
	var b bytes.Buffer
	for _, f := range s.fields() {
		b.WriteString("- " + f.Key + ": " + f.Value + eol)
	}
	return b.Bytes()
}

// SetSession writes the session section. In its list, ralph's own items
// are replaced as a whole; what a person wrote there stays, word for word:
// items ralph does not write (other keys, plain notes) at the end of the
// list, and text under one of ralph's items (a continuation line, a nested
// list) under the same item, or under the last one when ralph no longer
// writes that item. Without a list, one is added under the heading, or
// the section at the end of the file. The rest of the file, tasks
// included, is not touched, and the check after the splice reads the
// session back.
func (e *ChecklistEdit) SetSession(s *Session) error {
	if e.session != nil {
		return errors.New("one session write per edit")
	}
	c := e.c
	src := c.src
	md := c.md
	for n := md.doc.FirstChild(); n != nil; n = n.NextSibling() {
		h, ok := n.(*ast.Heading)
		if !ok || !strings.EqualFold(md.headingText(h), SessionHeading) {
			continue
		}
		if l := c.sessionList(h); l != nil {
			e.edits = append(e.edits, e.sessionEdits(l, s)...)
			e.session = s
			return nil
		}
		// A heading with no list yet: the list goes right under it.
		at := md.end(h)
		var b bytes.Buffer
		if at > 0 && src.src[at-1] != '\n' {
			b.WriteString(src.eol)
		}
		b.WriteString(src.eol)
		b.Write(s.Render(src.eol))
		if at < len(src.src) && !bytes.HasPrefix(src.src[at:], []byte(src.eol)) {
			b.WriteString(src.eol)
		}
		e.edits = append(e.edits, Edit{Span: Span{at, at}, Text: b.Bytes()})
		e.session = s
		return nil
	}
	// No section: add it at the end of the file.
	var b bytes.Buffer
	at := len(src.src)
	if at > 0 && src.src[at-1] != '\n' {
		b.WriteString(src.eol)
	}
	if at > 0 && !endsWithBlankLine(src.src) {
		b.WriteString(src.eol)
	}
	b.WriteString("## " + SessionHeading + src.eol + src.eol)
	b.Write(s.Render(src.eol))
	e.edits = append(e.edits, Edit{Span: Span{at, at}, Text: b.Bytes()})
	e.session = s
	return nil
}

// sessionList is the list of the session section under heading h that
// holds the session: the first with one of ralph's keys, else the first
// (a person's list above ralph's stays theirs); nil when there is none.
func (c *Checklist) sessionList(h ast.Node) *ast.List {
	var first *ast.List
	for b := h.NextSibling(); b != nil; b = b.NextSibling() {
		if _, isH := b.(*ast.Heading); isH {
			break
		}
		l, isList := b.(*ast.List)
		if !isList {
			continue
		}
		if first == nil {
			first = l
		}
		for li := l.FirstChild(); li != nil; li = li.NextSibling() {
			if key, _, ok := c.sessionItem(li); ok && sessionKeys[key] {
				return l
			}
		}
	}
	return first
}

// sessionItem reports whether list item li is a "key: value" item: its
// first line (the marker's) reads so. at is where the key starts; the key
// is one of ralph's when sessionKeys has it.
func (c *Checklist) sessionItem(li ast.Node) (key string, at int, ok bool) {
	fc := li.FirstChild()
	if fc == nil || fc.Lines().Len() == 0 {
		return "", 0, false
	}
	at = c.md.pos(fc)
	if c.src.lineStart(at) != c.src.lineStart(c.md.pos(li)) {
		return "", 0, false // the text starts on a later line
	}
	line := c.src.src[at:c.src.contentEnd(at)]
	ke, _, _, ok := splitKeyValue(line)
	if !ok {
		return "", 0, false
	}
	return strings.ToLower(string(line[:ke])), at, true
}

// sessionLine is one of ralph's own items in the session list, as read.
type sessionLine struct {
	key            string
	start, at, end int  // line start, key start, end of its content
	first, stays   bool // the list's first item; the item of its key ralph keeps
}

// sessionEdits writes s into list l in place, touching only ralph's own
// items: each is rewritten on its line (marker and indentation kept), and
// a new one goes before the next of ralph's items in ralph's order, or
// after the last. One ralph no longer writes (or an earlier duplicate)
// loses its line; when that could change how what follows reads (text
// under it, or the list's first line), the line stays with its value
// emptied ("- child:"), which reads as unset. Everything else, a person's
// items (tasks among them), notes, blank lines and layout, keeps its
// bytes.
func (e *ChecklistEdit) sessionEdits(l *ast.List, s *Session) []Edit {
	want := s.fields()
	lines := e.sessionLines(l)
	kept := keepSessionLines(lines, want)
	ins := e.insertSessionLines(l, want, kept, e.sessionPrefix(l, lines))
	// Insertions first: splice keeps the order of edits that start at the
	// same place, and one may start where a dropped line does.
	return append(ins, e.rewriteSessionLines(lines, want, len(kept) == 0)...)
}

// sessionLines reads ralph's own items in l, in file order. A line with
// one of ralph's keys but a value ralph cannot read is a person's
// (Session warns about it): it is not among them, and stays.
func (e *ChecklistEdit) sessionLines(l *ast.List) []sessionLine {
	src := e.c.src
	var out []sessionLine
	for li := l.FirstChild(); li != nil; li = li.NextSibling() {
		key, at, ok := e.c.sessionItem(li)
		if !ok || !sessionKeys[key] {
			continue
		}
		line := src.src[at:src.contentEnd(at)]
		if _, vs, ve, _ := splitKeyValue(line); (&Session{}).set(key, string(line[vs:ve])) != nil {
			continue
		}
		start := src.lineStart(at)
		sl := sessionLine{key: key, start: start, at: at, first: li == l.FirstChild()}
		if n := li.NextSibling(); n != nil {
			sl.end = max(e.backOverBlank(src.lineStart(e.c.md.pos(n))), src.lineEnd(start))
		} else {
			sl.end = e.listEnd(l)
		}
		out = append(out, sl)
	}
	return out
}

// sessionPrefix is what a new item of ralph's starts with: the
// indentation and marker of ralph's first item, else of the list's first
// item, else "- ".
func (e *ChecklistEdit) sessionPrefix(l *ast.List, lines []sessionLine) string {
	src := e.c.src
	if len(lines) > 0 {
		return string(src.src[lines[0].start:lines[0].at])
	}
	if fc := l.FirstChild(); fc != nil && fc.FirstChild() != nil {
		if at := e.c.md.pos(fc.FirstChild()); src.lineStart(at) == src.lineStart(e.c.md.pos(fc)) {
			return string(src.src[src.lineStart(at):at])
		}
	}
	return "- "
}

// keepSessionLines marks the lines ralph keeps, the last of each key it
// still writes, and returns them by key and in file order.
func keepSessionLines(lines []sessionLine, want []Field) []sessionLine {
	wanted := map[string]bool{}
	for _, f := range want {
		wanted[f.Key] = true
	}
	last := map[string]int{}
	for i, sl := range lines {
		last[sl.key] = i
	}
	var kept []sessionLine
	for i := range lines {
		if wanted[lines[i].key] && last[lines[i].key] == i {
			lines[i].stays = true
			kept = append(kept, lines[i])
		}
	}
	return kept
}

// rewriteSessionLines rewrites the value of each line ralph keeps, and
// drops the others: a line whose removal would change how what follows
// reads (something under it; the list's first line, unless ralph's new
// items take it over at the list's start) is emptied instead.
func (e *ChecklistEdit) rewriteSessionLines(lines []sessionLine, want []Field, atStart bool) []Edit {
	src := e.c.src
	value := map[string]string{}
	for _, f := range want {
		value[f.Key] = f.Value
	}
	var edits []Edit
	for _, sl := range lines {
		end := src.contentEnd(sl.at)
		text := sl.key + ":"
		switch {
		case sl.stays:
			text += " " + value[sl.key]
		case !(sl.first && !atStart) && sl.end <= src.lineEnd(sl.start):
			edits = append(edits, Edit{Span: Span{sl.start, src.lineEnd(sl.start)}})
			continue
		}
		if string(src.src[sl.at:end]) != text {
			edits = append(edits, Edit{Span: Span{sl.at, end}, Text: []byte(text)})
		}
	}
	return edits
}

// insertSessionLines adds the items ralph writes that l lacks: each
// before the next of ralph's items that is there, else after the last
// one's whole item, else at the list's start.
func (e *ChecklistEdit) insertSessionLines(l *ast.List, want []Field, kept []sessionLine, prefix string) []Edit {
	src := e.c.src
	found := map[string]sessionLine{}
	for _, sl := range kept {
		found[sl.key] = sl
	}
	inserts := map[int][]byte{}
	var at []int
	for i, f := range want {
		if _, ok := found[f.Key]; ok {
			continue
		}
		pos := -1
		for _, g := range want[i+1:] {
			if sl, ok := found[g.Key]; ok {
				pos = sl.start
				break
			}
		}
		if pos < 0 && len(kept) > 0 {
			pos = kept[len(kept)-1].end
		}
		if pos < 0 {
			pos = src.lineStart(e.c.md.pos(l))
		}
		if _, seen := inserts[pos]; !seen {
			at = append(at, pos)
		}
		inserts[pos] = append(inserts[pos], prefix+f.Key+": "+f.Value+src.eol...)
	}
	var edits []Edit
	for _, pos := range at {
		edits = append(edits, Edit{Span: Span{pos, pos}, Text: e.separateSessionLines(l, pos, inserts[pos])})
	}
	return edits
}

// separateSessionLines fits new lines inserted at pos to what is around
// them: after a last line without a line ending, which stays so, the
// line ending goes first; before text that does not start an item of the
// list, a blank line keeps it from running on into the new last item.
func (e *ChecklistEdit) separateSessionLines(l *ast.List, pos int, text []byte) []byte {
	src := e.c.src
	switch {
	case pos == len(src.src) && pos > 0 && src.src[pos-1] != '\n':
		return append([]byte(src.eol), bytes.TrimSuffix(text, []byte(src.eol))...)
	case pos < len(src.src) && len(bytes.TrimSpace(src.src[pos:src.lineEnd(pos)])) > 0 && !e.startsItem(l, pos):
		return append(text, src.eol...)
	}
	return text
}

// startsItem reports whether an item of l starts at offset pos.
func (e *ChecklistEdit) startsItem(l *ast.List, pos int) bool {
	for li := l.FirstChild(); li != nil; li = li.NextSibling() {
		if e.c.src.lineStart(e.c.md.pos(li)) == pos {
			return true
		}
	}
	return false
}

// listEnd is where list l ends: the start of the block after it, or of
// the file's end, less the blank lines between. (The end goldmark gives
// leaves out a block quote's empty last lines.)
func (e *ChecklistEdit) listEnd(l *ast.List) int {
	src := e.c.src
	end := len(src.src)
	if n := l.NextSibling(); n != nil {
		end = src.lineStart(e.c.md.pos(n))
	}
	return max(e.backOverBlank(end), src.lineEnd(src.lineStart(e.c.md.pos(l))))
}

// backOverBlank returns the start of the blank lines that end just before
// offset end (a line start), or end when there are none.
func (e *ChecklistEdit) backOverBlank(end int) int {
	src := e.c.src
	for end > 0 {
		ls := src.lineStart(end - 1)
		if len(bytes.TrimSpace(src.src[ls:end])) > 0 {
			break
		}
		end = ls
	}
	return end
}
