package projectdetect

import (
	"path/filepath"
	"sort"
	"strings"
)

// candidate is a directory holding at least one marker file, recorded
// during the walk and resolved after it, when source counts are known.
type candidate struct {
	node  int
	dir   string   // root-relative; "." for the root
	abs   string   // absolute path
	files []string // names of the files kept in it, sorted
	dirs  []string // names of the subdirectories kept in it, sorted
	ecos  []*eco
	types []Type // what it resolved to

	cache     map[string][]byte // file contents, read on first use
	manifests map[string]jsonManifest
	tomls     map[string]tomlDoc
}

// eco is one ecosystem's claim on a candidate directory.
type eco struct {
	family    string   // go, node, deno, python, rust, maven, gradle, ruby, php, dotnet, cmake, meson, make, just, elixir, swift, dart, haskell, sbt, clojure, zig, ocaml
	markers   []string // the files that made the claim
	folded    bool     // a member of a workspace declared further up
	workspace bool     // declares members below it
	memberTS  bool     // node: a folded member is TypeScript
}

// markerFamily returns the family a file name marks, or "".
func markerFamily(name string) string {
	switch name {
	case "go.mod", "go.work":
		return "go"
	case "package.json":
		return "node"
	case "deno.json", "deno.jsonc":
		return "deno"
	case "pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile":
		return "python"
	case "Cargo.toml":
		return "rust"
	case "pom.xml":
		return "maven"
	case "build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts":
		return "gradle"
	case "Gemfile":
		return "ruby"
	case "composer.json":
		return "php"
	case "CMakeLists.txt":
		return "cmake"
	case "meson.build":
		return "meson"
	case "GNUmakefile", "makefile", "Makefile":
		return "make"
	case "justfile", "Justfile", ".justfile":
		return "just"
	case "mix.exs":
		return "elixir"
	case "Package.swift":
		return "swift"
	case "pubspec.yaml":
		return "dart"
	case "stack.yaml", "cabal.project":
		return "haskell"
	case "build.sbt":
		return "sbt"
	case "deps.edn", "project.clj":
		return "clojure"
	case "build.zig":
		return "zig"
	case "dune-project":
		return "ocaml"
	}
	switch filepath.Ext(name) {
	case ".sln", ".slnx", ".csproj", ".fsproj", ".vbproj":
		return "dotnet"
	case ".cabal":
		return "haskell"
	case ".gemspec":
		return "ruby"
	}
	return ""
}

// addCandidate records directory i, given its kept entries, if any of its
// files is a marker, and returns the record (nil if none). Most
// directories hold no marker, so the name lists are only built for those
// that do.
func (w *walker) addCandidate(i int, rel string, kept []dirEntry) *candidate {
	var ecos []*eco
	for _, d := range kept {
		if d.dir {
			continue
		}
		f := d.name
		fam := markerFamily(f)
		if fam == "" {
			continue
		}
		var e *eco
		for _, x := range ecos {
			if x.family == fam {
				e = x
			}
		}
		if e == nil {
			e = &eco{family: fam}
			ecos = append(ecos, e)
		}
		e.markers = append(e.markers, f)
	}
	if len(ecos) == 0 {
		return nil
	}
	dir := rel
	if dir == "" {
		dir = "."
	}
	c := &candidate{node: i, dir: dir, abs: w.abs(rel), ecos: ecos}
	for _, d := range kept { // already sorted by name
		if d.dir {
			c.dirs = append(c.dirs, d.name)
		} else {
			c.files = append(c.files, d.name)
		}
	}
	w.cands = append(w.cands, c)
	w.byNode[i] = c
	return c
}

func (c *candidate) has(name string) bool { return contains(c.files, name) }

// hasDir reports a subdirectory that was kept (not ignored).
func (c *candidate) hasDir(name string) bool { return contains(c.dirs, name) }

// first returns the first of names present in c, or "".
func (c *candidate) first(names ...string) string {
	for _, n := range names {
		if c.has(n) {
			return n
		}
	}
	return ""
}

// read returns a file's contents, or nil when it cannot be read; an
// unreadable manifest still marks the directory, it just tells us less.
func (c *candidate) read(name string) []byte {
	if name == "" {
		return nil
	}
	if data, ok := c.cache[name]; ok {
		return data
	}
	data, _ := readSmall(filepath.Join(c.abs, name))
	if c.cache == nil {
		c.cache = map[string][]byte{}
	}
	c.cache[name] = data
	return data
}

func (c *candidate) text(name string) string { return string(c.read(name)) }

