package mdstate

import (
	"errors"
	"io/fs"
)

// FileInfo says whether a state file exists and how large it is.
type FileInfo struct {
	Exists bool  `json:"exists"`
	Bytes  int64 `json:"bytes"`
}

// State is everything the five files say, read in one go. A missing file
// leaves its field nil; a file ralph cannot read is an error.
type State struct {
	Root     string
	Files    map[string]FileInfo
	Goals    *Checklist
	Tasks    *Checklist
	Todos    *Checklist
	Agent    *Agent
	Progress *Log
	Warnings []Warning
}

// Load reads all five files, parsing the last `recent` progress entries.
func (p *Project) Load(recent int) (*State, error) {
	st := &State{Root: p.Root, Files: map[string]FileInfo{}}
	for _, name := range Files {
		fi, err := p.statState(name) // an editor's save is not a missing file
		switch {
		case err == nil:
			st.Files[name] = FileInfo{Exists: true, Bytes: fi.Size()}
		case errors.Is(err, fs.ErrNotExist):
			st.Files[name] = FileInfo{}
		default:
			return nil, &FileError{File: name, Msg: "cannot read: " + unwrapPathErr(err), Hint: "check the permissions of the file and its folder"}
		}
	}
	for _, k := range []struct {
		kind Kind
		dst  **Checklist
	}{{GoalsKind, &st.Goals}, {TasksKind, &st.Tasks}, {TodoKind, &st.Todos}} {
		c, err := p.LoadChecklist(k.kind)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		*k.dst = c
		st.Warnings = append(st.Warnings, c.Warnings...)
	}
	a, err := p.LoadAgent()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	st.Agent = a
	lg, err := p.ReadProgress(recent)
	if err != nil {
		return nil, err
	}
	st.Progress = lg
	st.Warnings = append(st.Warnings, lg.Warnings...)
	return st, nil
}
