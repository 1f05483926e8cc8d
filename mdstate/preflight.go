package mdstate

import (
	"errors"
	"io/fs"
	"os"
)

// CheckWritable checks that each named state file will take a write: it
// is missing (ralph creates it), or a regular file ralph may change (not
// read-only, "hands off") and, except for the progress log, can read and
// parse. It reports every problem, each a FileError naming the file and
// what to do, joined.
//
// ralph calls it before it starts work whose results it will write (an
// agent's run): a RALPH_TODO.md that is a folder, or a read-only AGENT.md,
// found only afterwards loses that work's report.
func (p *Project) CheckWritable(names ...string) error {
	var errs []error
	for _, name := range names {
		if err := p.checkWritable(name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (p *Project) checkWritable(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	path := p.Path(name)
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return &FileError{File: name, Msg: "cannot read: " + unwrapPathErr(err), Hint: "check the permissions of the file and its folder", Err: err}
	case fi.IsDir():
		return &FileError{File: name, Msg: "is a directory, not a file", Hint: "ralph writes to it: move the folder out of the way, then `ralph init` creates the file"}
	case !fi.Mode().IsRegular():
		return &FileError{File: name, Msg: "is not a regular file", Hint: "ralph writes to it: replace it with a markdown file, or remove it and run `ralph init`"}
	}
	if err := checkWritable(name, fi); err != nil {
		return err
	}
	if name == ProgressFile {
		return nil // appended to, never parsed whole
	}
	return p.readsAsSource(path, name)
}
