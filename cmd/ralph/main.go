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
	"github.com/ralph-dev/ralph/coordinator/proc"
)

func main() {
	os.Exit(run())
}

func run() int {
	// ralph re-executes itself as the supervisor of every agent it starts
	// (coordinator/proc): such a process is nothing else, and never
	// returns from here.
	proc.Supervise(os.Args)
	// Most commands live for milliseconds and allocate a few megabytes
	// (parsing a 1,000-task file is about 3 MB): collecting garbage that
	// often costs more than it saves. GOGC still overrides this.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	ctx, stop := stopOnSignals()
	defer stop()
	env, err := cli.EnvFromOS()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ralph: %v\n", err)
		return cli.ExitFailure
	}
	streams := cli.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, ErrTTY: term.IsTerminal(int(os.Stderr.Fd()))}
	return cli.Main(ctx, os.Args[1:], streams, env)
}

// stopOnSignals returns the root context: the first of SIGINT (Ctrl-C),
// SIGTERM and SIGHUP cancels it with a cli.StopSignal cause, which picks
// the exit code. SIGTERM is how kill, service managers and containers ask
// a program to end, SIGHUP how a closed terminal or a dropped ssh
// connection says so: left at their default, either would kill ralph with
// its task in progress, its session "running", its agent at work. A
// SIGHUP ignored from the start (nohup ralph run) stays ignored. Later
// signals are ignored while the work stops (bounded by the agent's grace).
func stopOnSignals() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	if !signal.Ignored(syscall.SIGHUP) {
		signal.Notify(sigs, syscall.SIGHUP)
	}
	go func() {
		select {
		case sig := <-sigs:
			// A hangup often takes the reader of ralph's output with it
			// (`ralph run | tee log` over ssh): a write to a broken pipe
			// must fail, not kill ralph before it saved the session.
			// Caught here rather than ignored for good: an ignored
			// SIGPIPE would stay ignored in the agents ralph starts.
			signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
			cancel(cli.StopSignal{Signal: sig})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel(nil)
	}
}
