package projectdetect

import (
	"slices"
	"testing"
)

func TestParseTOML(t *testing.T) {
	doc := parseTOML([]byte(`
# [tool.commented] is a comment, not a table
title = "a # not a comment"  # but this is
[build-system]
requires = ["setuptools", "wheel"]
build-backend = 'setuptools.build_meta'

[project]
description = """
[tool.inside-a-string]
still = "the string"
"""
literal = '''
[tool.inside-a-literal]
'''
dependencies = [
  "a",
  # [tool.inside-an-array]
  ["nested", "array"],
]
tool.dotted.key = 1

[ tool . "quoted.part" ]
x = 1

[[tool.array-of-tables]]
y = 2

[tool.pytest.ini_options]  # trailing comment
addopts = "-q"
`))
	wantHeaders := []string{"build-system", "project", "tool.quoted.part", "tool.array-of-tables", "tool.pytest.ini_options"}
	if !slices.Equal(doc.headers, wantHeaders) {
		t.Errorf("headers:\n got  %q\n want %q", doc.headers, wantHeaders)
	}
	tables := []struct {
		name string
		want string
	}{
		{"build-system", "build-system"},
		{"tool.pytest", "tool.pytest.ini_options"},
		{"project.tool.dotted", "project.tool.dotted"},
		{"tool.commented", ""},
		{"tool.inside-a-string", ""},
		{"tool.inside-a-literal", ""},
		{"tool.inside-an-array", ""},
		{"tool.quoted", "tool.quoted.part"},
		{"tool.ruff", ""},
	}
	for _, tt := range tables {
		if got := doc.table(tt.name); got != tt.want {
			t.Errorf("table(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	strs := []struct {
		key  string
		want string
	}{
		{"title", "a # not a comment"},
		{"build-system.build-backend", "setuptools.build_meta"},
		{"tool.pytest.ini_options.addopts", "-q"},
		{"project.description", ""},
	}
	for _, tt := range strs {
		if got := doc.str(tt.key); got != tt.want {
			t.Errorf("str(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestINISections(t *testing.T) {
	got := iniSections([]byte("[metadata]\nname = x\n  [not-a-section]\n[tool:pytest]\naddopts = -q\n;[commented]\n"))
	want := []string{"metadata", "tool:pytest"}
	if !slices.Equal(got, want) {
		t.Errorf("iniSections = %q, want %q", got, want)
	}
}

func TestMakeTargets(t *testing.T) {
	got := makeTargets([]byte(`# test: in a comment
.PHONY: all test
VERSION := 1.0
URL = http://example.com:8080
LDFLAGS ?= -X main.v=$(VERSION)
export PATH := $(PWD)/bin:$(PATH)

all: build
build test: deps ## both on one line
	go test ./... # test: in a recipe
deps::
	echo deps
lint: GOFLAGS=-mod=mod
$(BIN)/tool:
	touch $@
%.o: %.c
	cc -c $<
define RECIPE
fake: target
endef
long-\
name: x
vet:; go vet ./...
`))
	want := []string{"all", "build", "test", "deps", "lint", "long-", "name", "vet"}
	// "long-\\\nname" joins to "long- name": make sees two targets too.
	if !slices.Equal(got, want) {
		t.Errorf("makeTargets:\n got  %q\n want %q", got, want)
	}
}

func TestJustRecipes(t *testing.T) {
	got := justRecipes([]byte(`set dotenv-load
alias t := test
version := "1.0"
export FOO := "bar"

# comment: not a recipe
default: test

[private]
build target="x86":
    cargo build --target {{target}}

test *args: build
    cargo test {{args}}
@lint:
    cargo clippy
`))
	want := []string{"default", "build", "test", "lint"}
	if !slices.Equal(got, want) {
		t.Errorf("justRecipes:\n got  %q\n want %q", got, want)
	}
}

func TestStripJSONC(t *testing.T) {
	m := parseJSONManifest([]byte(`{
  // a comment with "quotes"
  "tasks": {
    "test": "deno test // not a comment", /* block */
    "lint": "deno lint",
  },
}`))
	if m.Tasks["test"] != "deno test // not a comment" || m.Tasks["lint"] != "deno lint" {
		t.Errorf("tasks = %v", m.Tasks)
	}
}

func TestCommas(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 41233: "41,233", 200000: "200,000", 1234567: "1,234,567"} {
		if got := commas(n); got != want {
			t.Errorf("commas(%d) = %q, want %q", n, got, want)
		}
	}
}
