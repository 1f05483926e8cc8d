package projectdetect

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/gitctx/gitconfig"
	"github.com/ralph-dev/ralph/gitctx/ignore"
)

// Walk costs, in "units" of roughly one directory entry. The clock and ctx
// are checked each time another checkEvery units have been spent: often
// enough to stop within a few milliseconds of the budget, rarely enough
// that time.Now is no noticeable part of the walk.
const (
	checkEvery   = 256
	costPerDir   = 16 // open + getdents + close, compared with one entry
	maxReadBytes = 1 << 20
)

// skipDir reports directories that are never entered: dependencies, build
// output, caches and virtualenvs. They are vendored or generated, they are
// where a naive walk spends its whole budget, and their manifests are not
// the project's.
func skipDir(name string) bool {
	switch name {
	case ".git", ".hg", ".svn", ".bzr", ".jj",
		"node_modules", "bower_components", "jspm_packages", "vendor", "third_party",
		"dist", "build", "target", "_build", "dist-newstyle", ".build", "zig-out",
		".venv", "venv", "__pycache__", ".tox", ".nox", ".eggs", "site-packages",
		".mypy_cache", ".pytest_cache", ".ruff_cache",
		".next", ".nuxt", ".svelte-kit", ".angular", ".output", ".turbo", ".parcel-cache",
		".vercel", ".expo", ".sass-cache", "elm-stuff",
		".ralph", ".cache", "coverage", ".nyc_output",
		".gradle", ".dart_tool", ".pub-cache", ".stack-work", ".zig-cache", "zig-cache",
		".terraform", ".direnv", ".devenv", ".bundle",
		"Pods", "Carthage", "DerivedData":
		return true
	}
	return strings.HasSuffix(name, ".egg-info")
}

