package coordinator

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/mdstate"
)

// This file keeps what ralph wrote in the state files during a session,
// so that two rules hold whoever else writes them:
//
//   - A person's edit wins. A task status a person changed since ralph
//     wrote it is theirs: ralph's later writes leave it as it is, and
//     ralph records its own view in the progress log instead.
//   - No edit of ralph's is lost to someone else's stale copy. When a file
//     goes back to an older version (an editor saving a buffer it read
//     before ralph's write, an agent's `git checkout -- .`), ralph writes
//     its edits of this session again.
//
// What tells the two apart in RALPH_TASKS.md is the Session section, which
// only ralph writes and which changes with every write of ralph's: a file
// whose Session section is not the one ralph last wrote is an older
// version, and a status there that is one ralph's writes replaced is
// ralph's edit lost, not a person's. In the files ralph only adds to
// (to-dos, learnings, progress entries), the additions missing from the
// end of what ralph added are lost to an older copy and come back once;
// one missing before an addition that is still there was deleted on
// purpose and stays deleted.

// taskMark is the status ralph last wrote for one task, and the statuses
// its writes of this session replaced.
type taskMark struct {
	status mdstate.Status
	before []mdstate.Status
}

// addition is one line of text ralph added to a file ralph only adds to.
type addition struct {
	text     string
	restored bool // written again once already: a second loss is a person's
}

// ownEdits is ralph's record of its edits in the current session.
type ownEdits struct {
	tasks map[string]*taskMark
	// session is the Session block as ralph last wrote it; nil before
	// the session's first write.
	session   *mdstate.Session
	todos     []addition
	learnings []addition
	entries   []mdstate.Entry
	// took is the tasks a person took from ralph this session, with the
	// status they gave them.
	took map[string]mdstate.Status
}

// reset forgets everything: a new session owns nothing yet.
func (o *ownEdits) reset() { *o = ownEdits{} }

// marked records that ralph wrote status st for task id, replacing was.
func (o *ownEdits) marked(id string, was, st mdstate.Status) {
	if o.tasks == nil {
		o.tasks = map[string]*taskMark{}
	}
	m := o.tasks[id]
	if m == nil {
		m = &taskMark{}
		o.tasks[id] = m
	}
	if was != st && !slices.Contains(m.before, was) {
		m.before = append(m.before, was)
	}
	m.status = st
}

// wroteSession records the Session block of a successful write.
func (o *ownEdits) wroteSession(s mdstate.Session) { o.session = &s }

// taskPlan is what one write of RALPH_TASKS.md found about the statuses
// ralph wrote before: which it writes again, and which a person took.
type taskPlan struct {
	rolledBack bool
	restored   []string                  // "T3 done": the statuses ralph writes again
	taken      map[string]mdstate.Status // ID → the person's status; "" for a removed task
}

// personal reports whether a person took task id, and what they made it.
func (p taskPlan) personal(id string) (mdstate.Status, bool) {
	st, ok := p.taken[id]
	return st, ok
}

// reconcileTasks compares the task file e edits with ralph's record, and
// has e write again each status of ralph's that an older copy replaced,
// except task except's, which the write sets itself.
func (o *ownEdits) reconcileTasks(e *mdstate.ChecklistEdit, except string) (taskPlan, error) {
	c := e.Checklist()
	plan := taskPlan{rolledBack: o.rolledBack(c), taken: map[string]mdstate.Status{}}
	// Every write looks at every task of the session's: a status and a
	// map lookup each, no copy of an item and no sort of the IDs.
	for id, m := range o.tasks {
		st, ok := c.StatusOf(id)
		switch {
		case !ok:
			plan.taken[id] = ""
		case st == m.status:
		case plan.rolledBack && slices.Contains(m.before, st):
			if id == except {
				continue
			}
			if err := e.SetStatus(id, m.status); err != nil {
				return plan, err
			}
			plan.restored = append(plan.restored, id+" "+string(m.status))
		default:
			plan.taken[id] = st
		}
	}
	slices.Sort(plan.restored)
	return plan, nil
}