// json returns a JSON manifest, parsed once per candidate.
func (c *candidate) json(name string) jsonManifest {
	if m, ok := c.manifests[name]; ok {
		return m
	}
	m := parseJSONManifest(c.read(name))
	if c.manifests == nil {
		c.manifests = map[string]jsonManifest{}
	}
	c.manifests[name] = m
	return m
}

// toml returns a TOML file's tables and keys, parsed once per candidate.
func (c *candidate) toml(name string) tomlDoc {
	if d, ok := c.tomls[name]; ok {
		return d
	}
	d := parseTOML(c.read(name))
	if c.tomls == nil {
		c.tomls = map[string]tomlDoc{}
	}
	c.tomls[name] = d
	return d
}

// ancestors calls fn for each candidate above c, nearest first, until fn
// returns false.
func (w *walker) ancestors(c *candidate, fn func(*candidate) bool) {
	for p := w.nodes[c.node].parent; p >= 0; p = w.nodes[p].parent {
		if a := w.byNode[p]; a != nil && !fn(a) {
			return
		}
	}
}

// foldWorkspaces marks ecosystems that belong to a workspace declared in
// an ancestor, and works out which of the rest declare workspaces.
// Candidates are in breadth-first order, so ancestors are settled first.
//
// Past maxTypes unfolded claims the rest are dropped (marked folded), so
// that the reads after the walk stay bounded however many manifests a tree
// holds; breadth-first order keeps the shallowest, which matter most.
func (w *walker) foldWorkspaces() {
	claims := 0
	for _, c := range w.cands {
		for _, e := range c.ecos {
			if e.family == "make" || e.family == "just" {
				continue // settled with the types, once counts are known
			}
			if claims >= maxTypes {
				e.folded = true
				continue
			}
			w.ancestors(c, func(a *candidate) bool {
				for _, ae := range a.ecos {
					if ae.folded || ae.family != e.family {
						continue
					}
					// A nested requirements.txt or setup.cfg under a Python
					// project (docs/requirements.txt) is part of it.
					weakPython := e.family == "python" && c.first("pyproject.toml", "setup.py") == ""
					if ae.workspace || weakPython {
						e.folded = true
						if e.family == "node" && hasTSConfig(c) {
							ae.memberTS = true
						}
						return false
					}
				}
				return true
			})
			if !e.folded {
				claims++
				e.workspace = w.declaresWorkspace(c, e)
			}
		}
	}
}

func (w *walker) declaresWorkspace(c *candidate, e *eco) bool {
	switch e.family {
	case "go":
		return c.has("go.work")
	case "node":
		return c.first("pnpm-workspace.yaml", "lerna.json") != "" || c.json("package.json").hasWorkspaces()
	case "rust":
		return c.toml("Cargo.toml").table("workspace") != ""
	case "python":
		return c.toml("pyproject.toml").table("tool.uv.workspace") != ""
	case "maven":
		return strings.Contains(c.text("pom.xml"), "<modules>")
	case "gradle":
		return c.first("settings.gradle", "settings.gradle.kts") != ""
	case "dotnet":
		for _, m := range e.markers {
			if ext := filepath.Ext(m); ext == ".sln" || ext == ".slnx" {
				return true
			}
		}
	case "elixir":
		return strings.Contains(c.text("mix.exs"), "apps_path")
	case "haskell":
		return c.first("stack.yaml", "cabal.project") != ""
	case "cmake", "meson":
		// Nested CMakeLists.txt and meson.build files are nearly always
		// add_subdirectory()/subdir() parts of the one above.
		return true
	}
	return false
}

func hasTSConfig(c *candidate) bool {
	for _, f := range c.files {
		if strings.HasPrefix(f, "tsconfig") && strings.HasSuffix(f, ".json") {
			return true
		}
	}
	return false
}

// foldCounts flags directories that hold a project of their own, then
// folds source counts up the tree, stopping at those directories, so each
// project's counts are its own sources and not a nested project's.
func (w *walker) foldCounts() {
	for _, c := range w.cands {
		for _, e := range c.ecos {
			if !e.folded && e.family != "make" && e.family != "just" {
				w.nodes[c.node].boundary = true
			}
		}
	}
	// Children always come after their parent in breadth-first order.
	for i := len(w.nodes) - 1; i > 0; i-- {
		n := &w.nodes[i]
		if n.boundary {
			continue
		}
		p := &w.nodes[n.parent]
		for k := range n.counts {
			p.counts[k] += n.counts[k]
		}
	}
}

