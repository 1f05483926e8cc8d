package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/gitctx"
	"github.com/ralph-dev/ralph/mdstate"
)

// With --commit, each completed task gets one commit that holds what its
// agent changed, its own progress entry and the state files as they
// stand after it; a session that ends (not one paused) gets a last
// commit, "ralph: session ID ended", with its summary entry and the
// ended session, so the run leaves none of ralph's writes uncommitted.
// Never a file that was dirty before the task began (a person's work)
// other than the state files, which ralph keeps current; never
// everything in the work tree.
//
// The order is the session's own: the task's status (phase "writing"),
// its report, its entry, then the commit. The entry once came after the
// commit, to name its hash, which an entry inside the commit cannot: so
// T21's entry went into T22's commit and the last one stayed uncommitted
// (issue 15). Now the entry's link to its commit is the commit itself:
// `git log RALPH_PROGRESS.md` shows the commit that added it.
//
// A kill between the entry and the commit must lose neither and make
// neither twice. What the commit needs that no file says (the paths that
// were dirty before the task) is kept in .ralph/commit.json before the
// agent starts, like the agent's report (keptreport.go); the session's
// last commit is recorded there before the session is saved as ending.
// Recovery makes a task's commit after restoreEntry wrote any lost entry
// and before the "recovered" entry (finishTaskCommit); a session killed
// while or after it ended gets its last commit on the next start
// (finishEndCommit). A kill after the commit but before the record was
// dropped is seen in git: the branch's head already has the commit's
// subject, made since the record was kept. git's index is then brought
// up to that commit, in case the kill came between the commit and its
// update of the index.

// pendingCommit is the record in .ralph/commit.json: a commit ralph owes.
type pendingCommit struct {
	Session string `json:"session"`
	// Iteration and Task name the task's iteration; 0 and "" for the
	// session's last commit.
	Iteration int    `json:"iteration,omitempty"`
	Task      string `json:"task,omitempty"`
	Message   string `json:"message"`
	// Since is when the record was kept: a commit with Message made since
	// is this one.
	Since time.Time `json:"since"`
	// DirtyBefore lists the paths that were dirty before the task began,
	// which its commit leaves out unless they are state files.
	DirtyBefore []string `json:"dirty_before,omitempty"`
}

// isEnd reports whether pc is a session's last commit, not a task's.
func (pc *pendingCommit) isEnd() bool { return pc.Iteration == 0 }

// commitTimeout bounds a commit. Not the run's context: a stop that
// comes after a task is done must not lose its commit.
const commitTimeout = time.Minute

func pendingCommitPath(root string) string {
	return filepath.Join(root, mdstate.RuntimeDir, "commit.json")
}

// keepTaskCommit records the commit task's iteration will owe if it
// completes: what is dirty now is a person's, not the agent's.
func (c *Coordinator) keepTaskCommit(ctx context.Context, task *mdstate.Item) (*pendingCommit, error) {
	pc := &pendingCommit{
		Session: c.session.ID, Iteration: c.session.Iteration, Task: task.ID,
		// The title is read back from RALPH_TASKS.md, which an agent may
		// have edited: a secret in it stays out of git's history.
		Message:     c.opts.redactor().redact(mdstate.CleanText("ralph: " + task.ID + " " + task.Title)),
		Since:       c.opts.Now(),
		DirtyBefore: DirtyPaths(ctx, c.opts.Root),
	}
	return pc, keepCommit(c.opts.Root, pc)
}

// keepEndCommit records the session's last commit, before the session is
// saved as ending.
func (c *Coordinator) keepEndCommit() error {
	if !c.opts.Commit {
		return nil
	}
	return keepCommit(c.opts.Root, c.endCommit())
}

// endCommit is the commit of the session's end: its summary entry and
// the ended session, with whatever else ralph wrote after the last task.
// It is a commit of its own, not folded into the last task's: that one is
// made when the task ends, before ralph knows whether another follows (a
// person may add one at any moment), and folding the summary in later
// would mean rewriting a commit a person may already have pushed or built
// on. In `git log` the session then reads as its tasks, one commit each,
// and a last line saying it ended.
func (c *Coordinator) endCommit() *pendingCommit {
	return &pendingCommit{Session: c.session.ID, Message: "ralph: " + sessionEndedTitle(c.session.ID), Since: c.opts.Now()}
}

// keepCommit writes pc durably, replacing the record before it.
func keepCommit(root string, pc *pendingCommit) error {
	data, err := json.MarshalIndent(pc, "", "  ")
	if err != nil {
		return err
	}
	path := pendingCommitPath(root)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return ioError("keep the commit's record", err)
	}
	if err := mdstate.WriteFileAtomic(path, append(data, '\n'), 0o600); err != nil {
		return ioError("keep the commit's record", err)
	}
	return nil
}

