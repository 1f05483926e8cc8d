package mdstate

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// halfMerged is RALPH_TASKS.md as `git merge` leaves it when both sides
// added a task T2.
const halfMerged = "# Tasks\n\n- [x] T1: Set up\n<<<<<<< HEAD\n- [ ] T2: Ours\n=======\n- [ ] Theirs\n>>>>>>> feature\n"

func TestFindConflict(t *testing.T) {
	for _, tc := range []struct {
		name  string
		src   string
		lines []int // nil: no conflict
	}{
		{name: "clean", src: "# Tasks\n\n- [ ] T1: One\n"},
		{name: "merge", src: halfMerged, lines: []int{4, 6, 8}},
		{name: "diff3", src: "<<<<<<< ours\n- [ ] A\n||||||| base\n=======\n- [ ] B\n>>>>>>> theirs\n", lines: []int{1, 3, 4, 6}},
		{name: "CRLF", src: strings.ReplaceAll(halfMerged, "\n", "\r\n"), lines: []int{4, 6, 8}},
		{name: "no labels", src: "<<<<<<<\na\n=======\nb\n>>>>>>>", lines: []int{1, 3, 5}},
		{name: "two", src: halfMerged + "\nprose\n" + halfMerged, lines: []int{4, 6, 8, 14, 16, 18}},
		{name: "nested", src: "<<<<<<< a\n<<<<<<< b\nx\n=======\ny\n>>>>>>> c\n=======\nz\n>>>>>>> d\n", lines: []int{1, 2, 4, 6, 7, 9}},
		{name: "in front matter", src: "---\n<<<<<<< HEAD\nowner: sam\n=======\nowner: ana\n>>>>>>> b\n---\n- [ ] T1: One\n", lines: []int{2, 4, 6}},
		{name: "in an HTML comment", src: "<!--\n<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n-->\n", lines: []int{2, 4, 6}},
		// A column-0 line ends a list item, and a fence in it with it.
		{name: "fence in a list item", src: "- [ ] T1: One\n  ```sh\n<<<<<<< HEAD\n  make a\n=======\n  make b\n>>>>>>> x\n  ```\n", lines: []int{3, 5, 7}},
		{name: "with a NUL byte", src: "\x00\n" + halfMerged, lines: []int{5, 7, 9}},

		// Not conflicts.
		{name: "setext heading", src: "Title\n=======\n\n- [ ] T1: One\n"},
		{name: "deep quote", src: ">>>>>>> quoted\n"},
		{name: "no split", src: "<<<<<<< HEAD\na\n>>>>>>> x\n"},
		{name: "not closed", src: "<<<<<<< HEAD\na\n=======\nb\n"},
		{name: "split before start", src: "=======\n<<<<<<< HEAD\n>>>>>>> x\n"},
		{name: "eight", src: "<<<<<<<< HEAD\na\n=======\nb\n>>>>>>>> x\n"},
		{name: "text after", src: "<<<<<<<HEAD\na\n=======\nb\n>>>>>>>x\n"},
		{name: "split with text", src: "<<<<<<< HEAD\na\n======= b\nb\n>>>>>>> x\n"},
		{name: "indented", src: "    <<<<<<< HEAD\n    a\n    =======\n    b\n    >>>>>>> x\n"},
		{name: "fenced example", src: "# How to resolve\n\n```\n<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n```\n"},
		{name: "tilde fence", src: "~~~~\n<<<<<<< HEAD\n=======\n>>>>>>> x\n~~~~\n"},
		{name: "fence in a quote", src: "> ```\n<<<<<<< HEAD\n> =======\n> ```\n>>>>>>> x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ce := FindConflict(TasksFile, []byte(tc.src))
			if tc.lines == nil {
				if ce != nil {
					t.Fatalf("found a conflict at lines %v", ce.Lines)
				}
				return
			}
			if ce == nil {
				t.Fatalf("found no conflict, want lines %v", tc.lines)
			}
			if ce.File != TasksFile || !slices.Equal(ce.Lines, tc.lines) {
				t.Fatalf("conflict in %s at lines %v, want %v", ce.File, ce.Lines, tc.lines)
			}
		})
	}
}

