package projectdetect

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestGitignoreWalk checks ignore handling end to end: root and nested
// .gitignore files, negation, .git/info/exclude, and that an ignored
// directory's files are neither counted nor detected.
func TestGitignoreWalk(t *testing.T) {
	p := detectArchive(t, `
-- .git/info/exclude --
local-notes/
-- .git/HEAD --
ref: refs/heads/main
-- .gitignore --
# build output and scratch
/generated/*
!/generated/keep/
*.log
!important.log
tmp/
-- go.mod --
module x
-- main.go --
-- debug.log --
-- important.log --
-- generated/web/package.json --
{"scripts": {"test": "jest"}}
-- generated/web/index.js --
-- generated/keep/Cargo.toml --
[package]
-- generated/keep/lib.rs --
-- local-notes/package.json --
{}
-- src/tmp/scratch.go --
-- src/app.go --
-- src/.gitignore --
*.gen.go
!keep.gen.go
/only-here.txt
-- src/x.gen.go --
-- src/keep.gen.go --
-- src/only-here.txt --
-- src/deeper/only-here.txt --
`)
	wantTypes := []string{". go go [go.mod]", "generated/keep rust cargo [Cargo.toml]"}
	if got := typeStrings(p.Types); !slices.Equal(got, wantTypes) {
		t.Errorf("types:\n got  %q\n want %q", got, wantTypes)
	}
	// Seen: .gitignore go.mod main.go important.log, generated/keep/{Cargo.toml,lib.rs},
	// src/{.gitignore,app.go,keep.gen.go,deeper/only-here.txt}.
	if p.Summary.Files != 10 {
		t.Errorf("Summary.Files = %d, want 10", p.Summary.Files)
	}
	var top []string
	for _, e := range p.Summary.TopLevel {
		top = append(top, e.Name)
	}
	wantTop := []string{".gitignore", "generated", "go.mod", "important.log", "main.go", "src"}
	if !slices.Equal(top, wantTop) {
		t.Errorf("top level:\n got  %q\n want %q", top, wantTop)
	}
}

// TestVendoredTreesSkipped checks that dependency, build and cache
// directories are neither entered nor reported, while still listed at the
// top level as skipped.
func TestVendoredTreesSkipped(t *testing.T) {
	p := detectArchive(t, `
-- package.json --
{"scripts": {"test": "jest"}}
-- index.js --
-- node_modules/left-pad/package.json --
{}
-- node_modules/left-pad/index.js --
-- vendor/github.com/x/y/go.mod --
module y
-- third_party/lib/CMakeLists.txt --
-- dist/bundle.js --
-- build/out.js --
-- target/debug/Cargo.toml --
-- .venv/lib/pyproject.toml --
-- coverage/lcov.info --
-- .ralph/state.json --
-- pkg/a/node_modules/b/package.json --
{}
-- pkg/a/thing.egg-info/PKG-INFO --
`)
	if got, want := typeStrings(p.Types), []string{". node  [package.json]"}; !slices.Equal(got, want) {
		t.Errorf("types:\n got  %q\n want %q", got, want)
	}
	if p.Summary.Files != 2 {
		t.Errorf("Summary.Files = %d, want 2 (package.json, index.js)", p.Summary.Files)
	}
	skipped := map[string]bool{}
	for _, e := range p.Summary.TopLevel {
		if e.Skipped {
			skipped[e.Name] = true
		}
	}
	for _, name := range []string{"node_modules", "vendor", "third_party", "dist", "build", "target", ".venv", "coverage", ".ralph"} {
		if !skipped[name] {
			t.Errorf("top level %s not marked skipped", name)
		}
	}
	if skipped["pkg"] {
		t.Errorf("pkg marked skipped")
	}
}

