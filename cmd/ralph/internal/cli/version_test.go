package cli

import (
	"runtime/debug"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	vcs := func(rev, when, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: when}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		stamped, module string
		settings        []debug.BuildSetting
		want            string
	}{
		{module: "v1.2.3", want: "v1.2.3"}, // go install …@v1.2.3: a module zip, no VCS
		{stamped: "v2.0.0", module: "(devel)", settings: vcs("0123456789abcdef0123", "2026-11-20T09:00:00Z", "false"),
			want: "v2.0.0 (commit 0123456789ab, 2026-11-20)"},
		{module: "v0.0.0-20261123172525-6f2118dcb64b+dirty", settings: vcs("6f2118dcb64b0000", "2026-11-23T17:25:25Z", "true"),
			want: "v0.0.0-20261123172525-6f2118dcb64b+dirty (2026-11-23, with uncommitted changes)"},
		{module: "(devel)", settings: vcs("abc", "", "false"), want: "dev (commit abc)"},
		{module: "(devel)", want: "dev (no commit recorded: `go run` and builds outside a git checkout have none)"},
	} {
		info := &debug.BuildInfo{Main: debug.Module{Version: tc.module}, Settings: tc.settings}
		if got := describeBuild(tc.stamped, info); got != tc.want {
			t.Errorf("describeBuild(%q, %q) = %q, want %q", tc.stamped, tc.module, got, tc.want)
		}
	}
}
