package coordinator

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-dev/ralph/gitctx/gitctxtest"
)

// testBlocks builds blocks shaped like Prompt's, with items of uneven
// length and names that say where they come from.
func testBlocks() []block {
	items := func(name string, n int) []string {
		var out []string
		for i := 1; i <= n; i++ {
			out = append(out, fmt.Sprintf("- %s %d%s", name, i, strings.Repeat(" pad", i%4*3)))
		}
		return out
	}
	return []block{
		{title: "Goals", items: items("goal", 2)},
		{title: "Current task", items: []string{"T3: Take card payments\n- status: pending\n\nA body of several lines\nthat is never cut."}},
		{title: "What it builds on", items: items("dep", 2)},
		{title: "Learnings (AGENT.md)", items: items("learning", 3), droppable: true, noun: "learnings", one: "learning"},
		{title: "Project", items: items("project", 3), droppable: true, noun: "project details", one: "project detail"},
		{title: "Git", items: items("git", 2), droppable: true, noun: "git details", one: "git detail"},
		{title: "Recent commits", items: items("commit", 4), droppable: true, noun: "commits", one: "commit"},
		{title: "Other open tasks (not yours now)", items: items("task", 5), droppable: true, noun: "tasks", one: "task"},
		{title: "Open to-dos", items: items("todo", 1), droppable: true, noun: "to-dos", one: "to-do"},
		{title: "Recent progress (oldest first)", items: items("progress", 12), droppable: true, noun: "progress entries", one: "progress entry", dropFirst: true},
	}
}

// dropOrder is the documented order in which fit leaves items out: the
// oldest progress first, then the least relevant items, each section from
// its end, up to the learnings.
func dropOrder(blocks []block) (seq []string, noun map[string]string) {
	noun = map[string]string{}
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		if !b.droppable {
			continue
		}
		items := slices.Clone(b.items)
		if !b.dropFirst {
			slices.Reverse(items)
		}
		for _, it := range items {
			seq = append(seq, it)
			noun[it] = b.noun
		}
	}
	return seq, noun
}

// renderDropping renders blocks without the first k items of seq, with
// the footer that says so: an oracle for fit written independently of it.
func renderDropping(blocks []block, seq []string, noun map[string]string, k int) string {
	gone := map[string]bool{}
	counts := map[string]int{}
	var order []string
	for _, it := range seq[:k] {
		gone[it] = true
		n := noun[it]
		if counts[n] == 0 {
			order = append(order, n)
		}
		counts[n]++
	}
	var b strings.Builder
	b.WriteString(header)
	for _, bl := range blocks {
		var kept []string
		for _, it := range bl.items {
			if !gone[it] {
				kept = append(kept, it)
			}
		}
		if len(kept) == 0 {
			continue
		}
		b.WriteString("\n## " + bl.title + "\n\n" + strings.Join(kept, "\n") + "\n")
	}
	if len(order) > 0 {
		var parts []string
		for _, n := range order {
			c := counts[n]
			if c == 1 {
				parts = append(parts, "1 "+map[string]string{"learnings": "learning", "project details": "project detail", "git details": "git detail",
					"commits": "commit", "tasks": "task", "to-dos": "to-do", "progress entries": "progress entry"}[n])
			} else {
				parts = append(parts, fmt.Sprintf("%d %s", c, n))
			}
		}
		b.WriteString("\n(Left out to fit the context budget: " + strings.Join(parts, ", ") + ". The state files in the project root have them all.)\n")
	}
	return b.String()
}

// TestFit checks fit at every budget from nothing to more than enough:
// it leaves out exactly the first items of the documented order, no more
// than it must, honours the estimate whenever it could still drop
// something, never drops an essential, and says what it left out.
func TestFit(t *testing.T) {
	seq, noun := dropOrder(testBlocks())
	full := EstimateTokens(renderDropping(testBlocks(), seq, noun, 0))
	all := EstimateTokens(renderDropping(testBlocks(), seq, noun, len(seq)))
	if all >= full {
		t.Fatalf("test blocks: dropping everything (%d tokens) is not smaller than nothing (%d)", all, full)
	}
	lastK := len(seq)
	for budget := 1; budget <= full+10; budget++ {
		out := fit(testBlocks(), budget)
		// The smallest k whose rendering fits, or all of them.
		k := 0
		for k < len(seq) && EstimateTokens(renderDropping(testBlocks(), seq, noun, k)) > budget {
			k++
		}
		if want := renderDropping(testBlocks(), seq, noun, k); out != want {
			t.Fatalf("budget %d: fit gave\n%s\nwant (the first %d items of the order left out)\n%s", budget, out, k, want)
		}
		if k < len(seq) && EstimateTokens(out) > budget {
			t.Fatalf("budget %d: %d tokens with items still to drop", budget, EstimateTokens(out))
		}
		for _, essential := range []string{"- goal 1 pad pad pad", "- goal 2 pad pad pad pad pad pad", "T3: Take card payments", "that is never cut.", "- dep 1 pad pad pad", "- dep 2 pad pad pad pad pad pad"} {
			if !strings.Contains(out, essential+"\n") {
				t.Fatalf("budget %d: essential %q dropped:\n%s", budget, essential, out)
			}
		}
		if k > lastK {
			t.Fatalf("budget %d drops %d items, budget %d dropped %d", budget, k, budget-1, lastK)
		}
		lastK = k
		if (k > 0) != strings.Contains(out, "Left out to fit the context budget") {
			t.Fatalf("budget %d: %d left out, but the footer says otherwise:\n%s", budget, k, out)
		}
	}
	if lastK != 0 {
		t.Errorf("at the full size fit still drops %d items", lastK)
	}
}