// readPendingCommit returns the record, or nil when there is none or it
// cannot be read (a deleted .ralph/ loses only the commit, which the next
// task's commit then takes: its files stay dirty, not lost).
func readPendingCommit(root string) *pendingCommit {
	data, err := os.ReadFile(pendingCommitPath(root))
	if err != nil {
		return nil
	}
	var pc pendingCommit
	if json.Unmarshal(data, &pc) != nil || pc.Session == "" || pc.Message == "" {
		return nil
	}
	return &pc
}

// dropPendingCommit forgets the record once its commit is made or not
// owed. One that cannot be removed does no harm: it names an iteration
// that is over, and a commit already made is seen in git.
func dropPendingCommit(root string) { _ = os.Remove(pendingCommitPath(root)) }

// commitTask makes a finished iteration's commit, after its progress
// entry: when the task completed, the paths dirty now and not before it
// plus the state files. A failed commit does not stop the run: it is
// told, and noted under the task (its entry is written already); only a
// failure to write that note is returned.
func (c *Coordinator) commitTask(ctx context.Context, pc *pendingCommit, task *mdstate.Item, done bool) error {
	defer dropPendingCommit(c.opts.Root)
	if !done {
		return nil
	}
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer stop()
	hash, err := c.makeCommit(ctx, pc)
	if err == nil {
		if hash != "" {
			c.counted(pc)
		}
		return nil
	}
	c.emit(Event{Kind: EventNotice, Task: task.ID, Text: commitFailedText(task.ID, err)})
	note := fmt.Sprintf("commit failed at %s: %v; its changes are not committed", c.opts.Now().UTC().Format(time.RFC3339), err)
	return c.saveSession(func(e *mdstate.ChecklistEdit) error {
		if e.Checklist().Find(task.ID) == nil {
			return nil // a person removed it; the notice said it
		}
		return e.AddMeta(task.ID, "note", c.opts.redactor().redact(note))
	})
}

func commitFailedText(what string, err error) string {
	return fmt.Sprintf("ralph could not commit %s: %v; its changes stay uncommitted", what, err)
}

// commitEnd makes the session's last commit, after the session was saved
// as ended, so that a run that ends leaves a clean work tree. Like a
// task's commit it ignores a stop (finishCommit), within commitTimeout.
func (c *Coordinator) commitEnd() {
	if !c.opts.Commit {
		return
	}
	pc := readPendingCommit(c.opts.Root)
	if pc == nil || pc.Session != c.session.ID || !pc.isEnd() {
		pc = c.endCommit() // the record could not be read back: the commit is owed all the same
	}
	c.finishCommit(context.Background(), pc, "the end of session "+c.session.ID)
}

// finishCommit makes pc's commit unless it was made already, tells a
// failure, and drops the record. It is not under ctx's cancellation: a
// stop must not lose a commit that is owed; commitTimeout bounds it.
func (c *Coordinator) finishCommit(ctx context.Context, pc *pendingCommit, what string) {
	defer dropPendingCommit(c.opts.Root)
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer stop()
	if made, ok := madeAlready(ctx, c.opts.Root, pc); ok {
		// Made before a kill that came before this record was dropped,
		// and before the session's next write could count it.
		c.counted(pc)
		if err := made.syncIndex(ctx); err != nil {
			c.emit(Event{Kind: EventNotice, Text: "ralph could not bring git's index up to its commit of " + what + " (`git reset -q HEAD -- " +
				strings.Join(made.files, " ") + "` does): " + err.Error()})
		}
		return
	}
	hash, err := c.makeCommit(ctx, pc)
	switch {
	case err != nil:
		c.emit(Event{Kind: EventNotice, Text: commitFailedText(what, err)})
	case hash != "":
		c.counted(pc)
	}
}

// finishTaskCommit makes the commit that the interrupted session old
// owed when it was killed between a completed task's entry and its
// commit. Recovery calls it after the lost entry (if any) is written
// again and before its own entry, so the commit holds the task's entry
// and not the recovery's. A record of an iteration that did not complete,
// or of another one, is dropped.
func (c *Coordinator) finishTaskCommit(old *mdstate.Session, tasks *mdstate.Checklist) {
	pc := readPendingCommit(c.opts.Root)
	if pc == nil {
		return
	}
	if pc.Session != old.ID || pc.Iteration != old.Iteration || pc.Task != old.Task || !completedIn(old, tasks) {
		dropPendingCommit(c.opts.Root)
		return
	}
	c.finishCommit(context.Background(), pc, pc.Task)
}

