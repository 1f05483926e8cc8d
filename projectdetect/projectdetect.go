// Package projectdetect says, quickly and within a budget, what kind of
// project a directory is: which ecosystems live where, which commands
// probably build, test and lint it, which config files are present, and a
// small summary of the tree.
//
// The contract:
//
//   - Detect reads files and lists directories; it never runs programs,
//     never reads environment variables and never writes anything. What
//     git would learn from the environment (where the user's git
//     configuration lives) comes in Options.Git, which the program's entry
//     point fills with GitConfigFromEnv.
//   - The walk is breadth-first and bounded by Options.Budget (wall clock)
//     and Options.MaxFiles. When either runs out, or ctx is done, the walk
//     stops and the result says so in Truncated and TruncatedReason; it is
//     still a valid result, not an error. Only a ctx that is done before
//     Detect starts is an error. Symbolic links are never followed.
//   - The root directory is always read in full before the budget applies,
//     so a truncated walk still reports the root project and its commands.
//   - Ignored trees are not entered and not counted: .gitignore files (root
//     and nested, with negation), .git/info/exclude, and a fixed list of
//     vendored, generated and cache directories (node_modules, vendor,
//     target, .venv, ...). The root is taken as the top of the ignore
//     hierarchy; the global excludes file that Options.Git leads to is
//     read too.
//   - Projects are not reported from hidden or underscored directories or
//     test fixture trees (testdata, fixtures), whose files are still
//     counted: their manifests describe test inputs or tooling, not the
//     project. At most 100 projects are reported, shallowest first.
//   - Members of a declared workspace (go.work, npm/pnpm/yarn workspaces,
//     Cargo [workspace], Gradle settings, Maven <modules>, a .sln, uv
//     workspaces, mix umbrellas, cabal.project/stack.yaml, nested CMake or
//     Meson directories) are folded into the workspace root, so a monorepo
//     with fifty packages reports one entry per stack, not fifty.
//   - Commands are suggestions, grouped by directory in Types order (root
//     first). Within a directory, commands the project defines (Makefile
//     targets, package.json scripts, ...) come before ecosystem defaults,
//     and Command.Source says which is which. A subdirectory's Makefile
//     counts only where that directory holds a project.
//
// Detect is safe for concurrent use; it keeps no state between calls.
package projectdetect

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Defaults for zero Options fields.
const (
	DefaultBudget   = 300 * time.Millisecond
	DefaultMaxFiles = 200_000
)

// Options bounds a Detect call.
type Options struct {
	Budget   time.Duration // wall-clock budget for the directory walk; 0 means 300ms
	MaxFiles int           // file budget; 0 means 200,000
	// Git locates the system's and the user's git configuration, for the
	// global excludes file. The zero value locates none: only the
	// repository's own config and .git/info/exclude are read.
	Git GitConfig
}

// GitConfig is where git finds the configuration files above a
// repository's own, which it learns from its environment.
type GitConfig struct {
	Home          string // the user's home: ~ in paths, ~/.gitconfig; "" none
	XDGConfigHome string // $XDG_CONFIG_HOME; "" means Home/.config
	Global        string // $GIT_CONFIG_GLOBAL, replacing ~/.gitconfig and the XDG file; "" none
	System        string // the system config file; "" none
}

// systemGitConfig is the system config file of a git built with the
// usual prefix (Linux distributions, Xcode's git).
const systemGitConfig = "/etc/gitconfig"

// GitConfigFromEnv reads, through getenv (os.Getenv at the program's
// entry point), the variables git uses to find its configuration: HOME
// (USERPROFILE when HOME is unset, as on Windows), XDG_CONFIG_HOME,
// GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM and GIT_CONFIG_NOSYSTEM.
func GitConfigFromEnv(getenv func(string) string) GitConfig {
	g := GitConfig{
		Home:          getenv("HOME"),
		XDGConfigHome: getenv("XDG_CONFIG_HOME"),
		Global:        getenv("GIT_CONFIG_GLOBAL"),
		System:        systemGitConfig,
	}
	if g.Home == "" {
		g.Home = getenv("USERPROFILE")
	}
	if s := getenv("GIT_CONFIG_SYSTEM"); s != "" {
		g.System = s
	}
	if getenv("GIT_CONFIG_NOSYSTEM") != "" {
		g.System = ""
	}
	return g
}

// Project is what Detect found under Root.
type Project struct {
	Root            string   `json:"root"`                       // absolute, cleaned
	Types           []Type   `json:"types"`                      // sorted by Dir then Name
	Commands        Commands `json:"commands"`                   // likely build/test/lint commands
	ConfigFiles     []string `json:"config_files"`               // root-relative, slash-separated, sorted
	Summary         Summary  `json:"summary"`                    // shape of the tree
	Truncated       bool     `json:"truncated"`                  // the walk stopped at a budget
	TruncatedReason string   `json:"truncated_reason,omitempty"` // why, with how far it got
}

