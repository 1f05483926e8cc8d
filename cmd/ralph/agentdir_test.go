//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The end-to-end tests of the live state (live_test.go) and of the chat
// (chat_test.go) drive an exec agent, a shell script in the project, by
// files: it says which task it was given and its pid in files, and waits
// when the test asks it to.

// agentPrologue starts such an agent: it reads the prompt and sets $task
// to the current task's ID ("T3").
const agentPrologue = `prompt=$(cat)
line=$(printf '%s\n' "$prompt" | awk '/^## Current task/{f=1;next} f&&NF{print;exit}')
task=${line%%:*}
`

// agentPidAndWait writes the agent's pid to pid-T3 (whole, by a rename),
// then, when wait-T3 exists, waits for go-T3 (at most about 20 s).
const agentPidAndWait = `echo $$ > "pid-$task.tmp" && mv "pid-$task.tmp" "pid-$task"
if [ -e "wait-$task" ]; then
	i=0
	while [ ! -e "go-$task" ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done
fi
`

// agentDir is the project folder such an agent works in.
type agentDir struct {
	t   testing.TB
	dir string
}

func (d agentDir) path(name string) string { return filepath.Join(d.dir, name) }

func (d agentDir) write(name, content string) {
	d.t.Helper()
	if err := os.WriteFile(d.path(name), []byte(content), 0o644); err != nil {
		d.t.Fatal(err)
	}
}

func (d agentDir) read(name string) string {
	d.t.Helper()
	data, err := os.ReadFile(d.path(name))
	if err != nil {
		d.t.Fatal(err)
	}
	return string(data)
}

// touch creates an empty file, a signal for the agent.
func (d agentDir) touch(name string) { d.write(name, "") }

// pidIn reads a pid the agent wrote.
func (d agentDir) pidIn(name string) int {
	d.t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(d.read(name)))
	if err != nil {
		d.t.Fatalf("%s: %v", name, err)
	}
	return pid
}
