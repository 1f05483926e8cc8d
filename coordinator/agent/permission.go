package agent

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Permission is how much a child agent may do without asking a person.
// Nobody answers a headless agent's questions, so every mode is decided
// before the run starts: ralph passes it to the CLI as the CLI's own flags,
// and each run's header shows it (a typo once started an agent with every
// permission, and the bypass was documented nowhere).
type Permission string

// The permission modes. The zero value is PermissionBypass: an unattended
// loop whose agent may not run the project's tests or commands gets little
// done.
const (
	// PermissionBypass lets the agent use every tool without asking: claude
	// --dangerously-skip-permissions (with IS_SANDBOX=1 when ralph runs as
	// root, the only way the CLI accepts it there).
	PermissionBypass Permission = "bypass"
	// PermissionAcceptEdits lets the agent edit files; other tools (the
	// shell) only as the CLI's own settings allow: claude --permission-mode
	// acceptEdits.
	PermissionAcceptEdits Permission = "accept-edits"
	// PermissionDefault leaves it to the CLI's own settings (its allow
	// lists); in a headless run, whatever they do not allow is refused:
	// claude --permission-mode default.
	PermissionDefault Permission = "default"
)

// Permissions lists the modes, for help texts and errors.
var Permissions = []Permission{PermissionBypass, PermissionAcceptEdits, PermissionDefault}

// ParsePermission reads a --permission-mode value; "" is the default,
// bypass, and "ask" is taken for default (a headless run cannot ask).
func ParsePermission(s string) (Permission, error) {
	switch p := Permission(strings.ToLower(strings.TrimSpace(s))); p {
	case "":
		return PermissionBypass, nil
	case "ask":
		return PermissionDefault, nil
	case PermissionBypass, PermissionAcceptEdits, PermissionDefault:
		return p, nil
	}
	names := make([]string, len(Permissions))
	for i, p := range Permissions {
		names[i] = string(p)
	}
	return "", fmt.Errorf("unknown permission mode %q: use %s", s, strings.Join(names, ", "))
}

// OrDefault is p, or the default mode when p is unset.
func (p Permission) OrDefault() Permission { return p.orDefault() }

// orDefault is p, or the default mode when p is unset.
func (p Permission) orDefault() Permission {
	if p == "" {
		return PermissionBypass
	}
	return p
}

// PermissionFlags says how the backend named name carries out mode p: the
// flags and environment its CLI gets, for the run's header.
func PermissionFlags(name string, p Permission) string {
	if name == "exec" {
		return "not passed on: the program runs with your user's rights and decides for itself"
	}
	if c, ok := findCLI(name); ok && c.permissionFlags != nil {
		return c.permissionFlags(p)
	}
	return ""
}

// MaxTurnsFlag says how the backend named name passes on a turn cap of n
// (Request.MaxTurns), for the run's header: "" when it takes none.
func MaxTurnsFlag(name string, n int) string {
	if c, ok := findCLI(name); ok && c.maxTurnsFlag != nil && n > 0 {
		return c.maxTurnsFlag(n)
	}
	return ""
}

// claudePermissionFlags says how Claude Code carries out mode p.
func claudePermissionFlags(p Permission) string {
	s := strings.Join(claudePermissionArgs.of(p), " ")
	if p.orDefault() == PermissionBypass && os.Geteuid() == 0 {
		s += " with IS_SANDBOX=1, as ralph runs as root"
	}
	return s
}

// claudeMaxTurnsFlag is Claude Code's turn cap n.
func claudeMaxTurnsFlag(n int) string { return "--max-turns " + strconv.Itoa(n) }

// permissionArgs are an agent CLI's flags for each mode (nil: none). The
// slices are shared: append them, never change them.
type permissionArgs struct{ bypass, acceptEdits, byDefault []string }

// of is the flags for mode p; unset, or a mode ralph does not know, is
// bypass.
func (a permissionArgs) of(p Permission) []string {
	switch p.orDefault() {
	case PermissionAcceptEdits:
		return a.acceptEdits
	case PermissionDefault:
		return a.byDefault
	}
	return a.bypass
}

// claudePermissionArgs are Claude Code's flags.
var claudePermissionArgs = permissionArgs{
	bypass:      []string{"--dangerously-skip-permissions"},
	acceptEdits: []string{"--permission-mode", "acceptEdits"},
	byDefault:   []string{"--permission-mode", "default"},
}
