package mdstate

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
)

// Entry is one progress log entry: a "## <time> — <title>" heading and the
// "- key: value" lines and text under it.
type Entry struct {
	Time   time.Time // zero when the heading has no time ralph can read
	Title  string
	Fields []Field
	Body   string // text under the heading that is not a field
	Line   int    // 1-based line of the heading
	Offset int64  // byte offset of the heading
}

// Field is one "- key: value" line of an entry, with any bullets nested
// under it (a decision trail).
type Field struct {
	Key   string   `json:"key"`
	Value string   `json:"value"`
	List  []string `json:"list,omitempty"`
}

// Get returns the value of the first field with this key, or "".
func (e *Entry) Get(key string) string {
	for _, f := range e.Fields {
		if f.Key == key {
			return f.Value
		}
	}
	return ""
}

// Log is what ralph knows of the progress log without parsing all of it.
type Log struct {
	Entries  int     // how many entries the log holds
	Recent   []Entry // the last few entries, oldest first
	Size     int64
	Warnings []Warning
}

// scanChunk is how much of the log is read at a time: the log may be many
// megabytes, and reading it whole would make memory grow with history.
const scanChunk = 256 << 10

// entryScanner finds entry headings line by line: a line starting with
// "## " (or a bare "##") at column 0, outside fenced code and HTML
// comments. It is lexical on purpose: counting 100,000 entries must cost a
// scan, not a markdown parse.
type entryScanner struct {
	fence     byte // '`' or '~' while inside a fence
	fenceLen  int
	inComment bool
	line      int
	openLine  int // where the open fence or comment started
}

// feedLine updates the scanner with one line (without its newline) and
// reports whether it starts an entry.
func (sc *entryScanner) feedLine(b []byte) bool {
	sc.line++
	if len(b) == 0 {
		return false
	}
	switch {
	case sc.inComment:
		if bytes.Contains(b, []byte("-->")) {
			sc.inComment = false
		}
		return false
	case sc.fence != 0:
		if n := fenceRun(b, sc.fence); n >= sc.fenceLen && len(bytes.TrimSpace(trimFence(b, sc.fence))) == 0 {
			sc.fence = 0
		}
		return false
	}
	switch b[0] {
	case '#':
		return len(b) >= 2 && b[1] == '#' && (len(b) == 2 || b[2] == ' ' || b[2] == '\t' || b[2] == '\r')
	case '`', '~', ' ':
		t := b
		for i := 0; i < 3 && len(t) > 0 && t[0] == ' '; i++ {
			t = t[1:]
		}
		if len(t) > 0 && (t[0] == '`' || t[0] == '~') {
			if n := fenceRun(t, t[0]); n >= 3 && !(t[0] == '`' && bytes.IndexByte(t[n:], '`') >= 0) {
				sc.fence, sc.fenceLen, sc.openLine = t[0], n, sc.line
			}
		}
	case '<':
		if bytes.HasPrefix(b, []byte("<!--")) && !bytes.Contains(b[4:], []byte("-->")) {
			sc.inComment, sc.openLine = true, sc.line
		}
	}
	return false
}

func fenceRun(b []byte, c byte) int {
	b = bytes.TrimLeft(b, " ")
	n := 0
	for n < len(b) && b[n] == c {
		n++
	}
	return n
}

func trimFence(b []byte, c byte) []byte {
	return bytes.TrimLeft(bytes.TrimLeft(b, " "), string(c))
}

// ReadProgress counts the entries of the progress log and parses the last
// n of them. Only those n entries are parsed; the rest is scanned in
// fixed-size blocks, so memory does not grow with the log. A missing file
// is an empty log (after the save grace, if this Project saw it with
// entries: an editor may be saving it).
func (p *Project) ReadProgress(n int) (*Log, error) {
	if _, err := p.statState(ProgressFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, &FileError{File: ProgressFile, Msg: "cannot read: " + unwrapPathErr(err), Hint: "check the file's permissions"}
	}
	return readProgress(p.Root, n, &p.entries, &p.index)
}

var (
	fenceTicks  = []byte("```")
	fenceTildes = []byte("~~~")
	commentOpen = []byte("<!--")
)

