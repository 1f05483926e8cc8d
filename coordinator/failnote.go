package coordinator

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/mdstate"
)

// A failed attempt leaves a note under its task saying why. Five attempts
// that failed the same way left five copies of it (issue 15); now the same
// reason again replaces the note with one that counts them, moved to the
// end of the notes:
//
//	- note: failed 3 times, last at 2026-11-23T10:00:00Z: the agent ended without <promise>COMPLETE</promise>
//
// A first failure's note is the reason alone, and another reason is a note
// of its own. A task that is done loses these notes and its attempts line:
// the progress log keeps every attempt. Only the notes written here go; a
// person's notes, and ralph's other notes (blocked, interrupted, a
// person's status kept), stay.
//
// The file is all there is to go by across sessions, so a failure note is
// told from other notes by what this file writes: the counted form, or a
// reason classify gives a failed attempt (failureReasons), either one with
// skippedNote's words at the end. TestFailureReasonsRead holds classify
// and failureReasons together.

// failNote is ralph's note about a task's failed attempts for one
// reason.
type failNote struct {
	reason string    // why, as classify gave it
	times  int       // failed attempts for this reason; 1 shows the reason alone
	last   time.Time // the last of them
	gaveUp string    // skippedNote's words when ralph skipped the task after it; ""
}

// String is the note as the task file holds it.
func (n failNote) String() string {
	s := n.reason
	if n.times > 1 {
		s = fmt.Sprintf("failed %d times, last at %s: %s", n.times, n.last.UTC().Format(time.RFC3339), n.reason)
	}
	return s + n.gaveUp
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

var countedRe = regexp.MustCompile(`^failed ([0-9]+) times, last at ([^ ]+): (.+)$`)

// readFailNote reads a note failNote wrote. Its gaveUp is left out:
// a skip is stale once the task runs again.
func readFailNote(note string) (failNote, bool) {
	reason := trimGaveUp(note)
	if m := countedRe.FindStringSubmatch(reason); m != nil {
		times, err := strconv.Atoi(m[1])
		last, terr := time.Parse(time.RFC3339, m[2])
		if err == nil && terr == nil && times > 1 {
			return failNote{reason: m[3], times: times, last: last}, true
		}
	}
	for _, r := range failureReasons {
		if strings.HasPrefix(reason, r) {
			return failNote{reason: reason, times: 1}, true
		}
	}
	return failNote{}, false
}

// trimGaveUp returns a note without skippedNote's words at its end.
func trimGaveUp(note string) string {
	if s, ok := strings.CutSuffix(note, skippedNote(giveUpPolicy, 0)); ok {
		return s
	}
	if loc := skippedAfterRe.FindStringIndex(note); loc != nil {
		return note[:loc[0]]
	}
	return note
}

// staleOnDone reports whether a done task's note is ralph's record of
// its failures: a failure note, or another note of ralph's that ends with
// it giving up on the task (an interrupted session's, recover.go).
func staleOnDone(note string) bool {
	if _, ok := readFailNote(note); ok {
		return true
	}
	return trimGaveUp(note) != note
}

// noteFailure has e note failure n under task id: the notes of the same
// reason there (mdstate.SameText) go, and one note counting them all and
// this one comes last.
func noteFailure(e *mdstate.ChecklistEdit, id string, n failNote) error {
	if n.reason == "" {
		return nil
	}
	cur := e.Checklist().Find(id)
	if cur == nil {
		return e.NotFound(id)
	}
	for i, note := range cur.Notes {
		old, ok := readFailNote(note)
		if !ok || !mdstate.SameText(old.reason, n.reason) {
			continue
		}
		if err := e.DropNote(id, i); err != nil {
			return err
		}
		n.times += old.times
	}
	return e.AddMeta(id, "note", n.String())
}

// clearFailures has e take from done task id its failure notes and its
// attempts line.
func clearFailures(e *mdstate.ChecklistEdit, id string) error {
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
