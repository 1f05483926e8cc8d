// Command ralph is a conversational shell around AI coding agents. All of
// its behaviour lives in package cli; main only wires the process to it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"golang.org/x/term"

	"github.com/ralph-dev/ralph/cmd/ralph/internal/cli"
)

func main() {
	os.Exit(run())
}

func run() int {
	// Most commands live for milliseconds and allocate a few megabytes
	// (parsing a 1,000-task file is about 3 MB): collecting garbage that
	// often costs more than it saves. GOGC still overrides this.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env, err := cli.EnvFromOS()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ralph: %v\n", err)
		return cli.ExitFailure
	}
	streams := cli.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, ErrTTY: term.IsTerminal(int(os.Stderr.Fd()))}
	return cli.Main(ctx, os.Args[1:], streams, env)
}
