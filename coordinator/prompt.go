package coordinator

import (
	"fmt"
	"math"
	"strings"

	"github.com/ralph-dev/ralph/mdstate"
)

// DefaultBudget is the context block's size in estimated tokens.
const DefaultBudget = 8000

// EstimateTokens estimates the tokens of text the way most tokenizers land
// on English and code: about four bytes a token.
func EstimateTokens(s string) int { return (len(s) + 3) / 4 }

// PromptOptions choose what the context block is about.
type PromptOptions struct {
	Budget int    // estimated tokens; 0: DefaultBudget
	Task   string // the task being worked on; "": the session's, else the next ready one
	// NoTask leaves the current task out: a conversation turn works on
	// none, and every task is among the others.
	NoTask bool
}

// block is one part of the context: a section heading and its items.
// Items are dropped from the end of a droppable section when the budget is
// short; the order of sections here is the order of importance.
type block struct {
	title     string
	items     []string
	droppable bool
	noun      string // what items are, for the "left out" line
	one       string // what one item is
	dropFirst bool   // drop from the front (oldest first) instead
	// more counts items past the last of items that were never built:
	// the ones after so long a run that fit drops them all (see
	// otherTasksBlock). fit drops them before any of items.
	more int
}

// Prompt renders the context block a child agent receives: goals, the
// current task with its dependencies' outcomes, and the learnings first;
// then the project, git, other tasks, to-dos and recent progress. When the
// whole does not fit the budget, the oldest progress goes first, then the
// least relevant items, and the block ends by saying what it left out.
// It returns the block and the current task (nil when there is none).
func (r *Report) Prompt(opts PromptOptions) (string, *mdstate.Item) {
	budget := opts.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	var cur *mdstate.Item
	if !opts.NoTask {
		cur = r.currentTask(opts.Task)
	}
	return fit(r.blocks(cur, budgetBytes(budget)), budget), cur
}

// blocks are the prompt's blocks for the current task cur, essentials
// first, then context, least relevant last. The list of other tasks stops
// past limit bytes.
func (r *Report) blocks(cur *mdstate.Item, limit int) []block {
	blocks := []block{r.goalsBlock()}
	blocks = append(blocks, r.taskBlocks(cur)...)
	blocks = append(blocks, r.learningsBlock()...)
	blocks = append(blocks, r.projectBlock()...)
	blocks = append(blocks, r.gitBlocks()...)
	blocks = append(blocks, r.otherTasksBlock(cur, limit)...)
	blocks = append(blocks, r.todosBlock()...)
	blocks = append(blocks, r.progressBlock()...)
	return blocks
}

// budgetBytes is the most bytes a text of budget tokens can have, by
// EstimateTokens.
func budgetBytes(budget int) int {
	if budget > math.MaxInt/4 {
		return math.MaxInt
	}
	return 4 * budget
}

// goalsBlock lists the open goals.
func (r *Report) goalsBlock() block {
	var goals []string
	if g := r.State.Goals; g != nil {
		for _, it := range g.All() {
			if it.Status != mdstate.Done && it.Status != mdstate.Skipped {
				goals = append(goals, "- "+it.ID+": "+it.Title)
			}
		}
	}
	return block{title: "Goals", items: goals}
}

// taskBlocks is the current task and what it builds on.
func (r *Report) taskBlocks(cur *mdstate.Item) []block {
	if cur == nil {
		return nil
	}
	blocks := []block{{title: "Current task", items: []string{r.taskText(cur)}}}
	if deps := r.depOutcomes(cur); len(deps) > 0 {
		blocks = append(blocks, block{title: "What it builds on", items: deps})
	}
	return blocks
}

func (r *Report) learningsBlock() []block {
	a := r.State.Agent
	if a == nil || len(a.Learnings) == 0 {
		return nil
	}
	var ls []string
	for _, l := range a.Learnings {
		ls = append(ls, "- "+strings.ReplaceAll(l.Text, "\n", "\n  "))
	}
	return []block{{title: "Learnings (AGENT.md)", items: ls, droppable: true, noun: "learnings", one: "learning"}}
}

