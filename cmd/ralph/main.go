// Command ralph is a conversational shell around AI coding agents. All of
// its behaviour lives in package cli; main only wires the process to it.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"

	"golang.org/x/term"

	"github.com/ralph-dev/ralph/cmd/ralph/internal/cli"
	// Faster starts: the binary's pages mapped, and the heap's filled,
	// before the other packages initialise (see their docs).
	_ "github.com/ralph-dev/ralph/cmd/ralph/internal/prefault"
	_ "github.com/ralph-dev/ralph/cmd/ralph/internal/prefault/heap"
	"github.com/ralph-dev/ralph/coordinator/proc"
)

func main() {
	os.Exit(run())
}

func run() int {
	// ralph re-executes itself as the supervisor of every agent it starts
	// (coordinator/proc): such a process is nothing else, and never gets
	// here (proc's init runs it).
	proc.Supervise()
	// The supervisors kept between agents end before ralph does.
	defer proc.Shutdown()
	// Most commands live for milliseconds: collected at a fifth of the
	// default rate (cli.GCPercent; the commands that run agents follow
	// their live heap, cli's collectForAgents). GOGC still overrides this.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(cli.GCPercent)
	}
	env, err := cli.EnvFromOS()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ralph: %v\n", err)
		return cli.ExitFailure
	}
	streams := cli.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, ErrTTY: term.IsTerminal(int(os.Stderr.Fd()))}
	// Only the commands that run agents catch signals (cli.StopSignal).
	return cli.Main(context.Background(), os.Args[1:], streams, env)
}
