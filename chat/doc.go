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
//     .ralph/chat_history, tab completion of slash commands, task, goal
//     and to-do IDs and agent names)
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
//   - At an idle prompt a plain line is a conversation turn
//     (Coordinator.Talk), run in the background so the loop keeps reading
//     keys: lines typed meanwhile wait for it (piped input too), Ctrl-C or
//     /stop stops it. The conversation resumes the agent's own session,
//     kept in each turn's progress entry.
//   - While work runs, a plain line is guidance for the next agent
//     (Coordinator.Queue), persisted in RALPH_TASKS.md. A line starting
//     with "!" pauses the work, is queued and answered as a turn, and the
//     work then goes on with it in the next agent's prompt.
//   - A session a dead ralph left is recovered before the welcome
//     (Coordinator.Recover), so what the chat shows and its conversation
//     reads is the state after the crash.
//   - Slash commands that match a CLI command (/status, /tasks, /task …)
//     run that very command in-process (Options.RunCommand), so they have
//     its effect and print its output. A mistyped command gets a
//     suggestion, never an agent call.
//   - Leaving (/quit, Ctrl-D, SIGHUP, SIGTERM, the end of piped input)
//     stops work hard, waits for the state to be saved, prints a session
//     summary and writes it to the progress log. At the end of piped
//     input the session first waits
//     for the run under way to end by itself, so a script's
//     `printf '/run\n' | ralph chat` behaves like `ralph run`.
//
// Which events may be dropped is the engine's rule (coordinator's
// delivery rules): streaming detail only. The loop never blocks the engine;
// events wait in its queue while a command runs.
package chat