func (r *Report) projectBlock() []block {
	p := r.Project
	if p == nil {
		return nil
	}
	var items []string
	for _, t := range p.Types {
		s := "- " + t.Name + " project in " + t.Dir
		if t.PackageManager != "" {
			s += " (" + t.PackageManager + ")"
		}
		items = append(items, s)
	}
	for _, c := range p.Commands.Build {
		items = append(items, "- build: `"+c.Run+"` in "+c.Dir)
	}
	for _, c := range p.Commands.Test {
		items = append(items, "- test: `"+c.Run+"` in "+c.Dir)
	}
	for _, c := range p.Commands.Lint {
		items = append(items, "- lint: `"+c.Run+"` in "+c.Dir)
	}
	return []block{{title: "Project", items: items, droppable: true, noun: "project details", one: "project detail"}}
}

func (r *Report) gitBlocks() []block {
	g := r.Git
	if g == nil {
		return nil
	}
	items := []string{"- " + g.describeHead()}
	if g.Status.Available {
		items = append(items, fmt.Sprintf("- work tree: %d modified, %d added, %d deleted, %d untracked", len(g.Status.Modified), len(g.Status.Added), len(g.Status.Deleted), len(g.Status.Untracked)))
	}
	// Commits are a block of their own so that the line saying what was
	// left out counts commits as commits.
	var commits []string
	for _, c := range g.Recent {
		commits = append(commits, fmt.Sprintf("- %s %s (%s)", short(c.Hash), c.Subject, c.Time.Format("2006-01-02")))
	}
	return []block{
		{title: "Git", items: items, droppable: true, noun: "git details", one: "git detail"},
		{title: "Recent commits", items: commits, droppable: true, noun: "commits", one: "commit"},
	}
}

// otherTasksBlock lists the open tasks besides the current one: ready,
// in progress or blocked, then those waiting for others. The lines stop
// once they run past limit bytes, the most a prompt holds: every line
// after that would be left out to fit, so only their number is taken
// (block.more), and a prompt costs the same at 200 tasks or 10,000.
func (r *Report) otherTasksBlock(cur *mdstate.Item, limit int) []block {
	tasks := r.State.Tasks
	if tasks == nil {
		return nil
	}
	bl := block{title: "Other open tasks (not yours now)", droppable: true, noun: "tasks", one: "task"}
	lines := openTaskCount(tasks, cur)
	size := 0
	full := func() bool {
		if size <= limit {
			return false
		}
		bl.more = lines - len(bl.items)
		return true
	}
	add := func(it string) {
		bl.items = append(bl.items, it)
		size += itemSize(it)
	}
	var readyIDs []string
	for id, title := range tasks.EachReadyTitle() {
		if full() {
			return []block{bl}
		}
		readyIDs = append(readyIDs, id)
		if cur == nil || id != cur.ID {
			add("- " + id + " (ready): " + title)
		}
	}
	isReady := make(map[string]bool, len(readyIDs))
	for _, id := range readyIDs {
		isReady[id] = true
	}
	var waiting []*mdstate.Item
	for _, t := range tasks.All() {
		if cur != nil && t.ID == cur.ID {
			continue
		}
		switch {
		case t.Status == mdstate.InProgress || t.Status == mdstate.Blocked:
			if full() {
				return []block{bl}
			}
			add("- " + t.ID + " (" + strings.ReplaceAll(string(t.Status), "_", " ") + "): " + t.Title)
		case t.Status == mdstate.Pending && !isReady[t.ID]:
			// Pending but waiting: often for the current task, which is
			// worth knowing while working on it.
			waiting = append(waiting, t)
		}
	}
	for _, t := range waiting {
		if full() {
			return []block{bl}
		}
		add("- " + t.ID + " (waiting for " + strings.Join(openDeps(tasks, t.After), ", ") + "): " + t.Title)
	}
	return []block{bl}
}

