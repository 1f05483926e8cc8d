package projectdetect

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

type cmdKind uint8

const (
	kindBuild cmdKind = iota
	kindTest
	kindLint
)

// found is one command with its kind, before ordering.
type found struct {
	kind cmdKind
	cmd  Command
}

// namedKind maps a conventional task or script name to a command kind.
type namedKind struct {
	name string
	kind cmdKind
}

// taskNames maps conventional Makefile target and justfile recipe names to
// command kinds, in order of preference within a kind.
func taskNames() []namedKind {
	return []namedKind{
		{"build", kindBuild}, {"compile", kindBuild}, {"all", kindBuild},
		{"test", kindTest}, {"tests", kindTest}, {"test-unit", kindTest}, {"unit-test", kindTest}, {"check", kindTest},
		{"lint", kindLint}, {"vet", kindLint}, {"staticcheck", kindLint}, {"typecheck", kindLint},
		{"fmt-check", kindLint}, {"check-fmt", kindLint}, {"format-check", kindLint}, {"check-format", kindLint},
		{"fmt", kindLint}, {"format", kindLint},
	}
}

// taskCommands turns target or recipe names into commands. "all" only
// counts when there is no "build": it is usually the default target and
// "make build" says more.
func taskCommands(names []string, tool, file, what, dir string) []found {
	var out []found
	hasBuild := containsUnsorted(names, "build")
	for _, tn := range taskNames() {
		if !containsUnsorted(names, tn.name) || (tn.name == "all" && hasBuild) {
			continue
		}
		out = append(out, found{tn.kind, Command{
			Run:    tool + " " + tn.name,
			Dir:    dir,
			Source: fmt.Sprintf("%s %s %s", file, what, tn.name),
		}})
	}
	return out
}

// scriptNames maps package.json, composer.json and deno.json script names
// to command kinds.
func scriptNames() []namedKind {
	return []namedKind{
		{"build", kindBuild},
		{"test", kindTest}, {"tests", kindTest},
		{"lint", kindLint}, {"typecheck", kindLint}, {"type-check", kindLint}, {"check-types", kindLint},
		{"format:check", kindLint}, {"cs", kindLint}, {"phpstan", kindLint}, {"analyse", kindLint},
	}
}

// commandsFor gathers the commands of one candidate: the project's own
// (Makefile, justfile, scripts) first, then ecosystem defaults.
func commandsFor(c *candidate) []found {
	var explicit, defaults []found
	if mk := c.first("GNUmakefile", "makefile", "Makefile"); mk != "" {
		explicit = append(explicit, taskCommands(makeTargets(c.read(mk)), "make", mk, "target", c.dir)...)
	}
	if jf := c.first("justfile", "Justfile", ".justfile"); jf != "" {
		explicit = append(explicit, taskCommands(justRecipes(c.read(jf)), "just", jf, "recipe", c.dir)...)
	}
	for _, t := range c.types {
		e, d := typeCommands(c, t)
		explicit = append(explicit, e...)
		defaults = append(defaults, d...)
	}
	return append(explicit, defaults...)
}

