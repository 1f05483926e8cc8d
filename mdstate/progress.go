package mdstate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
				sc.fence, sc.fenceLen = t[0], n
			}
		}
	case '<':
		if bytes.HasPrefix(b, []byte("<!--")) && !bytes.Contains(b[4:], []byte("-->")) {
			sc.inComment = true
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
// fixed-size chunks, so memory does not grow with the log. A missing file
// is an empty log.
func (p *Project) ReadProgress(n int) (*Log, error) {
	return readProgress(p.Path(ProgressFile), n)
}

func readProgress(path string, n int) (*Log, error) {
	f, err := os.Open(path)
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
	type start struct {
		off  int64
		line int
	}
	// A ring of the last n entry starts.
	ring := make([]start, max(n, 1))
	var sc entryScanner
	buf := make([]byte, scanChunk)
	var carry []byte // a line split across chunks
	var off int64    // offset of buf[0] in the file
	for {
		k, rerr := io.ReadFull(f, buf)
		chunk := buf[:k]
		if bytes.IndexByte(chunk, 0) >= 0 {
			return nil, &FileError{File: ProgressFile, Line: sc.line + 1, Msg: "looks binary (it holds a NUL byte)", Hint: "restore it with `ralph restore " + ProgressFile + "` or `git checkout -- " + ProgressFile + "`"}
		}
		i := 0
		if len(carry) > 0 {
			j := bytes.IndexByte(chunk, '\n')
			if j < 0 && rerr == nil {
				if len(carry)+len(chunk) > MaxLineBytes {
					return nil, &FileError{File: ProgressFile, Line: sc.line + 1, Msg: "has a line longer than " + humanBytes(MaxLineBytes), Hint: "break it into shorter lines"}
				}
				carry = append(carry, chunk...)
				off += int64(k)
				continue
			}
			if j < 0 {
				j = len(chunk)
			}
			lineOff := off - int64(len(carry))
			carry = append(carry, chunk[:j]...)
			if sc.feedLine(carry) {
				ring[lg.Entries%len(ring)] = start{lineOff, sc.line}
				lg.Entries++
			}
			carry = carry[:0]
			i = j + 1
		}
		for i < len(chunk) {
			j := bytes.IndexByte(chunk[i:], '\n')
			if j < 0 {
				if rerr != nil { // last line, unterminated
					if sc.feedLine(chunk[i:]) {
						ring[lg.Entries%len(ring)] = start{off + int64(i), sc.line}
						lg.Entries++
					}
				} else {
					carry = append(carry, chunk[i:]...)
				}
				break
			}
			if sc.feedLine(chunk[i : i+j]) {
				ring[lg.Entries%len(ring)] = start{off + int64(i), sc.line}
				lg.Entries++
			}
			i += j + 1
		}
		off += int64(k)
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return nil, &FileError{File: ProgressFile, Msg: "cannot read: " + rerr.Error()}
		}
	}
	if n <= 0 || lg.Entries == 0 {
		return lg, nil
	}
	// Parse the last n entries: from the oldest of them to the end.
	first := max(lg.Entries-n, 0)
	var starts []start
	for k := first; k < lg.Entries; k++ {
		starts = append(starts, ring[k%len(ring)])
	}
	tail := make([]byte, lg.Size-starts[0].off)
	if _, err := f.ReadAt(tail, starts[0].off); err != nil && err != io.EOF {
		return nil, &FileError{File: ProgressFile, Msg: "cannot read: " + err.Error()}
	}
	for k, st := range starts {
		end := int64(len(tail))
		if k+1 < len(starts) {
			end = starts[k+1].off - starts[0].off
		}
		b := tail[st.off-starts[0].off : end]
		e, warns := parseEntry(b, st.line)
		e.Offset = st.off
		lg.Recent = append(lg.Recent, e)
		lg.Warnings = append(lg.Warnings, warns...)
	}
	return lg, nil
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
			if t, err := time.Parse(layout, ts); err == nil {
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
	b.Write(md.s.src[start:end])
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
	m := metaLineRe.FindSubmatch(line)
	if m == nil {
		return Field{}, false
	}
	f := Field{Key: strings.ToLower(string(m[1])), Value: string(m[2])}
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

// Render returns the entry as ralph writes it. Every value is indented
// under its bullet, so no text an agent reports can start a heading or a
// fence at column 0 and break the log's structure.
func (e *Entry) Render(eol string) []byte {
	var b bytes.Buffer
	b.WriteString("## ")
	if !e.Time.IsZero() {
		b.WriteString(e.Time.UTC().Format(time.RFC3339))
		b.WriteString(" — ")
	}
	b.WriteString(oneLine(e.Title))
	b.WriteString(eol)
	for _, f := range e.Fields {
		lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(f.Value, "\r\n", "\n")), "\n")
		b.WriteString("- " + f.Key + ": " + strings.TrimSpace(lines[0]) + eol)
		for _, l := range lines[1:] {
			if strings.TrimSpace(l) == "" {
				continue // a blank line would end the bullet
			}
			b.WriteString("  " + strings.TrimRight(l, " \t") + eol)
		}
		for _, item := range f.List {
			b.WriteString("  - " + oneLine(item) + eol)
		}
	}
	if body := strings.TrimSpace(e.Body); body != "" {
		b.WriteString(eol)
		for _, l := range strings.Split(body, "\n") {
			b.WriteString(strings.TrimRight(l, "\r") + eol)
		}
	}
	return b.Bytes()
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
	unlock, err := p.lockState()
	if err != nil {
		return err
	}
	defer unlock()
	if err := p.recoverJournal(); err != nil {
		return err
	}
	path := p.Path(ProgressFile)
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return &FileError{File: ProgressFile, Msg: "is a directory, not a file", Hint: "move it out of the way, then run `ralph init` to create the file"}
		}
		if err := checkWritable(ProgressFile, fi); err != nil {
			return err
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		if err := WriteFileAtomic(path, []byte(Templates[ProgressFile]), 0o644); err != nil {
			return fmt.Errorf("create %s: %w", ProgressFile, err)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return &FileError{File: ProgressFile, Msg: "cannot open: " + unwrapPathErr(err), Hint: "check the file's permissions"}
	}
	defer f.Close()
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
		return err
	}
	// One write call: a kill mid-write is finished from the journal.
	if _, err := f.Write(text); err != nil {
		return &FileError{File: ProgressFile, Msg: "cannot append: " + unwrapPathErr(err)}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	_ = os.Remove(p.journalPath())
	return nil
}

func (p *Project) writeJournal(off int64, text []byte) error {
	if err := os.MkdirAll(filepath.Join(p.Root, RuntimeDir), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", RuntimeDir, err)
	}
	var b bytes.Buffer
	b.WriteString(strconv.FormatInt(off, 10) + "\n")
	b.Write(text)
	return WriteFileAtomic(p.journalPath(), b.Bytes(), 0o644)
}

// recoverJournal finishes an append that a crash interrupted.
func (p *Project) recoverJournal() error {
	j, err := os.ReadFile(p.journalPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	head, text, ok := bytes.Cut(j, []byte("\n"))
	off, perr := strconv.ParseInt(string(head), 10, 64)
	if !ok || perr != nil {
		return os.Remove(p.journalPath()) // torn journal: the append never started
	}
	path := p.Path(ProgressFile)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return &FileError{File: ProgressFile, Msg: "cannot open to finish an interrupted append: " + unwrapPathErr(err)}
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
		// The append landed whole.
	case off <= size && size == off+int64(len(have)) && bytes.HasPrefix(text, have):
		// Torn: write the rest where it belongs.
		if _, err := f.WriteAt(text[len(have):], size); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
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
		}
	}
	return os.Remove(p.journalPath())
}