// isEntryHead reports whether the line starting b is an entry heading.
func isEntryHead(b []byte) bool {
	return len(b) >= 2 && b[0] == '#' && b[1] == '#' &&
		(len(b) == 2 || b[2] == ' ' || b[2] == '\t' || b[2] == '\r' || b[2] == '\n')
}

// scanBlock feeds whole lines (b ends at a line end, or at EOF) to the
// scanner and calls onEntry for each entry heading. A block with no fence
// or comment in it, entered outside of one, cannot change the scanner's
// state, so its headings are found with a search for "\n##" instead of a
// look at every line: that is most of the log, and it is several times
// faster.
func (sc *entryScanner) scanBlock(b []byte, base int64, onEntry func(off int64, line int)) {
	if sc.fence == 0 && !sc.inComment && !bytes.Contains(b, fenceTicks) && !bytes.Contains(b, fenceTildes) && !bytes.Contains(b, commentOpen) {
		line, counted := sc.line+1, 0 // line number of b[counted:]
		if isEntryHead(b) {
			onEntry(base, line)
		}
		// Search for '#', not "\n##": '\n' is on every line, '#' rarely
		// outside headings, so each search skips a whole entry.
		for i := 1; i < len(b); {
			j := bytes.IndexByte(b[i:], '#')
			if j < 0 {
				break
			}
			k := i + j
			if b[k-1] == '\n' && isEntryHead(b[k:]) {
				line += bytes.Count(b[counted:k], []byte{'\n'})
				counted = k
				onEntry(base+int64(k), line)
				k++
			}
			i = k + 1
		}
		sc.line += bytes.Count(b, []byte{'\n'})
		if len(b) > 0 && b[len(b)-1] != '\n' {
			sc.line++ // an unterminated last line
		}
		return
	}
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '\n')
		end := len(b)
		if j >= 0 {
			end = i + j
		}
		if sc.feedLine(b[i:end]) {
			onEntry(base+int64(i), sc.line)
		}
		i = end + 1
	}
}

func readProgress(root string, n int, memo *entryMemo, idx *indexMemo) (*Log, error) {
	path := filepath.Join(root, ProgressFile)
	f, err := openFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return &Log{}, nil
	}
	if err != nil {
		return nil, &FileError{File: ProgressFile, Msg: "cannot read: " + unwrapPathErr(err), Hint: "check the file's permissions"}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, &FileError{File: ProgressFile, Msg: "is a directory, not a file", Hint: "move it out of the way, then run `ralph init` to create the file"}
	}
	lg := &Log{Size: fi.Size()}
	probeAt(probeLogStat)
	var starts []entryStart
	if x := idx.load(root, fi); x != nil && x.matches(fi) && (n <= len(x.Tail) || x.Entries == len(x.Tail)) {
		lg.Entries = x.Entries
		starts = x.Tail[max(len(x.Tail)-n, 0):]
	} else {
		// The log as the stat found it: an append since (ralph's, beside
		// an agent) is for the next read, and its entries lie past the
		// tail read below.
		x, all, err := scanLog(io.NewSectionReader(f, 0, lg.Size), max(n, indexTail))
		if err != nil {
			return nil, err
		}
		lg.Entries = x.Entries
		starts = all[max(len(all)-n, 0):]
		if x.stamp(fi) {
			idx.save(root, x)
		}
	}
	if n <= 0 || len(starts) == 0 {
		return lg, nil
	}
	// Parse the last n entries: from the oldest of them to the end.
	tail := make([]byte, lg.Size-starts[0].Off)
	if _, err := f.ReadAt(tail, starts[0].Off); err != nil && err != io.EOF {
		return nil, &FileError{File: ProgressFile, Msg: "cannot read: " + err.Error()}
	}
	if i := bytes.IndexByte(tail, 0); i >= 0 {
		return nil, &FileError{File: ProgressFile, Line: starts[0].Line + bytes.Count(tail[:i], []byte{'\n'}), Msg: "holds a NUL byte", Hint: "remove it, or restore the file with `git checkout -- " + ProgressFile + "`"}
	}
	for k, st := range starts {
		end := int64(len(tail))
		if k+1 < len(starts) {
			end = starts[k+1].Off - starts[0].Off
		}
		e, warns := memo.parse(tail[st.Off-starts[0].Off:end], st.Line)
		e.Offset = st.Off
		lg.Recent = append(lg.Recent, e)
		lg.Warnings = append(lg.Warnings, warns...)
	}
	return lg, nil
}