// resolve turns candidates into types, once counts are folded.
func (w *walker) resolve() {
	for _, c := range w.cands {
		counts := w.nodes[c.node].counts
		for _, e := range c.ecos {
			if e.folded || e.family == "make" || e.family == "just" {
				continue
			}
			c.types = appendType(c.types, describe(c, e, counts))
		}
		if len(c.types) > 0 || !c.hasFamily("make") {
			continue
		}
		// A Makefile makes a C or C++ project only where nothing else
		// claims the directory, C and C++ sources under it outnumber
		// sources in other languages (a Makefile beside some cgo files is
		// not a C project), and no C or C++ project above covers them.
		if native := counts[srcC] + counts[srcCpp]; native == 0 || native+counts[srcHeader] < counts[srcOther] {
			continue
		}
		covered := false
		w.ancestors(c, func(a *candidate) bool {
			for _, t := range a.types {
				if t.Name == "c" || t.Name == "cpp" {
					covered = true
				}
			}
			return !covered
		})
		if !covered {
			c.types = appendType(c.types, Type{
				Name:           cOrCpp(counts, ""),
				Dir:            c.dir,
				Markers:        c.familyMarkers("make"),
				PackageManager: cPackageManager(c),
			})
		}
	}
}

func (c *candidate) hasFamily(fam string) bool {
	for _, e := range c.ecos {
		if e.family == fam && !e.folded {
			return true
		}
	}
	return false
}

func (c *candidate) familyMarkers(fam string) []string {
	for _, e := range c.ecos {
		if e.family == fam {
			return e.markers
		}
	}
	return nil
}

// appendType adds t, merging it into an existing type of the same name
// (a directory with both pom.xml and build.gradle is one Java project).
func appendType(types []Type, t Type) []Type {
	for i := range types {
		if types[i].Name == t.Name {
			for _, m := range t.Markers {
				if !containsUnsorted(types[i].Markers, m) {
					types[i].Markers = append(types[i].Markers, m)
				}
			}
			if types[i].PackageManager == "" {
				types[i].PackageManager = t.PackageManager
			}
			return types
		}
	}
	return append(types, t)
}