// settle drops the tasks a person took from the record: their status is
// theirs from now on.
func (o *ownEdits) settle(p taskPlan) {
	for id, st := range p.taken {
		delete(o.tasks, id)
		if o.took == nil {
			o.took = map[string]mdstate.Status{}
		}
		o.took[id] = st
	}
}

// takenBy reports whether a person took task id this session and it still
// has the status they gave it.
func (o *ownEdits) takenBy(id string, now mdstate.Status) bool {
	st, ok := o.took[id]
	return ok && st == now
}

// rolledBack reports whether c is an older version of the file than the
// one ralph last wrote: its Session section is not ralph's last.
func (o *ownEdits) rolledBack(c *mdstate.Checklist) bool {
	if o.session == nil {
		return false
	}
	s, _ := c.Session()
	return s == nil || !sameSession(*s, *o.session)
}

// sameSession compares the fields of two Session blocks that change with
// ralph's writes, as the file holds them (times to the second).
func sameSession(a, b mdstate.Session) bool {
	return a.ID == b.ID && a.Status == b.Status && a.Phase == b.Phase && a.Iteration == b.Iteration &&
		a.Task == b.Task && a.Done == b.Done && a.TokensIn == b.TokensIn && a.TokensOut == b.TokensOut &&
		a.Updated.Truncate(time.Second).Equal(b.Updated.Truncate(time.Second))
}

// lostAdditions returns the additions in list that an older copy of their
// file dropped: those missing from the end of the list. The list is in the
// order the file has them (one written again goes last, as it does in the
// file). Every other missing one a person deleted, and is forgotten. So is
// one already written again once that is the only one missing now: a
// person deleted it twice. has says whether the file holds a text.
func lostAdditions(list *[]addition, has func(string) bool) []string {
	n := len(*list)
	for n > 0 && !has((*list)[n-1].text) {
		n--
	}
	lost := slices.Clone((*list)[n:])
	kept := slices.DeleteFunc(slices.Clone((*list)[:n]), func(a addition) bool { return !has(a.text) })
	if len(lost) == 1 && lost[0].restored {
		lost = nil
	}
	var texts []string
	for i := range lost {
		lost[i].restored = true
		texts = append(texts, lost[i].text)
	}
	*list = append(kept, lost...)
	return texts
}

// lostEntries returns ralph's progress entries of this session that the
// log no longer holds (recent: its last entries), oldest first: those
// missing after the last one still there.
func (o *ownEdits) lostEntries(recent []mdstate.Entry) []mdstate.Entry {
	has := func(e mdstate.Entry) bool {
		for i := len(recent) - 1; i >= 0; i-- {
			if recent[i].Title == e.Title && recent[i].Time.Truncate(time.Second).Equal(e.Time.Truncate(time.Second)) {
				return true
			}
		}
		return false
	}
	i := len(o.entries)
	for i > 0 && !has(o.entries[i-1]) {
		i--
	}
	return slices.Clone(o.entries[i:])
}

// sameAsOneOf returns what says whether one of texts says the same as a
// text (mdstate.SameKey), as FindSame does, with each of texts' keys made
// once: every write that files a report looks up all of the session's
// additions.
func sameAsOneOf(texts []string) func(string) bool {
	keys := make(map[string]bool, len(texts))
	for _, t := range texts {
		keys[mdstate.SameKey(t)] = true
	}
	return func(t string) bool {
		k := mdstate.SameKey(t)
		return k != "" && keys[k]
	}
}

// lostTodos is lostAdditions for this session's to-dos and the to-do list
// l: those an older copy of the file dropped, and the session's list as
// it stands once they are written again. c.own.todos is left as it is.
func (c *Coordinator) lostTodos(l *mdstate.Checklist) (lost []string, after []addition) {
	after = slices.Clone(c.own.todos)
	if len(after) == 0 {
		return nil, after
	}
	titles := make([]string, 0, l.Len())
	for _, it := range l.Items() {
		titles = append(titles, it.Title)
	}
	lost = lostAdditions(&after, sameAsOneOf(titles))
	return lost, after
}