// scanLog scans the whole log from f's current offset and returns its
// index (unstamped) and the last keep entry starts, oldest first.
func scanLog(f io.Reader, keep int) (*logIndex, []entryStart, error) {
	x := &logIndex{}
	ring := make([]entryStart, keep)
	onEntry := func(off int64, line int) {
		ring[x.Entries%keep] = entryStart{off, line}
		x.Entries++
	}
	var sc entryScanner
	buf := make([]byte, scanChunk)
	held := 0      // bytes of an unfinished line kept at the start of buf
	var base int64 // file offset of buf[0]
	first := true
	for {
		k, rerr := io.ReadFull(f, buf[held:])
		have := held + k
		eof := rerr == io.EOF || rerr == io.ErrUnexpectedEOF
		if rerr != nil && !eof {
			return nil, nil, &FileError{File: ProgressFile, Msg: "cannot read: " + rerr.Error()}
		}
		if first && bytes.IndexByte(buf[:have], 0) >= 0 {
			// Binary files hold NULs throughout; the first block tells.
			return nil, nil, &FileError{File: ProgressFile, Line: lineAt(buf[:have], bytes.IndexByte(buf[:have], 0)), Msg: "looks binary (it holds a NUL byte)", Hint: "restore it with `ralph restore " + ProgressFile + "` or `git checkout -- " + ProgressFile + "`"}
		}
		first = false
		end := have
		if !eof {
			end = bytes.LastIndexByte(buf[:have], '\n') + 1
		}
		if end == 0 && !eof { // one line fills the buffer
			if len(buf) >= MaxLineBytes {
				return nil, nil, &FileError{File: ProgressFile, Line: sc.line + 1, Msg: "has a line longer than " + humanBytes(MaxLineBytes), Hint: "break it into shorter lines"}
			}
			buf = append(buf, make([]byte, len(buf))...)
			held = have
			continue
		}
		sc.scanBlock(buf[:end], base, onEntry)
		if eof {
			break
		}
		held = copy(buf, buf[end:have])
		base += int64(end)
	}
	x.setScanner(sc)
	var out []entryStart
	for k := max(x.Entries-keep, 0); k < x.Entries; k++ {
		out = append(out, ring[k%keep])
	}
	x.Tail = out[max(len(out)-indexTail, 0):]
	return x, out, nil
}

// entryTimeLayouts are the heading times ralph reads. It writes the first.
var entryTimeLayouts = []string{time.RFC3339, "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02"}

// parseEntry parses one entry's bytes, starting at its heading.
func parseEntry(b []byte, line int) (Entry, []Warning) {
	e := Entry{Line: line}
	var warns []Warning
	if !utf8.Valid(b) {
		warns = append(warns, Warning{File: ProgressFile, Line: line, Message: "entry is not valid UTF-8; save the file as UTF-8"})
		b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	}
	head, rest, _ := cutLine(b)
	h := strings.TrimSpace(strings.TrimPrefix(strings.TrimRight(string(head), "\r\n"), "##"))
	e.Title = h
	for _, layout := range entryTimeLayouts {
		// The time is the first word (or the first two, for "date time").
		for _, words := range []int{1, 2} {
			f := strings.SplitN(h, " ", words+1)
			if len(f) < words {
				continue
			}
			ts := strings.Join(f[:words], " ")
			// A time written without a zone is the writer's local time.
			if t, err := time.ParseInLocation(layout, ts, time.Local); err == nil {
				e.Time = t
				e.Title = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(strings.TrimPrefix(h, ts)), "—–-·:|"))
				goto parsed
			}
		}
	}
