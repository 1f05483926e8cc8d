package mdstate

// writeHook is one function registered with OnWrite or OnWriteFrom.
type writeHook struct {
	id int
	fn func(name string, base, data []byte)
}

// OnWrite registers fn to be called after every write ralph makes through
// p, under the state lock, with the file's name and its new bytes (nil
// for an append to the progress log). It returns a function that
// removes fn. fn must not write through p or take its lock (the state
// lock is held, and a second one in the same process waits for ever).
func (p *Project) OnWrite(fn func(name string, data []byte)) (remove func()) {
	return p.OnWriteFrom(func(name string, _, data []byte) { fn(name, data) })
}

// OnWriteFrom is OnWrite with the version ralph's edit was made on: base
// is the latest version of the file that ralph did not write, which its
// new bytes hold (its read, or a person's save that the write took in).
// A watcher that holds an older version reports base's difference from it
// as a person's edit, and only then takes data: with data alone, a
// person's edit that ralph's write took in would never be reported. base
// is nil for a new file and for the progress log.
func (p *Project) OnWriteFrom(fn func(name string, base, data []byte)) (remove func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hookSeq++
	id := p.hookSeq
	p.hooks = append(p.hooks, writeHook{id: id, fn: fn})
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for i, h := range p.hooks {
			if h.id == id {
				p.hooks = append(p.hooks[:i:i], p.hooks[i+1:]...)
				return
			}
		}
	}
}

// wrote calls the write hooks. For an append to the progress log they get
// no bytes (data nil: one entry more); when ralph writes the log whole
// (creates it, or restores it) they get its bytes, so that a hook counts
// its entries rather than take the write for one more. They never get the
// log's base: it can be large.
func (p *Project) wrote(name string, base, data []byte) {
	if name == ProgressFile {
		base = nil
	}
	p.mu.Lock()
	hooks := p.hooks
	p.mu.Unlock()
	for _, h := range hooks {
		h.fn(name, base, data)
	}
}
