// Package mdstatetest builds state files for other packages' tests and
// benchmarks: large projects generated on the fly, never committed.
package mdstatetest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ralph-dev/ralph/mdstate"
)

// BigProject writes a project with the given number of tasks and progress
// entries into dir: a realistic mix of statuses, priorities, dependencies
// and notes, and entries as ralph writes them. It returns dir.
func BigProject(dir string, tasks, entries int) (string, error) {
	for _, name := range mdstate.Files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(mdstate.Templates[name]), 0o644); err != nil {
			return "", err
		}
	}
	if err := writeTasks(filepath.Join(dir, mdstate.TasksFile), tasks); err != nil {
		return "", err
	}
	if err := writeProgress(filepath.Join(dir, mdstate.ProgressFile), entries); err != nil {
		return "", err
	}
	return dir, nil
}

func writeTasks(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprint(w, mdstate.Templates[mdstate.TasksFile])
	boxes := []string{"x", "x", "x", " ", " ", "/", "!", "-"}
	for i := 1; i <= n; i++ {
		if i%100 == 1 {
			fmt.Fprintf(w, "\n## Milestone %d\n\n", i/100+1)
		}
		box := boxes[i%len(boxes)]
		if i > n-n/4 { // the last quarter is still to do
			box = " "
		}
		fmt.Fprintf(w, "- [%s] T%d: Implement part %d of the feature, with tests and docs\n", box, i, i)
		if i%3 == 0 && i > 1 {
			fmt.Fprintf(w, "  - after: T%d\n", i-1)
		}
		if i%10 == 0 {
			fmt.Fprintf(w, "  - priority: %d\n", i%4+1)
		}
		if i%7 == 0 {
			fmt.Fprintf(w, "  - attempts: 1\n  - note: the first attempt timed out on the integration tests\n")
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

func writeProgress(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprint(w, mdstate.Templates[mdstate.ProgressFile])
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		e := Entry(t0.Add(time.Duration(i)*7*time.Minute), i)
		w.WriteString("\n")
		w.Write(e.Render("\n"))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// Entry returns a typical progress entry, as the coordinator writes one.
func Entry(t time.Time, i int) mdstate.Entry {
	return mdstate.Entry{
		Time:  t,
		Title: fmt.Sprintf("T%d: Implement part %d of the feature", i%1000+1, i),
		Fields: []mdstate.Field{
			{Key: "outcome", Value: "done"},
			{Key: "agent", Value: "claude (sonnet)"},
			{Key: "duration", Value: "2m13s"},
			{Key: "tokens", Value: "12034 in, 3201 out"},
			{Key: "cost", Value: "$0.0412"},
			{Key: "commit", Value: "3f9c2e1"},
			{Key: "summary", Value: "Implemented the part and its tests; all tests pass."},
		},
	}
}