// noDetectDir reports directories whose manifests describe test inputs or
// tooling rather than a project: hidden and underscored directories and
// fixture trees.
// Their files are still counted.
func noDetectDir(name string) bool {
	switch name {
	case "testdata", "fixtures", "__fixtures__", "test-fixtures":
		return true
	}
	// "_" as well as ".": the go tool ignores both, and elsewhere they mark
	// private or generated trees just as often.
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// dirNode is one directory queued or entered by the breadth-first walk.
// Nodes are kept after they are read: the post-walk pass folds their
// source counts up the tree.
type dirNode struct {
	rel      string        // root-relative, slash-separated; "" for the root
	parts    []string      // rel split on "/"
	parent   int           // index into walker.nodes; -1 for the root
	top      int           // index into walker.top of its top-level ancestor; -1 for the root
	rules    []ignore.Rule // ignore rules in force for its entries
	noDetect bool          // inside a hidden or fixture directory
	counts   srcCounts     // own files, then (after fold) the subtree's up to nested projects
	boundary bool          // holds a project of its own, so its counts stay out of its parent's
	read     bool          // listed in full (Summary.Dirs counts these)
}

type walker struct {
	ctx      context.Context
	root     string
	git      GitConfig
	budget   time.Duration
	deadline time.Time
	maxFiles int

	nodes  []dirNode
	cands  []*candidate
	byNode map[int]*candidate

	files   int
	langs   map[string]int
	top     []Entry
	configs []string

	units, nextCheck int
	truncated        bool
	reason           string
	scratch          []string
	lister           lister // lists each directory
}

func newWalker(ctx context.Context, root string, start time.Time, opts Options) *walker {
	return &walker{
		ctx:       ctx,
		root:      root,
		git:       opts.Git,
		budget:    opts.Budget,
		deadline:  start.Add(opts.Budget),
		maxFiles:  opts.MaxFiles,
		byNode:    map[int]*candidate{},
		langs:     map[string]int{},
		nextCheck: checkEvery,
	}
}

// walk reads the root in full, then the rest of the tree breadth-first
// until it is done or a budget runs out. Breadth-first, so that when the
// budget does run out, what was missed is the deep end of the tree, not a
// whole top-level project.
func (w *walker) walk() error {
	w.nodes = append(w.nodes, dirNode{parent: -1, top: -1, rules: w.excludeRules()})
	if err := w.readDir(0); err != nil {
		return err
	}
	w.rootConfigs()
	for i := 1; i < len(w.nodes) && !w.truncated; i++ {
		w.units += costPerDir
		if w.units >= w.nextCheck && w.overBudget() {
			break
		}
		_ = w.readDir(i) // an unreadable subdirectory is skipped, not fatal
	}
	return nil
}

// overBudget checks ctx and the clock, and stops the walk when either says
// so.
func (w *walker) overBudget() bool {
	w.nextCheck = w.units + checkEvery
	if err := w.ctx.Err(); err != nil {
		w.stop(fmt.Sprintf("stopped: %v (%s files seen)", err, commas(w.files)))
		return true
	}
	if time.Now().After(w.deadline) {
		w.stop(fmt.Sprintf("stopped after %v (%s files seen)", w.budget, commas(w.files)))
		return true
	}
	return false
}

func (w *walker) stop(reason string) {
	w.truncated = true
	w.reason = reason
}

func (w *walker) abs(rel string) string {
	if rel == "" {
		return w.root
	}
	return filepath.Join(w.root, filepath.FromSlash(rel))
}

// readDir lists directory i, applies ignore rules, records any project
// markers and queues its subdirectories. The root (i == 0) is read in full
// regardless of the time budget.
func (w *walker) readDir(i int) error {
	n := w.nodes[i] // a copy: appending children below may move w.nodes
	dir := w.abs(n.rel)
	ents, err := w.lister.list(dir)
	if err != nil {
		return fmt.Errorf("list directory: %w", err) // err names the path
	}

	rules := n.rules
	if j := sort.Search(len(ents), func(k int) bool { return ents[k].name >= ".gitignore" }); j < len(ents) && ents[j].name == ".gitignore" && !ents[j].dir {
		if data, err := readSmall(filepath.Join(dir, ".gitignore")); err == nil {
			if more := ignore.Parse(data, len(n.parts)); len(more) > 0 {
				// Full slice expression: siblings share the parent's rules
				// and must not see each other's additions.
				rules = append(rules[:len(rules):len(rules)], more...)
			}
		}
	}

	// Filter first, so that markers are judged on what is not ignored.
	sc := append(w.scratch[:0], n.parts...)
	kept := ents[:0]
	for _, e := range ents {
		if i > 0 {
			w.units++
			if w.units >= w.nextCheck && w.overBudget() {
				w.scratch = sc
				return nil // a half-read directory is neither counted nor detected
			}
		}
		name := e.name
		if name == ".git" {
			continue
		}
		sc = append(sc[:len(n.parts)], name)
		if len(rules) > 0 && ignore.Ignored(rules, sc, e.dir) {
			continue
		}
		kept = append(kept, e)
	}
	w.scratch = sc
	w.nodes[i].read = true

	hasMix := false
	if !n.noDetect {
		if c := w.addCandidate(i, n.rel, kept); c != nil {
			hasMix = c.has("mix.exs")
		}
	}

	for _, e := range kept {
		name := e.name
		if e.dir {
			// Elixir keeps fetched dependencies in deps/, a name too common
			// elsewhere to skip always.
			skip := skipDir(name) || (name == "deps" && hasMix)
			if i == 0 {
				w.top = append(w.top, Entry{Name: name, Dir: true, Skipped: skip})
			}
			if skip {
				continue
			}
			child := dirNode{
				rel:      joinRel(n.rel, name),
				parts:    append(n.parts[:len(n.parts):len(n.parts)], name),
				parent:   i,
				top:      n.top,
				rules:    rules,
				noDetect: n.noDetect || noDetectDir(name),
			}
			if i == 0 {
				child.top = len(w.top) - 1
			}
			w.nodes = append(w.nodes, child)
			continue
		}
		if w.files >= w.maxFiles {
			w.stop(fmt.Sprintf("stopped at %s files", commas(w.maxFiles)))
			return nil
		}
		w.files++
		lang, kind := fileLang(name)
		if lang != "" {
			w.langs[lang]++
		}
		if kind < numSrcKinds {
			w.nodes[i].counts[kind]++
		}
		if i == 0 {
			w.top = append(w.top, Entry{Name: name})
		} else {
			w.top[n.top].Files++
		}
	}
	return nil
}

// excludeRules reads the excludes git applies before any .gitignore:
// the user's global excludes file (lowest priority), then
// .git/info/exclude, following a .git file (worktree or submodule) to the
// common git directory that holds it. Outside a git repository there are
// none.
func (w *walker) excludeRules() []ignore.Rule {
	gitDir := filepath.Join(w.root, ".git")
	info, err := os.Lstat(gitDir)
	if err != nil {
		return nil
	}
	if !info.IsDir() {
		data, err := readSmall(gitDir)
		if err != nil {
			return nil
		}
		line, _, _ := strings.Cut(string(data), "\n")
		target, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
		if !ok {
			return nil
		}
		gitDir = strings.TrimSpace(target)
		if !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(w.root, gitDir)
		}
		if common, err := readSmall(filepath.Join(gitDir, "commondir")); err == nil {
			c := strings.TrimSpace(string(common))
			if !filepath.IsAbs(c) {
				c = filepath.Join(gitDir, c)
			}
			gitDir = c
		}
	}
	var rules []ignore.Rule
	if path := w.git.excludesFile(w.root, gitDir); path != "" {
		if data, err := readSmall(path); err == nil {
			rules = ignore.Parse(data, 0)
		}
	}
	if data, err := readSmall(filepath.Join(gitDir, "info", "exclude")); err == nil {
		rules = append(rules, ignore.Parse(data, 0)...)
	}
	return rules
}