// lostLearnings is lostTodos for this session's learnings and AGENT.md.
func (c *Coordinator) lostLearnings(a *mdstate.Agent) (lost []string, after []addition) {
	after = slices.Clone(c.own.learnings)
	if len(after) == 0 {
		return nil, after
	}
	texts := make([]string, 0, len(a.Learnings))
	for _, l := range a.Learnings {
		texts = append(texts, l.Text)
	}
	lost = lostAdditions(&after, sameAsOneOf(texts))
	return lost, after
}

// restoredNote says what ralph wrote again, for a notice.
func restoredNote(file string, what []string) string {
	return file + " went back to an older version (an editor's stale save, or a git checkout or reset); ralph wrote again what it had written this session: " + strings.Join(what, ", ")
}

// fileReport files an agent's learnings and to-dos, and remembers what it
// added. What it could not file goes in the progress entry (filed.fields).
// Its writes put back the to-dos and learnings of ralph's that an older
// copy of their file dropped since restoreAdditions looked.
func (c *Coordinator) fileReport(rep AgentReport) (filed, error) {
	// The lists as the writes that put some back leave them.
	var todos, learnings []addition
	lost := lostOwn{
		todos: func(l *mdstate.Checklist) (lost []string) {
			lost, todos = c.lostTodos(l)
			return lost
		},
		learnings: func(a *mdstate.Agent) (lost []string) {
			lost, learnings = c.lostLearnings(a)
			return lost
		},
	}
	f, err := fileReportWith(c.p, rep, c.emit, lost)
	if len(f.relearned) > 0 {
		c.own.learnings = learnings
		c.emit(Event{Kind: EventNotice, Text: restoredNote(mdstate.AgentFile, quoteAll("learning", f.relearned))})
	}
	if len(f.readded) > 0 {
		c.own.todos = todos
		c.emit(Event{Kind: EventNotice, Text: restoredNote(mdstate.TodoFile, quoteAll("to-do", f.readded))})
	}
	for _, l := range f.learnings {
		c.own.learnings = append(c.own.learnings, addition{text: l})
	}
	for _, t := range f.todos {
		c.own.todos = append(c.own.todos, addition{text: t})
	}
	return f, err
}

// appendEntry appends a progress entry, and remembers it.
func (c *Coordinator) appendEntry(e mdstate.Entry) error {
	if err := c.p.AppendProgress(e); err != nil {
		return err
	}
	c.noteEntry(e)
	return nil
}

// noteEntry counts e, appended, among ralph's additions and says so.
func (c *Coordinator) noteEntry(e mdstate.Entry) {
	c.own.entries = append(c.own.entries, e)
	c.emit(Event{Kind: EventStateWritten, File: mdstate.ProgressFile})
}

// catchUp looks at the state files someone else wrote since ralph's last
// write of each (a person, an agent, an editor saving an old copy) and
// writes again what an older copy took away: in RALPH_TASKS.md with the
// next session write (saveSession reconciles), in the files ralph only
// adds to here. It runs before each task is picked and after each agent.
func (c *Coordinator) catchUp() error {
	if c.session.ID == "" {
		return nil
	}
	if c.changedOnDisk(mdstate.TasksFile) {
		if err := c.saveSession(nil); err != nil {
			return err
		}
	}
	return c.restoreAdditions()
}

// restoreAdditions is catchUp for the files ralph only adds to. It runs
// right after each agent too, before ralph adds anything: an addition to
// an older copy would hide what the copy lost.
func (c *Coordinator) restoreAdditions() error {
	// A file is looked at only if ralph added to it this session.
	if len(c.own.todos) > 0 && c.changedOnDisk(mdstate.TodoFile) {
		if err := c.restoreTodos(); err != nil {
			return err
		}
	}
	if len(c.own.learnings) > 0 && c.changedOnDisk(mdstate.AgentFile) {
		if err := c.restoreLearnings(); err != nil {
			return err
		}
	}
	if len(c.own.entries) > 0 && c.changedOnDisk(mdstate.ProgressFile) {
		return c.restoreEntries()
	}
	return nil
}

// changedOnDisk reports whether name is no longer what ralph's last write
// left there. A file ralph cannot read now is left to the write that
// needs it, which says why.
func (c *Coordinator) changedOnDisk(name string) bool {
	changed, ok, err := c.p.ChangedSinceOwnWrite(name)
	return err == nil && ok && changed
}

