package chat

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ralph-dev/ralph/mdstate"
)

// The slash commands that drive the engine, and /help and /quit.

// errRunLimit answers /run N: the engine takes an iteration limit when it
// is opened (ralph chat --max-iterations), not per run.
var errRunLimit = errors.New("/run N is not built yet: the engine takes its iteration limit when chat starts; start chat with --max-iterations N, or /pause when enough is done")

func (s *session) cmdRun(args []string) error {
	if len(args) > 0 {
		return errRunLimit
	}
	if s.running {
		return errors.New("work is already running (/pause, /stop)")
	}
	return s.startRun(context.Background())
}

// startRun starts a run in the background.
func (s *session) startRun(ctx context.Context) error {
	if err := s.co.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	s.running = true
	s.say("▶ working in the background: a line you type is a message for the next agent, ! sends it now, Ctrl-C stops\n")
	return nil
}

func (s *session) cmdPause([]string) error {
	if !s.running {
		return errors.New("nothing runs")
	}
	s.co.Pause()
	s.say("⏸ pausing after the current iteration (/resume takes it back)\n")
	return nil
}

func (s *session) cmdResume([]string) error {
	if s.running {
		if err := s.co.Resume(context.Background()); err != nil {
			return fmt.Errorf("resume: %w", err)
		}
		s.say("▶ going on after this iteration\n")
		return nil
	}
	return s.startRun(context.Background())
}

func (s *session) cmdStop([]string) error {
	if !s.running {
		return errors.New("nothing runs")
	}
	s.stopWork()
	return nil
}

// cmdQueue lists the queued messages, or drops one (by its number in the
// list) or all of them. The list is RALPH_TASKS.md's "## Guidance".
func (s *session) cmdQueue(args []string) error {
	queued := s.co.Snapshot().Guidance
	if len(args) == 0 {
		if len(queued) == 0 {
			s.say("no message is queued\n")
			return nil
		}
		var b strings.Builder
		for i, g := range queued {
			fmt.Fprintf(&b, "  %d. %s\n", i+1, g)
		}
		s.say(b.String())
		return nil
	}
	if args[0] != "drop" || len(args) != 2 {
		return errors.New("usage: /queue, /queue drop N, /queue drop all")
	}
	drop, err := pickQueued(queued, args[1])
	if err != nil {
		return err
	}
	if _, err := s.co.Project().UpdateChecklist(mdstate.TasksKind, func(e *mdstate.ChecklistEdit) error {
		return e.DropGuidance(drop)
	}); err != nil {
		return fmt.Errorf("drop from the queue: %w", err)
	}
	s.say(fmt.Sprintf("dropped %d queued message(s)\n", len(drop)))
	return nil
}

// pickQueued returns the messages "/queue drop WHICH" names.
func pickQueued(queued []string, which string) ([]string, error) {
	if which == "all" {
		if len(queued) == 0 {
			return nil, errors.New("no message is queued")
		}
		return queued, nil
	}
	n, err := strconv.Atoi(which)
	if err != nil || n < 1 || n > len(queued) {
		return nil, fmt.Errorf("no queued message %s: /queue lists them, numbered", which)
	}
	return queued[n-1 : n], nil
}

func (s *session) cmdHelp([]string) error {
	s.say(helpText(s.cmds))
	return nil
}

func (s *session) cmdQuit([]string) error {
	s.leave = LeftQuit
	return nil
}
