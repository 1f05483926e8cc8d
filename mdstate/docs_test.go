package mdstate

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// docFixtureRe matches a ```markdown fixture=KIND/NAME block of the format
// doc and captures the name and the content, which ends at the closing
// fence.
var docFixtureRe = regexp.MustCompile("(?ms)^```markdown fixture=([a-z]+/[a-z0-9-]+)[ \t]*\n(.*?)^```[ \t]*$")

// TestDocFixtures checks that every example in docs/state-format.md marked
// fixture=KIND/NAME is testdata/corpus/KIND/NAME.md byte for byte, so the
// examples people read are the files the corpus tests parse.
func TestDocFixtures(t *testing.T) {
	doc, err := os.ReadFile("../docs/state-format.md")
	if err != nil {
		t.Fatal(err)
	}
	ms := docFixtureRe.FindAllSubmatch(doc, -1)
	if want := bytes.Count(doc, []byte("```markdown fixture=")); len(ms) != want || want == 0 {
		t.Fatalf("found %d fixture blocks of %d marked in the doc", len(ms), want)
	}
	seen := map[string]bool{}
	for _, m := range ms {
		name, content := string(m[1]), m[2]
		t.Run(name, func(t *testing.T) {
			if seen[name] {
				t.Fatalf("two examples are fixture=%s", name)
			}
			seen[name] = true
			path := filepath.Join(corpusRoot, filepath.FromSlash(name)+".md")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("the doc names fixture=%s: %v", name, err)
			}
			if !bytes.Equal(data, content) {
				t.Errorf("%s differs from its example in docs/state-format.md:\n%s", path, lineDiff(content, data))
			}
		})
	}
}