// openTaskCount is how many lines otherTasksBlock gives when it lists
// them all: every task pending (ready or waiting), in progress or
// blocked, but the current one (IDs are unique in a checklist).
func openTaskCount(tasks *mdstate.Checklist, cur *mdstate.Item) int {
	n := tasks.Counts()
	lines := n[mdstate.Pending] + n[mdstate.InProgress] + n[mdstate.Blocked]
	if cur != nil {
		if t := tasks.Find(cur.ID); t != nil && (t.Status == mdstate.Pending || t.Status == mdstate.InProgress || t.Status == mdstate.Blocked) {
			lines--
		}
	}
	return lines
}

// openDeps lists the tasks of after that are not done.
func openDeps(tasks *mdstate.Checklist, after []string) []string {
	var on []string
	for _, ref := range after {
		if dep := tasks.Find(ref); dep == nil || dep.Status != mdstate.Done {
			on = append(on, ref)
		}
	}
	return on
}

func (r *Report) todosBlock() []block {
	todos := r.State.Todos
	if todos == nil {
		return nil
	}
	var items []string
	for _, t := range todos.All() {
		if t.Status != mdstate.Done && t.Status != mdstate.Skipped {
			items = append(items, "- "+t.ID+": "+t.Title)
		}
	}
	return []block{{title: "Open to-dos", items: items, droppable: true, noun: "to-dos", one: "to-do"}}
}

func (r *Report) progressBlock() []block {
	lg := r.State.Progress
	if lg == nil || len(lg.Recent) == 0 {
		return nil
	}
	var items []string
	for _, e := range lg.Recent {
		items = append(items, progressLine(e))
	}
	return []block{{title: "Recent progress (oldest first)", items: items, droppable: true, noun: "progress entries", one: "progress entry", dropFirst: true}}
}

const header = "# Project context from ralph\n\nralph rebuilt this from the project's state files and git.\n"

// fit renders blocks, dropping items from the least important droppable
// block first until the text fits the budget. It keeps a running size, so
// dropping a thousand items costs a thousand subtractions, not renders.
// The footer that counts what was left out only grows as items go, so its
// length is taken again only when the text seems to fit: what fits with
// an older, shorter footer may not fit with the new one, and then more go.
func fit(blocks []block, budget int) string {
	dropped := map[string]int{}
	var order []string
	one := map[string]string{}
	for _, bl := range blocks {
		one[bl.noun] = bl.one
	}
	size := len(header)
	for _, bl := range blocks {
		size += blockSize(bl)
	}
	over := func(footerLen int) bool { return (size+footerLen+3)/4 > budget }
	for fl := 0; over(fl); fl = len(footer(dropped, order, one)) {
		for over(fl) {
			b := lastDroppable(blocks)
			if b == nil {
				return render(blocks, footer(dropped, order, one)) // only essentials left: never cut the task itself
			}
			if b.more > 0 { // never built, never counted in size
				if dropped[b.noun] == 0 {
					order = append(order, b.noun)
				}
				dropped[b.noun] += b.more
				b.more = 0
				continue
			}
			var it string
			if b.dropFirst {
				it, b.items = b.items[0], b.items[1:]
			} else {
				it, b.items = b.items[len(b.items)-1], b.items[:len(b.items)-1]
			}
			size -= itemSize(it)
			if len(b.items) == 0 {
				size -= blockHead(*b) // an empty block is not rendered
			}
			if dropped[b.noun] == 0 {
				order = append(order, b.noun)
			}
			dropped[b.noun]++
		}
	}
	return render(blocks, footer(dropped, order, one))
}