// restoreTodos adds again the to-dos of this session an older copy of
// RALPH_TODO.md dropped.
func (c *Coordinator) restoreTodos() error {
	if len(c.own.todos) == 0 {
		return nil
	}
	todos, err := c.p.LoadChecklist(mdstate.TodoKind)
	if err != nil {
		return nil // missing or unreadable: nothing to add to
	}
	lost, after := c.lostTodos(todos)
	c.own.todos = after
	if len(lost) == 0 {
		return nil
	}
	if _, _, err := addTodos(c.p, lost); err != nil {
		return fmt.Errorf("write again the to-dos an older copy of %s dropped: %w", mdstate.TodoFile, err)
	}
	c.emit(Event{Kind: EventNotice, Text: restoredNote(mdstate.TodoFile, quoteAll("to-do", lost))})
	return nil
}

// restoreLearnings adds again the learnings of this session an older copy
// of AGENT.md dropped.
func (c *Coordinator) restoreLearnings() error {
	if len(c.own.learnings) == 0 {
		return nil
	}
	a, err := c.p.LoadAgent()
	if err != nil {
		return nil
	}
	lost, after := c.lostLearnings(a)
	c.own.learnings = after
	for _, l := range lost {
		// One a person wrote again meanwhile is there: nothing to do.
		if err := c.p.Learn(l); err != nil && !errors.As(err, new(*mdstate.DuplicateError)) {
			return fmt.Errorf("write again a learning an older copy of %s dropped: %w", mdstate.AgentFile, err)
		}
	}
	if len(lost) > 0 {
		c.emit(Event{Kind: EventNotice, Text: restoredNote(mdstate.AgentFile, quoteAll("learning", lost))})
	}
	return nil
}

// restoreEntries appends again the progress entries of this session an
// older copy of the log dropped.
func (c *Coordinator) restoreEntries() error {
	if len(c.own.entries) == 0 {
		return nil
	}
	lg, err := c.p.ReadProgress(len(c.own.entries) + 32)
	if err != nil {
		return nil
	}
	lost := c.own.lostEntries(lg.Recent)
	for _, e := range lost {
		if err := c.p.AppendProgress(e); err != nil {
			return fmt.Errorf("write again a progress entry an older copy of %s dropped: %w", mdstate.ProgressFile, err)
		}
	}
	if len(lost) > 0 {
		titles := make([]string, len(lost))
		for i, e := range lost {
			titles[i] = "entry " + strconv.Quote(e.Title)
		}
		c.emit(Event{Kind: EventNotice, Text: restoredNote(mdstate.ProgressFile, titles)})
	}
	return nil
}

func quoteAll(noun string, texts []string) []string {
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = noun + " " + strconv.Quote(t)
	}
	return out
}

// churnRetries and churnPause bound how long ralph keeps trying to save
// RALPH_TASKS.md while something rewrites it over and over
// (mdstate.ChurnError): a few editors' bursts, not a program in a loop.
const (
	churnRetries = 5
	churnPause   = 200 * time.Millisecond
)

// updateTasks is UpdateChecklist of RALPH_TASKS.md, tried again a few
// times while the file keeps changing under each save: a person's burst of
// saves loses nothing either way, and it should not end the run.
func (c *Coordinator) updateTasks(fn func(e *mdstate.ChecklistEdit) error) (*mdstate.Checklist, error) {
	for try := 1; ; try++ {
		after, err := c.p.UpdateChecklist(mdstate.TasksKind, fn)
		var churn *mdstate.ChurnError
		if !errors.As(err, &churn) || try == churnRetries {
			c.tellRescued()
			return after, err
		}
		c.emit(Event{Kind: EventNotice, Text: churn.Error() + "; trying again"})
		time.Sleep(churnPause)
	}
}

// tellRescued says where ralph kept versions of a state file it found
// left over (a crash in the middle of a save) or replaced while it kept
// changing.
func (c *Coordinator) tellRescued() {
	for _, r := range c.p.Rescued() {
		c.emit(Event{Kind: EventNotice, Text: r.String()})
	}
}