// typeCommands returns the explicit and default commands for one type.
func typeCommands(c *candidate, t Type) (explicit, defaults []found) {
	dir := c.dir
	add := func(list *[]found, kind cmdKind, run, source string) {
		*list = append(*list, found{kind, Command{Run: run, Dir: dir, Source: source}})
	}
	def := func(kind cmdKind, run, source string) { add(&defaults, kind, run, source) }

	switch t.Name {
	case "go":
		def(kindBuild, "go build ./...", "default for go")
		def(kindTest, "go test ./...", "default for go")
		if cfg := c.first(".golangci.yml", ".golangci.yaml", ".golangci.toml", ".golangci.json"); cfg != "" {
			def(kindLint, "golangci-lint run", cfg)
		}
		def(kindLint, "go vet ./...", "default for go")

	case "node", "typescript":
		m := c.json("package.json")
		for _, s := range scriptNames() {
			v, ok := m.Scripts[s.name].(string)
			if !ok || (s.name == "test" && strings.Contains(v, "no test specified")) {
				continue // npm init's placeholder fails on purpose
			}
			add(&explicit, s.kind, runScript(t.PackageManager, s.name), "package.json scripts."+s.name)
		}

	case "deno":
		cfg := c.first("deno.json", "deno.jsonc")
		m := c.json(cfg)
		for _, s := range scriptNames() {
			if _, ok := m.Tasks[s.name]; ok {
				add(&explicit, s.kind, "deno task "+s.name, cfg+" tasks."+s.name)
			}
		}
		def(kindTest, "deno test", "default for deno")
		def(kindLint, "deno lint", "default for deno")

	case "python":
		pythonCommands(c, t.PackageManager, def)

	case "rust":
		flag := ""
		if c.toml("Cargo.toml").table("workspace") != "" {
			flag = " --workspace"
		}
		def(kindBuild, "cargo build"+flag, "Cargo.toml")
		def(kindTest, "cargo test"+flag, "Cargo.toml")
		def(kindLint, "cargo clippy"+flag, "Cargo.toml")

	case "java", "kotlin":
		if c.has("pom.xml") {
			mvn := "mvn"
			if c.has("mvnw") {
				mvn = "./mvnw"
			}
			def(kindBuild, mvn+" -q -DskipTests package", "pom.xml")
			def(kindTest, mvn+" -q test", "pom.xml")
		}
		if src := c.first("build.gradle.kts", "build.gradle", "settings.gradle.kts", "settings.gradle"); src != "" {
			g := "gradle"
			if c.has("gradlew") {
				g = "./gradlew"
			}
			def(kindBuild, g+" assemble", src)
			def(kindTest, g+" test", src)
			build := c.text("build.gradle.kts") + c.text("build.gradle")
			for _, p := range []struct{ plugin, task string }{
				{"spotless", "spotlessCheck"}, {"ktlint", "ktlintCheck"}, {"detekt", "detekt"},
			} {
				if strings.Contains(build, p.plugin) {
					def(kindLint, g+" "+p.task, src)
				}
			}
		}

	case "ruby":
		pre := ""
		if c.has("Gemfile") {
			pre = "bundle exec "
		}
		switch {
		case c.has(".rspec"):
			def(kindTest, pre+"rspec", ".rspec")
		case c.hasDir("spec"):
			def(kindTest, pre+"rspec", "default for ruby (spec/)")
		case c.hasDir("bin") && fileExists(filepath.Join(c.abs, "bin", "rails")):
			def(kindTest, "bin/rails test", "bin/rails")
		case c.has("Rakefile"):
			def(kindTest, pre+"rake test", "Rakefile")
		}
		if c.has(".rubocop.yml") {
			def(kindLint, pre+"rubocop", ".rubocop.yml")
		}

	case "php":
		m := c.json("composer.json")
		for _, s := range scriptNames() {
			if _, ok := m.Scripts[s.name]; !ok {
				continue
			}
			run := "composer run-script " + s.name
			if s.name == "test" {
				run = "composer test"
			}
			add(&explicit, s.kind, run, "composer.json scripts."+s.name)
		}
		if cfg := c.first("phpunit.xml", "phpunit.xml.dist"); cfg != "" {
			def(kindTest, "vendor/bin/phpunit", cfg)
		}
		if cfg := c.first("phpstan.neon", "phpstan.neon.dist"); cfg != "" {
			def(kindLint, "vendor/bin/phpstan analyse", cfg)
		}

	case "dotnet":
		// With several solutions or projects in one directory, a bare
		// "dotnet build" refuses to guess; name the first solution.
		target, src := "", t.Markers[0]
		if n := dotnetFiles(c); len(n) > 1 {
			target, src = " "+n[0], n[0]
		}
		def(kindBuild, "dotnet build"+target, src)
		def(kindTest, "dotnet test"+target, src)
		def(kindLint, "dotnet format"+target+" --verify-no-changes", src)

	case "c", "cpp":
		switch {
		case c.has("CMakeLists.txt"):
			def(kindBuild, "cmake -S . -B build && cmake --build build", "CMakeLists.txt")
			def(kindTest, "ctest --test-dir build", "CMakeLists.txt")
		case c.has("meson.build"):
			def(kindBuild, "meson setup build && meson compile -C build", "meson.build")
			def(kindTest, "meson test -C build", "meson.build")
		}

	case "elixir":
		def(kindBuild, "mix compile", "mix.exs")
		def(kindTest, "mix test", "mix.exs")
		def(kindLint, "mix format --check-formatted", "mix.exs")
		if strings.Contains(c.text("mix.exs"), ":credo") {
			def(kindLint, "mix credo", "mix.exs")
		}

	case "swift":
		def(kindBuild, "swift build", "Package.swift")
		def(kindTest, "swift test", "Package.swift")
		if c.has(".swiftlint.yml") {
			def(kindLint, "swiftlint", ".swiftlint.yml")
		}

	case "dart":
		tool := "dart"
		if t.PackageManager == "flutter" {
			tool = "flutter"
		}
		def(kindTest, tool+" test", "pubspec.yaml")
		def(kindLint, tool+" analyze", "pubspec.yaml")

	case "haskell":
		tool, src := "cabal", t.Markers[0]
		if c.has("stack.yaml") {
			tool, src = "stack", "stack.yaml"
		}
		def(kindBuild, tool+" build", src)
		def(kindTest, tool+" test", src)

	case "scala":
		def(kindBuild, "sbt compile", "build.sbt")
		def(kindTest, "sbt test", "build.sbt")
		if c.has(".scalafmt.conf") {
			def(kindLint, "sbt scalafmtCheckAll", ".scalafmt.conf")
		}

	case "clojure":
		if c.has("project.clj") {
			def(kindTest, "lein test", "project.clj")
		} else if deps := c.text("deps.edn"); strings.Contains(deps, ":test") {
			run := "clojure -M:test"
			if strings.Contains(deps, ":exec-fn") {
				run = "clojure -X:test"
			}
			def(kindTest, run, "deps.edn alias :test")
		}

	case "zig":
		def(kindBuild, "zig build", "build.zig")
		def(kindTest, "zig build test", "build.zig")

	case "ocaml":
		def(kindBuild, "dune build", "dune-project")
		def(kindTest, "dune test", "dune-project")
	}
	return explicit, defaults
}

