package mdstate

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"
)

// Limits on what ralph will parse. A state file is written for people, so
// anything past these is almost certainly not one (a pasted log, a binary).
const (
	// MaxLineBytes is the longest line ralph parses in a state file.
	MaxLineBytes = 1 << 20
	// MaxFileBytes is the largest state file ralph parses whole. The
	// progress log is exempt: it is scanned, never parsed whole.
	MaxFileBytes = 64 << 20
)

// FileError is a problem with one state file that stops ralph from using it.
// Its message names the file (and line) and says what to do.
type FileError struct {
	File string // base name, e.g. RALPH_TASKS.md
	Line int    // 1-based; 0 when not about one line
	Msg  string // what is wrong
	Hint string // what to do
	Err  error  // the condition, for errors.Is; may be nil
}

func (e *FileError) Unwrap() error { return e.Err }

func (e *FileError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Hint == "" {
		return loc + ": " + e.Msg
	}
	return loc + ": " + e.Msg + "; " + e.Hint
}

// Warning is a problem ralph works around: a malformed entry, an unknown
// dependency. The text it concerns is kept as it is.
type Warning struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

func (w Warning) String() string {
	if w.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", w.File, w.Line, w.Message)
	}
	return w.File + ": " + w.Message
}

// source is the raw bytes of one file plus what splicing needs to know
// about their shape.
type source struct {
	name string // base name for messages
	src  []byte
	bom  int    // 3 when the file starts with a UTF-8 BOM
	eol  string // "\n" or "\r\n": the file's dominant line ending
	// lineStarts[i] is the offset where line i+1 starts.
	lineStarts []int
	// crlf and lf count the lines that end so (spliced keeps them).
	crlf, lf int
}

var bomBytes = []byte{0xEF, 0xBB, 0xBF}

// readSource reads a state file and checks that it is text ralph can edit.
// A missing file yields fs.ErrNotExist wrapped with the name.
func readSource(path, name string) (*source, fs.FileInfo, error) {
	data, fi, err := readChecked(path, name)
	if err != nil {
		return nil, nil, err
	}
	s, err := newSource(name, data)
	if err != nil {
		return nil, nil, err
	}
	return s, fi, nil
}

// readChecked reads a state file after checking that it is a regular file
// of a size ralph reads, in the project (checkInside).
func readChecked(path, name string) ([]byte, fs.FileInfo, error) {
	return readCheckedLike(path, name, nil, DefaultSaveGrace)
}

// readCheckedLike is readChecked of a file ralph expects to hold like:
// then like itself is returned (readFileLike). It waits up to wait for a
// process writing the file to be done (awaitWritten).
func readCheckedLike(path, name string, like []byte, wait time.Duration) ([]byte, fs.FileInfo, error) {
	if err := checkInside(path, name); err != nil {
		return nil, nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
		}
		return nil, nil, &FileError{File: name, Msg: "cannot read: " + unwrapPathErr(err), Hint: "check the file's permissions"}
	}
	if fi.IsDir() {
		return nil, nil, &FileError{File: name, Msg: "is a directory, not a file", Hint: "move it out of the way, then run `ralph init` to create the file"}
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, &FileError{File: name, Msg: "is not a regular file", Hint: "replace it with a markdown file"}
	}
	if fi.Size() > MaxFileBytes {
		return nil, nil, &FileError{File: name, Msg: fmt.Sprintf("is %s, larger than the %s ralph reads", humanBytes(fi.Size()), humanBytes(MaxFileBytes)), Hint: "move old content elsewhere"}
	}
	data, err := readFileLike(path, like, wait)
	if errors.Is(err, fs.ErrNotExist) { // gone since the stat: an editor's save
		return nil, nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	if err != nil {
		return nil, nil, &FileError{File: name, Msg: "cannot read: " + unwrapPathErr(err), Hint: "check the file's permissions"}
	}
	return data, fi, nil
}

// ErrOutsideProject is the condition of a FileError for a state file that
// is a symlink to a file outside the project.
var ErrOutsideProject = errors.New("state file outside the project")

// CheckInside checks that the state file name in the project root root
// stays in the project: nil for a missing file, a regular file, or a
// symlink whose target (through every link, and for a dangling link where
// a write would create the file) is inside root as its real path reads; a
// FileError wrapping ErrOutsideProject for a link that leads out. A
// cloned repository could otherwise aim RALPH_PROGRESS.md at any file of
// the user's, and ralph would append to it. Every read of a state file
// checks it; a write that does not read first (an append, a new file)
// calls it.
func CheckInside(root, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	return checkInside(filepath.Join(root, name), name)
}

