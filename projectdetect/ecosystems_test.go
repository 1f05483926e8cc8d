package projectdetect

import (
	"slices"
	"testing"
)

// TestDetectEcosystems runs one small fixture per ecosystem and checks the
// types and commands reported for it.
func TestDetectEcosystems(t *testing.T) {
	tests := []struct {
		name    string
		archive string
		types   []string // "dir name packagemanager [markers]"
		build   []string // "dir: run (source)"
		test    []string
		lint    []string
	}{
		{
			name: "go module with Makefile and golangci",
			archive: `
-- go.mod --
module example.com/x

go 1.22
-- main.go --
package main
-- .golangci.yml --
linters: {}
-- Makefile --
.PHONY: build test lint
GOFLAGS := -trimpath

build: ## build it
	go build ./...
test: build
	go test ./...
lint:
	golangci-lint run
%.o: %.c
	cc -c $<
`,
			types: []string{". go go [go.mod]"},
			build: []string{".: make build (Makefile target build)", ".: go build ./... (default for go)"},
			test:  []string{".: make test (Makefile target test)", ".: go test ./... (default for go)"},
			lint:  []string{".: make lint (Makefile target lint)", ".: golangci-lint run (.golangci.yml)", ".: go vet ./... (default for go)"},
		},
		{
			name: "go workspace folds its modules",
			archive: `
-- go.work --
go 1.22

use (
	./api
	./worker
)
-- api/go.mod --
module example.com/api
-- worker/go.mod --
module example.com/worker
`,
			types: []string{". go go [go.work]"},
			build: []string{".: go build ./... (default for go)"},
			test:  []string{".: go test ./... (default for go)"},
			lint:  []string{".: go vet ./... (default for go)"},
		},
		{
			name: "node with npm lockfile",
			archive: `
-- package.json --
{"name": "x", "scripts": {"build": "vite build", "test": "vitest run", "lint": "eslint ."}}
-- package-lock.json --
{}
-- index.js --
`,
			types: []string{". node npm [package.json package-lock.json]"},
			build: []string{".: npm run build (package.json scripts.build)"},
			test:  []string{".: npm test (package.json scripts.test)"},
			lint:  []string{".: npm run lint (package.json scripts.lint)"},
		},
		{
			name: "npm init placeholder test script is not a test command",
			archive: `
-- package.json --
{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}
`,
			types: []string{". node  [package.json]"},
		},
		{
			name: "typescript with pnpm lockfile",
			archive: `
-- package.json --
{"scripts": {"build": "tsc -p .", "test": "jest", "typecheck": "tsc --noEmit"}}
-- pnpm-lock.yaml --
lockfileVersion: '9.0'
-- tsconfig.json --
{}
-- src/index.ts --
`,
			types: []string{". typescript pnpm [package.json pnpm-lock.yaml tsconfig.json]"},
			build: []string{".: pnpm run build (package.json scripts.build)"},
			test:  []string{".: pnpm test (package.json scripts.test)"},
			lint:  []string{".: pnpm run typecheck (package.json scripts.typecheck)"},
		},
		{
			name: "packageManager field wins over lockfile",
			archive: `
-- package.json --
{"packageManager": "yarn@4.1.0", "scripts": {"test": "jest"}}
-- package-lock.json --
{}
`,
			types: []string{". node yarn [package.json]"},
			test:  []string{".: yarn test (package.json scripts.test)"},
		},
		{
			name: "bun runs scripts with bun run",
			archive: `
-- package.json --
{"scripts": {"build": "bun build ./index.ts", "test": "bun test"}}
-- bun.lockb --
`,
			types: []string{". node bun [package.json bun.lockb]"},
			build: []string{".: bun run build (package.json scripts.build)"},
			test:  []string{".: bun run test (package.json scripts.test)"},
		},
		{
			name: "deno",
			archive: `
-- deno.jsonc --
{
  // tasks run with deno task
  "tasks": {"test": "deno test -A",},
}
-- main.ts --
`,
			types: []string{". deno deno [deno.jsonc]"},
			test:  []string{".: deno task test (deno.jsonc tasks.test)", ".: deno test (default for deno)"},
			lint:  []string{".: deno lint (default for deno)"},
		},
		{
			name: "python with requirements.txt and tests dir",
			archive: `
-- requirements.txt --
requests
-- app.py --
-- tests/test_app.py --
`,
			types: []string{". python pip [requirements.txt]"},
			test:  []string{".: pytest (default for python)"},
		},
		{
			name: "poetry with pytest and ruff in pyproject",
			archive: `
-- pyproject.toml --
[tool.poetry]
name = "x"

[tool.pytest.ini_options]
addopts = "-q"

[tool.ruff]
line-length = 100

[build-system]
requires = ["poetry-core"]
build-backend = "poetry.core.masonry.api"
-- poetry.lock --
`,
			types: []string{". python poetry [pyproject.toml poetry.lock]"},
			build: []string{".: poetry build (pyproject.toml [build-system])"},
			test:  []string{".: poetry run pytest (pyproject.toml [tool.pytest.ini_options])"},
			lint:  []string{".: poetry run ruff check . (pyproject.toml [tool.ruff])"},
		},
		{
			name: "uv from its lockfile, ruff.toml, mypy",
			archive: `
-- pyproject.toml --
[project]
name = "x"
dependencies = [
  "httpx",
]

[tool.mypy]
strict = true
-- uv.lock --
-- ruff.toml --
line-length = 88
-- conftest.py --
`,
			types: []string{". python uv [pyproject.toml uv.lock]"},
			test:  []string{".: uv run pytest (conftest.py)"},
			lint:  []string{".: uv run ruff check . (ruff.toml)", ".: uv run mypy . (pyproject.toml [tool.mypy])"},
		},
		{
			name: "pdm from its tool section, commented-out sections ignored",
			archive: `
-- pyproject.toml --
# [tool.poetry] was here once
# [tool.ruff]
description = """
[tool.pytest.ini_options]
"""

[tool.pdm]
distribution = true
-- setup.cfg --
[flake8]
max-line-length = 100
`,
			types: []string{". python pdm [pyproject.toml setup.cfg]"},
			lint:  []string{".: pdm run flake8 (setup.cfg [flake8])"},
		},
		{
			name: "pipenv",
			archive: `
-- Pipfile --
[packages]
-- Pipfile.lock --
{}
-- tox.ini --
[tox]
envlist = py312

[pytest]
addopts = -q
`,
			types: []string{". python pipenv [Pipfile Pipfile.lock]"},
			test:  []string{".: pipenv run pytest (tox.ini [pytest])", ".: tox (tox.ini)"},
		},
		{
			name: "rust crate",
			archive: `
-- Cargo.toml --
[package]
name = "x"
-- Cargo.lock --
-- src/main.rs --
`,
			types: []string{". rust cargo [Cargo.toml Cargo.lock]"},
			build: []string{".: cargo build (Cargo.toml)"},
			test:  []string{".: cargo test (Cargo.toml)"},
			lint:  []string{".: cargo clippy (Cargo.toml)"},
		},
		{
			name: "cargo workspace folds members",
			archive: `
-- Cargo.toml --
[workspace]
members = ["crates/*"]
-- crates/a/Cargo.toml --
[package]
name = "a"
-- crates/a/src/lib.rs --
-- crates/b/Cargo.toml --
[package]
name = "b"
`,
			types: []string{". rust cargo [Cargo.toml]"},
			build: []string{".: cargo build --workspace (Cargo.toml)"},
			test:  []string{".: cargo test --workspace (Cargo.toml)"},
			lint:  []string{".: cargo clippy --workspace (Cargo.toml)"},
		},
		{
			name: "maven java with wrapper",
			archive: `
-- pom.xml --
<project></project>
-- mvnw --
-- src/main/java/App.java --
`,
			types: []string{". java maven [pom.xml]"},
			build: []string{".: ./mvnw -q -DskipTests package (pom.xml)"},
			test:  []string{".: ./mvnw -q test (pom.xml)"},
		},
		{
			name: "maven kotlin by plugin",
			archive: `
-- pom.xml --
<project><build><plugins><plugin><artifactId>kotlin-maven-plugin</artifactId></plugin></plugins></build></project>
`,
			types: []string{". kotlin maven [pom.xml]"},
			build: []string{".: mvn -q -DskipTests package (pom.xml)"},
			test:  []string{".: mvn -q test (pom.xml)"},
		},
		{
			name: "gradle multi-project, kotlin sources in a subproject",
			archive: `
-- settings.gradle.kts --
include("app")
-- build.gradle.kts --
plugins { id("com.diffplug.spotless") version "6.0.0" }
-- gradlew --
-- app/build.gradle.kts --
plugins { application }
-- app/src/main/kotlin/Main.kt --
fun main() {}
`,
			types: []string{". kotlin gradle [build.gradle.kts settings.gradle.kts]"},
			build: []string{".: ./gradlew assemble (build.gradle.kts)"},
			test:  []string{".: ./gradlew test (build.gradle.kts)"},
			lint:  []string{".: ./gradlew spotlessCheck (build.gradle.kts)"},
		},
		{
			name: "gradle java without wrapper",
			archive: `
-- build.gradle --
plugins { id 'java' }
-- src/main/java/App.java --
`,
			types: []string{". java gradle [build.gradle]"},
			build: []string{".: gradle assemble (build.gradle)"},
			test:  []string{".: gradle test (build.gradle)"},
		},
		{
			name: "ruby with rspec and rubocop",
			archive: `
-- Gemfile --
source "https://rubygems.org"
-- Gemfile.lock --
-- .rubocop.yml --
-- spec/app_spec.rb --
`,
			types: []string{". ruby bundler [Gemfile Gemfile.lock]"},
			test:  []string{".: bundle exec rspec (default for ruby (spec/))"},
			lint:  []string{".: bundle exec rubocop (.rubocop.yml)"},
		},
		{
			name: "php with composer scripts",
			archive: `
-- composer.json --
{"scripts": {"test": "phpunit", "phpstan": ["phpstan analyse"]}}
-- composer.lock --
{}
-- phpunit.xml.dist --
`,
			types: []string{". php composer [composer.json composer.lock]"},
			test:  []string{".: composer test (composer.json scripts.test)", ".: vendor/bin/phpunit (phpunit.xml.dist)"},
			lint:  []string{".: composer run-script phpstan (composer.json scripts.phpstan)"},
		},
		{
			name: "dotnet solution folds its projects",
			archive: `
-- App.sln --
-- src/App/App.csproj --
<Project />
-- tests/App.Tests/App.Tests.fsproj --
<Project />
`,
			types: []string{". dotnet dotnet [App.sln]"},
			build: []string{".: dotnet build (App.sln)"},
			test:  []string{".: dotnet test (App.sln)"},
			lint:  []string{".: dotnet format --verify-no-changes (App.sln)"},
		},
		{
			name: "cmake C++ with nested CMakeLists",
			archive: `
-- CMakeLists.txt --
project(x)
add_subdirectory(lib)
-- lib/CMakeLists.txt --
add_library(x x.cpp)
-- lib/x.cpp --
-- lib/x.h --
-- conanfile.txt --
`,
			types: []string{". cpp conan [CMakeLists.txt]"},
			build: []string{".: cmake -S . -B build && cmake --build build (CMakeLists.txt)"},
			test:  []string{".: ctest --test-dir build (CMakeLists.txt)"},
		},
		{
			name: "C with only a Makefile",
			archive: `
-- Makefile --
all: prog
prog: main.o
	$(CC) -o $@ $^
check: prog
	./run-tests.sh
-- main.c --
-- util.c --
-- util.h --
`,
			types: []string{". c  [Makefile]"},
			build: []string{".: make all (Makefile target all)"},
			test:  []string{".: make check (Makefile target check)"},
		},
		{
			name: "Makefile beside go sources is not C",
			archive: `
-- Makefile --
test:
	./test.sh
-- tools/main.go --
package main
-- tools/helper.go --
package main
-- tools/shim.c --
`,
			types: nil,
			test:  []string{".: make test (Makefile target test)"},
		},
		{
			name: "meson C",
			archive: `
-- meson.build --
project('x', 'c')
-- src/main.c --
`,
			types: []string{". c  [meson.build]"},
			build: []string{".: meson setup build && meson compile -C build (meson.build)"},
			test:  []string{".: meson test -C build (meson.build)"},
		},
		{
			name: "elixir umbrella",
			archive: `
-- mix.exs --
defmodule X.MixProject do
  def project, do: [apps_path: "apps", deps: [{:credo, "~> 1.7"}]]
end
-- apps/web/mix.exs --
defmodule Web.MixProject do end
-- deps/phoenix/mix.exs --
`,
			types: []string{". elixir mix [mix.exs]"},
			build: []string{".: mix compile (mix.exs)"},
			test:  []string{".: mix test (mix.exs)"},
			lint:  []string{".: mix format --check-formatted (mix.exs)", ".: mix credo (mix.exs)"},
		},
		{
			name: "swift package",
			archive: `
-- Package.swift --
// swift-tools-version:5.9
-- Sources/X/X.swift --
`,
			types: []string{". swift swiftpm [Package.swift]"},
			build: []string{".: swift build (Package.swift)"},
			test:  []string{".: swift test (Package.swift)"},
		},
		{
			name: "flutter app",
			archive: `
-- pubspec.yaml --
name: app
dependencies:
  flutter:
    sdk: flutter
-- pubspec.lock --
-- lib/main.dart --
`,
			types: []string{". dart flutter [pubspec.yaml pubspec.lock]"},
			test:  []string{".: flutter test (pubspec.yaml)"},
			lint:  []string{".: flutter analyze (pubspec.yaml)"},
		},
		{
			name: "dart package",
			archive: `
-- pubspec.yaml --
name: pkg
`,
			types: []string{". dart pub [pubspec.yaml]"},
			test:  []string{".: dart test (pubspec.yaml)"},
			lint:  []string{".: dart analyze (pubspec.yaml)"},
		},
		{
			name: "haskell with stack",
			archive: `
-- stack.yaml --
resolver: lts-22.0
-- x.cabal --
name: x
`,
			types: []string{". haskell stack [stack.yaml x.cabal]"},
			build: []string{".: stack build (stack.yaml)"},
			test:  []string{".: stack test (stack.yaml)"},
		},
		{
			name: "haskell with cabal",
			archive: `
-- x.cabal --
name: x
`,
			types: []string{". haskell cabal [x.cabal]"},
			build: []string{".: cabal build (x.cabal)"},
			test:  []string{".: cabal test (x.cabal)"},
		},
		{
			name: "scala sbt",
			archive: `
-- build.sbt --
scalaVersion := "3.3.1"
-- .scalafmt.conf --
`,
			types: []string{". scala sbt [build.sbt]"},
			build: []string{".: sbt compile (build.sbt)"},
			test:  []string{".: sbt test (build.sbt)"},
			lint:  []string{".: sbt scalafmtCheckAll (.scalafmt.conf)"},
		},
		{
			name: "clojure leiningen",
			archive: `
-- project.clj --
(defproject x "0.1.0")
`,
			types: []string{". clojure lein [project.clj]"},
			test:  []string{".: lein test (project.clj)"},
		},
		{
			name: "clojure deps.edn",
			archive: `
-- deps.edn --
{:aliases {:test {:exec-fn cognitect.test-runner.api/test}}}
`,
			types: []string{". clojure clojure [deps.edn]"},
			test:  []string{".: clojure -X:test (deps.edn alias :test)"},
		},
		{
			name: "zig",
			archive: `
-- build.zig --
-- build.zig.zon --
`,
			types: []string{". zig zig [build.zig build.zig.zon]"},
			build: []string{".: zig build (build.zig)"},
			test:  []string{".: zig build test (build.zig)"},
		},
		{
			name: "ocaml dune",
			archive: `
-- dune-project --
(lang dune 3.0)
`,
			types: []string{". ocaml opam [dune-project]"},
			build: []string{".: dune build (dune-project)"},
			test:  []string{".: dune test (dune-project)"},
		},
		{
			name: "justfile recipes",
			archive: `
-- justfile --
set shell := ["bash", "-c"]
version := "1.0"

# run the tests
test *args:
    go test ./... {{args}}
@lint:
    golangci-lint run
-- go.mod --
module x
`,
			types: []string{". go go [go.mod]"},
			build: []string{".: go build ./... (default for go)"},
			test:  []string{".: just test (justfile recipe test)", ".: go test ./... (default for go)"},
			lint:  []string{".: just lint (justfile recipe lint)", ".: go vet ./... (default for go)"},
		},
		{
			name: "manifests in testdata, hidden and underscored dirs are not projects",
			archive: `
-- go.mod --
module x
-- testdata/node/package.json --
{}
-- .github/actions/x/package.json --
{}
-- _tools/go.mod --
module tools
-- internal/fixtures/Cargo.toml --
`,
			types: []string{". go go [go.mod]"},
			build: []string{".: go build ./... (default for go)"},
			test:  []string{".: go test ./... (default for go)"},
			lint:  []string{".: go vet ./... (default for go)"},
		},
		{
			name: "pnpm workspace folds members and takes TypeScript from them",
			archive: `
-- package.json --
{"private": true, "scripts": {"build": "turbo build", "test": "turbo test"}}
-- pnpm-workspace.yaml --
packages: ["packages/*"]
-- pnpm-lock.yaml --
-- packages/ui/package.json --
{"scripts": {"test": "vitest"}}
-- packages/ui/tsconfig.json --
{}
-- packages/cli/package.json --
{}
`,
			types: []string{". typescript pnpm [package.json pnpm-lock.yaml]"},
			build: []string{".: pnpm run build (package.json scripts.build)"},
			test:  []string{".: pnpm test (package.json scripts.test)"},
		},
		{
			name: "nested package.json without workspaces is its own project",
			archive: `
-- package.json --
{"scripts": {"lint": "eslint ."}}
-- package-lock.json --
-- site/package.json --
{"scripts": {"build": "astro build"}}
-- site/yarn.lock --
`,
			types: []string{". node npm [package.json package-lock.json]", "site node yarn [package.json yarn.lock]"},
			build: []string{"site: yarn run build (package.json scripts.build)"},
			lint:  []string{".: npm run lint (package.json scripts.lint)"},
		},
		{
			name: "docs/requirements.txt belongs to the Python project above it",
			archive: `
-- pyproject.toml --
[project]
name = "x"
-- docs/requirements.txt --
sphinx
-- docs/conf.py --
`,
			types: []string{". python pip [pyproject.toml]"},
		},
		{
			name: "maven modules fold",
			archive: `
-- pom.xml --
<project><modules><module>core</module></modules></project>
-- core/pom.xml --
<project></project>
-- core/src/main/java/Core.java --
`,
			types: []string{". java maven [pom.xml]"},
			build: []string{".: mvn -q -DskipTests package (pom.xml)"},
			test:  []string{".: mvn -q test (pom.xml)"},
		},
		{
			name: "no project at all",
			archive: `
-- README.md --
hello
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := detectArchive(t, tt.archive)
			check := func(what string, got, want []string) {
				t.Helper()
				if !slices.Equal(got, want) {
					t.Errorf("%s:\n got  %q\n want %q", what, got, want)
				}
			}
			check("types", typeStrings(p.Types), tt.types)
			check("build", cmdStrings(p.Commands.Build), tt.build)
			check("test", cmdStrings(p.Commands.Test), tt.test)
			check("lint", cmdStrings(p.Commands.Lint), tt.lint)
			if p.Truncated {
				t.Errorf("Truncated = true (%s) on a tiny tree", p.TruncatedReason)
			}
		})
	}
}