// runScript is how a package manager runs a package.json script. bun is
// always "bun run": "bun test" and "bun build" are bun's own commands.
func runScript(pm, script string) string {
	switch pm {
	case "bun":
		return "bun run " + script
	case "pnpm", "yarn":
	default:
		pm = "npm"
	}
	if script == "test" {
		return pm + " test"
	}
	return pm + " run " + script
}

func pythonCommands(c *candidate, pm string, def func(cmdKind, string, string)) {
	pre := map[string]string{"uv": "uv run ", "poetry": "poetry run ", "pdm": "pdm run ", "pipenv": "pipenv run "}[pm]
	doc := c.toml("pyproject.toml")
	setupCfg := iniSections(c.read("setup.cfg"))
	toxIni := iniSections(c.read("tox.ini"))

	if doc.table("build-system") != "" {
		switch pm {
		case "uv", "poetry", "pdm":
			def(kindBuild, pm+" build", "pyproject.toml [build-system]")
		default:
			def(kindBuild, "python -m build", "pyproject.toml [build-system]")
		}
	}

	testSrc := ""
	switch {
	case doc.table("tool.pytest") != "":
		testSrc = "pyproject.toml [" + doc.table("tool.pytest") + "]"
	case c.has("pytest.ini"):
		testSrc = "pytest.ini"
	case containsUnsorted(setupCfg, "tool:pytest"):
		testSrc = "setup.cfg [tool:pytest]"
	case containsUnsorted(toxIni, "pytest"):
		testSrc = "tox.ini [pytest]"
	case c.has("conftest.py"):
		testSrc = "conftest.py"
	case c.hasDir("tests") || c.hasDir("test"):
		testSrc = "default for python"
	}
	if testSrc != "" {
		def(kindTest, pre+"pytest", testSrc)
	}
	if containsUnsorted(toxIni, "tox") || containsUnsorted(setupCfg, "tox:tox") || doc.table("tool.tox") != "" {
		def(kindTest, "tox", firstNonEmpty(c.first("tox.ini"), "pyproject.toml [tool.tox]"))
	}
	if c.has("noxfile.py") {
		def(kindTest, "nox", "noxfile.py")
	}

	switch {
	case doc.table("tool.ruff") != "":
		def(kindLint, pre+"ruff check .", "pyproject.toml ["+doc.table("tool.ruff")+"]")
	case c.first("ruff.toml", ".ruff.toml") != "":
		def(kindLint, pre+"ruff check .", c.first("ruff.toml", ".ruff.toml"))
	}
	switch {
	case doc.table("tool.mypy") != "":
		def(kindLint, pre+"mypy .", "pyproject.toml ["+doc.table("tool.mypy")+"]")
	case c.first("mypy.ini", ".mypy.ini") != "":
		def(kindLint, pre+"mypy .", c.first("mypy.ini", ".mypy.ini"))
	case containsUnsorted(setupCfg, "mypy"):
		def(kindLint, pre+"mypy .", "setup.cfg [mypy]")
	}
	switch {
	case c.has(".flake8"):
		def(kindLint, pre+"flake8", ".flake8")
	case containsUnsorted(setupCfg, "flake8"):
		def(kindLint, pre+"flake8", "setup.cfg [flake8]")
	case containsUnsorted(toxIni, "flake8"):
		def(kindLint, pre+"flake8", "tox.ini [flake8]")
	}
	if doc.table("tool.black") != "" {
		def(kindLint, pre+"black --check .", "pyproject.toml [tool.black]")
	}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// dotnetFiles lists solutions, then projects, in a candidate.
func dotnetFiles(c *candidate) []string {
	var sln, proj []string
	for _, f := range c.files {
		switch filepath.Ext(f) {
		case ".sln", ".slnx":
			sln = append(sln, f)
		case ".csproj", ".fsproj", ".vbproj":
			proj = append(proj, f)
		}
	}
	return append(sln, proj...)
}

// gatherCommands orders commands by directory (root first), keeps each
// directory's own commands ahead of its defaults, and drops repeats.
func gatherCommands(cands []*candidate) Commands {
	out := Commands{Build: []Command{}, Test: []Command{}, Lint: []Command{}}
	sorted := append([]*candidate(nil), cands...)
	sort.SliceStable(sorted, func(i, j int) bool { return dirLess(sorted[i].dir, sorted[j].dir) })
	seen := map[Command]bool{}
	for _, c := range sorted {
		if c.dir != "." && len(c.types) == 0 {
			continue // a Makefile in docs/ is not how the project is built
		}
		for _, f := range commandsFor(c) {
			key := Command{Run: f.cmd.Run, Dir: f.cmd.Dir}
			if seen[key] {
				continue
			}
			seen[key] = true
			switch f.kind {
			case kindBuild:
				out.Build = append(out.Build, f.cmd)
			case kindTest:
				out.Test = append(out.Test, f.cmd)
			case kindLint:
				out.Lint = append(out.Lint, f.cmd)
			}
		}
	}
	return out
}
