//go:build linux

package coordinator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/mdstate"
)

// A .ralph that is a file stops the run before any agent starts, naming
// the file and what to do, and the run goes on once it is fixed.
func TestPreflightRefusesUnkeptReport(t *testing.T) {
	for _, tt := range []struct {
		name, want string
		break_     func(dir string) error
		fix        func(dir string) error
	}{
		{".ralph a file", ".ralph: is a file, not a folder; ralph keeps its lock and the agents' logs in it: move the file out of the way",
			func(dir string) error { return os.WriteFile(filepath.Join(dir, mdstate.RuntimeDir), nil, 0o644) },
			func(dir string) error { return os.Remove(filepath.Join(dir, mdstate.RuntimeDir)) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := initedProject(t, tasksMD(1))
			if err := tt.break_(dir); err != nil {
				t.Fatal(err)
			}
			fa := &fakeAgent{reply: func(int) agent.Result {
				return agent.Result{Final: "<learning>Kept.</learning><promise>COMPLETE</promise>"}
			}}
			// A .ralph that is a file stops the run as early as its lock
			// (New).
			co, err := New(Options{Root: dir, Agent: fa, Command: "test"})
			if err == nil {
				_, err = co.Run(t.Context())
				co.Close()
			}
			if err == nil || !strings.Contains(err.Error(), filepath.FromSlash(tt.want)) {
				t.Fatalf("Run: %v\nwant it to say %q", err, tt.want)
			}
			if fa.calls() != 0 {
				t.Fatal("the agent ran")
			}
			if err := tt.fix(dir); err != nil {
				t.Fatal(err)
			}
			co = newCoordinator(t, Options{Root: dir, Agent: fa})
			if out, _ := runAll(t, t.Context(), co); out.Reason != StopAllDone {
				t.Fatalf("after the fix: %+v", out)
			}
			a, err := mdstate.Open(dir).LoadAgent()
			if err != nil || len(a.Learnings) != 1 {
				t.Errorf("learnings after the fix: %+v, %v", a, err)
			}
		})
	}
}