// Type is one ecosystem rooted at one directory.
type Type struct {
	// Name is the language or platform: go, node, typescript, python,
	// rust, java, kotlin, ruby, php, dotnet, c, cpp, elixir, swift, dart,
	// haskell, scala, clojure, zig, deno, ocaml.
	Name string `json:"name"`
	// Dir is root-relative and slash-separated; "." for the root.
	Dir string `json:"dir"`
	// Markers are the files in Dir that led to this answer, including the
	// ones that chose the package manager or the language (a lockfile,
	// tsconfig.json).
	Markers []string `json:"markers"`
	// PackageManager is npm, pnpm, yarn, bun, go, cargo, pip, poetry, uv,
	// pdm, pipenv, maven, gradle, bundler, composer, dotnet, mix, swiftpm,
	// pub, flutter, stack, cabal, sbt, lein, clojure, zig, deno, opam,
	// conan, vcpkg; "" if unknown.
	PackageManager string `json:"package_manager"`
}

// Commands are likely build, test and lint commands, most specific first.
type Commands struct {
	Build []Command `json:"build"`
	Test  []Command `json:"test"`
	Lint  []Command `json:"lint"`
}

// Command is one shell command line and where ralph got it.
type Command struct {
	Run    string `json:"run"`    // e.g. "go test ./...", "npm test", "make test"
	Dir    string `json:"dir"`    // root-relative working directory; "." for the root
	Source string `json:"source"` // e.g. "Makefile target test", "package.json scripts.test", "default for go"
}

// Summary is the shape of the walked (not ignored) part of the tree.
type Summary struct {
	TopLevel        []Entry     `json:"top_level"`                   // root entries in name order, at most maxTopLevel
	TopLevelOmitted int         `json:"top_level_omitted,omitempty"` // root entries left out of TopLevel
	Languages       []LangCount `json:"languages"`                   // by file count, descending, at most maxLanguages
	Files           int         `json:"files"`                       // files seen, root included
	Dirs            int         `json:"dirs"`                        // directories entered, root excluded
}

// Entry is one name in the root directory.
type Entry struct {
	Name    string `json:"name"`
	Dir     bool   `json:"dir,omitempty"`
	Files   int    `json:"files,omitempty"`   // for a directory: files seen under it
	Skipped bool   `json:"skipped,omitempty"` // a vendored or generated directory that was not entered
}

// LangCount is how many files of one language the walk saw.
type LangCount struct {
	Name  string `json:"name"`
	Files int    `json:"files"`
}

// Output caps keep the result small enough to hand to an agent.
const (
	maxTopLevel  = 100
	maxLanguages = 20
	maxTypes     = 100
)

// Detect reports what kind of project root is. It fails only when ctx is
// already done or root cannot be read as a directory; a walk cut short by
// the budget or by ctx is reported through Project.Truncated.
func Detect(ctx context.Context, root string, opts Options) (*Project, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("detect %s: %w", root, err)
	}
	start := time.Now()
	if opts.Budget <= 0 {
		opts.Budget = DefaultBudget
	}
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", root, err)
	}
	info, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("detect project: %w", err) // err names the path
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("detect %s: not a directory", root)
	}

	w := newWalker(ctx, abs, start, opts)
	if err := w.walk(); err != nil {
		return nil, err
	}
	return w.project(), nil
}

// Files are the files outside a repository that git reads for every
// one: the system's and the user's config, and the user's default ignore
// and attributes files (those that exist and those that could).
func (g GitConfig) Files() []string {
	files := g.configs()
	if xdg := g.xdg(); xdg != "" {
		files = append(files, filepath.Join(xdg, "git", "ignore"), filepath.Join(xdg, "git", "attributes"))
	}
	return files
}

// configs are the system's and the user's config files, in the order git
// reads them (a later setting wins).
func (g GitConfig) configs() []string {
	var files []string
	if g.System != "" {
		files = append(files, g.System)
	}
	if g.Global != "" {
		return append(files, g.Global)
	}
	if xdg := g.xdg(); xdg != "" {
		files = append(files, filepath.Join(xdg, "git", "config"))
	}
	if g.Home != "" {
		files = append(files, filepath.Join(g.Home, ".gitconfig"))
	}
	return files
}

// xdg is $XDG_CONFIG_HOME, which defaults to ~/.config; "" when neither
// is known.
func (g GitConfig) xdg() string {
	if g.XDGConfigHome == "" && g.Home != "" {
		return filepath.Join(g.Home, ".config")
	}
	return g.XDGConfigHome
}
