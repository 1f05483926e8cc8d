package mdstate

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomDeps is a tasks file of n tasks with random statuses, priorities
// and "after:" lines (some naming no task, some cycles).
func randomDeps(rng *rand.Rand, n int) string {
	boxes := []string{" ", " ", " ", "/", "x", "x", "!", "-"}
	var b strings.Builder
	b.WriteString("# Tasks\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "- [%s] T%d: Task %d\n", boxes[rng.IntN(len(boxes))], i, i)
		if rng.IntN(3) == 0 {
			fmt.Fprintf(&b, "  - priority: %d\n", 1+rng.IntN(3))
		}
		if rng.IntN(2) == 0 {
			var refs []string
			for range 1 + rng.IntN(3) {
				refs = append(refs, fmt.Sprintf("T%d", 1+rng.IntN(n+2)))
			}
			fmt.Fprintf(&b, "  - after: %s\n", strings.Join(refs, ", "))
		}
	}
	return b.String()
}

// NextOnceDone answers what Next answers on the file with the task marked
// done, for every task of 2,000 random files.
func TestNextOnceDoneIsNextAfterTheEdit(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	idOf := func(it *Item) string {
		if it == nil {
			return "none"
		}
		return it.ID
	}
	for round := range 2000 {
		src := randomDeps(rng, 1+rng.IntN(12))
		c, err := ParseChecklist(TasksKind, []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range c.All() {
			e := c.Edit()
			if err := e.SetStatus(it.ID, Done); err != nil {
				t.Fatal(err)
			}
			_, after, err := e.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			if got, want := idOf(c.NextOnceDone(it.ID)), idOf(after.Next()); got != want {
				t.Fatalf("round %d, %s done: NextOnceDone %s, Next after the edit %s, in:\n%s", round, it.ID, got, want, src)
			}
		}
	}
}
