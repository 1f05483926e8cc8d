// Package coordinator is ralph's engine: one coordinator per project that
// picks tasks from RALPH_TASKS.md, gives each to a child agent, and writes
// what it learns back into the state files as it goes, so that nothing
// lives only in memory.
//
// This file set holds what every front end (ralph run, ralph chat, ralph
// context) shares: the project lock, and the recovery report that rebuilds
// what ralph knows from the markdown files and git alone.
package coordinator