// excludesFile is the excludes file git reads for every repository:
// core.excludesFile from the system's, the user's or the repository's git
// config (the last one set wins, as in git), else
// $XDG_CONFIG_HOME/git/ignore, which defaults to ~/.config/git/ignore.
// Include directives are not followed.
func (g GitConfig) excludesFile(root, gitDir string) string {
	home, xdg := g.Home, g.xdg()
	configs := append(g.configs(), filepath.Join(gitDir, "config"))
	path := ""
	for _, c := range configs {
		data, err := readSmall(c)
		if err != nil {
			continue
		}
		// A file git cannot parse is one git refuses to run with: it
		// sets nothing here.
		if cfg, err := gitconfig.Parse(data); err == nil {
			if v, ok := cfg.Get("core", "", "excludesfile"); ok {
				path = v
			}
		}
	}
	switch {
	case path == "" && xdg != "":
		return filepath.Join(xdg, "git", "ignore")
	case path == "~" || strings.HasPrefix(path, "~/"):
		if home == "" {
			return ""
		}
		return filepath.Join(home, path[1:])
	case path != "" && !filepath.IsAbs(path):
		return filepath.Join(root, path)
	}
	return path
}

// rootConfigs records config files at the root and in the few well-known
// subdirectories (CI, dev containers) that hold them, before the walk, so
// a truncated walk still lists them.
func (w *walker) rootConfigs() {
	root := w.nodes[0]
	ignoredAt := func(isDir bool, p ...string) bool { return ignore.Ignored(root.rules, p, isDir) }
	for _, e := range w.top {
		switch {
		case !e.Dir && isConfigFile(e.Name):
			w.configs = append(w.configs, e.Name)
		case e.Name == ".github" && e.Dir:
			if ents, err := os.ReadDir(filepath.Join(w.root, ".github", "workflows")); err == nil && !ignoredAt(true, ".github", "workflows") {
				for _, f := range ents {
					if n := f.Name(); !f.IsDir() && (strings.HasSuffix(n, ".yml") || strings.HasSuffix(n, ".yaml")) {
						w.configs = append(w.configs, ".github/workflows/"+n)
					}
				}
			}
			w.addIfFile(".github/dependabot.yml")
		case e.Name == ".circleci" && e.Dir:
			w.addIfFile(".circleci/config.yml")
		case e.Name == ".devcontainer" && e.Dir:
			w.addIfFile(".devcontainer/devcontainer.json")
		}
	}
}

