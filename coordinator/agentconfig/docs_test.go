package agentconfig_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/ralph-dev/ralph/coordinator/agentconfig"
)

// docExampleRe matches a ```markdown agents=SCOPE block of docs/agents.md
// and captures the scope and the content.
var docExampleRe = regexp.MustCompile("(?ms)^```markdown agents=(project|machine)\n(.*?)^```$")

// TestDocExamples: the settings files docs/agents.md shows read without a
// warning, and mean what the doc says around them.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/agents.md")
	if err != nil {
		t.Fatal(err)
	}
	files := map[agentconfig.Scope]agentconfig.File{}
	for _, m := range docExampleRe.FindAllSubmatch(doc, -1) {
		sc := agentconfig.Scope(m[1])
		f := agentconfig.Parse(sc, string(sc), m[2], "machine")
		if len(f.Warnings) != 0 {
			t.Errorf("the %s example warns: %v", sc, f.Warnings)
		}
		files[sc] = f
	}
	if len(files) != 2 {
		t.Fatalf("found examples for %d scopes, want project and machine", len(files))
	}
	s := &agentconfig.Settings{Project: files[agentconfig.ScopeProject], Machine: files[agentconfig.ScopeMachine]}
	name, from, err := s.DefaultAgent(agentconfig.Asked{}, onPath())
	if err != nil || name != "codex" || from.String() != "project:7" {
		t.Errorf("default %q from %s, %v", name, from, err)
	}
	// The sample output of ralph agents names these lines.
	cx, cl := s.Agent("codex"), s.Agent("claude")
	if cx.Model.From.Line != 11 || cx.Permission.From.Line != 12 || cx.Args.From.Line != 13 || cl.Model.From.String() != "project:17" {
		t.Errorf("codex %+v, claude %+v", cx, cl)
	}
	// The project's model wins over the machine's; the machine's bin and
	// env still apply.
	if cl.Model.Value != "sonnet" || cl.Bin.Value != "/opt/claude/bin/claude" || len(cx.Env.Value) != 2 || len(cx.Args.Value) != 2 {
		t.Errorf("codex %+v, claude %+v", cx, cl)
	}
}