// checkInside is CheckInside for the file at path, whose folder is the
// project root.
func checkInside(path, name string) error {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return nil // missing, or not a link: the read or write says more
	}
	path, err = filepath.Abs(path)
	if err != nil {
		return &FileError{File: name, Msg: "cannot be located: " + err.Error(), Hint: "run ralph from the project's folder"}
	}
	target, err := resolveLink(path)
	if err != nil {
		return &FileError{File: name, Msg: "is a symlink ralph cannot follow: " + unwrapPathErr(err), Hint: "replace the link with the file it should be"}
	}
	root := realPath(filepath.Dir(path))
	if rel, err := filepath.Rel(root, target); err != nil || !filepath.IsLocal(rel) {
		return &FileError{File: name, Msg: "is a symlink to " + target + ", outside the project",
			Hint: "ralph only follows links that stay inside the project; replace the link with a copy of the file if ralph should use it",
			Err:  ErrOutsideProject}
	}
	return nil
}

// maxLinks is how many links resolveLink follows before it calls a chain
// a loop, as the kernel does (Linux allows 40).
const maxLinks = 40

// resolveLink returns the real path a symlink leads to, through every
// link. A dangling link leads where a write through it would create the
// file: its last target, in its folder's real path.
func resolveLink(path string) (string, error) {
	target, err := filepath.EvalSymlinks(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return target, err
	}
	for range maxLinks {
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.Mode()&fs.ModeSymlink == 0) {
			return realPath(path), nil
		}
		if err != nil {
			return "", err
		}
		dest, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = dest
	}
	return "", errors.New("too many levels of symbolic links")
}

// realPath returns the absolute path p with every link in it resolved, as
// far as it exists: the missing rest is joined as written.
func realPath(p string) string {
	var rest []string
	for q := filepath.Clean(p); ; q = filepath.Dir(q) {
		if r, err := filepath.EvalSymlinks(q); err == nil {
			for i := len(rest) - 1; i >= 0; i-- {
				r = filepath.Join(r, rest[i])
			}
			return r
		}
		if filepath.Dir(q) == q {
			return filepath.Clean(p)
		}
		rest = append(rest, filepath.Base(q))
	}
}

// newSource checks data and indexes its lines.
func newSource(name string, data []byte) (*source, error) {
	s := &source{name: name, src: data, eol: "\n"}
	if bytes.HasPrefix(data, bomBytes) {
		s.bom = len(bomBytes)
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return nil, &FileError{File: name, Line: lineAt(data, i), Msg: "looks binary (it holds a NUL byte)", Hint: "restore it with `ralph restore " + name + "` or `git checkout -- " + name + "`"}
	}
	s.lineStarts = append(s.lineStarts, 0)
	crlf, lf := 0, 0
	for i := 0; i < len(data); {
		j := bytes.IndexByte(data[i:], '\n')
		end := len(data)
		if j >= 0 {
			end = i + j
		}
		if end-i > MaxLineBytes {
			return nil, &FileError{File: name, Line: len(s.lineStarts), Msg: fmt.Sprintf("line is %s long, over ralph's limit of %s", humanBytes(int64(end-i)), humanBytes(MaxLineBytes)), Hint: "break it into shorter lines or move it to another file"}
		}
		if j < 0 {
			break
		}
		if end > i && data[end-1] == '\r' {
			crlf++
		} else {
			lf++
		}
		i = end + 1
		if i < len(data) {
			s.lineStarts = append(s.lineStarts, i)
		}
	}
	s.crlf, s.lf = crlf, lf
	if crlf > lf {
		s.eol = "\r\n"
	}
	if !utf8.Valid(data) {
		off := firstInvalidUTF8(data)
		return nil, &FileError{File: name, Line: lineAt(data, off), Msg: fmt.Sprintf("is not valid UTF-8 (byte 0x%02x)", data[off]), Hint: "save it as UTF-8 and run again"}
	}
	return s, nil
}

// line returns the 1-based line number holding offset off.
func (s *source) line(off int) int {
	lo, hi := 0, len(s.lineStarts)
	for lo < hi {
		m := (lo + hi) / 2
		if s.lineStarts[m] <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// lineStart returns the offset of the start of the line holding off.
// Lines are short, so a byte scan beats a search of the line index.
func (s *source) lineStart(off int) int {
	off = min(off, len(s.src)) // goldmark may place an empty block at EOF+1
	return bytes.LastIndexByte(s.src[:off], '\n') + 1
}

// lineEnd returns the offset just past the line ending of the line holding
// off (or len(src) for an unterminated last line).
func (s *source) lineEnd(off int) int {
	off = min(off, len(s.src)) // as in lineStart
	if i := bytes.IndexByte(s.src[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(s.src)
}

// contentEnd returns the offset of the line ending (\n or \r\n) of the line
// holding off, or len(src).
func (s *source) contentEnd(off int) int {
	e := s.lineEnd(off)
	if e > 0 && e <= len(s.src) && e > s.lineStart(off) && s.src[e-1] == '\n' {
		e--
		if e > s.lineStart(off) && s.src[e-1] == '\r' {
			e--
		}
	}
	return e
}

func lineAt(data []byte, off int) int {
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

func firstInvalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return 0
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

func unwrapPathErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
