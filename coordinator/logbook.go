package coordinator

import (
	"sync"
	"time"
)

// logBook is what a coordinator knows of its logs folder since it last
// pruned it: the bytes the logs there hold and the oldest one's time,
// kept up to date with each log it writes. With it, a run reads the
// folder (a stat a log) only when a bound could be reached: at its first
// agent run, once the logs could outgrow LogsMaxTotal with the next one,
// or once the oldest is past LogsMaxAge. Without it every agent run read
// the whole folder, a cost that grew with the logs kept. A log a person
// adds or removes meanwhile is seen at the next look.
type logBook struct {
	mu     sync.Mutex
	known  bool
	total  int64
	oldest time.Time
}

// due reports whether the folder must be read and pruned before a new
// log: nothing known yet, more than keep bytes (keep < 0: no bound), or
// a log older than maxAge (maxAge <= 0: no bound). A nil book is always
// due.
func (b *logBook) due(keep int64, maxAge time.Duration, now time.Time) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.known || (keep >= 0 && b.total > keep) ||
		(maxAge > 0 && !b.oldest.IsZero() && now.Sub(b.oldest) > maxAge)
}

// pruned records what a prune left: total bytes, the oldest log's time.
func (b *logBook) pruned(total int64, oldest time.Time) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.known, b.total, b.oldest = true, total, oldest
}

// add records a log written since, of size bytes, last modified at mod.
func (b *logBook) add(size int64, mod time.Time) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += size
	if b.oldest.IsZero() || mod.Before(b.oldest) {
		b.oldest = mod
	}
}
