// Package coordinator is ralph's engine: one coordinator per project that
// picks tasks from RALPH_TASKS.md, gives each to a child agent, and writes
// what it learns back into the state files as it goes, so that nothing
// lives only in memory. Every front end (ralph run, ralph chat, the
// one-shot) drives the same engine.
//
// # The engine's API
//
// New takes the project's coordinator lock and holds it until Close, so a
// Coordinator lives as long as its front end (a chat, say) and runs work
// many times:
//
//   - Run(ctx) works through the tasks until none is ready, a limit is
//     reached, it is paused or stopped. It may be called again after it
//     returned: the session continues (same id, counters go on). Start and
//     Wait are Run in two halves. Cancelling ctx is Stop(false).
//   - Pause stops the run after the current iteration (at once during a
//     wait or a backoff); the session is saved as paused. Resume takes back
//     a pause that has not taken effect yet, or starts a new run.
//   - Stop(hard) ends the run now and returns once the state is saved: the
//     agent's whole process group gets SIGINT, then everything the agent
//     started, in its group or not, SIGKILL after proc.HardGrace (hard) or
//     Options.Grace (proc's containment); its task goes back to pending
//     with a note; the session is paused.
//   - Queue(Guidance) writes a person's message into RALPH_TASKS.md's
//     "## Guidance" list at once; it reaches the next agent's prompt and
//     stays queued until an iteration that received it ends with the
//     agent's answer (then it is recorded in that iteration's progress
//     entry and leaves the list). An urgent message stops only the current
//     iteration: its task goes back to pending without counting an
//     attempt, goes first, and the loop goes on with the message.
//   - Snapshot returns everything a front end shows, from any goroutine.
//   - Notify tells the engine that someone else changed a state file on
//     disk. With Options.Watch the engine watches the project folder
//     itself (mdstate/watch) and calls it. The change is announced
//     (EventStateChanged, one line in the model's terms) and re-arms the
//     circuit breaker; if a person marked the running task done, skipped
//     or blocked, or removed it, its agent is stopped at once.
//
// # A person's edit wins
//
// Every write of RALPH_TASKS.md compares the file with what ralph wrote
// before (owned.go). A task status a person changed since is theirs: the
// iteration's outcome then goes in a note under the task and in the
// progress entry, and the task is not run again until a person reopens
// it. A file whose Session section is not the one ralph last wrote is an
// older copy (an editor's stale buffer, an agent's git checkout): ralph's
// statuses it lost are written again, and so are the to-dos, learnings
// and progress entries missing from the end of what ralph added this
// session. Only `ralph init` creates state files; an agent's report whose
// file is gone goes in its progress entry.
//
// # Delivery rules
//
// Events returns one stream that lives until Close. The engine never
// blocks on it. Streaming detail (agent text, tool calls and results,
// usage) may be dropped when the reader falls behind; every other event
// (task started, iteration done, retries, waits, notices, guidance, state
// written or changed, stopped) is always delivered, in order. Each run
// ends with exactly one EventStopped, its last event. Payloads are typed:
// a wait's end is Event.Until, a retry's delay Event.Delay, never text.
//
// # What survives a crash
//
// Everything: the session (counters, the current task, an iteration's
// result between its two writes, a limit's wait) is in RALPH_TASKS.md's
// session block, queued guidance in its guidance list. The agent's pid is
// a runtime detail in .ralph/agent.json (agentproc.go), whose loss loses
// nothing: the session's mark finds its processes too.
// The next start recovers an interrupted session (see Run). A task's
// status and its agent's report are one step: the report is kept in the
// session block, saved in the same write as the status, and recovery
// files what of it is missing. What must not survive is the agent's processes: its
// supervisor kills them when ralph dies, and recovery kills any it
// missed, by the session's mark in their environment (proc.KillMarked).
//
// # What an agent hands back
//
// It is data: its final message, error text and events are repaired
// (invalid UTF-8 and control characters become U+FFFD) and redacted
// (Options.Secrets, the secrets of Options.Env and well-known token
// shapes become Redacted) as they come in, before any file, log, event or
// commit message. Before each agent starts, the guards check that the
// state files its report goes to will take it and that the disk has room
// (Options.Resources, StopLowDisk); its log is capped and the logs folder
// pruned whenever it could be over its bounds (logbook.go).
//
// The one-shot (OneShot) shares the engine's pipeline: run an agent on a
// request, classify how it ended, file what it reported, write a progress
// entry. This package also holds what every front end (the CLI, chat)
// shares: the project lock; the recovery report that rebuilds what ralph
// knows from the markdown files and git alone; the state files' history
// and their restore from git (StateHistory, Restore); the agent a
// continued session keeps (ChooseAgent).
package coordinator
