// Package chat is ralph's interactive session (`ralph chat`): a prompt in
// front of one coordinator, which it holds from start to end, so a person
// can start autonomous work, watch it, steer it and stop it at any moment.
//
// # The contract
//
//   - One goroutine, the session's loop, owns the output: it prints the
//     engine's events, the commands' output and the notices, and sets the
//     prompt. On a terminal every line goes through readline's own writer,
//     which clears the line being typed, prints above it and draws it
//     again, so a person's half-typed line is never garbled; readline is
//     never written to from anywhere else (concurrent writes to
//     chzyer/readline race).
//   - Input comes from readline on a terminal (history in
//     .ralph/chat_history, tab completion of slash commands and task IDs)
//     or from a plain line reader otherwise; the plain reader prints no
//     escape codes and no prompt. The reader hands one line over and waits
//     until the loop has dealt with it, so a command's output comes before
//     the next prompt.
//   - Ctrl-C is layered, and readline installs no signal handler of its
//     own: while work runs it is a hard stop (Coordinator.Stop(true): the
//     agent's whole tree stopped, its task back to pending, the session
//     saved) and the prompt comes back; at an idle, empty prompt it says
//     how to leave, and a second one in a row leaves. A SIGINT that
//     arrives while the terminal is not in raw mode (between two lines)
//     counts as the same key.
//   - While work runs, a plain line is guidance for the next agent
//     (Coordinator.Queue), a line starting with "!" is urgent guidance;
//     the engine persists both in RALPH_TASKS.md.
//   - Slash commands that match a CLI command (/status, /tasks, /task …)
//     run that very command in-process (Options.RunCommand), so they have
//     its effect and print its output. A mistyped command gets a
//     suggestion, never an agent call.
//   - Leaving (/quit, Ctrl-D, SIGHUP, SIGTERM, the end of piped input)
//     stops work hard, waits for the state to be saved and prints a
//     session summary. At the end of piped input the session first waits
//     for the run under way to end by itself, so a script's
//     `printf '/run\n' | ralph chat` behaves like `ralph run`.
//
// Which events may be dropped is the engine's rule (coordinator's
// delivery rules): streaming detail only. The loop never blocks the engine;
// events wait in its queue while a command runs.
//
// Not built yet: conversation turns with the agent at an idle prompt. A
// plain line there says so, and how to queue work instead.
package chat
