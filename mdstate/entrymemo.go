package mdstate

import (
	"slices"
	"sync"
)

// entryMemo keeps the parses of the progress entries a Project read last.
// A coordinator reads the last 20 entries for every prompt, and all but
// one are the ones it parsed the time before: an entry is parsed again
// only when its bytes or its line changed. A parse is a function of the
// two, so the memo can never answer for different text.
type entryMemo struct {
	mu     sync.Mutex
	parsed map[entryKey]parsedEntry
}

type entryKey struct {
	line int
	text string
}

type parsedEntry struct {
	e     Entry
	warns []Warning
}

// memoEntries is how many parses the memo holds before it starts over: a
// few times what a prompt reads.
const memoEntries = 4 * indexTail

// parse is parseEntry(b, line), from the memo when it has it. A nil memo
// parses.
func (m *entryMemo) parse(b []byte, line int) (Entry, []Warning) {
	if m == nil {
		return parseEntry(b, line)
	}
	k := entryKey{line, string(b)}
	m.mu.Lock()
	got, ok := m.parsed[k]
	m.mu.Unlock()
	if !ok {
		got.e, got.warns = parseEntry(b, line)
		m.mu.Lock()
		if m.parsed == nil || len(m.parsed) >= memoEntries {
			m.parsed = map[entryKey]parsedEntry{}
		}
		m.parsed[k] = got
		m.mu.Unlock()
	}
	return cloneEntry(got.e), slices.Clone(got.warns)
}

// cloneEntry copies e's lists, so that a caller's change to its entry
// never reaches the memo.
func cloneEntry(e Entry) Entry {
	e.Fields = slices.Clone(e.Fields)
	for i := range e.Fields {
		e.Fields[i].List = slices.Clone(e.Fields[i].List)
	}
	return e
}