parsed:
	if len(bytes.TrimSpace(rest)) == 0 {
		return e, warns
	}
	s := &source{name: ProgressFile, src: rest, eol: "\n", lineStarts: lineStarts(rest)}
	md := parseMarkdown(s)
	var body strings.Builder
	for n := md.doc.FirstChild(); n != nil; n = n.NextSibling() {
		l, ok := n.(*ast.List)
		if !ok {
			writeBlock(&body, md, n)
			continue
		}
		for li := l.FirstChild(); li != nil; li = li.NextSibling() {
			f, ok := entryField(md, li.(*ast.ListItem))
			if ok {
				e.Fields = append(e.Fields, f)
			} else {
				writeBlock(&body, md, li)
			}
		}
	}
	e.Body = strings.TrimSpace(body.String())
	return e, warns
}

func writeBlock(b *strings.Builder, md *parsed, n ast.Node) {
	start, end := md.pos(n), md.end(n)
	if start < 0 || end < 0 {
		return
	}
	start = md.s.lineStart(start)
	// Text read from a CRLF log reads as from an LF one.
	b.WriteString(strings.ReplaceAll(string(md.s.src[start:end]), "\r\n", "\n"))
}

func lineStarts(b []byte) []int {
	starts := []int{0}
	for i, c := range b {
		if c == '\n' && i+1 < len(b) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// entryField reads "- key: value" with optional nested bullets.
func entryField(md *parsed, li *ast.ListItem) (Field, bool) {
	fc := li.FirstChild()
	if fc == nil || fc.Lines().Len() == 0 {
		return Field{}, false
	}
	start := md.base + fc.Lines().At(0).Start
	line := md.s.src[start:md.s.contentEnd(start)]
	ke, vs, ve, ok := splitKeyValue(line)
	if !ok {
		return Field{}, false
	}
	f := Field{Key: strings.ToLower(string(line[:ke])), Value: string(line[vs:ve])}
	// Continuation lines of a multi-line value.
	for i := 1; i < fc.Lines().Len(); i++ {
		seg := fc.Lines().At(i)
		f.Value += "\n" + strings.TrimRight(string(md.s.src[md.base+seg.Start:md.base+seg.Stop]), "\r\n")
	}
	for ch := fc.NextSibling(); ch != nil; ch = ch.NextSibling() {
		if l, ok := ch.(*ast.List); ok {
			for sub := l.FirstChild(); sub != nil; sub = sub.NextSibling() {
				var b strings.Builder
				writeBlock(&b, md, sub)
				item := strings.TrimSpace(b.String())
				item = strings.TrimSpace(strings.TrimLeft(item, "-*+"))
				f.List = append(f.List, item)
			}
		}
	}
	return f, true
}

// Render returns the entry as ralph writes it: the heading, then one
// "- key: value" line per field and one nested bullet per list item. Every
// value is folded onto one line (an agent's full transcript goes to
// .ralph/logs/, not here), so nothing ralph writes can open a fence, a
// comment or a heading and change how the rest of the log reads. A Body is
// parsed from a person's entries, never written.
func (e *Entry) Render(eol string) []byte {
	var b bytes.Buffer
	b.WriteString("## ")
	if !e.Time.IsZero() {
		b.WriteString(e.Time.UTC().Format(time.RFC3339))
		b.WriteString(" — ")
	}
	b.WriteString(cleanLine(e.Title))
	b.WriteString(eol)
	for _, f := range e.Fields {
		b.WriteString(strings.TrimRight("- "+f.Key+": "+cleanLine(f.Value), " ") + eol)
		for _, item := range f.List {
			b.WriteString("  - " + cleanLine(item) + eol)
		}
	}
	return b.Bytes()
}

// Appended returns the log as ReadProgress(n) will read it once e is
// appended to it (AppendProgress): one entry more, and the recent ones
// ending with e as parsed back from what the append writes. lg is left as
// it is. The new entry's Line and Offset, and Size, are what they become
// only once the bytes are written: they are left as they were (zero for
// the entry).
func (lg *Log) Appended(e Entry, n int) *Log {
	out := *lg
	out.Entries++
	if n <= 0 {
		return &out
	}
	back, _ := parseEntry(e.Render("\n"), 0)
	keep := lg.Recent[max(len(lg.Recent)-(n-1), 0):]
	out.Recent = append(slices.Clone(keep), back)
	return &out
}

// journal is the write-ahead record of the progress entry being appended:
// the offset the file had and the bytes going there. After a crash mid-
// append, the next writer finishes the append from it (roll forward).
func (p *Project) journalPath() string {
	return filepath.Join(p.Root, RuntimeDir, "progress.journal")
}

// AppendProgress appends an entry to the progress log. The cost does not
// depend on the log's size: the file is opened for appending and only its
// last two bytes are read. A crash at any instant leaves the log with the
// whole entry or, after the next write finishes it from the journal,
// with the whole entry; never with half of one.
func (p *Project) AppendProgress(e Entry) error {
	return p.appendProgress(e, false)
}

// ErrChangedSinceOwnWrite is AppendProgressOnOwn's answer when someone
// else changed the log since this Project last wrote it.
var ErrChangedSinceOwnWrite = errors.New(ProgressFile + " changed since ralph's last write")

// AppendProgressOnOwn is AppendProgress onto the log only as this
// Project's last write left it: when someone else changed it since (an
// older copy put back, a person's edit), it appends nothing and returns
// ErrChangedSinceOwnWrite, so that the caller can first look at what the
// change took away; an entry added to an older copy would hide what the
// copy lost. A log it cannot look at counts as changed (the error joined
// to it says why). The look and the append are one hold of the state
// lock.
func (p *Project) AppendProgressOnOwn(e Entry) error {
	return p.appendProgress(e, true)
}

func (p *Project) appendProgress(e Entry, onOwn bool) error {
	unlock, err := p.lockForWrite()
	if err != nil {
		return err
	}
	defer unlock()
	if onOwn {
		if changed, _, err := p.changedSinceOwnWrite(ProgressFile); err != nil || changed {
			return errors.Join(ErrChangedSinceOwnWrite, err)
		}
	}
	if p.flushPending() {
		// The last append's record is retired before this one's is
		// written over it (recoverLocked left the journal to it).
		if err := p.settleFlush(); err != nil {
			return err
		}
		if err := p.recoverJournal(); err != nil {
			return err
		}
	}
	if err := CheckInside(p.Root, ProgressFile); err != nil {
		return err
	}
	f, err := p.openLogForAppend()
	if err != nil {
		return err
	}
	handedOff := false
	defer func() {
		if !handedOff {
			f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	eol := "\n"
	var last [2]byte
	lastN := 0
	if size > 0 {
		k := min(size, 2)
		lastN, _ = f.ReadAt(last[2-k:], size-k)
		if last[0] == '\r' && last[1] == '\n' {
			eol = "\r\n"
		}
	}
	var text []byte
	if lastN > 0 && last[1] != '\n' {
		text = append(text, eol...)
	}
	if size > 0 {
		text = append(text, eol...) // a blank line between entries
	}
	text = append(text, e.Render(eol)...)
	if err := p.writeJournal(size, text); err != nil {
		return writeFailure(ProgressFile, "cannot append", err)
	}
	// One write call: a kill mid-write is finished from the journal.
	if _, err := f.Write(text); err != nil {
		return writeFailure(ProgressFile, "cannot append", err)
	}
	p.noteAppend(f, size+int64(len(text)))
	p.saw(ProgressFile, size+int64(len(text)), nil)
	probeAt(probeAppended)
	if err := p.appendLanded(f); err != nil {
		return err
	}
	p.extendIndex(f, fi, text, lastN > 0 && last[1] != '\n')
	p.wrote(ProgressFile, nil, nil)
	if p.FlushLater {
		handedOff = true
		p.flushLater(f, []byte(journalHeader(size, text)))
		return nil
	}
	if err := f.Sync(); err != nil {
		return writeFailure(ProgressFile, "cannot append", err)
	}
	p.retireJournal()
	return nil
}

// openLogForAppend opens the progress log to append to, creating it from
// its template when it is missing. A log removed between the look and the
// open (an agent or a person putting back an older copy that had none) is
// missing, not an error: it is looked at again, a few times at most.
func (p *Project) openLogForAppend() (*os.File, error) {
	const tries = 3
	for try := 1; ; try++ {
		fi, err := p.statState(ProgressFile)
		if err == nil {
			if fi.IsDir() {
				return nil, &FileError{File: ProgressFile, Msg: "is a directory, not a file", Hint: "move it out of the way, then run `ralph init` to create the file"}
			}
			if err := checkWritable(ProgressFile, fi); err != nil {
				return nil, err
			}
		} else if errors.Is(err, fs.ErrNotExist) {
			if _, err := p.createLocked(ProgressFile, []byte(Templates[ProgressFile])); err != nil {
				return nil, err
			}
		}
		probeAt(probeLogLooked)
		if err != nil || !p.leftAsOwn(ProgressFile, fi) {
			awaitWriterDone(p.Path(ProgressFile), p.saveGrace())
		}
		f, err := openFile(p.Path(ProgressFile), os.O_RDWR|os.O_APPEND, 0)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) || try == tries {
			return nil, &FileError{File: ProgressFile, Msg: "cannot open: " + unwrapPathErr(err), Hint: "check the file's permissions"}
		}
	}
}

// appendLanded checks that the file ralph appended to (f) is still the
// log: an editor that saved the log by replacing it at that instant (vim
// renames it to a backup first) would leave ralph's entry in the old file,
// which it then deletes. If the log is another file now, the entry is
// added to it unless it is there already (from the journal, as after a
// crash).
func (p *Project) appendLanded(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	now, err := p.statState(ProgressFile)
	if err == nil && os.SameFile(fi, now) {
		return nil
	}
	return p.recoverJournal()
}

// extendIndex brings the progress index up to date after an append of
// text to a file that had info before, by scanning only text. An index
// that did not match the file before stays stale; the next read rescans.
func (p *Project) extendIndex(f *os.File, before fs.FileInfo, text []byte, unterminated bool) {
	x := p.index.load(p.Root, before)
	if x == nil || !x.matches(before) {
		return
	}
	sc := x.scanner()
	if unterminated {
		sc.line-- // the file's last line is counted; text's first newline ends it
	}
	sc.scanBlock(text, before.Size(), func(off int64, line int) { x.add(entryStart{off, line}) })
	x.setScanner(sc)
	after, err := f.Stat()
	if err != nil || !x.stamp(after) {
		return
	}
	p.index.save(p.Root, x)
}

// writeJournal records, durably, that text is about to be appended to the
// log at offset off. The record is written in place, over the last one,
// not through a temporary file and a rename: its header carries the
// text's length and checksum, so a record that a crash cut short reads as
// none (the append had not started: it starts once the record is
// durable). The file is kept from one append to the next (retireJournal),
// so a record is a rewrite of blocks it already has and a data flush;
// only the first, which creates the file, flushes its folder too (at the
// same time).
func (p *Project) writeJournal(off int64, text []byte) error {
	dir := filepath.Join(p.Root, RuntimeDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", RuntimeDir, err)
	}
	created := false
	f, err := openFile(p.journalPath(), os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = openFile(p.journalPath(), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		created = true
	}
	if err != nil {
		return err
	}
	rec := append([]byte(journalHeader(off, text)), text...)
	if _, err := f.WriteAt(rec, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Truncate(int64(len(rec))); err != nil {
		f.Close()
		return err
	}
	if !created {
		return errors.Join(syncData(f), f.Close())
	}
	var wg sync.WaitGroup
	var derr error
	wg.Go(func() { derr = syncDir(dir) })
	err = f.Sync()
	wg.Wait()
	return errors.Join(err, derr, f.Close())
}

// retireJournal marks the journal's record as done once its append has
// landed: its first byte is overwritten (journalRetired), so that it
// reads as no record, and the file stays for the next. Not flushed: a
// record a crash brings back is one whose append is in the log, which
// recovery finds there.
func (p *Project) retireJournal() {
	f, err := openFile(p.journalPath(), os.O_WRONLY, 0)
	if err != nil {
		return
	}
	_, _ = f.WriteAt([]byte{journalRetired}, 0)
	_ = f.Close()
}

// retireJournalIf retires the journal's record if it starts with head:
// it is the record head was made from.
func (p *Project) retireJournalIf(head []byte) {
	f, err := openFile(p.journalPath(), os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer f.Close()
	got := make([]byte, len(head))
	if n, _ := f.ReadAt(got, 0); n == len(head) && bytes.Equal(got, head) {
		_, _ = f.WriteAt([]byte{journalRetired}, 0)
	}
}

// journalRetired is the first byte of a record whose append is done: no
// record starts with it (journalV2, or an older ralph's offset).
const journalRetired = '-'

// journalV2 starts a journal record with its text's length and checksum.
// A record without it, "OFFSET\n" and the text, was written by an older
// ralph through a rename, and is whole.
const journalV2 = "v2 "

// journalHeader is the first line of a journal record.
func journalHeader(off int64, text []byte) string {
	return fmt.Sprintf("%s%d %d %08x\n", journalV2, off, len(text), crc32.ChecksumIEEE(text))
}

// readJournal reads a journal record: the offset and text, or ok=false
// for a record a crash cut short (or garbage).
func readJournal(j []byte) (off int64, text []byte, ok bool) {
	head, text, found := bytes.Cut(j, []byte("\n"))
	if !found {
		return 0, nil, false
	}
	if rest, v2 := bytes.CutPrefix(head, []byte(journalV2)); v2 {
		var n int
		var sum uint32
		if k, err := fmt.Sscanf(string(rest), "%d %d %x", &off, &n, &sum); err != nil || k != 3 {
			return 0, nil, false
		}
		return off, text, off >= 0 && n == len(text) && crc32.ChecksumIEEE(text) == sum
	}
	off, err := strconv.ParseInt(string(head), 10, 64)
	return off, text, err == nil && off >= 0 // "-…": retired (journalRetired)
}

// recoverJournal finishes an append that a crash interrupted.
func (p *Project) recoverJournal() error {
	j, err := readWhole(p.journalPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	off, text, ok := readJournal(j)
	if !ok {
		return nil // retired, or torn: the append never started
	}
	path := p.Path(ProgressFile)
	f, err := openFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		// The log was deleted since: nothing to finish.
		p.retireJournal()
		return nil
	}
	if err != nil {
		return &FileError{File: ProgressFile, Msg: "cannot open to finish an interrupted append: " + unwrapPathErr(err), Hint: "check the file's permissions"}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	have := make([]byte, max(0, min(size-off, int64(len(text)))))
	if off <= size {
		if _, err := f.ReadAt(have, off); err != nil && err != io.EOF {
			return err
		}
	}
	switch {
	case off <= size && bytes.Equal(have, text):
		// The append landed whole. Its writer may not have flushed it
		// yet (Project.FlushLater), and the record is retired below.
		if err := f.Sync(); err != nil {
			return err
		}
	case off <= size && size == off+int64(len(have)) && bytes.HasPrefix(text, have):
		// Torn: write the rest where it belongs.
		if _, err := f.WriteAt(text[len(have):], size); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		p.noteAppend(f, off+int64(len(text)))
		p.wrote(ProgressFile, nil, nil)
	default:
		// The file changed since (a person edited it). Unless the entry
		// is there, add it at the end.
		tailFrom := max(0, size-int64(len(text))-(64<<10))
		tail := make([]byte, size-tailFrom)
		if _, err := f.ReadAt(tail, tailFrom); err != nil && err != io.EOF {
			return err
		}
		if !bytes.Contains(tail, bytes.TrimLeft(text, "\r\n")) {
			if _, err := f.WriteAt(text, size); err != nil {
				return err
			}
			if err := f.Sync(); err != nil {
				return err
			}
			p.noteAppend(f, size+int64(len(text)))
			p.wrote(ProgressFile, nil, nil)
		}
	}
	p.retireJournal()
	return nil
}

// CountEntries counts the entries in a progress log's bytes, by the same
// rules as ReadProgress.
func CountEntries(data []byte) int {
	n := 0
	var sc entryScanner
	sc.scanBlock(data, 0, func(int64, int) { n++ })
	return n
}

// unclosedBlock reports a fenced code block or HTML comment that is still
// open at the end of data, and the line it opened on.
func unclosedBlock(data []byte) (what string, line int) {
	var sc entryScanner
	for len(data) > 0 {
		l, rest, _ := cutLine(data)
		sc.feedLine(bytes.TrimRight(l, "\r\n"))
		data = rest
	}
	switch {
	case sc.fence != 0:
		return "a code block (" + strings.Repeat(string(sc.fence), 3) + ")", sc.openLine
	case sc.inComment:
		return "an HTML comment (<!--)", sc.openLine
	}
	return "", 0
}
