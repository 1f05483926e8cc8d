package agenttest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The real agent CLIs as the tests drive them (coordinator/agent's and
// cmd/ralph's *_real_test.go): each against its own fake model server on
// loopback, in a fresh HOME, with an environment built from nothing.

// CLI is one real agent CLI and what a test needs to drive it against its
// fake model server.
type CLI struct {
	Name string // the backend's name, and its program's
	// Model is the model a test asks for (ralph's --model,
	// Request.Model); APIModel, the one the fake then sees asked for.
	Model, APIModel string
	// Retries is how many times the CLI retries a model request that
	// failed with a 429 or a 5xx on its own, whatever its settings say:
	// a test that wants the CLI to give up answers 1+Retries errors.
	Retries int
}

// The four agent CLIs ralph drives.
var (
	ClaudeCLI = CLI{Name: "claude", Model: "claude-sonnet-4-5", APIModel: "claude-sonnet-4-5"}
	// The model CodexEnv's config selects, asked for again.
	CodexCLI = CLI{Name: "codex", Model: FakeResponsesModel, APIModel: FakeResponsesModel}
	// opencode names a model "provider/model", and retries five times
	// (see FakeChatRetryAfterMS).
	OpencodeCLI = CLI{Name: "opencode", Model: FakeOpencodeProvider + "/" + FakeOpencodeModel, APIModel: FakeOpencodeModel, Retries: 5}
	GeminiCLI   = CLI{Name: "gemini", Model: "gemini-2.5-pro", APIModel: "gemini-2.5-pro"}
)

// CLIs are the four, in the order ralph looks for them.
var CLIs = []CLI{ClaudeCLI, CodexCLI, OpencodeCLI, GeminiCLI}

// Fake is a fake model server: FakeAPI, FakeResponses, FakeChat or
// FakeGemini.
type Fake interface {
	http.Handler
	// Start serves the fake on 127.0.0.1 until the test ends, and
	// returns its base URL.
	Start(t testing.TB) string
	Seen() []Seen     // the model requests, in order
	Others() []string // the other requests, "METHOD /path"
}

// Fake is a new fake model server for c, answering as script says.
func (c CLI) Fake(script Script) Fake {
	switch c.Name {
	case ClaudeCLI.Name:
		return &FakeAPI{Script: script}
	case CodexCLI.Name:
		return &FakeResponses{Script: script}
	case OpencodeCLI.Name:
		return &FakeChat{Script: script}
	case GeminiCLI.Name:
		return &FakeGemini{Script: script}
	}
	panic("agenttest: no fake model server for " + c.Name)
}

// Env writes c's settings under home (a fresh folder) and returns the
// whole environment of c's process that may talk to the fake at baseURL
// only: HOME, a dummy key, PATH=path, and whatever turns off the CLI's
// other traffic and its retries (FakeAPIEnv, CodexEnv, OpencodeEnv,
// GeminiEnv).
func (c CLI) Env(home, baseURL, path string) ([]string, error) {
	switch c.Name {
	case ClaudeCLI.Name:
		return FakeAPIEnv(home, baseURL, path), nil
	case CodexCLI.Name:
		return CodexEnv(home, baseURL, path)
	case OpencodeCLI.Name:
		return OpencodeEnv(home, baseURL, path)
	case GeminiCLI.Name:
		return GeminiEnv(home, baseURL, path)
	}
	return nil, fmt.Errorf("no environment for agent CLI %q", c.Name)
}

// BinVar is the environment variable that names the program of the CLI
// called name for the tests: RALPH_CODEX_BIN for codex (.ci/run sets the
// four).
func BinVar(name string) string { return "RALPH_" + strings.ToUpper(name) + "_BIN" }

// RealCLI finds the real agent CLI called name for a test: BinVar(name),
// else name on PATH, else the test is skipped (only then), saying how to
// install it; install is agent.InstallHint(name) (agenttest cannot import
// agent, whose own tests import agenttest). A copy of the test binary
// on PATH is not the CLI: testscript.Main puts such copies there, as fake
// CLIs.
func RealCLI(t testing.TB, name, install string) string {
	t.Helper()
	if p := os.Getenv(BinVar(name)); p != "" {
		return p
	}
	if p, ok := onPath(name); ok {
		return p
	}
	t.Skipf("%s not found: set %s or put %s on PATH (%s; .ci/run installs the pinned version)", name, BinVar(name), name, install)
	return ""
}

// onPath is the first program called name on PATH that is not this test
// binary.
func onPath(name string) (string, bool) {
	self, _ := os.Executable()
	selfInfo, _ := os.Stat(self)
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			continue
		}
		if selfInfo != nil && os.SameFile(fi, selfInfo) {
			continue
		}
		return p, true
	}
	return "", false
}

// RealDirs makes a fresh, empty project folder and HOME for a test of a
// real CLI, under the test's temporary folder.
func RealDirs(t testing.TB) (project, home string) {
	t.Helper()
	tmp := t.TempDir()
	project, home = filepath.Join(tmp, "project"), filepath.Join(tmp, "home")
	for _, d := range []string{project, home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return project, home
}
