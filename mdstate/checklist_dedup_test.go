package mdstate_test

import (
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/ralph-dev/ralph/mdstate"
)

func TestSameKey(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{"Check the error messages", "check  the error\nmessages.", true},
		{"Run the tests with -race.", "  RUN the tests with -race ", true},
		{"Écrire la doc", "écrire la doc.", true},
		{"tabs\tand spaces", "tabs and spaces", true},
		{"Check the file names", "Check the file name", false},
		{"Wait...", "Wait", false}, // only one trailing period goes
		{"Run the tests", "Run the tests!", false},
		{"", ".", true},
	}
	for _, tt := range tests {
		if got := mdstate.SameText(tt.a, tt.b); got != tt.same {
			t.Errorf("SameText(%q, %q) = %v (keys %q, %q)", tt.a, tt.b, got, mdstate.SameKey(tt.a), mdstate.SameKey(tt.b))
		}
	}
}

func TestAddOnce(t *testing.T) {
	const src = "# To-do\n\n- [ ] D1: Check the error messages\n- [x] D2: Rename the config flag\n  - promoted: T7\n- [ ] Untitled by ralph yet\n"
	c, err := mdstate.ParseChecklist(mdstate.TodoKind, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	e := c.Edit()
	dups := []struct {
		text, id string
		line     int
	}{
		{"check the error  messages.", "D1", 3},
		{"Rename the config flag", "D2", 4}, // done: still the same to-do
		{"untitled BY ralph yet", "D3", 6},  // its ID not written yet
	}
	for _, d := range dups {
		_, err := e.AddOnce(d.text)
		var dup *mdstate.DuplicateError
		if !errors.As(err, &dup) || dup.ID != d.id || dup.Line != d.line || dup.File != mdstate.TodoFile {
			t.Fatalf("AddOnce(%q) = %v (%+v); want a duplicate of %s at line %d", d.text, err, dup, d.id, d.line)
		}
	}
	id, err := e.AddOnce("Write the changelog")
	if err != nil || id != "D4" {
		t.Fatalf("AddOnce(new) = %q, %v", id, err)
	}
	// One the same edit added: no line yet.
	_, err = e.AddOnce("write the Changelog.")
	var dup *mdstate.DuplicateError
	if !errors.As(err, &dup) || dup.ID != "D4" || dup.Line != 0 || dup.Error() != "already in RALPH_TODO.md as D4" {
		t.Fatalf("AddOnce(same as the new one) = %v", err)
	}
	if _, err := e.AddOnce("  "); err == nil || errors.As(err, &dup) {
		t.Fatalf("AddOnce(blank) = %v; want Add's error", err)
	}
	out, _, err := e.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	const want = "# To-do\n\n- [ ] D1: Check the error messages\n- [x] D2: Rename the config flag\n  - promoted: T7\n- [ ] D3: Untitled by ralph yet\n- [ ] D4: Write the changelog\n"
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

// A person's note under an item that has one saying the same, in the
// file or added by the same edit, is not added; the item's other changes
// are.
func TestAddNoteOnce(t *testing.T) {
	const src = "# Tasks\n\n- [!] T1: Call the API\n  - note: Waiting on the API.\n  - note: ask Sam\n- [ ] T2: Other\n"
	c, err := mdstate.ParseChecklist(mdstate.TasksKind, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	e := c.Edit()
	var dup *mdstate.DuplicateError
	if err := e.AddNoteOnce("t1", "waiting  on the api"); !errors.As(err, &dup) || dup.ID != "T1" || dup.Line != 4 || !dup.Note ||
		dup.Text != "Waiting on the API." || dup.Error() != "T1 already has that note (line 4)" {
		t.Fatalf("AddNoteOnce(same) = %v (%+v)", err, dup)
	}
	if err := e.AddNoteOnce("T2", "waiting on the API"); err != nil { // another task's
		t.Fatal(err)
	}
	if err := e.AddNoteOnce("T1", "Ask Sam first"); err != nil {
		t.Fatal(err)
	}
	if err := e.AddNoteOnce("T1", "ask sam first."); !errors.As(err, &dup) || dup.Line != 0 || dup.Error() != "T1 already has that note" {
		t.Fatalf("AddNoteOnce(same as the new one) = %v", err)
	}
	// One this edit dropped is not there any more.
	if err := errors.Join(e.DropNote("T1", 1), e.AddNoteOnce("T1", "ask Sam")); err != nil {
		t.Fatal(err)
	}
	if err := e.AddNoteOnce("T9", "x"); err == nil || errors.As(err, &dup) {
		t.Fatalf("AddNoteOnce(no such task) = %v", err)
	}
	if err := e.SetStatus("T1", mdstate.Pending); err != nil {
		t.Fatal(err)
	}
	out, _, err := e.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	const want = "# Tasks\n\n- [ ] T1: Call the API\n  - note: Waiting on the API.\n  - note: Ask Sam first\n  - note: ask Sam\n- [ ] T2: Other\n  - note: waiting on the API\n"
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestDuplicateErrorText(t *testing.T) {
	for _, tt := range []struct {
		err  mdstate.DuplicateError
		want string
	}{
		{mdstate.DuplicateError{File: mdstate.AgentFile, Line: 7}, "already in AGENT.md (line 7)"},
		{mdstate.DuplicateError{File: mdstate.TodoFile, Line: 3, ID: "D1"}, "already in RALPH_TODO.md as D1 (line 3)"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestLearnOnce(t *testing.T) {
	p := mdstate.Open(t.TempDir())
	const src = "# Working here\n\n## Agents\n\n- claude: --model opus\n\n## Learnings\n\n- Run the tests with `-race`; the test cache\n  hides data races.\n- Build with make.\n"
	writeState(t, p, mdstate.AgentFile, src)
	// The same words, wrapped, cased and ended otherwise: known.
	err := p.Learn("run the tests with `-race`;   the test cache hides data races")
	var dup *mdstate.DuplicateError
	if !errors.As(err, &dup) || dup.File != mdstate.AgentFile || dup.Line != 9 || dup.ID != "" ||
		dup.Text != "Run the tests with `-race`; the test cache hides data races." {
		t.Fatalf("Learn(known) = %v (%+v)", err, dup)
	}
	if got := readString(t, p.Path(mdstate.AgentFile)); got != src {
		t.Fatalf("a known learning changed AGENT.md:\n%s", got)
	}
	// An item of the Agents section is a setting, not a learning.
	if err := p.Learn("claude: --model opus"); err != nil {
		t.Fatalf("Learn(as the Agents section's item) = %v", err)
	}
	if err := p.Learn("Deploys need a VPN."); err != nil {
		t.Fatal(err)
	}
	err = p.Learn("deploys need a vpn")
	if !errors.As(err, &dup) || dup.Line != 13 {
		t.Fatalf("Learn(the one just added) = %v", err)
	}
	const want = src + "- claude: --model opus\n- Deploys need a VPN.\n"
	if got := readString(t, p.Path(mdstate.AgentFile)); got != want {
		t.Errorf("AGENT.md =\n%s\nwant\n%s", got, want)
	}
}

// LearnAll adds several learnings in one write: the ones lost names that
// the file lacks first, then the new ones it lacks; the others are known.
// With nothing to add it writes nothing.
func TestLearnAll(t *testing.T) {
	p := mdstate.Open(t.TempDir())
	const src = "# Working here\n\n## Learnings\n\n- Build with make.\n"
	writeState(t, p, mdstate.AgentFile, src)
	var seen []string // the learnings lost was shown
	lost := func(a *mdstate.Agent) []string {
		seen = nil
		for _, l := range a.Learnings {
			seen = append(seen, l.Text)
		}
		return []string{"Lint before pushing.", "build with make"}
	}
	added, known, readded, err := p.LearnAll([]string{"Deploys need a VPN.", "BUILD WITH MAKE", "Deploys need a VPN"}, lost)
	if err != nil || !slices.Equal(added, []string{"Deploys need a VPN."}) || !slices.Equal(known, []string{"BUILD WITH MAKE", "Deploys need a VPN"}) ||
		!slices.Equal(readded, []string{"Lint before pushing."}) {
		t.Fatalf("LearnAll = %q, %q, %q, %v", added, known, readded, err)
	}
	if !slices.Equal(seen, []string{"Build with make."}) {
		t.Errorf("lost was shown %q, want the file as the write found it", seen)
	}
	const want = src + "- Lint before pushing.\n- Deploys need a VPN.\n"
	if got := readString(t, p.Path(mdstate.AgentFile)); got != want {
		t.Fatalf("AGENT.md =\n%s\nwant\n%s", got, want)
	}
	fi, err := os.Stat(p.Path(mdstate.AgentFile))
	if err != nil {
		t.Fatal(err)
	}
	if added, known, readded, err := p.LearnAll([]string{"deploys need a vpn"}, nil); err != nil || added != nil || readded != nil || len(known) != 1 {
		t.Fatalf("LearnAll(known) = %q, %q, %q, %v", added, known, readded, err)
	}
	if after, err := os.Stat(p.Path(mdstate.AgentFile)); err != nil || !os.SameFile(fi, after) || !after.ModTime().Equal(fi.ModTime()) {
		t.Errorf("nothing to add, yet AGENT.md was written (%v)", err)
	}
}

// A to-do a person wrote while ralph's write was under way is checked too:
// the write is made again on their version, and adds no copy of it.
func TestAddOnceOnAPersonsVersion(t *testing.T) {
	p := mdstate.Open(t.TempDir())
	writeState(t, p, mdstate.TodoFile, "# To-do\n\n- [ ] D1: Check the error messages\n")
	const theirs = "# To-do\n\n- [ ] D1: Check the error messages\n- [ ] D2: Write the changelog\n"
	runs := 0
	_, err := p.UpdateChecklist(mdstate.TodoKind, func(e *mdstate.ChecklistEdit) error {
		runs++
		if runs == 1 {
			// A person's save lands between ralph's read and its write.
			if err := os.WriteFile(p.Path(mdstate.TodoFile), []byte(theirs), 0o644); err != nil {
				return err
			}
		}
		_, err := e.AddOnce("write the changelog")
		return err
	})
	var dup *mdstate.DuplicateError
	if runs < 2 || !errors.As(err, &dup) || dup.ID != "D2" {
		t.Fatalf("%d runs, err %v; want the person's D2 found on the second", runs, err)
	}
	if got := readString(t, p.Path(mdstate.TodoFile)); got != theirs {
		t.Errorf("RALPH_TODO.md =\n%s\nwant their version", got)
	}
}

// A half-merged file is refused as such, even for a text it has already:
// the conflict is what a person has to fix.
func TestAddOnceConflictFirst(t *testing.T) {
	p := mdstate.Open(t.TempDir())
	const todo = "# To-do\n\n<<<<<<< ours\n- [ ] D1: Check the links\n=======\n- [ ] D1: Check the links twice\n>>>>>>> theirs\n"
	const agent = "# Agent\n\n<<<<<<< ours\n- Build with make.\n=======\n- Build with just.\n>>>>>>> theirs\n"
	writeState(t, p, mdstate.TodoFile, todo)
	writeState(t, p, mdstate.AgentFile, agent)
	_, err := p.UpdateChecklist(mdstate.TodoKind, func(e *mdstate.ChecklistEdit) error {
		_, err := e.AddOnce("check the links")
		return err
	})
	var ce *mdstate.ConflictError
	if !errors.As(err, &ce) {
		t.Errorf("AddOnce in a half-merged file: %v; want a *ConflictError", err)
	}
	if err := p.Learn("build with make"); !errors.As(err, &ce) {
		t.Errorf("Learn in a half-merged file: %v; want a *ConflictError", err)
	}
	if readString(t, p.Path(mdstate.TodoFile)) != todo || readString(t, p.Path(mdstate.AgentFile)) != agent {
		t.Error("a half-merged file was written")
	}
}
