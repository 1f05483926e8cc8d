//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/coordinator/proc/proctest"
	"github.com/ralph-dev/ralph/mdstate"
)

// The live-state tests (issue 9): a person, an agent and ralph edit the
// state files at once, with the real binary, real files and real
// processes, and no edit is lost. Conflict markers and symlinks are
// testscripts (testdata/script/live_*.txtar).

// liveAgent is the agent of these tests (`--agent exec --agent-cmd "sh
// agent.sh"`). It logs the task it was given ("T3: Title") to runs.log and
// its pid to pid-T3, and then does what the test asked through files in
// the project: wait-T3, wait for go-T3 (at most about 20 s); checkout-T3,
// run `git checkout -- .` once it has said it is at work; fail-T3, end
// without completing. Otherwise it completes with a learning and a to-do
// naming the task.
const liveAgent = agentPrologue + `echo "$line" >> runs.log
` + agentPidAndWait + `echo "Working on $task."
if [ -e "checkout-$task" ]; then git checkout -q -- . || exit 1; fi
if [ -e "fail-$task" ]; then echo "I could not finish $task."; exit 1; fi
echo
echo "Did $task."
echo "<learning>Learned from $task</learning>"
echo "<todo>Follow up on $task</todo>"
echo "<promise>COMPLETE</promise>"
`

// liveProject is a project folder with liveAgent, run by the real ralph.
type liveProject struct {
	agentDir
	bin string
	env []string
}

func newLiveProject(t *testing.T, bin string, files map[string]string) *liveProject {
	t.Helper()
	lp := &liveProject{agentDir: agentDir{t: t, dir: t.TempDir()}, bin: bin, env: append(os.Environ(), "HOME="+t.TempDir(), "RALPH_NOW=")}
	lp.write("agent.sh", liveAgent)
	// A to-do list to take the agents' to-dos, unless the test has its own.
	lp.write(mdstate.TodoFile, "# To-do\n")
	for name, content := range files {
		lp.write(name, content)
	}
	return lp
}

// liveTaskList is a task list of n tasks, "T1: Task 1" on.
func liveTaskList(n int) string {
	var b strings.Builder
	b.WriteString("# Tasks\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "- [ ] T%d: Task %d\n", i, i)
	}
	return b.String()
}

// liveRun is a `ralph run` in the background.
type liveRun struct {
	p              *proc.Process
	stdout, stderr proctest.SyncBuffer
}

// start starts `ralph run` with liveAgent and args; the test's end kills
// it if it still runs.
func (lp *liveProject) start(args ...string) *liveRun {
	lp.t.Helper()
	r := &liveRun{}
	args = append([]string{"run", "--agent", "exec", "--agent-cmd", "sh agent.sh", "--backoff", "0s"}, args...)
	p, err := proc.Start(context.Background(), proc.Cmd{Name: lp.bin, Args: args, Dir: lp.dir, Env: lp.env}, &r.stdout, &r.stderr)
	if err != nil {
		lp.t.Fatal(err)
	}
	r.p = p
	lp.t.Cleanup(func() {
		select {
		case <-p.Done():
		default:
			_ = p.Signal(syscall.SIGKILL)
			_ = p.Wait(5 * time.Second)
		}
	})
	return r
}

// wait waits at most limit for ralph to exit and returns its exit code; a
// run still going at the limit is killed and fails the test.
func (r *liveRun) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	if err := r.p.Wait(limit); err != nil && r.p.ExitCode() == -1 {
		t.Fatalf("ralph run: %v\nstderr:\n%s", err, r.stderr.String())
	}
	return r.p.ExitCode()
}

// ralph runs one ralph command to its end, as a person in another terminal
// would.
func (lp *liveProject) ralph(args ...string) proc.Result {
	lp.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := proc.Run(ctx, proc.Cmd{Name: lp.bin, Args: args, Dir: lp.dir, Env: lp.env})
	if err != nil {
		lp.t.Fatalf("ralph %s: %v\n%s", strings.Join(args, " "), err, res.Stderr)
	}
	return res
}

// waitFile waits for the agent to write name (at most 20 s), failing if
// the run ended first.
func (lp *liveProject) waitFile(r *liveRun, name string) {
	lp.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if _, err := os.Stat(lp.path(name)); err == nil {
			return
		}
		select {
		case <-r.p.Done():
			lp.t.Fatalf("ralph run ended (exit %d) before %s appeared:\n%s", r.p.ExitCode(), name, r.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			lp.t.Fatalf("%s did not appear in 20 s:\n%s", name, r.stderr.String())
		}
	}
}

