// Package mdstate reads and writes ralph's state: five markdown files in
// the project root (AGENT.md, RALPH_GOALS.md, RALPH_TASKS.md,
// RALPH_PROGRESS.md, RALPH_TODO.md), written for people first. It is the
// only package that writes them; docs/state-format.md is their format, and
// every example there is a test fixture.
//
// # What it parses
//
// Block structure only, with goldmark (no inline parsing), after a UTF-8
// byte-order mark and YAML front matter, which are kept and ignored:
//
//   - Checklists (tasks, goals, to-dos): list items that start with a
//     checkbox whose character is the status, an optional ID ("T3: "),
//     and "- key: value" lines under them. Checkboxes in block quotes, code,
//     HTML and front matter are text. Items without an ID get a provisional
//     one, the same on every read, written at the next write.
//   - In RALPH_TASKS.md, the "## Session" section (the coordinator's
//     record, Session) and the "## Guidance" section (queued messages for
//     the agents, Guidance). A checkbox in either is a task all the same (a
//     person appends one at the end of the file, below the session), and
//     SetSession leaves it where it is; new tasks (ChecklistEdit.Add) go to
//     the task list, never into those sections.
//   - In AGENT.md, every top-level list item as a learning, except in an
//     "Agents" section (agent settings, read by coordinator/agentconfig).
//   - The progress log is scanned, not parsed: entry headings ("## " at
//     the start of a line, outside fences and HTML comments) are found in
//     fixed-size blocks, and only the last entries asked for are parsed, so
//     reading the status costs the same at 100 entries or 100,000. A memo of
//     the scan in .ralph/progress.index is used only while the log's size,
//     times and inode are those it was made from.
//
// What it cannot read is a warning with file and line (a bad priority, an
// unknown dependency, a cycle), never an error and never a lost line. A
// file that is not text it may edit is a FileError naming the file, the
// line and what to do: a NUL byte, invalid UTF-8, a line over MaxLineBytes,
// a file over MaxFileBytes (the progress log excepted), a directory or
// other non-regular file, a symlink that leads out of the project
// (ErrOutsideProject; CheckInside checks a file before a write that does
// not read it first); for a write, a file without write permission
// ("hands off").
//
// A file with an unresolved git merge conflict (FindConflict: "<<<<<<<",
// "=======", ">>>>>>>" lines outside code blocks) is read, with a warning,
// and never written: an edit of it, or a learning added to AGENT.md, is a
// ConflictError naming the file and the markers' lines. CheckConflicts
// finds them in every state file but the progress log, which is scanned
// and appended to, never parsed or rewritten.
//
// # Edits are byte splices, checked
//
// A file is never re-rendered. A change (ChecklistEdit, AddLearning) is a
// set of byte ranges, taken from the AST, and the text to put there:
// collected, sorted, rejected if they overlap, spliced, and the result
// parsed again and compared with what the change should mean, item by
// item, and for the session and guidance sections, message by message.
// Only the parts a change touched are parsed again where that is shown to
// read as a parse of the whole would (incremental.go: a checkbox, the lines
// under one top-level item, the file from the Session or Guidance heading
// on), so an edit of a 10,000-task file costs what it touches. If
// anything else would read differently, the edit fails with ErrVerify and
// nothing is written. Everything the change does not need keeps its bytes:
// prose, unknown lines, CRLF line endings, a byte-order mark, trailing
// blanks, tabs.
//
// Lists get no copies: a to-do (ChecklistEdit.AddOnce), a learning
// (Project.Learn) or a note under an item (ChecklistEdit.AddNoteOnce) that
// says the same as one in its file or under its item, by the one rule
// SameKey (case, whitespace and a trailing period aside), is not added; the
// error is a *DuplicateError naming the line.
//
// # Writes are atomic, durable, locked and known
//
//   - A file is replaced by writing a temporary file in the same folder,
//     fsync, swapping it with the target (renameat2 RENAME_EXCHANGE on
//     Linux; elsewhere a rename over it), fsync the folder; it keeps its
//     mode, and a symlink stays a link. A crash leaves the old file or the
//     new one. A new file is linked into place, which never replaces one
//     that appeared meanwhile (CreateFile, EnsureFile). On Linux the
//     temporary file is the spare of its state file, the version the last
//     swap replaced, kept in .ralph/ and written over (spare.go): a rewrite
//     of blocks a file has is a data flush, where a new file's flush
//     commits its allocation and an unlink frees every block.
//   - The progress log is only appended to, with one write after a
//     write-ahead record in .ralph/progress.journal, written in place and
//     retired (its first byte overwritten) once the append is on disk; the
//     next write (or Recover) finishes an append a crash cut short, so an
//     entry is in the log whole or not at all. With FlushLater an append
//     returns once its record is durable, and the log is flushed beside
//     what follows (Sync waits for it).
//   - Every read-modify-write holds the state lock, an exclusive lock on
//     .ralph/state.lock (flock on Unix, LockFileEx on Windows) that every
//     ralph process takes and the system releases when a process dies.
//   - A person's editor takes no lock, so a write knows what it replaced:
//     the swap leaves the replaced file under the temporary name, and ralph
//     reads it (and, before and after unlinking it, once more: an append
//     into it lands there). If it is not what ralph's edit was made on, a
//     person saved in between: the edit is made again on their version (or
//     their change merged into ralph's), and swapped in again, up to 50
//     times (then ChurnError, with the file left as the person saved it).
//     A temporary file a crash leaves may be a person's version: Recover
//     keeps one whose lines the file lacks in .ralph/backup (Rescued);
//     a Project's writes look for them at most once a second.
//   - A missing or empty file is a moment, not a fact: a file a Project
//     saw with bytes and now finds missing or empty (an editor's save:
//     vim renames it away first, others truncate it) is read again until
//     it is back, for up to SaveGrace (2 s). Nothing writes a template over
//     a file that existed.
//   - OnWrite (and OnWriteFrom) tells a watcher of every write ralph makes
//     through the Project, under the state lock, with the new bytes.
//   - Text is cleaned before it is written (CleanText): invalid UTF-8 and
//     control characters become U+FFFD, so that what a caller hands over
//     (an agent's report) never makes a file one ralph refuses to read.
//   - A write that fails says why in terms a person can act on: a full
//     disk is "the disk is full" (DiskFull), not a permission problem.
//     CheckWritable finds, before work whose results will be written, the
//     files that would refuse them.
//   - A Project remembers what its last write left in each file
//     (ChangedSinceOwnWrite: the file's identity and a hash of its bytes,
//     or for the progress log its identity, size, mtime and a hash of its
//     end), so that a file watcher can tell ralph's own writes from a
//     person's.
//
// A Project may be used from several goroutines; a ChecklistEdit belongs
// to one.
//
// # What it never does
//
// It never reformats a file, writes bytes that failed their check,
// "fixes" a file it cannot read, truncates a file in place, rewrites the
// progress log to add to it (only ReplaceFile, a restore, replaces it
// whole), or deletes a state file. It does not run processes, read
// environment variables, or know about git beyond one line: Init adds
// .ralph/ to the project's .gitignore (written against the bytes it read);
// history and commits belong to gitctx, and when and why to write to its
// callers. .ralph/ holds only
// runtime files (locks, journal, index, backups); deleting it loses no
// state.
package mdstate