// TestGlobalExcludes: the user's global excludes file, from
// core.excludesFile (the repository's config wins over the user's) or at
// $XDG_CONFIG_HOME/git/ignore, hides files as it does from git, below
// .git/info/exclude and .gitignore (which can re-include).
func TestGlobalExcludes(t *testing.T) {
	home := t.TempDir()
	git := GitConfig{Home: home}
	write := func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const tree = `
-- .git/HEAD --
ref: refs/heads/main
-- .gitignore --
!keep.scratch
-- go.mod --
module x
-- main.go --
-- notes.scratch --
-- keep.scratch --
-- .idea/workspace.xml --
-- scratch-web/package.json --
{"scripts": {"test": "jest"}}
`
	files := func() []string {
		p := detectArchiveGit(t, tree, git)
		var top []string
		for _, e := range p.Summary.TopLevel {
			top = append(top, e.Name)
		}
		return top
	}
	all := []string{".gitignore", ".idea", "go.mod", "keep.scratch", "main.go", "notes.scratch", "scratch-web"}
	if got := files(); !slices.Equal(got, all) {
		t.Fatalf("no global excludes: %q, want %q", got, all)
	}

	// The default place, ~/.config/git/ignore.
	write(filepath.Join(home, ".config", "git", "ignore"), "*.scratch\n.idea/\n")
	want := []string{".gitignore", "go.mod", "keep.scratch", "main.go", "scratch-web"}
	if got := files(); !slices.Equal(got, want) {
		t.Fatalf("~/.config/git/ignore: %q, want %q", got, want)
	}

	// core.excludesFile in ~/.gitconfig replaces it, with ~ expanded and
	// quotes and comments read as git reads them.
	write(filepath.Join(home, ".gitconfig"), "[user]\n\tname = A\n[core \"sub\"]\n\texcludesFile = /nowhere\n[core]\n\texcludesFile = \"~/my ignore\" ; mine\n")
	write(filepath.Join(home, "my ignore"), "scratch-web/\n")
	want = []string{".gitignore", ".idea", "go.mod", "keep.scratch", "main.go", "notes.scratch"}
	if got := files(); !slices.Equal(got, want) {
		t.Fatalf("core.excludesFile: %q, want %q", got, want)
	}

	// The repository's own config wins; a relative path is from the root.
	p := detectArchiveGit(t, tree+"-- .git/config --\n[core]\n\texcludesfile = local-ignore\n-- local-ignore --\nmain.go\n", git)
	var top []string
	for _, e := range p.Summary.TopLevel {
		top = append(top, e.Name)
	}
	want = []string{".gitignore", ".idea", "go.mod", "keep.scratch", "local-ignore", "notes.scratch", "scratch-web"}
	if !slices.Equal(top, want) {
		t.Fatalf("the repository's core.excludesFile: %q, want %q", top, want)
	}

	// GIT_CONFIG_GLOBAL replaces ~/.gitconfig (and the XDG config), and
	// the system config counts below it.
	system := filepath.Join(t.TempDir(), "gitconfig")
	write(system, "[core]\n\texcludesFile = "+filepath.Join(home, "system ignore")+"\n")
	write(filepath.Join(home, "system ignore"), "main.go\n")
	git = GitConfig{Home: home, Global: filepath.Join(t.TempDir(), "global"), System: system}
	want = []string{".gitignore", ".idea", "go.mod", "keep.scratch", "notes.scratch", "scratch-web"}
	if got := files(); !slices.Equal(got, want) {
		t.Fatalf("system config under an empty GIT_CONFIG_GLOBAL: %q, want %q", got, want)
	}
	write(git.Global, "[core]\n\texcludesFile = ~/my ignore\n")
	want = []string{".gitignore", ".idea", "go.mod", "keep.scratch", "main.go", "notes.scratch"}
	if got := files(); !slices.Equal(got, want) {
		t.Fatalf("GIT_CONFIG_GLOBAL over the system config: %q, want %q", got, want)
	}
}

// GitConfigFromEnv maps git's environment variables to GitConfig, so the
// entry point that reads them need not know git's rules.
func TestGitConfigFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want GitConfig
	}{
		{"empty", nil, GitConfig{System: "/etc/gitconfig"}},
		{"unix", map[string]string{"HOME": "/home/a", "XDG_CONFIG_HOME": "/x", "GIT_CONFIG_GLOBAL": "/g"},
			GitConfig{Home: "/home/a", XDGConfigHome: "/x", Global: "/g", System: "/etc/gitconfig"}},
		{"windows home", map[string]string{"USERPROFILE": `C:\Users\a`}, GitConfig{Home: `C:\Users\a`, System: "/etc/gitconfig"}},
		{"HOME wins", map[string]string{"HOME": "/h", "USERPROFILE": "/u"}, GitConfig{Home: "/h", System: "/etc/gitconfig"}},
		{"system file", map[string]string{"GIT_CONFIG_SYSTEM": "/s"}, GitConfig{System: "/s"}},
		{"no system", map[string]string{"GIT_CONFIG_SYSTEM": "/s", "GIT_CONFIG_NOSYSTEM": "1"}, GitConfig{}},
	}
	for _, tt := range tests {
		got := GitConfigFromEnv(func(k string) string { return tt.env[k] })
		if got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