// TestFitOrder spells the order out at a few budgets.
func TestFitOrder(t *testing.T) {
	seq, noun := dropOrder(testBlocks())
	full := EstimateTokens(renderDropping(testBlocks(), seq, noun, 0))
	// One token short: the footer costs more than an entry, so a few of
	// the oldest entries go, and only they.
	out := fit(testBlocks(), full-1)
	var n int
	if _, err := fmt.Sscanf(out[strings.Index(out, "(Left out"):], "(Left out to fit the context budget: %d progress entries.", &n); err != nil || n < 1 || n > 11 {
		t.Fatalf("one token short: want only progress entries left out (%v):\n%s", err, out)
	}
	for i := 1; i <= 12; i++ {
		if got, want := strings.Contains(out, fmt.Sprintf("- progress %d ", i)) || strings.Contains(out, fmt.Sprintf("- progress %d\n", i)), i > n; got != want {
			t.Errorf("one token short, %d left out: progress %d there = %v", n, i, got)
		}
	}
	out = fit(testBlocks(), 1)
	want := "(Left out to fit the context budget: 12 progress entries, 1 to-do, 5 tasks, 4 commits, 2 git details, 3 project details, 3 learnings."
	if !strings.Contains(out, want) {
		t.Errorf("budget 1: want %q in\n%s", want, out)
	}
	for _, title := range []string{"## Goals", "## Current task", "## What it builds on"} {
		if !strings.Contains(out, title+"\n") {
			t.Errorf("budget 1: %s missing", title)
		}
	}
	for _, title := range []string{"## Learnings", "## Project", "## Git", "## Recent commits", "## Other open tasks", "## Open to-dos", "## Recent progress"} {
		if strings.Contains(out, title) {
			t.Errorf("budget 1: empty section %s still has its heading", title)
		}
	}
}

func TestEstimateTokens(t *testing.T) {
	for s, want := range map[string]int{"": 0, "a": 1, "abcd": 1, "abcde": 2, strings.Repeat("x", 4000): 1000} {
		if got := EstimateTokens(s); got != want {
			t.Errorf("EstimateTokens(%d bytes) = %d, want %d", len(s), got, want)
		}
	}
}

