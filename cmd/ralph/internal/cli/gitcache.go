package cli

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/ralph-dev/ralph/gitctx"
	"github.com/ralph-dev/ralph/mdstate"
)

// statusCacheFile keeps the work tree status git last gave, in the
// project's runtime folder (gitctx.CachedCLIStatus).
const statusCacheFile = "git-status.json"

// statusCache is where `ralph status` keeps git's answer, and what outside
// the repository git status reads: ralph status answers from it without
// starting git while nothing git reads has changed (issue 14).
func (f *Factory) statusCache(root string) *gitctx.StatusCache {
	var env []string
	for _, kv := range f.Env.Environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GIT_") || name == "HOME" || name == "XDG_CONFIG_HOME" || name == "PATH" {
			env = append(env, kv)
		}
	}
	slices.Sort(env)
	return &gitctx.StatusCache{File: filepath.Join(root, mdstate.RuntimeDir, statusCacheFile), ConfigFiles: f.Env.Git.Files(), Env: env}
}