// completedIn reports whether the interrupted session old's last
// iteration completed its task: its saved result says so (phase
// "writing"), or, saved by an older ralph without one, the task is done.
func completedIn(old *mdstate.Session, tasks *mdstate.Checklist) bool {
	if old.Phase != mdstate.PhaseWriting {
		return false
	}
	if old.Result != nil {
		return old.Result.Outcome == string(OutcomeDone)
	}
	t := tasks.Find(old.Task)
	return t != nil && t.Status == mdstate.Done
}

// finishEndCommit makes the last commit of a session killed after it
// ended (or while it ended: recovery has ended it by now) and before that
// commit. The next start calls it once the last session is settled.
func (c *Coordinator) finishEndCommit() error {
	pc := readPendingCommit(c.opts.Root)
	if pc == nil || !pc.isEnd() {
		return nil
	}
	tasks, err := c.p.LoadChecklist(mdstate.TasksKind)
	if err != nil {
		return err
	}
	if s, _ := tasks.Session(); s == nil || s.ID != pc.Session || s.Status != mdstate.SessionEnded {
		return nil // not ended yet: its end writes the record again
	}
	c.finishCommit(context.Background(), pc, "the end of session "+pc.Session)
	return nil
}

// madeCommit is a commit of ralph's found made already: the paths it
// changed, relative to the repository's root.
type madeCommit struct {
	repoRoot string
	files    []string
}

// madeAlready reports whether pc's commit is made: the branch's head has
// its subject and was made since the record was kept (git keeps whole
// seconds). A task's commit subject repeats only when the task is done
// again, which cannot happen in between.
func madeAlready(ctx context.Context, root string, pc *pendingCommit) (madeCommit, bool) {
	repo, err := gitctx.Open(root, proc.Runner{})
	if err != nil {
		return madeCommit{}, false
	}
	defer repo.Close()
	head, err := repo.Log(ctx, 1)
	if err != nil || len(head) == 0 || head[0].Subject != pc.Message || head[0].Time.Before(pc.Since.Truncate(time.Second)) {
		return madeCommit{}, false
	}
	files := head[0].Files
	if head[0].FilesMore { // Log lists gitctx.MaxFiles paths; the index needs all
		if files, err = repo.Changed(ctx, "", head[0].Hash); err != nil {
			return madeCommit{}, false
		}
	}
	return madeCommit{repoRoot: repo.Root(), files: files}, true
}

// syncIndex sets git's index entries of m's paths to the commit's, which
// is what gitctx.Commit does right after it moves the branch: a kill in
// between leaves them as they were, and the paths would show as changed
// (staged back to their old content) for good. Only the index is
// touched, never the work tree.
func (m madeCommit) syncIndex(ctx context.Context) error {
	if len(m.files) == 0 {
		return nil
	}
	_, err := proc.Runner{}.Output(ctx, m.repoRoot, "git", append([]string{"reset", "-q", "HEAD", "--"}, m.files...)...)
	return err
}

// makeCommit commits pc: the paths that are dirty now and were not
// before its task (what the agent changed), plus the state files, which
// ralph itself keeps current. It returns "" when there was nothing to
// commit.
func (c *Coordinator) makeCommit(ctx context.Context, pc *pendingCommit) (string, error) {
	repo, err := gitctx.Open(c.opts.Root, proc.Runner{})
	if err != nil {
		return "", err
	}
	defer repo.Close()
	rel, err := filepath.Rel(repo.Root(), c.opts.Root)
	if err != nil {
		return "", err
	}
	prefix := ""
	if rel != "." {
		prefix = filepath.ToSlash(rel) + "/"
	}
	state := map[string]bool{}
	for _, name := range mdstate.Files {
		state[prefix+name] = true
	}
	var paths []string
	for _, p := range DirtyPaths(ctx, c.opts.Root) {
		// The session's last commit holds only the state files: no agent
		// was at work since the last task's commit.
		if state[p] || (!pc.isEnd() && !slices.Contains(pc.DirtyBefore, p)) {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return "", nil
	}
	return repo.Commit(ctx, paths, pc.Message+"\n", c.opts.Now())
}

// counted counts a commit made for pc in the session (saved with its next
// write). The session counts its tasks' commits, which its summary
// reports; its last commit comes after the summary.
func (c *Coordinator) counted(pc *pendingCommit) {
	if !pc.isEnd() {
		c.session.Commits++
	}
}

// DirtyPaths lists the work tree's changed and untracked paths, or nothing
// without git, sorted.
func DirtyPaths(ctx context.Context, root string) []string {
	st, err := gitctx.CLIStatus(ctx, proc.Runner{}, root, 0)
	if err != nil || !st.Available {
		return nil
	}
	var out []string
	for _, l := range [][]string{st.Modified, st.Added, st.Deleted, st.Untracked} {
		out = append(out, l...)
	}
	slices.Sort(out)
	return out
}
