package projectdetect

import "strings"

// langHeader stands for ".h" until the end of the walk, when the headers
// go to c or cpp, whichever has more sources.
const langHeader = "c/cpp header"

// langByExt maps a lower-cased extension to the language counted in
// Summary.Languages. Files with other extensions are counted in
// Summary.Files only.
func langByExt(ext string) string {
	switch ext {
	case ".go":
		return "go"
	case ".js", ".mjs", ".cjs", ".jsx":
		return "javascript"
	case ".ts", ".tsx", ".mts", ".cts":
		return "typescript"
	case ".py", ".pyi", ".pyx":
		return "python"
	case ".rs":
		return "rust"
	case ".java":
		return "java"
	case ".kt", ".kts":
		return "kotlin"
	case ".rb", ".rake":
		return "ruby"
	case ".php":
		return "php"
	case ".cs":
		return "csharp"
	case ".fs", ".fsi", ".fsx":
		return "fsharp"
	case ".vb":
		return "visualbasic"
	case ".c":
		return "c"
	case ".h":
		return langHeader
	case ".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".ipp":
		return "cpp"
	case ".m", ".mm":
		return "objective-c"
	case ".swift":
		return "swift"
	case ".dart":
		return "dart"
	case ".hs", ".lhs":
		return "haskell"
	case ".scala", ".sc":
		return "scala"
	case ".clj", ".cljs", ".cljc":
		return "clojure"
	case ".zig":
		return "zig"
	case ".ex", ".exs":
		return "elixir"
	case ".erl", ".hrl":
		return "erlang"
	case ".ml", ".mli":
		return "ocaml"
	case ".lua":
		return "lua"
	case ".r":
		return "r"
	case ".jl":
		return "julia"
	case ".pl", ".pm":
		return "perl"
	case ".groovy", ".gradle":
		return "groovy"
	case ".elm":
		return "elm"
	case ".gleam":
		return "gleam"
	case ".nim":
		return "nim"
	case ".sol":
		return "solidity"
	case ".sh", ".bash", ".zsh":
		return "shell"
	case ".ps1":
		return "powershell"
	case ".tf":
		return "terraform"
	case ".nix":
		return "nix"
	case ".proto":
		return "protobuf"
	case ".sql":
		return "sql"
	case ".html", ".htm":
		return "html"
	case ".css":
		return "css"
	case ".scss", ".sass":
		return "scss"
	case ".less":
		return "less"
	case ".vue":
		return "vue"
	case ".svelte":
		return "svelte"
	case ".md", ".mdx":
		return "markdown"
	case ".rst":
		return "restructuredtext"
	case ".yml", ".yaml":
		return "yaml"
	case ".json":
		return "json"
	case ".toml":
		return "toml"
	case ".xml":
		return "xml"
	}
	return ""
}

// langByName covers files recognised by their whole name.
func langByName(name string) string {
	switch name {
	case "Dockerfile", "Containerfile":
		return "dockerfile"
	case "Makefile", "makefile", "GNUmakefile":
		return "makefile"
	case "Rakefile", "Gemfile":
		return "ruby"
	case "Jenkinsfile":
		return "groovy"
	}
	if strings.HasPrefix(name, "Dockerfile.") {
		return "dockerfile"
	}
	return ""
}

// srcKind is the handful of source kinds that decide a Type's name (c or
// cpp, java or kotlin) and whether a Makefile means a C project, counted
// per directory.
type srcKind uint8

const (
	srcC      srcKind = iota
	srcCpp            // C++ sources and C++-only headers
	srcHeader         // .h, either language
	srcKotlin         // .kt
	srcOther          // sources in any other programming language
	numSrcKinds
)

type srcCounts [numSrcKinds]int32

// notCode are Summary languages that are markup, data, styling or glue:
// they do not count against C being a Makefile directory's language.
func notCode(lang string) bool {
	switch lang {
	case "", "markdown", "restructuredtext", "yaml", "json", "toml", "xml", "html", "css", "scss", "less",
		"makefile", "dockerfile", "shell", "powershell", "sql", "protobuf", "terraform", "nix":
		return true
	}
	return false
}

// fileLang returns the Summary language of a file name and the srcKind it
// counts towards (numSrcKinds for none).
func fileLang(name string) (string, srcKind) {
	ext := ""
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		ext = strings.ToLower(name[i:])
	}
	if ext == "" || strings.HasPrefix(name, "Dockerfile.") {
		return langByName(name), numSrcKinds
	}
	l := langByExt(ext)
	switch {
	case l == "c":
		return l, srcC
	case l == "cpp":
		return l, srcCpp
	case l == langHeader:
		return l, srcHeader
	case ext == ".kt": // not .kts: build.gradle.kts is no sign of Kotlin sources
		return l, srcKotlin
	case notCode(l):
		return l, numSrcKinds
	}
	return l, srcOther
}
