package mdstate

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// GitignoreFile is the file in the project root where Init ignores
// RuntimeDir.
const GitignoreFile = ".gitignore"

// gitignoreComment and gitignoreLine are what Init appends to .gitignore.
const (
	gitignoreComment = "# ralph's runtime folder: locks, logs, backups (not state)"
	gitignoreLine    = RuntimeDir + "/"
)

// InitFile is what Init did with one state file.
type InitFile struct {
	Name    string
	Created bool // false: it existed and was kept as it is
}

// InitResult is what Init did.
type InitResult struct {
	Files []InitFile // one per state file, in the order of Files
	// IgnoreAdded is true when Init added RuntimeDir to .gitignore; false
	// when a line there already ignored it.
	IgnoreAdded bool
}

// CreatedAny reports whether Init created at least one state file.
func (r InitResult) CreatedAny() bool {
	for _, f := range r.Files {
		if f.Created {
			return true
		}
	}
	return false
}

// Init sets the project up: it creates the state files that are missing
// from Templates (never touching one that exists, even one created a
// moment ago by someone else), creates RuntimeDir, and adds RuntimeDir to
// .gitignore unless a line there already ignores it. Running it again
// changes nothing.
func (p *Project) Init() (InitResult, error) {
	if fi, err := os.Stat(p.Root); err != nil || !fi.IsDir() {
		return InitResult{}, fmt.Errorf("%s is not a folder ralph can use", p.Root)
	}
	// A folder in a file's place stops init before it creates anything, so
	// that running it again after moving the folder gives the usual result.
	for _, name := range Files {
		if fi, err := os.Lstat(p.Path(name)); err == nil && fi.IsDir() {
			return InitResult{}, fmt.Errorf("create %s: it is a directory; move it out of the way and run `ralph init` again", name)
		}
	}
	var res InitResult
	for _, name := range Files {
		created, err := p.EnsureFile(name)
		if err != nil {
			return res, err
		}
		res.Files = append(res.Files, InitFile{Name: name, Created: created})
	}
	if err := os.MkdirAll(filepath.Join(p.Root, RuntimeDir), 0o755); err != nil {
		return res, fmt.Errorf("create %s: %w", RuntimeDir, err)
	}
	added, err := p.ignoreRuntimeDir()
	if err != nil {
		return res, err
	}
	res.IgnoreAdded = added
	return res, nil
}

// ignoreRuntimeDir adds RuntimeDir to the project's .gitignore unless a
// line already ignores it. The rest of the file is kept byte for byte, and
// so are its line endings and mode. .gitignore is not a state file, so it
// is not in the Project's write record, but it is saved as state files
// are: a person's save meanwhile is kept, with the line added to it.
func (p *Project) ignoreRuntimeDir() (bool, error) {
	unlock, err := p.lockState()
	if err != nil {
		return false, err
	}
	defer unlock()
	path := filepath.Join(p.Root, GitignoreFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		_, err = writeDurable(path, addIgnore(nil), 0o644, true)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, errExists) {
			return false, fmt.Errorf("write %s: %w", GitignoreFile, err)
		}
		// Created a moment ago by someone else: add the line to theirs.
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", GitignoreFile, err)
	}
	if ignoresRuntimeDir(data) {
		return false, nil
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode()
	}
	s := p.newSave(GitignoreFile, path, mode, func(cur []byte) ([]byte, error) { return addIgnore(cur), nil })
	if err := s.run(data, addIgnore(data)); err != nil {
		return false, fmt.Errorf("write %s: %w", GitignoreFile, err)
	}
	return true, nil
}

// addIgnore returns a .gitignore's bytes with RuntimeDir ignored, in its
// line endings; unchanged when a line already ignores it.
func addIgnore(data []byte) []byte {
	if ignoresRuntimeDir(data) {
		return data
	}
	eol := "\n"
	if bytes.Contains(data, []byte("\r\n")) {
		eol = "\r\n"
	}
	out := append([]byte(nil), data...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, eol...)
	}
	return append(out, gitignoreComment+eol+gitignoreLine+eol...)
}

// ignoresRuntimeDir reports whether a line of a .gitignore ignores
// RuntimeDir in the root, in one of the usual spellings: .ralph, .ralph/,
// .ralph/* with or without a leading slash.
func ignoresRuntimeDir(gitignore []byte) bool {
	for _, line := range strings.Split(string(gitignore), "\n") {
		rest := strings.TrimPrefix(strings.TrimSpace(line), "/")
		if rest, ok := strings.CutPrefix(rest, RuntimeDir); ok {
			switch rest {
			case "", "/", "/*":
				return true
			}
		}
	}
	return false
}
