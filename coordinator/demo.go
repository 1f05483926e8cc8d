package coordinator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ralph-dev/ralph/coordinator/agent"
	"github.com/ralph-dev/ralph/coordinator/internal/lazyre"
	"github.com/ralph-dev/ralph/mdstate"
)

// DemoAgentName labels the scripted agent wherever it shows: it is not AI.
const DemoAgentName = "scripted demo, no AI"

// DemoTasks are the sample project's tasks, in RALPH_TASKS.md's format.
const DemoTasks = `# Tasks

- [ ] T1: Write greet.sh, which prints a greeting
- [ ] T2: Write a README for greet.sh
  - after: T1
- [ ] T3: Add a test for greet.sh
  - after: T1
  - priority: 1
`

// DemoGoals is the sample project's goal.
const DemoGoals = `# Goals

- [ ] G1: A tiny greeter that anyone can run and test
`

// demoWork is what the scripted agent does for each task: the file it
// writes and the final message it reports.
var demoWork = map[string]struct{ file, content, final string }{
	"T1": {"greet.sh", "#!/bin/sh\necho \"Hello, ${1:-world}!\"\n",
		"Wrote greet.sh; it takes an optional name.\n<learning>greet.sh is plain POSIX sh: keep it that way, no bashisms</learning>\n<decision>Default the name to \"world\"</decision>\n<promise>COMPLETE</promise>"},
	"T2": {"README.md", "# greet\n\nRun `sh greet.sh NAME` to be greeted.\n",
		"Wrote the README with one usage line.\n<todo>Add an example with no name to the README</todo>\n<promise>COMPLETE</promise>"},
	"T3": {"test.sh", "#!/bin/sh\n[ \"$(sh greet.sh Ada)\" = \"Hello, Ada!\" ] && echo ok\n",
		"Added test.sh, which checks the greeting.\n<promise>COMPLETE</promise>"},
}

var currentTaskRe = lazyre.New(`(?m)^## Current task\n\n(T\d+):`)

// DemoAgent is the built-in scripted agent of `ralph demo`: for each task
// of the sample project it streams a few lines, writes one file and
// reports COMPLETE, so the real loop can be watched without an agent CLI
// or an API key. It runs in ralph's process and is labelled as scripted.
type DemoAgent struct {
	Step time.Duration // pause between streamed lines, for watching
}

// Name implements Agent.
func (DemoAgent) Name() string { return DemoAgentName }

// Run implements Agent.
func (d DemoAgent) Run(ctx context.Context, req agent.Request, onEvent func(agent.Event)) (agent.Result, error) {
	start := time.Now()
	m := currentTaskRe().FindStringSubmatch(req.Prompt)
	if m == nil {
		return agent.Result{IsError: true, ErrorKind: agent.KindBadOutput, ErrorText: "the demo agent found no current task in its prompt"}, nil
	}
	w, ok := demoWork[m[1]]
	if !ok {
		return agent.Result{Final: "I only know the demo project's tasks.\n<promise>BLOCKED: the scripted demo agent cannot do " + m[1] + "</promise>"}, nil
	}
	say := func(text string) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d.Step):
		}
		onEvent(agent.Event{Kind: agent.EventText, Text: text})
		if req.RawLog != nil {
			fmt.Fprintln(req.RawLog, text)
		}
		return nil
	}
	interrupted := agent.Result{ErrorKind: agent.KindInterrupted, Duration: time.Since(start)}
	if say("(scripted demo agent) Reading the task and the project context…") != nil {
		return interrupted, nil
	}
	onEvent(agent.Event{Kind: agent.EventToolUse, Tool: "Write " + w.file})
	// Atomic like ralph's own writes: a demo run again in its folder
	// replaces the file whole, never leaves half of one.
	if err := mdstate.WriteFileAtomic(filepath.Join(req.Dir, w.file), []byte(w.content), 0o644); err != nil {
		return agent.Result{IsError: true, ErrorKind: agent.KindCrashed, ErrorText: err.Error()}, nil
	}
	if say("Wrote "+w.file+".") != nil {
		return interrupted, nil
	}
	usage := agent.Usage{In: int64(len(req.Prompt) / 4), Out: int64(len(w.content)/4 + 40)}
	onEvent(agent.Event{Kind: agent.EventUsage, Usage: usage})
	return agent.Result{Final: w.final, Usage: usage, Duration: time.Since(start), SessionID: "demo"}, nil
}

// WriteDemoProject creates the sample project in dir, which must not exist
// or be empty, so that nothing of anyone's is overwritten: the state files
// are created through the project, never replaced.
func WriteDemoProject(dir string) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty; give the demo a new folder", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string]string{
		mdstate.TasksFile: DemoTasks,
		mdstate.GoalsFile: DemoGoals,
	}
	p := mdstate.Open(dir)
	for _, name := range mdstate.Files {
		content, ok := files[name]
		if !ok {
			content = mdstate.Templates[name]
		}
		created, err := p.CreateFile(name, []byte(content))
		if err != nil {
			return err
		}
		if !created {
			return fmt.Errorf("%s appeared in %s while the demo set it up; give the demo a new folder", name, dir)
		}
	}
	return nil
}
