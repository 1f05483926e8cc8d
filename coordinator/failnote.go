package coordinator

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/coordinator/internal/lazyre"
	"github.com/ralph-dev/ralph/mdstate"
)

// A failed attempt leaves a note under its task saying why. Five attempts
// that failed the same way left five copies of it, and so did five
// BLOCKED reports or five interruptions of ralph (issue 15); now the same
// thing again replaces the note with one that counts them, moved to the
// end of the notes:
//
//	- note: failed 3 times, last at 2026-11-23T10:00:00Z: the agent ended without <promise>COMPLETE</promise>
//	- note: blocked 2 times, last at 2026-11-23T10:00:00Z: no network here
//	- note: interrupted 2 times, last at 2026-11-23T10:00:00Z during phase agent (iteration 4); ralph resumed the session
//
// A first note is the reason alone (an interruption's says when), and
// another reason is a note of its own. Every interruption a next start
// recovered is the same reason: the note keeps the last one's phase and
// iteration. A task that is done loses the failure notes and its attempts
// line: the progress log keeps every attempt. Only the failure notes go; a
// person's notes, and ralph's other notes (blocked, interrupted, a person's
// status kept), stay.
//
// The file is all there is to go by across sessions, so a counted note is
// told from other notes by what this file writes: the counted form, a
// reason classify gives a failed attempt (failureReasons), or a recovered
// interruption's first note, each with skippedNote's words at the end or
// not. A BLOCKED report's reason is the agent's own words, which nothing
// tells from a person's: a note that says the same (mdstate.SameText) is
// counted as an earlier block for it. TestFailureReasonsRead holds
// classify and failureReasons together.

// noteKind is what happened to a task that ralph keeps one counted note
// for, as the counted note's first word says it.
type noteKind string

const (
	noteFailed      noteKind = "failed"      // an attempt failed
	noteBlocked     noteKind = "blocked"     // the agent reported the task blocked
	noteInterrupted noteKind = "interrupted" // ralph died at work on it; the next start resumed (recover.go)
)

// sep comes between a note's time and its reason: an interruption's reason
// reads on from the time ("… at T during phase agent …"), other reasons
// follow a colon.
func (k noteKind) sep() string {
	if k == noteInterrupted {
		return " "
	}
	return ": "
}

// countedNote is ralph's note about the times one thing happened to a
// task for one reason.
type countedNote struct {
	kind   noteKind
	reason string    // why; for a failure as classify gave it
	times  int       // how many times; 1 shows the first note
	last   time.Time // the last of them
	gaveUp string    // skippedNote's words when ralph skipped the task after it; ""
}

