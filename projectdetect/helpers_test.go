package projectdetect

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeTree expands a txtar-style archive into dir: each "-- path --" line
// starts a file, and the lines up to the next one are its content. A path
// ending in "/" makes an empty directory. Archives keep fixtures that git
// would not store as they are (.git, node_modules, ignored files, tabs in
// Makefiles) in one readable place.
func writeTree(t testing.TB, dir, archive string) {
	t.Helper()
	var name string
	var body strings.Builder
	flush := func() {
		if name == "" {
			return
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, line := range strings.SplitAfter(archive, "\n") {
		trimmed := strings.TrimRight(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			flush()
			name = strings.TrimSpace(trimmed[3 : len(trimmed)-3])
			body.Reset()
			continue
		}
		if name != "" {
			body.WriteString(line)
		}
	}
	flush()
}

// detectArchive writes archive into a fresh directory and detects it. The
// zero Options.Git keeps the machine's git configuration out: a
// developer's global excludes file would hide fixture files.
func detectArchive(t testing.TB, archive string) *Project {
	t.Helper()
	return detectArchiveGit(t, archive, GitConfig{})
}

// detectArchiveGit is detectArchive with git configuration found through g.
func detectArchiveGit(t testing.TB, archive string, g GitConfig) *Project {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, archive)
	p, err := Detect(context.Background(), dir, Options{Budget: 10 * time.Second, Git: g})
	if err != nil {
		t.Fatalf("Detect: %v", err)
	}
	return p
}

// cmdStrings renders commands as "dir: run (source)" for comparison.
func cmdStrings(cmds []Command) []string {
	out := []string{}
	for _, c := range cmds {
		out = append(out, fmt.Sprintf("%s: %s (%s)", c.Dir, c.Run, c.Source))
	}
	return out
}

func typeStrings(types []Type) []string {
	out := []string{}
	for _, t := range types {
		out = append(out, fmt.Sprintf("%s %s %s [%s]", t.Dir, t.Name, t.PackageManager, strings.Join(t.Markers, " ")))
	}
	return out
}