// lastDroppable is the least important block with items to drop, or nil.
func lastDroppable(blocks []block) *block {
	for i := len(blocks) - 1; i >= 0; i-- {
		if blocks[i].droppable && (len(blocks[i].items) > 0 || blocks[i].more > 0) {
			return &blocks[i]
		}
	}
	return nil
}

// blockSize is the length render gives a block: its heading, and each
// item on a line.
func blockSize(bl block) int {
	if len(bl.items) == 0 {
		return 0
	}
	n := blockHead(bl)
	for _, it := range bl.items {
		n += itemSize(it)
	}
	return n
}

// blockHead is the length of a block's heading as render gives it.
func blockHead(bl block) int { return len("\n## \n\n") + len(bl.title) }

// itemSize is the length of an item's line as render gives it.
func itemSize(it string) int { return len(it) + 1 }

func footer(dropped map[string]int, order []string, one map[string]string) string {
	if len(order) == 0 {
		return ""
	}
	var parts []string
	for _, noun := range order {
		if n := dropped[noun]; n == 1 && one[noun] != "" {
			parts = append(parts, "1 "+one[noun])
		} else {
			parts = append(parts, fmt.Sprintf("%d %s", n, noun))
		}
	}
	return "\n(Left out to fit the context budget: " + strings.Join(parts, ", ") + ". The state files in the project root have them all.)\n"
}

func render(blocks []block, footer string) string {
	var b strings.Builder
	b.WriteString(header)
	for _, bl := range blocks {
		if len(bl.items) == 0 {
			continue
		}
		b.WriteString("\n## " + bl.title + "\n\n")
		for _, it := range bl.items {
			b.WriteString(it + "\n")
		}
	}
	b.WriteString(footer)
	return b.String()
}

// currentTask picks the task the context is about.
func (r *Report) currentTask(id string) *mdstate.Item {
	tasks := r.State.Tasks
	if tasks == nil {
		return nil
	}
	if id != "" {
		return tasks.Find(id)
	}
	if s := r.Session; s != nil && s.Task != "" && s.Status != mdstate.SessionEnded {
		if t := tasks.Find(s.Task); t != nil && t.Status != mdstate.Done {
			return t
		}
	}
	return tasks.Next()
}

func (r *Report) taskText(t *mdstate.Item) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", t.ID, t.Title)
	fmt.Fprintf(&b, "- status: %s", strings.ReplaceAll(string(t.Status), "_", " "))
	switch {
	case t.Attempts == 1:
		b.WriteString(" (attempted once before)")
	case t.Attempts > 1:
		fmt.Fprintf(&b, " (attempted %d times before)", t.Attempts)
	}
	b.WriteString("\n")
	for _, n := range t.Notes {
		b.WriteString("- note: " + n + "\n")
	}
	if t.Body != "" {
		b.WriteString("\n" + t.Body + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// depOutcomes says how each task cur waits for turned out: its status and
// the last progress entry about it.
func (r *Report) depOutcomes(cur *mdstate.Item) []string {
	var out []string
	for _, ref := range cur.After {
		dep := r.State.Tasks.Find(ref)
		if dep == nil {
			out = append(out, "- "+ref+": not in RALPH_TASKS.md")
			continue
		}
		line := "- " + dep.ID + " (" + strings.ReplaceAll(string(dep.Status), "_", " ") + "): " + dep.Title
		if s := lastSummaryOf(r.State.Progress, dep.ID); s != "" {
			line += " — " + s
		}
		out = append(out, line)
	}
	return out
}

func (g *GitInfo) describeHead() string {
	switch {
	case g.Unborn:
		return "branch " + g.Branch + ", no commits yet"
	case g.Detached:
		return "detached HEAD at " + short(g.Head)
	}
	s := "branch " + g.Branch + " at " + short(g.Head)
	if g.UpstreamKnown {
		s += fmt.Sprintf(", %d ahead and %d behind its upstream", g.Ahead, g.Behind)
	}
	return s
}
