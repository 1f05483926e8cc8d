package projectdetect

import (
	"os"
	"sort"
)

// project assembles the result once the walk is over. The work here is
// bounded by the number of marker directories, not by the tree's size.
func (w *walker) project() *Project {
	w.foldWorkspaces()
	w.foldCounts()
	w.resolve()

	p := &Project{
		Root:            w.root,
		Types:           []Type{},
		ConfigFiles:     []string{},
		Truncated:       w.truncated,
		TruncatedReason: w.reason,
	}
	configs := map[string]bool{}
	for _, f := range w.configs {
		configs[f] = true
	}
	for _, c := range w.cands {
		p.Types = append(p.Types, c.types...)
		if c.dir == "." || len(c.types) == 0 {
			continue
		}
		for _, f := range c.files {
			if isConfigFile(f) {
				configs[c.dir+"/"+f] = true
			}
		}
	}
	sortTypes(p.Types)
	if len(p.Types) > maxTypes {
		p.Types = p.Types[:maxTypes]
	}
	for f := range configs {
		p.ConfigFiles = append(p.ConfigFiles, f)
	}
	sort.Strings(p.ConfigFiles)
	p.Commands = gatherCommands(w.cands)
	p.Summary = w.summary()
	return p
}

func (w *walker) summary() Summary {
	s := Summary{TopLevel: w.top, Files: w.files, Languages: []LangCount{}}
	if s.TopLevel == nil {
		s.TopLevel = []Entry{}
	}
	if len(s.TopLevel) > maxTopLevel {
		s.TopLevelOmitted = len(s.TopLevel) - maxTopLevel
		s.TopLevel = s.TopLevel[:maxTopLevel]
	}
	for _, n := range w.nodes[1:] {
		if n.read {
			s.Dirs++
		}
	}

	langs := make(map[string]int, len(w.langs))
	for l, n := range w.langs {
		langs[l] = n
	}
	if h := langs[langHeader]; h > 0 {
		// A .h file is C++ in a mostly-C++ tree and C otherwise.
		delete(langs, langHeader)
		if langs["cpp"] > langs["c"] {
			langs["cpp"] += h
		} else {
			langs["c"] += h
		}
	}
	for l, n := range langs {
		s.Languages = append(s.Languages, LangCount{Name: l, Files: n})
	}
	sort.Slice(s.Languages, func(i, j int) bool {
		a, b := s.Languages[i], s.Languages[j]
		if a.Files != b.Files {
			return a.Files > b.Files
		}
		return a.Name < b.Name
	})
	if len(s.Languages) > maxLanguages {
		s.Languages = s.Languages[:maxLanguages]
	}
	return s
}

func fileExists(name string) bool {
	info, err := os.Stat(name)
	return err == nil && !info.IsDir()
}