func containsUnsorted(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// describe resolves one unfolded ecosystem claim into a Type.
func describe(c *candidate, e *eco, counts srcCounts) Type {
	t := Type{Dir: c.dir, Markers: append([]string(nil), e.markers...)}
	addMarker := func(names ...string) {
		for _, n := range names {
			if c.has(n) && !containsUnsorted(t.Markers, n) {
				t.Markers = append(t.Markers, n)
			}
		}
	}
	switch e.family {
	case "go":
		t.Name, t.PackageManager = "go", "go"
	case "node":
		t.Name = "node"
		t.PackageManager = nodePackageManager(c)
		addMarker(nodeLockfile(c, t.PackageManager))
		m := c.json("package.json")
		if hasTSConfig(c) || e.memberTS || m.DevDependencies["typescript"] != "" || m.Dependencies["typescript"] != "" {
			t.Name = "typescript"
			addMarker("tsconfig.json")
		}
	case "deno":
		t.Name, t.PackageManager = "deno", "deno"
	case "python":
		t.Name = "python"
		t.PackageManager = pythonPackageManager(c)
		addMarker("uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock")
	case "rust":
		t.Name, t.PackageManager = "rust", "cargo"
		addMarker("Cargo.lock")
	case "maven":
		t.Name, t.PackageManager = "java", "maven"
		if counts[srcKotlin] > 0 || strings.Contains(c.text("pom.xml"), "kotlin-maven-plugin") {
			t.Name = "kotlin"
		}
	case "gradle":
		t.Name, t.PackageManager = "java", "gradle"
		if counts[srcKotlin] > 0 || gradleUsesKotlin(c) {
			t.Name = "kotlin"
		}
	case "ruby":
		t.Name = "ruby"
		if c.has("Gemfile") {
			t.PackageManager = "bundler"
			addMarker("Gemfile.lock")
		}
	case "php":
		t.Name, t.PackageManager = "php", "composer"
		addMarker("composer.lock")
	case "dotnet":
		t.Name, t.PackageManager = "dotnet", "dotnet"
	case "cmake":
		t.Name, t.PackageManager = cOrCpp(counts, c.text("CMakeLists.txt")), cPackageManager(c)
	case "meson":
		t.Name, t.PackageManager = cOrCpp(counts, c.text("meson.build")), cPackageManager(c)
	case "elixir":
		t.Name, t.PackageManager = "elixir", "mix"
		addMarker("mix.lock")
	case "swift":
		t.Name, t.PackageManager = "swift", "swiftpm"
	case "dart":
		t.Name, t.PackageManager = "dart", "pub"
		if isFlutter(c) {
			t.PackageManager = "flutter"
		}
		addMarker("pubspec.lock")
	case "haskell":
		t.Name, t.PackageManager = "haskell", "cabal"
		if c.has("stack.yaml") {
			t.PackageManager = "stack"
		}
	case "sbt":
		t.Name, t.PackageManager = "scala", "sbt"
	case "clojure":
		t.Name, t.PackageManager = "clojure", "clojure"
		if c.has("project.clj") {
			t.PackageManager = "lein"
		}
	case "zig":
		t.Name, t.PackageManager = "zig", "zig"
		addMarker("build.zig.zon")
	case "ocaml":
		t.Name, t.PackageManager = "ocaml", "opam"
	}
	return t
}

// nodePackageManager prefers the packageManager field (corepack's source
// of truth), then the lockfile.
func nodePackageManager(c *candidate) string {
	m := c.json("package.json")
	if name, _, _ := strings.Cut(m.PackageManager, "@"); name != "" {
		switch name {
		case "npm", "pnpm", "yarn", "bun":
			return name
		}
	}
	switch {
	case c.has("pnpm-lock.yaml"):
		return "pnpm"
	case c.has("yarn.lock"):
		return "yarn"
	case c.has("bun.lock"), c.has("bun.lockb"):
		return "bun"
	case c.has("package-lock.json"), c.has("npm-shrinkwrap.json"):
		return "npm"
	}
	return ""
}

func nodeLockfile(c *candidate, pm string) string {
	switch pm {
	case "pnpm":
		return "pnpm-lock.yaml"
	case "yarn":
		return "yarn.lock"
	case "bun":
		return c.first("bun.lock", "bun.lockb")
	case "npm":
		return c.first("package-lock.json", "npm-shrinkwrap.json")
	}
	return ""
}

// pythonPackageManager prefers a lockfile, which says what is actually in
// use, over pyproject sections, which may be leftovers.
func pythonPackageManager(c *candidate) string {
	switch {
	case c.has("uv.lock"):
		return "uv"
	case c.has("poetry.lock"):
		return "poetry"
	case c.has("pdm.lock"):
		return "pdm"
	case c.has("Pipfile"):
		return "pipenv"
	}
	doc := c.toml("pyproject.toml")
	switch {
	case doc.table("tool.poetry") != "":
		return "poetry"
	case doc.table("tool.pdm") != "":
		return "pdm"
	case doc.table("tool.uv") != "":
		return "uv"
	}
	switch backend := doc.str("build-system.build-backend"); {
	case strings.HasPrefix(backend, "poetry"):
		return "poetry"
	case strings.HasPrefix(backend, "pdm"):
		return "pdm"
	}
	return "pip"
}

func gradleUsesKotlin(c *candidate) bool {
	for _, f := range []string{"build.gradle.kts", "build.gradle"} {
		s := c.text(f)
		if strings.Contains(s, "org.jetbrains.kotlin") || strings.Contains(s, `kotlin("`) ||
			strings.Contains(s, "kotlin-android") || strings.Contains(s, "id 'kotlin") {
			return true
		}
	}
	return false
}

func isFlutter(c *candidate) bool {
	s := c.text("pubspec.yaml")
	return strings.Contains(s, "sdk: flutter")
}

// cOrCpp decides between C and C++ by source counts, falling back on the
// build file's text when the walk saw no sources.
func cOrCpp(counts srcCounts, buildFile string) string {
	switch {
	case counts[srcCpp] > 0 && counts[srcCpp] >= counts[srcC]:
		return "cpp"
	case counts[srcC] > 0:
		return "c"
	case strings.Contains(buildFile, "CXX") || strings.Contains(buildFile, ".cpp") || strings.Contains(buildFile, ".cc") || strings.Contains(buildFile, "'cpp'"):
		return "cpp"
	case strings.Contains(buildFile, ".c ") || strings.Contains(buildFile, ".c)") || strings.Contains(buildFile, ".c'") || strings.Contains(buildFile, "'c'") || strings.Contains(buildFile, " C)"):
		return "c"
	}
	return "cpp"
}

func cPackageManager(c *candidate) string {
	switch {
	case c.has("conanfile.txt"), c.has("conanfile.py"):
		return "conan"
	case c.has("vcpkg.json"):
		return "vcpkg"
	}
	return ""
}

// sortTypes orders types by Dir ("." first) then Name.
func sortTypes(types []Type) {
	sort.Slice(types, func(i, j int) bool {
		if types[i].Dir != types[j].Dir {
			return dirLess(types[i].Dir, types[j].Dir)
		}
		return types[i].Name < types[j].Name
	})
}

func dirLess(a, b string) bool {
	if a == "." || b == "." {
		return a == "." && b != "."
	}
	return a < b
}