// TestPrompt checks the real context block: essentials first in their
// order, the current task chosen as documented, and the budget.
func TestPrompt(t *testing.T) {
	gitctxtest.Isolate(t)
	var progress strings.Builder
	progress.WriteString("# Progress\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&progress, "\n## 2026-10-%02dT12:00:00Z — Entry %d\n- outcome: done\n- summary: %s\n", i, i, strings.Repeat("words ", 10))
	}
	progress.WriteString("\n## 2026-11-01T12:00:00Z — T1: Model the cart\n- outcome: done\n- summary: Cart and line items.\n")
	dir := projectDir(t, map[string]string{
		"go.mod":         "module x\n",
		"RALPH_GOALS.md": "# Goals\n\n- [ ] G1: Customers can pay\n- [x] G2: Catalogue online\n- [-] G3: Skipped goal\n",
		"RALPH_TASKS.md": `# Tasks

- [x] T1: Model the cart
- [ ] T2: Price the cart
  - after: T1, T9
- [ ] T3: Write the docs
- [/] T4: Take card payments
  - after: T1
  - attempts: 2
- [ ] T5: Email the receipt
  - after: T4

## Session

- status: running
- task: T4
`,
		"AGENT.md":          "# Agent\n\n- Prices are integers in cents.\n",
		"RALPH_TODO.md":     "# To-do\n\n- [ ] D1: Refunds\n- [x] D2: Done one\n",
		"RALPH_PROGRESS.md": progress.String(),
	})
	gitctxtest.Git(t, dir, "init", "-q", "-b", "main")
	gitctxtest.Commit(t, dir, "Plan", 1)
	r := buildReport(t, dir)

	text, cur := r.Prompt(PromptOptions{})
	if cur == nil || cur.ID != "T4" {
		t.Fatalf("current task = %v, want T4, the interrupted session's", cur)
	}
	if EstimateTokens(text) > DefaultBudget || strings.Contains(text, "Left out") {
		t.Errorf("a small project does not fit the default budget:\n%s", text)
	}
	order := []string{"## Goals\n\n- G1: Customers can pay\n\n", "## Current task\n\nT4: Take card payments\n- status: in progress (attempted 2 times before)\n",
		"## What it builds on\n\n- T1 (done): Model the cart — Cart and line items.\n", "## Learnings (AGENT.md)\n\n- Prices are integers in cents.\n",
		"## Project\n", "## Git\n", "## Recent commits\n", "## Other open tasks (not yours now)\n\n- T3 (ready): Write the docs\n- T2 (waiting for T9): Price the cart\n- T5 (waiting for T4): Email the receipt\n",
		"## Open to-dos\n\n- D1: Refunds\n\n", "## Recent progress (oldest first)\n"}
	at := 0
	for _, s := range order {
		i := strings.Index(text[at:], s)
		if i < 0 {
			t.Fatalf("%q missing or out of order in\n%s", s, text)
		}
		at += i + len(s)
	}
	if strings.Contains(text, "G2") || strings.Contains(text, "G3") || strings.Contains(text, "D2") {
		t.Errorf("met or skipped goals or done to-dos in the block:\n%s", text)
	}

	// --task picks another task; its unknown dependency is named.
	text, cur = r.Prompt(PromptOptions{Task: "t2"})
	if cur == nil || cur.ID != "T2" || !strings.Contains(text, "- T9: not in RALPH_TASKS.md\n") || !strings.Contains(text, "- T4 (in progress): Take card payments\n") {
		t.Errorf("Task T2: current %v\n%s", cur, text)
	}

	// A small budget keeps the essentials and the newest progress.
	text, _ = r.Prompt(PromptOptions{Budget: 400})
	if EstimateTokens(text) > 400 {
		t.Errorf("budget 400: %d tokens", EstimateTokens(text))
	}
	for _, s := range []string{"- G1: Customers can pay\n", "T4: Take card payments\n", "- T1 (done): Model the cart — Cart and line items.\n",
		"- Prices are integers in cents.\n", "T1: Model the cart [done]: Cart and line items.\n", "(Left out to fit the context budget: "} {
		if !strings.Contains(text, s) {
			t.Errorf("budget 400: %q missing in\n%s", s, text)
		}
	}
	if strings.Contains(text, "Entry 12 ") {
		t.Errorf("budget 400: the oldest entry read is still there:\n%s", text)
	}

	// An ended session's task is not current: the next ready one is.
	gitctxtest.WriteFile(t, dir, "RALPH_TASKS.md", "# Tasks\n\n- [ ] T3: Write the docs\n- [/] T4: Take card payments\n\n## Session\n\n- status: ended\n- task: T4\n")
	r = buildReport(t, dir)
	if _, cur := r.Prompt(PromptOptions{}); cur == nil || cur.ID != "T3" {
		t.Errorf("after an ended session: current %v, want T3", cur)
	}
}

// TestPromptManyTasks checks that the list of other tasks, which stops
// being built once it runs past what any prompt can hold, gives the very
// prompt a list of every task would: same lines, same count of tasks left
// out. The project has 3,000 open tasks of every kind (ready, in
// progress, blocked, waiting, two with a repeated ID), and is read at budgets from one where the
// list is cut to one where it all fits.
func TestPromptManyTasks(t *testing.T) {
	gitctxtest.Isolate(t)
	var tasks strings.Builder
	tasks.WriteString("# Tasks\n\n")
	for i := 1; i <= 3000; i++ {
		box := " "
		switch {
		case i%11 == 0:
			box = "/"
		case i%13 == 0:
			box = "!"
		case i%17 == 0:
			box = "x"
		}
		fmt.Fprintf(&tasks, "- [%s] T%d: Task number %d%s\n", box, i, i, strings.Repeat(" and more", i%5))
		if i%3 == 0 {
			fmt.Fprintf(&tasks, "  - after: T%d\n", i-1)
		}
	}
	tasks.WriteString("- [ ] T5: A repeated ID, renumbered\n- [/] T11: Another\n")
	dir := projectDir(t, map[string]string{"RALPH_TASKS.md": tasks.String(), "RALPH_TODO.md": "# To-do\n\n- [ ] D1: Refunds\n"})
	r := buildReport(t, dir)
	cur := r.currentTask("")
	if cur == nil {
		t.Fatal("no current task")
	}
	cut := 0
	for _, budget := range []int{200, 1000, 4000, DefaultBudget, 40000, 400000} {
		got, _ := r.Prompt(PromptOptions{Budget: budget})
		want := fit(r.blocks(cur, math.MaxInt), budget)
		if got != want {
			t.Fatalf("budget %d: the prompt differs from one built with every task listed:\n%s\nwant\n%s", budget, got, want)
		}
		for _, bl := range r.blocks(cur, budgetBytes(budget)) {
			if bl.more > 0 {
				cut++
			}
		}
	}
	if cut < 3 {
		t.Errorf("the list was cut at only %d of the budgets: the test no longer tests the cut", cut)
	}
}