// String is the note as the task file holds it.
func (n countedNote) String() string {
	s := n.reason
	switch {
	case n.times > 1:
		s = fmt.Sprintf("%s %d times, last at %s%s%s", n.kind, n.times, stamp(n.last), n.kind.sep(), n.reason)
	case n.kind == noteInterrupted:
		s = "interrupted at " + stamp(n.last) + n.kind.sep() + n.reason
	}
	return s + n.gaveUp
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// sameAs reports whether o is a note about the same thing as n, so that
// n counts it. All recovered interruptions are one reason.
func (n countedNote) sameAs(o countedNote) bool {
	return n.kind == o.kind && (n.kind == noteInterrupted || mdstate.SameText(n.reason, o.reason))
}

// recoveredReason is a recovered interruption's reason: the phase ralph
// died in and the iteration.
func recoveredReason(phase string, iteration int) string {
	return fmt.Sprintf("during phase %s (iteration %d); ralph resumed the session", phase, iteration)
}

// isRecoveredReason reports whether reason is one recoveredReason wrote,
// unlike the loop's own "interrupted at … in iteration …" (Ctrl-C), which
// is not counted.
func isRecoveredReason(reason string) bool {
	return strings.HasPrefix(reason, "during phase ") && strings.HasSuffix(reason, "; ralph resumed the session")
}

// failureReasons are how the reasons classify (attempt.go) gives a failed
// attempt begin.
var failureReasons = []string{
	"the agent could not start: ",
	"the agent printed nothing for too long and was stopped",
	"the agent ran past the iteration timeout and was stopped",
	"the agent crashed (exit code ",
	"the agent reported an error: ",
	"the agent reported an error (",
	"the agent ended without <promise>COMPLETE</promise>",
}

var (
	countedRe     = lazyre.New(`^(failed|blocked|interrupted) ([0-9]+) times, last at (\S+?)(: | )(.+)$`)
	interruptedRe = lazyre.New(`^interrupted at (\S+) (.+)$`)
)

// readNote reads a note countedNote wrote; a plain note a BLOCKED
// report may have written is not read (see the file's comment). Its
// gaveUp is left out: a skip is stale once the task runs again.
func readNote(note string) (countedNote, bool) {
	text := trimGaveUp(note)
	if m := countedRe().FindStringSubmatch(text); m != nil {
		n := countedNote{kind: noteKind(m[1]), reason: m[5]}
		var terr error
		n.times, _ = strconv.Atoi(m[2])
		n.last, terr = time.Parse(time.RFC3339, m[3])
		if terr == nil && n.times > 1 && m[4] == n.kind.sep() && (n.kind != noteInterrupted || isRecoveredReason(n.reason)) {
			return n, true
		}
	}
	if m := interruptedRe().FindStringSubmatch(text); m != nil && isRecoveredReason(m[2]) {
		if last, err := time.Parse(time.RFC3339, m[1]); err == nil {
			return countedNote{kind: noteInterrupted, reason: m[2], times: 1, last: last}, true
		}
	}
	for _, r := range failureReasons {
		if strings.HasPrefix(text, r) {
			return countedNote{kind: noteFailed, reason: text, times: 1}, true
		}
	}
	return countedNote{}, false
}

// earlier reads note as an earlier time of n's: a counted note about the
// same thing, or for a block a plain note that says the same.
func (n countedNote) earlier(note string) (countedNote, bool) {
	old, ok := readNote(note)
	if !ok && n.kind == noteBlocked {
		old, ok = countedNote{kind: noteBlocked, reason: note, times: 1}, true
	}
	return old, ok && n.sameAs(old)
}

// trimGaveUp returns a note without skippedNote's words at its end.
func trimGaveUp(note string) string {
	if s, ok := strings.CutSuffix(note, skippedNote(giveUpPolicy, 0)); ok {
		return s
	}
	if loc := skippedAfterRe().FindStringIndex(note); loc != nil {
		return note[:loc[0]]
	}
	return note
}

// staleOnDone reports whether a done task's note is ralph's record of
// its failures: a failure note, or another note of ralph's that ends with
// it giving up on the task (an interrupted session's, recover.go).
func staleOnDone(note string) bool {
	if n, ok := readNote(note); ok && n.kind == noteFailed {
		return true
	}
	return trimGaveUp(note) != note
}

// addCounted has e note n under task id: the notes about the same thing
// there go, and one note counting them all and this one comes last.
func addCounted(e *mdstate.ChecklistEdit, id string, n countedNote) error {
	if n.reason == "" {
		return nil
	}
	cur := e.Checklist().Find(id)
	if cur == nil {
		return e.NotFound(id)
	}
	for i, note := range cur.Notes {
		old, ok := n.earlier(note)
		if !ok {
			continue
		}
		if err := e.DropNote(id, i); err != nil {
			return err
		}
		n.times += old.times
	}
	return e.AddMeta(id, "note", n.String())
}

// ClearFailures has e take from task id, done, ralph's notes on its failed
// attempts and its attempts line: the progress log keeps them. The agent's
// completion does it, and so does a person's `ralph task done`. A person's
// notes, and ralph's notes on why the task was blocked or interrupted,
// stay.
func ClearFailures(e *mdstate.ChecklistEdit, id string) error {
	cur := e.Checklist().Find(id)
	if cur == nil {
		return e.NotFound(id)
	}
	for i, note := range cur.Notes {
		if !staleOnDone(note) {
			continue
		}
		if err := e.DropNote(id, i); err != nil {
			return err
		}
	}
	return e.DropMeta(id, "attempts")
}

// ClearGaveUp has e take from task id's notes the words saying ralph gave
// up on it ("; skipped after 3 failed attempts"), for a person who reopens
// it: they would be stale, and would make a later skip by the person read
// as ralph's. The reasons before them stay. It reports whether a note
// changed.
func ClearGaveUp(e *mdstate.ChecklistEdit, id string) (bool, error) {
	cur := e.Checklist().Find(id)
	if cur == nil {
		return false, e.NotFound(id)
	}
	changed := false
	for i, note := range cur.Notes {
		text := strings.TrimSpace(trimGaveUp(note))
		if text == note {
			continue
		}
		var err error
		if text == "" {
			err = e.DropNote(id, i)
		} else {
			err = e.ReplaceNote(id, i, text)
		}
		if err != nil {
			return changed, err
		}
		changed = true
	}
	return changed, nil
}
