package mdstate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Flushes a Project with FlushLater leaves running after a write returns:
// the progress log's after an append, the project folder's after a save.

// The append is durable once its journal record is: a crash before the
// log's own flush leaves the record, and recovery finishes the append from
// it. So with Project.FlushLater the log is flushed after AppendProgress
// returns, beside whatever the caller does next, and the record is
// retired only once that flush is done, under the state lock, and only if
// the journal still holds it (a record of another process's is its own to
// retire). The Project's next append waits for the flush and says if it
// failed; so does Sync. Until then the record stays, and a recovery that
// finds it (another process's write) flushes the log before it retires it.

// pendingFlush is an append's flush in the background.
type pendingFlush struct {
	done   chan struct{}
	err    error
	record []byte // the journal record's first line, to retire it
}

// flushLater flushes and closes the log f in the background; record is
// the first line of the append's journal record.
func (p *Project) flushLater(f *os.File, record []byte) {
	pf := &pendingFlush{done: make(chan struct{}), record: record}
	p.mu.Lock()
	p.flush = pf
	p.mu.Unlock()
	go func() {
		defer close(pf.done)
		pf.err = errors.Join(f.Sync(), f.Close())
	}()
}

// flushPending reports whether an append's flush may be under way.
func (p *Project) flushPending() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flush != nil
}

// settleFlush waits for the last append's flush, retires its journal
// record if it is done, and returns its failure. The caller holds the
// state lock.
func (p *Project) settleFlush() error {
	pf := p.awaitFlush(&p.flush)
	if pf == nil {
		return nil
	}
	if pf.err != nil {
		return writeFailure(ProgressFile, "cannot flush the last entry (it is kept in "+filepath.Join(RuntimeDir, "progress.journal")+" and will be written again)", pf.err)
	}
	p.retireJournalIf(pf.record)
	return nil
}

// awaitFlush takes the flush pending in *slot (p.flush or p.dirSync),
// waits for it to be over and returns it; nil when none was pending.
func (p *Project) awaitFlush(slot **pendingFlush) *pendingFlush {
	p.mu.Lock()
	pf := *slot
	*slot = nil
	p.mu.Unlock()
	if pf != nil {
		<-pf.done
	}
	return pf
}

// syncDirLater flushes the folder dir in the background (a save's, with
// FlushLater).
func (p *Project) syncDirLater(dir string) {
	pf := &pendingFlush{done: make(chan struct{})}
	p.mu.Lock()
	prev := p.dirSync
	p.dirSync = pf
	p.mu.Unlock()
	go func() {
		defer close(pf.done)
		var err error
		if prev != nil {
			<-prev.done
			err = prev.err
		}
		pf.err = errors.Join(err, syncDir(dir))
	}()
}

// settleDirSync waits for the last save's folder flush and returns its
// failure.
func (p *Project) settleDirSync() error {
	if pf := p.awaitFlush(&p.dirSync); pf != nil && pf.err != nil {
		return fmt.Errorf("flush the project's folder after a save: %w", pf.err)
	}
	return nil
}

// Sync waits until what the Project wrote is on disk: the last save's
// folder flush, the last append's flush (and its journal record retired),
// and says whether one failed. Without FlushLater there is nothing to wait
// for. With it, an append is durable once it returns (its journal record
// is), a save once Sync or the next write returns.
func (p *Project) Sync() error {
	if err := p.settleDirSync(); err != nil {
		return err
	}
	p.mu.Lock()
	pending := p.flush != nil
	p.mu.Unlock()
	if !pending {
		return nil
	}
	unlock, err := p.lockState()
	if err != nil {
		return err
	}
	defer unlock()
	return p.settleFlush()
}
