package coordinator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-dev/ralph/mdstate"
)

func TestWriteDemoProject(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	if err := WriteDemoProject(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range mdstate.Files {
		want := mdstate.Templates[name]
		switch name {
		case mdstate.TasksFile:
			want = DemoTasks
		case mdstate.GoalsFile:
			want = DemoGoals
		}
		checkFile(t, filepath.Join(dir, name), want)
	}
	tasks, err := mdstate.Open(dir).LoadChecklist(mdstate.TasksKind)
	if err != nil || len(tasks.Items()) != 3 || len(tasks.Warnings) != 0 {
		t.Fatalf("the demo's tasks: %+v, %v", tasks, err)
	}

	// A folder with anything in it is refused, and nothing is touched.
	if err := os.WriteFile(filepath.Join(dir, mdstate.TasksFile), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = WriteDemoProject(dir)
	if err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Fatalf("WriteDemoProject into a used folder: %v", err)
	}
	checkFile(t, filepath.Join(dir, mdstate.TasksFile), "mine\n")
}
