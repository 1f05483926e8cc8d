package projectdetect

import (
	"slices"
	"testing"
)

// Files lists what git reads outside a repository, as git finds it.
func TestGitConfigFiles(t *testing.T) {
	for _, tc := range []struct {
		g    GitConfig
		want []string
	}{
		{GitConfig{Home: "/h", System: "/etc/gitconfig"}, []string{"/etc/gitconfig", "/h/.config/git/config", "/h/.gitconfig", "/h/.config/git/ignore", "/h/.config/git/attributes"}},
		{GitConfig{Home: "/h", XDGConfigHome: "/x", Global: "/g"}, []string{"/g", "/x/git/ignore", "/x/git/attributes"}},
		{GitConfig{}, nil},
	} {
		if got := tc.g.Files(); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: Files() = %q, want %q", tc.g, got, tc.want)
		}
	}
}