func TestConflictErrorMessage(t *testing.T) {
	ce := FindConflict(TasksFile, []byte(halfMerged))
	const want = "RALPH_TASKS.md has an unresolved merge conflict (lines 4, 6, 8); ralph will not write it or run its tasks until it is resolved: " +
		"edit the file to keep one side and delete the markers, or take one side with `git checkout --ours RALPH_TASKS.md`"
	if got := ce.Error(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	many := FindConflict(AgentFile, []byte(strings.Repeat("<<<<<<< a\n=======\n>>>>>>> b\n", 4)))
	const wantMany = "AGENT.md has 4 unresolved merge conflicts (lines 1, 2, 3, 4, 5, 6, 7, 8, 9, …); ralph will not write it until it is resolved: " +
		"edit the file to keep one side and delete the markers, or take one side with `git checkout --ours AGENT.md`"
	if got := many.Error(); got != wantMany {
		t.Errorf("got  %s\nwant %s", got, wantMany)
	}
}

// A half-merged RALPH_TASKS.md is read, with a warning at its first
// marker, so that `ralph status` can show it; no write touches it, not
// even the IDs of tasks without one.
func TestConflictRefusesChecklistWrites(t *testing.T) {
	p := projectWith(t, TasksFile, []byte(halfMerged))
	fi0, err := os.Stat(p.Path(TasksFile))
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.LoadChecklist(TasksKind)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(c.Warnings, func(w Warning) bool {
		return w.File == TasksFile && w.Line == 4 && strings.Contains(w.Message, "unresolved merge conflict")
	}); i < 0 {
		t.Fatalf("no conflict warning at line 4: %v", c.Warnings)
	}
	for name, fn := range map[string]func(e *ChecklistEdit) error{
		"status":    func(e *ChecklistEdit) error { return e.SetStatus("T1", Pending) },
		"add":       func(e *ChecklistEdit) error { _, err := e.Add("More"); return err },
		"session":   func(e *ChecklistEdit) error { return e.SetSession(&Session{ID: "x", Status: SessionRunning}) },
		"guidance":  func(e *ChecklistEdit) error { return e.QueueGuidance("a message") },
		"IDs alone": func(e *ChecklistEdit) error { return nil },
	} {
		_, err := p.UpdateChecklist(TasksKind, fn)
		var ce *ConflictError
		if !errors.As(err, &ce) || ce.File != TasksFile || !slices.Equal(ce.Lines, []int{4, 6, 8}) {
			t.Errorf("%s: UpdateChecklist = %v, want the conflict", name, err)
		}
	}
	assertUntouched(t, p, TasksFile, []byte(halfMerged), fi0)

	// An edit that changes nothing is no write: it succeeds.
	clean := strings.Replace(halfMerged, "- [ ] Theirs", "- [ ] T3: Theirs", 1)
	p = projectWith(t, TasksFile, []byte(clean))
	if _, err := p.UpdateChecklist(TasksKind, func(e *ChecklistEdit) error { return e.SetStatus("T1", Done) }); err != nil {
		t.Fatalf("a no-op edit of a half-merged file: %v", err)
	}
}

func TestConflictRefusesLearning(t *testing.T) {
	src := "# Agent\n\n## Learnings\n\n<<<<<<< HEAD\n- Use make\n=======\n- Use go test\n>>>>>>> b\n"
	p := projectWith(t, AgentFile, []byte(src))
	fi0, err := os.Stat(p.Path(AgentFile))
	if err != nil {
		t.Fatal(err)
	}
	err = p.Learn("Run the linter")
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.File != AgentFile || !slices.Equal(ce.Lines, []int{5, 7, 9}) {
		t.Fatalf("Learn = %v, want the conflict", err)
	}
	assertUntouched(t, p, AgentFile, []byte(src), fi0)
}

func TestCheckConflicts(t *testing.T) {
	p := projectWith(t, TasksFile, []byte(halfMerged))
	if err := os.WriteFile(p.Path(GoalsFile), []byte("# Goals\n\n- [ ] G1: Ship\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.Path(AgentFile), []byte("<<<<<<< a\n- x\n=======\n- y\n>>>>>>> b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The log is appended to, never parsed: a conflict there is not one
	// CheckConflicts reports. RALPH_TODO.md is missing.
	if err := os.WriteFile(p.Path(ProgressFile), []byte(halfMerged), 0o644); err != nil {
		t.Fatal(err)
	}
	err := p.CheckConflicts()
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.File != AgentFile {
		t.Fatalf("CheckConflicts = %v, want AGENT.md's conflict first", err)
	}
	var files []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		if errors.As(e, &ce) {
			files = append(files, ce.File)
		}
	}
	if want := []string{AgentFile, TasksFile}; !slices.Equal(files, want) {
		t.Fatalf("conflicts in %v, want %v", files, want)
	}
	if err := projectWith(t, TasksFile, []byte("# Tasks\n\nTitle\n=======\n")).CheckConflicts(); err != nil {
		t.Fatalf("a clean project: %v", err)
	}
}

// FuzzConflict checks that every conflict found is made of marker lines,
// in order, and that a file with one is never edited.
func FuzzConflict(f *testing.F) {
	addCorpusSeeds(f, func(data []byte) { f.Add(data) })
	f.Add([]byte(halfMerged))
	f.Add([]byte("- [ ] A\n<<<<<<< a\n- [ ] B\n||||||| b\n=======\n```\n>>>>>>> c\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ce := FindConflict(TasksFile, data)
		if ce == nil {
			return
		}
		lines := bytes.SplitAfter(data, []byte("\n"))
		if len(ce.Lines) < 3 || !slices.IsSorted(ce.Lines) || ce.Lines[0] < 1 || ce.Lines[len(ce.Lines)-1] > len(lines) {
			t.Fatalf("conflict lines %v in a file of %d lines", ce.Lines, len(lines))
		}
		for _, l := range ce.Lines {
			if markerOf(lines[l-1]) == noMarker {
				t.Fatalf("line %d, %q, is not a marker", l, lines[l-1])
			}
		}
		c, err := ParseChecklist(TasksKind, data)
		if err == nil {
			e := c.Edit()
			if _, err := e.Add("fuzzed item"); err != nil {
				t.Fatal(err)
			}
			if _, _, err := e.Bytes(); !errors.As(err, new(*ConflictError)) {
				t.Fatalf("an edit of a half-merged file: %v", err)
			}
		}
		if a, err := ParseAgent(data); err == nil {
			if _, err := a.AddLearning("fuzzed learning"); !errors.As(err, new(*ConflictError)) {
				t.Fatalf("a learning in a half-merged file: %v", err)
			}
		}
	})
}