// agentPid is the pid the agent of task wrote.
func (lp *liveProject) agentPid(task string) int { return lp.pidIn("pid-" + task) }

// runs lists the tasks the agent was given, in order, as "T3: Title".
func (lp *liveProject) runs() []string {
	lp.t.Helper()
	data, err := os.ReadFile(lp.path("runs.log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		lp.t.Fatal(err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// ranCount counts the runs of each task ID.
func ranCount(runs []string) map[string]int {
	n := map[string]int{}
	for _, r := range runs {
		id, _, _ := strings.Cut(r, ":")
		n[id]++
	}
	return n
}

// checklist parses one of the project's checklists as it is now.
func (lp *liveProject) checklist(kind mdstate.Kind) *mdstate.Checklist {
	lp.t.Helper()
	data := lp.read(kind.File)
	cl, err := mdstate.ParseChecklist(kind, []byte(data))
	if err != nil {
		lp.t.Fatalf("%s: %v\n%s", kind.File, err, data)
	}
	return cl
}

// progress reads the whole progress log.
func (lp *liveProject) progress() []mdstate.Entry {
	lp.t.Helper()
	log, err := mdstate.Open(lp.dir).ReadProgress(1 << 20)
	if err != nil {
		lp.t.Fatal(err)
	}
	return log.Recent
}

// doneEntries counts the "done" progress entries of each task ID.
func doneEntries(entries []mdstate.Entry) map[string]int {
	n := map[string]int{}
	for _, e := range entries {
		if id, _, ok := strings.Cut(e.Title, ": "); ok && e.Get("outcome") == "done" {
			n[id]++
		}
	}
	return n
}

// byTitle finds an item by its title.
func byTitle(cl *mdstate.Checklist, title string) *mdstate.Item {
	for i := range cl.Items() {
		if cl.Items()[i].Title == title {
			return &cl.Items()[i]
		}
	}
	return nil
}

// hasLine reports whether text holds line as a whole line.
func hasLine(text, line string) bool {
	return slices.Contains(strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n"), line)
}

// saveStyle is how an editor saves a file.
type saveStyle int

const (
	saveInPlace    saveStyle = iota // open with O_APPEND and write (echo >>)
	saveTempRename                  // read, write a temporary file, rename it over
	saveVim                         // read, rename to a backup, write the file anew, delete the backup
	saveStyles
)

func (s saveStyle) String() string {
	return [...]string{"in place", "temp file + rename", "vim's backup + write"}[s]
}

// editorSave adds text at the end of the file at path the way style
// saves; pause is how long a vim-style save leaves the file missing.
func editorSave(path string, style saveStyle, text string, pause time.Duration) error {
	if style == saveInPlace {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString(text)
		return errors.Join(err, f.Close())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	data = append(data, text...)
	if style == saveTempRename {
		return renameOver(path, data)
	}
	return saveLikeVim(path, data, pause)
}

// renameOver writes data to a temporary file beside path and renames it
// over path, as most editors save.
func renameOver(path string, data []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".swp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// saveLikeVim saves data to path as vim does by default: the file is
// renamed to a backup, written anew pause later, and the backup deleted.
func saveLikeVim(path string, data []byte, pause time.Duration) error {
	backup := path + "~"
	if err := os.Rename(path, backup); err != nil {
		return err
	}
	time.Sleep(pause)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	return os.Remove(backup)
}

// Figures of the race test.
const (
	liveRaceTasks = 50  // tasks in the list at the start
	liveRaceEdits = 300 // a person's saves, half to each file
	liveRaceHand  = 10  // every 10th save of RALPH_TASKS.md adds a task
	liveRaceGap   = 3 * time.Millisecond
)

// liveEdit is one save of the race test's person.
type liveEdit struct {
	file  string
	style saveStyle
	text  string // what the save appends
	line  string // the line to find afterwards (a note's text or an item's title)
	item  bool   // line is an item's title, which ralph numbers
}

// liveRaceEditList is the person's saves, in order: they alternate between
// RALPH_TASKS.md (a paragraph of their own, or every liveRaceHand-th time
// a task appended at the very end, below the Session section) and
// RALPH_TODO.md (a to-do at the end), rotating the three ways editors save.
func liveRaceEditList() []liveEdit {
	var edits []liveEdit
	for i := range liveRaceEdits {
		e := liveEdit{style: saveStyle(i % int(saveStyles))}
		k := i / 2
		switch {
		case i%2 == 1:
			e.file, e.line, e.item = mdstate.TodoFile, fmt.Sprintf("Hand to-do %d", k), true
			e.text = "- [ ] " + e.line + "\n"
		case k%liveRaceHand == 0:
			e.file, e.line, e.item = mdstate.TasksFile, fmt.Sprintf("Hand task %d", k), true
			e.text = "- [ ] " + e.line + "\n"
		default:
			e.file, e.line = mdstate.TasksFile, fmt.Sprintf("A person's note, edit %d.", k)
			e.text = "\n" + e.line + "\n"
		}
		edits = append(edits, e)
	}
	return edits
}

// TestLiveRace runs `ralph run` through 50 tasks with a fast agent while
// a person saves RALPH_TASKS.md and RALPH_TODO.md 300 times, rotating the
// three ways editors save, each save adding one line; some add tasks at
// the end of RALPH_TASKS.md. The person's saves are paced by the run (about
// six per task) so that they overlap all of it, and the agent of the last
// task waits for the last save, so the run cannot end before the person is
// done. Afterwards every line the person added is there, every one of
// ralph's updates is there (each task done with its progress entry and its
// agent's to-do), every added task ran, each task ran once, and none is
// left in progress.
func TestLiveRace(t *testing.T) {
	bin := buildRalph(t)
	last := fmt.Sprintf("T%d", liveRaceTasks)
	lp := newLiveProject(t, bin, map[string]string{
		mdstate.TasksFile: liveTaskList(liveRaceTasks),
		mdstate.TodoFile:  "# To-do\n\n- [ ] D1: A to-do from before\n",
		"wait-" + last:    "",
	})
	run := lp.start()
	edits := liveRaceEditList()
	errs := make(chan error, 1)
	go func() { errs <- liveEditor(lp, run, edits, last) }()
	code := run.wait(t, 50*time.Second)
	if err := <-errs; err != nil {
		t.Fatalf("the person's editor: %v\nralph run: exit %d, stderr:\n%s", err, code, run.stderr.String())
	}
	if code != 0 {
		t.Errorf("ralph run: exit %d, want 0\nstderr:\n%s", code, run.stderr.String())
	}
	liveRaceCheck(t, lp, edits)
	// How often a person's stale save took one of ralph's edits away and
	// ralph wrote it again: the race the test is about, not a bound.
	fmt.Printf("live-race: ralph wrote its edits again after %d stale saves\n", strings.Count(run.stderr.String(), "went back to an older version"))
}

// liveEditor makes the person's saves, each once the run has given out
// enough tasks (about six saves a task, liveRaceGap apart), then lets the
// last task's agent finish.
func liveEditor(lp *liveProject, run *liveRun, edits []liveEdit, last string) (err error) {
	defer func() {
		err = errors.Join(err, os.WriteFile(lp.path("go-"+last), nil, 0o644))
	}()
	perTask := len(edits) / liveRaceTasks
	deadline := time.Now().Add(40 * time.Second)
	for i, e := range edits {
		for want := i/perTask + 1; countLines(lp.path("runs.log")) < want && time.Now().Before(deadline); {
			select {
			case <-run.p.Done():
				return fmt.Errorf("ralph run ended after %d of %d saves", i, len(edits))
			case <-time.After(time.Millisecond):
			}
		}
		if err := editorSave(lp.path(e.file), e.style, e.text, 0); err != nil {
			return fmt.Errorf("save %d (%s, %s): %w", i, e.file, e.style, err)
		}
		time.Sleep(liveRaceGap)
	}
	return nil
}

// countLines counts the lines of a file an agent appends to.
func countLines(path string) int {
	data, _ := os.ReadFile(path)
	return bytes.Count(data, []byte("\n"))
}

// liveRaceCheck checks and reports the race test's outcome: the person's
// saves, then ralph's updates.
func liveRaceCheck(t *testing.T, lp *liveProject, edits []liveEdit) {
	t.Helper()
	tasks, todos := lp.checklist(mdstate.TasksKind), lp.checklist(mdstate.TodoKind)
	saves := liveSavesCheck(t, lp, edits, tasks, todos)
	var hand []string
	for _, e := range edits {
		if e.file == mdstate.TasksFile && e.item {
			hand = append(hand, e.line)
		}
	}
	updates := liveUpdatesCheck(t, lp, hand, tasks, todos)
	t.Log(saves + "; " + updates)
	// Printed without -v too: the figures of issue 9's closing note.
	fmt.Println("live-race: " + saves + "; " + updates)
}

// liveSavesCheck checks that every line the person saved is there, and
// says how many were made and found in each style.
func liveSavesCheck(t *testing.T, lp *liveProject, edits []liveEdit, tasks, todos *mdstate.Checklist) string {
	t.Helper()
	text := map[string]string{mdstate.TasksFile: lp.read(mdstate.TasksFile), mdstate.TodoFile: lp.read(mdstate.TodoFile)}
	made, found := map[saveStyle]int{}, map[saveStyle]int{}
	var lost []string
	for _, e := range edits {
		made[e.style]++
		ok := hasLine(text[e.file], e.line)
		if e.item {
			cl := tasks
			if e.file == mdstate.TodoFile {
				cl = todos
			}
			ok = byTitle(cl, e.line) != nil
		}
		if ok {
			found[e.style]++
		} else {
			lost = append(lost, fmt.Sprintf("%s %q (%s)", e.file, e.line, e.style))
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d of the person's %d saves are lost: %s", len(lost), len(edits), strings.Join(lost, "; "))
	}
	var parts []string
	for s := range saveStyles {
		parts = append(parts, fmt.Sprintf("%s: %d made, %d found", s, made[s], found[s]))
	}
	return "the person's saves, " + strings.Join(parts, ", ")
}

// liveUpdatesCheck checks ralph's updates: every task (the list's and
// those added by hand, by title) done, run once, with one done entry and
// its agent's to-do; none left in progress. It says how many were made and
// found.
func liveUpdatesCheck(t *testing.T, lp *liveProject, hand []string, tasks, todos *mdstate.Checklist) string {
	t.Helper()
	runs := lp.runs()
	ran := ranCount(runs)
	entries := doneEntries(lp.progress())
	titles := make([]string, 0, liveRaceTasks+len(hand))
	for i := 1; i <= liveRaceTasks; i++ {
		titles = append(titles, fmt.Sprintf("Task %d", i))
	}
	titles = append(titles, hand...)
	var completions, entryN, todoN int
	var problems []string
	for _, title := range titles {
		it := byTitle(tasks, title)
		if it == nil {
			problems = append(problems, fmt.Sprintf("%q is not a task", title))
			continue
		}
		if it.Status == mdstate.Done {
			completions++
		} else {
			problems = append(problems, fmt.Sprintf("%s (%s) is %s", it.ID, title, it.Status))
		}
		if entries[it.ID] == 1 {
			entryN++
		} else {
			problems = append(problems, fmt.Sprintf("%s (%s) has %d done entries", it.ID, title, entries[it.ID]))
		}
		if byTitle(todos, "Follow up on "+it.ID) != nil {
			todoN++
		} else {
			problems = append(problems, fmt.Sprintf("the to-do of %s's agent is lost", it.ID))
		}
		if ran[it.ID] != 1 {
			problems = append(problems, fmt.Sprintf("%s (%s) ran %d times", it.ID, title, ran[it.ID]))
		}
	}
	for _, it := range tasks.Items() {
		if it.Status == mdstate.InProgress {
			problems = append(problems, fmt.Sprintf("%s is stuck in progress", it.ID))
		}
	}
	if len(problems) > 0 {
		t.Errorf("ralph's own updates are wrong:\n  %s\n%s:\n%s", strings.Join(problems, "\n  "), mdstate.TasksFile, lp.read(mdstate.TasksFile))
	}
	n := len(titles)
	return fmt.Sprintf("ralph's updates, completions: %d made, %d found, progress entries: %d made, %d found, to-dos: %d made, %d found (%d agent runs, %d tasks added by hand)",
		n, completions, n, entryN, n, todoN, len(runs), len(hand))
}

// TestLivePersonStatus marks the running task done, skipped or blocked
// with `ralph task` from another process while its agent works, with an
// agent that would then fail and with one that would then succeed: the
// agent is stopped within a second (the figure is logged; 5 s fails the
// test), the person's status stays, the progress log says why, the task
// does not run again, and the run goes on with the next task.
func TestLivePersonStatus(t *testing.T) {
	bin := buildRalph(t)
	var stops []time.Duration // the command's exit to the agent gone
	for _, verb := range []struct {
		cmd    string
		status mdstate.Status
	}{{"done", mdstate.Done}, {"skip", mdstate.Skipped}, {"block", mdstate.Blocked}} {
		for _, fails := range []bool{true, false} {
			name := verb.cmd + " over an agent that succeeds"
			if fails {
				name = verb.cmd + " over an agent that fails"
			}
			t.Run(name, func(t *testing.T) {
				files := map[string]string{mdstate.TasksFile: liveTaskList(2), "wait-T1": ""}
				if fails {
					files["fail-T1"] = ""
				}
				lp := newLiveProject(t, bin, files)
				run := lp.start()
				lp.waitFile(run, "pid-T1")
				pid := lp.agentPid("T1")
				res := lp.ralph("task", verb.cmd, "T1")
				if res.ExitCode != 0 {
					t.Fatalf("ralph task %s T1: exit %d\n%s", verb.cmd, res.ExitCode, res.Stderr)
				}
				// From the command's exit, which is now.
				gone := liveGone(pid, 5*time.Second)
				// Let an agent that was not stopped finish, its way.
				lp.write("go-T1", "")
				code := run.wait(t, 30*time.Second)
				if gone < 0 {
					t.Errorf("T1's agent (pid %d) was still running 5 s after `ralph task %s T1` exited", pid, verb.cmd)
				} else {
					stops = append(stops, gone)
					t.Logf("T1's agent was gone %s after `ralph task %s T1` exited", gone.Round(time.Millisecond), verb.cmd)
				}
				livePersonCheck(t, lp, verb.status, code, run)
			})
		}
	}
	slices.Sort(stops)
	report := fmt.Sprintf("a person's status to the agent gone: median %s, max %s, over %d stops", median(stops), last(stops), len(stops))
	t.Log(report)
	fmt.Println("live-stop: " + report)
}

// liveGone waits at most limit for pid to be gone and says how long that
// took; -1 if it still runs.
func liveGone(pid int, limit time.Duration) time.Duration {
	start := time.Now()
	for proctest.Alive(pid) {
		if time.Since(start) > limit {
			return -1
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start)
}

// personWords is how a progress entry can say that a person changed a
// task: any wording, as long as it names the person's edit.
var personWords = regexp.MustCompile(`(?i)person|by hand|someone|user|edited|marked`)

// livePersonCheck checks the project after a person set T1's status
// while its agent worked.
func livePersonCheck(t *testing.T, lp *liveProject, want mdstate.Status, code int, run *liveRun) {
	t.Helper()
	tasks := lp.checklist(mdstate.TasksKind)
	if t1 := tasks.Find("T1"); t1 == nil || t1.Status != want {
		t.Errorf("T1 is %+v after the run, want the person's %s\n%s", t1, want, lp.read(mdstate.TasksFile))
	}
	if t2 := tasks.Find("T2"); t2 == nil || t2.Status != mdstate.Done {
		t.Errorf("T2 is %+v after the run, want done", t2)
	}
	ran := ranCount(lp.runs())
	if ran["T1"] != 1 || ran["T2"] != 1 {
		t.Errorf("the agents ran %v; want T1 and T2 once each", lp.runs())
	}
	var why []string
	for _, e := range lp.progress() {
		if !strings.HasPrefix(e.Title, "T1: ") {
			continue
		}
		text := string(e.Render("\n"))
		why = append(why, text)
		if personWords.MatchString(text) {
			why = nil
			break
		}
	}
	if why != nil {
		t.Errorf("no progress entry of T1 says a person changed it (%s); T1's entries:\n%s", personWords, strings.Join(why, "\n"))
	}
	if code != 0 && code != 1 {
		t.Errorf("ralph run: exit %d\nstderr:\n%s", code, run.stderr.String())
	}
	if t.Failed() {
		t.Logf("ralph run (exit %d) stderr:\n%s", code, run.stderr.String())
	}
}

// TestLiveMissingDuringSave saves RALPH_TASKS.md and RALPH_TODO.md the
// way vim does, with 200 ms between renaming each file to its backup and
// writing it anew, just as an agent finishes, so that ralph writes its
// report while both files are missing; twice, then lets the last task run
// in peace. The run goes on, never writes a template, and the person's
// lines and ralph's updates are all there.
func TestLiveMissingDuringSave(t *testing.T) {
	bin := buildRalph(t)
	lp := newLiveProject(t, bin, map[string]string{
		mdstate.TasksFile: liveTaskList(3),
		mdstate.TodoFile:  "# To-do\n\n- [ ] D1: A to-do from before\n",
		"wait-T1":         "",
		"wait-T2":         "",
	})
	run := lp.start()
	var lines []string
	for _, task := range []string{"T1", "T2"} {
		lp.waitFile(run, "pid-"+task)
		line := "A person's line, saved while " + task + " ran."
		lines = append(lines, line)
		done := make(chan error, 2)
		for _, f := range []string{mdstate.TasksFile, mdstate.TodoFile} {
			go func() { done <- editorSave(lp.path(f), saveVim, "\n"+line+"\n", 200*time.Millisecond) }()
		}
		// Both files are at their backup names now or a moment later;
		// the agent ends within 10 ms and ralph files its report.
		time.Sleep(5 * time.Millisecond)
		lp.write("go-"+task, "")
		for range 2 {
			if err := <-done; err != nil {
				t.Fatalf("the person's save: %v", err)
			}
		}
	}
	code := run.wait(t, 30*time.Second)
	if code != 0 {
		t.Errorf("ralph run: exit %d, want 0 (the files were only being saved)\nstderr:\n%s", code, run.stderr.String())
	}
	tasksText, todoText := lp.read(mdstate.TasksFile), lp.read(mdstate.TodoFile)
	for _, line := range lines {
		for name, text := range map[string]string{mdstate.TasksFile: tasksText, mdstate.TodoFile: todoText} {
			if !hasLine(text, line) {
				t.Errorf("%s lost the person's line %q:\n%s", name, line, text)
			}
		}
	}
	for name, text := range map[string]string{mdstate.TasksFile: tasksText, mdstate.TodoFile: todoText} {
		if strings.Contains(text, "<!--") {
			t.Errorf("ralph wrote its template into %s:\n%s", name, text)
		}
	}
	tasks, todos := lp.checklist(mdstate.TasksKind), lp.checklist(mdstate.TodoKind)
	for _, id := range []string{"T1", "T2", "T3"} {
		if it := tasks.Find(id); it == nil || it.Status != mdstate.Done {
			t.Errorf("%s is %+v, want done:\n%s", id, it, tasksText)
		}
		if byTitle(todos, "Follow up on "+id) == nil {
			t.Errorf("the to-do of %s's agent is lost:\n%s", id, todoText)
		}
	}
	if byTitle(todos, "A to-do from before") == nil {
		t.Errorf("the to-do from before is lost:\n%s", todoText)
	}
	if ran := ranCount(lp.runs()); ran["T1"] != 1 || ran["T2"] != 1 || ran["T3"] != 1 {
		t.Errorf("the agents ran %v; want each task once", lp.runs())
	}
}

// liveGitTasks are the four tasks of the checkout test.
const liveGitTasks = "# Tasks\n\n- [ ] T1: Task 1\n- [ ] T2: Task 2\n- [ ] T3: Task 3\n- [ ] T4: Task 4\n"

// TestLiveGitCheckout runs four tasks in a git repository where the state
// files are committed; the agents of T2 and T4 run `git checkout -- .`,
// which puts every state file back as committed. ralph notices, writes
// again what it wrote in this session (completions, progress entries,
// learnings, to-dos), says so, and does not redo finished work.
func TestLiveGitCheckout(t *testing.T) {
	bin := buildRalph(t)
	lp := newLiveProject(t, bin, map[string]string{
		mdstate.TasksFile:    liveGitTasks,
		mdstate.TodoFile:     "# To-do\n\n- [ ] D1: A to-do from before\n",
		mdstate.AgentFile:    "# Working in this project\n\n## Learnings\n\n- Learned before\n",
		mdstate.ProgressFile: "# Progress\n",
		mdstate.GoalsFile:    "# Goals\n\n- [ ] G1: Ship it\n",
	})
	crashGit(t, lp.dir, lp.env, "init", "-q")
	crashGit(t, lp.dir, lp.env, "add", "-A")
	crashGit(t, lp.dir, lp.env, "commit", "-qm", "state files")
	lp.write("checkout-T2", "")
	lp.write("checkout-T4", "")
	run := lp.start()
	code := run.wait(t, 40*time.Second)
	stderr := run.stderr.String()
	if code != 0 {
		t.Errorf("ralph run: exit %d, want 0\nstderr:\n%s", code, stderr)
	}
	tasks, todos := lp.checklist(mdstate.TasksKind), lp.checklist(mdstate.TodoKind)
	agentText := lp.read(mdstate.AgentFile)
	entries := lp.progress()
	done := doneEntries(entries)
	ran := ranCount(lp.runs())
	for _, id := range []string{"T1", "T2", "T3", "T4"} {
		if it := tasks.Find(id); it == nil || it.Status != mdstate.Done {
			t.Errorf("%s is %+v, want done", id, it)
		}
		if ran[id] != 1 {
			t.Errorf("%s ran %d times, want once (runs: %v)", id, ran[id], lp.runs())
		}
		if done[id] != 1 {
			t.Errorf("%s has %d done entries, want 1", id, done[id])
		}
		if byTitle(todos, "Follow up on "+id) == nil {
			t.Errorf("the to-do of %s's agent is lost", id)
		}
		if !hasLine(agentText, "- Learned from "+id) {
			t.Errorf("the learning of %s's agent is lost", id)
		}
	}
	iterations := 0
	for _, e := range entries {
		if e.Get("iteration") != "" && !strings.HasPrefix(e.Title, "session ") {
			iterations++
		}
	}
	if iterations != 4 {
		t.Errorf("the progress log has %d iteration entries, want 4:\n%s", iterations, lp.read(mdstate.ProgressFile))
	}
	if !liveResetNotice.MatchString(stderr) {
		t.Errorf("ralph run did not say it wrote back what the checkout undid (want a notice matching %s):\n%s", liveResetNotice, stderr)
	}
	if t.Failed() {
		t.Logf("%s:\n%s\nstderr:\n%s", mdstate.TasksFile, lp.read(mdstate.TasksFile), stderr)
	}
}

// liveResetNotice is a notice (`  ! …` on stderr) about state files put
// back to an older version: any wording that says so.
var liveResetNotice = regexp.MustCompile(`(?im)^  ! .*(re-?appl|re-?wr|restor|revert|reset|went back|older|checkout|undid|undone)`)

// TestLivePriority adds a task with priority 1 by hand while the run works
// on T1 of four: it runs next, before T2.
func TestLivePriority(t *testing.T) {
	bin := buildRalph(t)
	lp := newLiveProject(t, bin, map[string]string{mdstate.TasksFile: liveTaskList(4), "wait-T1": ""})
	run := lp.start()
	lp.waitFile(run, "pid-T1")
	// The person writes the task under T4, in the task list, and saves
	// (temporary file and rename, as most editors do).
	path := lp.path(mdstate.TasksFile)
	data := lp.read(mdstate.TasksFile)
	at := strings.Index(data, "T4: Task 4\n")
	if at < 0 {
		t.Fatalf("no T4 in:\n%s", data)
	}
	at += len("T4: Task 4\n")
	data = data[:at] + "- [ ] Urgent fix\n  - priority: 1\n" + data[at:]
	if err := renameOver(path, []byte(data)); err != nil {
		t.Fatal(err)
	}
	lp.write("go-T1", "")
	if code := run.wait(t, 30*time.Second); code != 0 {
		t.Errorf("ralph run: exit %d, want 0\nstderr:\n%s", code, run.stderr.String())
	}
	order := lp.runs()
	if len(order) != 5 || !strings.HasSuffix(order[1], ": Urgent fix") || !strings.HasPrefix(order[2], "T2: ") {
		t.Errorf("the agents ran %q; want T1, then the urgent task, then T2, T3, T4", order)
	}
	// ralph run shows the person's edit as it sees it, on one line.
	if !regexp.MustCompile(`(?m)^  ✎ RALPH_TASKS\.md: .*added "Urgent fix"`).MatchString(run.stderr.String()) {
		t.Errorf("no notice of the added task in ralph run's output:\n%s", run.stderr.String())
	}
	// And only the person's edits: ralph's own writes (here its first
	// progress entry, which creates the log) are not changes.
	if n := strings.Count(run.stderr.String(), "✎ "); n != 1 {
		t.Errorf("%d notices of changes, want the person's one:\n%s", n, run.stderr.String())
	}
}