func (w *walker) addIfFile(rel string) {
	if info, err := os.Stat(w.abs(rel)); err == nil && info.Mode().IsRegular() {
		w.configs = append(w.configs, rel)
	}
}

// isConfigFile reports names worth telling an agent about: tool and CI
// configuration that says how the project is built, checked or shipped.
func isConfigFile(name string) bool {
	switch name {
	case ".editorconfig", "Makefile", "makefile", "GNUmakefile", "justfile", "Justfile", ".justfile",
		"Taskfile.yml", "Taskfile.yaml", "Dockerfile", "Containerfile", ".dockerignore",
		"docker-compose.yml", "docker-compose.yaml", "compose.yml", "compose.yaml",
		".pre-commit-config.yaml", ".tool-versions", ".envrc", "lefthook.yml", ".lefthook.yml",
		".gitlab-ci.yml", ".travis.yml", "azure-pipelines.yml", "Jenkinsfile", "bitbucket-pipelines.yml",
		"renovate.json", ".renovaterc", "codecov.yml", ".codecov.yml", "sonar-project.properties",
		".markdownlint.json", ".markdownlint.yaml", ".markdownlint.yml", ".yamllint", ".yamllint.yml",
		".yamllint.yaml", ".shellcheckrc", ".hadolint.yaml", "Procfile", "fly.toml", "netlify.toml", "vercel.json",
		// Go
		".golangci.yml", ".golangci.yaml", ".golangci.toml", ".golangci.json", ".goreleaser.yml", ".goreleaser.yaml",
		// JavaScript and TypeScript
		"jsconfig.json", ".babelrc", "biome.json", "biome.jsonc", ".nvmrc", ".node-version", ".npmrc", ".yarnrc.yml",
		"pnpm-workspace.yaml", "turbo.json", "nx.json", "lerna.json",
		// Python
		"ruff.toml", ".ruff.toml", "mypy.ini", ".mypy.ini", "pytest.ini", "tox.ini", "setup.cfg", ".flake8",
		".pylintrc", "pylintrc", ".python-version", "noxfile.py", "conftest.py",
		// Rust
		"rustfmt.toml", ".rustfmt.toml", "clippy.toml", ".clippy.toml", "rust-toolchain", "rust-toolchain.toml", "deny.toml",
		// Ruby, PHP
		".rubocop.yml", ".rspec", "phpunit.xml", "phpunit.xml.dist", "phpstan.neon", "phpstan.neon.dist", "psalm.xml",
		".php-cs-fixer.php", ".php-cs-fixer.dist.php",
		// C and C++, .NET, JVM, others
		".clang-format", ".clang-tidy", "CMakePresets.json", "global.json", "Directory.Build.props", ".scalafmt.conf",
		"detekt.yml", ".formatter.exs", ".credo.exs", "analysis_options.yaml", ".swiftlint.yml", ".swift-format":
		return true
	}
	for _, p := range []string{
		"tsconfig.", ".eslintrc", "eslint.config.", ".prettierrc", "prettier.config.", ".stylelintrc",
		"jest.config.", "vitest.config.", "vite.config.", "webpack.config.", "rollup.config.", "babel.config.",
		"next.config.", "nuxt.config.", "svelte.config.", "astro.config.", "tailwind.config.", "postcss.config.",
		"playwright.config.", "cypress.config.", "Dockerfile.", "docker-compose.",
	} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return strings.HasSuffix(name, ".Dockerfile")
}

// readSmall reads at most maxReadBytes of a file: manifests are small, and
// a huge one is not worth the budget.
func readSmall(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Errors from os name the file already; callers treat any error as
	// "nothing to learn here".
	return io.ReadAll(io.LimitReader(f, maxReadBytes))
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// contains reports whether sorted holds s.
func contains(sorted []string, s string) bool {
	i := sort.SearchStrings(sorted, s)
	return i < len(sorted) && sorted[i] == s
}

// commas formats n with thousands separators, as people write it.
func commas(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + commas(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
