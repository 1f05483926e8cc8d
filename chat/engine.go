package chat

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ralph-dev/ralph/coordinator"
	"github.com/ralph-dev/ralph/mdstate"
)

// The slash commands that drive the engine, and /help and /quit.

// cmdRun starts the work: /run for as long as there are tasks, /run N for
// N iterations at most.
func (s *session) cmdRun(args []string) error {
	n := 0
	if len(args) > 0 {
		v, err := strconv.Atoi(args[0])
		if err != nil || v < 1 || len(args) > 1 {
			return errors.New("usage: /run, or /run N for at most N iterations (N ≥ 1)")
		}
		n = v
	}
	switch {
	case s.running:
		return errors.New("work is already running (/pause, /stop)")
	case s.talk != nil:
		return errors.New("the agent is answering: /run once it has (Ctrl-C stops the answer)")
	}
	return s.startRun(context.Background(), n)
}

// startRun starts a run in the background, of at most iterations
// iterations (0: no limit but the session's).
func (s *session) startRun(ctx context.Context, iterations int) error {
	if err := s.co.StartFor(ctx, iterations); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	s.running = true
	limit := ""
	if iterations > 0 {
		limit = " for at most " + plural(iterations, "iteration")
	}
	s.say("▶ working in the background" + limit + ": a line you type is a message for the next agent, ! sends it now, Ctrl-C stops\n")
	return nil
}

func (s *session) cmdPause([]string) error {
	if s.resumeAfter {
		s.resumeAfter = false
		s.say("⏸ the work stays paused after the answer (/resume continues it)\n")
		return nil
	}
	if !s.running {
		return errors.New("nothing runs")
	}
	s.co.Pause()
	s.say("⏸ pausing after the current iteration (/resume takes it back)\n")
	return nil
}

func (s *session) cmdResume([]string) error {
	if s.talk != nil || s.urgentTurn != "" {
		s.resumeAfter = true
		s.say("▶ the work goes on after the answer\n")
		return nil
	}
	if s.running {
		if err := s.co.Resume(context.Background()); err != nil {
			return fmt.Errorf("resume: %w", err)
		}
		s.say("▶ going on after this iteration\n")
		return nil
	}
	return s.startRun(context.Background(), 0)
}

func (s *session) cmdStop([]string) error {
	if !s.busy() {
		return errors.New("nothing runs")
	}
	s.stopAll()
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
	s.say("dropped " + plural(len(drop), "queued message") + "\n")
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

// cmdAgent shows the agent in use, or switches to another (and model)
// for the turns and runs that start next.
func (s *session) cmdAgent(args []string) error {
	snap := s.co.Snapshot()
	if len(args) == 0 {
		s.say("agent: " + coordinator.AgentLabel(snap.Agent, snap.Model) + " (/agent NAME [MODEL] switches; /agents lists them)\n")
		return nil
	}
	if len(args) > 2 {
		return errors.New("usage: /agent NAME [MODEL]")
	}
	if s.busy() {
		return errors.New("the agent is at work: /agent once it is done (/pause, /stop)")
	}
	if s.o.PickAgent == nil {
		return errors.New("this session cannot switch agents")
	}
	model := ""
	if len(args) == 2 {
		model = args[1]
	}
	a, model, perm, err := s.o.PickAgent(args[0], model)
	if err != nil {
		return err
	}
	if err := s.co.SetAgent(a, model, perm); err != nil {
		return err
	}
	s.say("agent: " + coordinator.AgentLabel(a.Name(), model) + ", permission mode " + string(perm.OrDefault()) + " from now on\n")
	return nil
}
