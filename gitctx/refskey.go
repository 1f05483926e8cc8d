package gitctx

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
)

// RefsKey names the state of the references of the repository whose work
// tree holds dir: HEAD, the branch it names, packed-refs, the config
// (upstreams), the remote-tracking refs, FETCH_HEAD and shallow, by their
// stat data. While it is unchanged, so is everything read from history:
// HEAD's commit, the recent commits, the commits that touched a path,
// ahead and behind (objects never change). A caller that keeps those
// facts checks this instead of opening the repository again (issue 14).
// ok is false where it cannot vouch for them (a linked worktree, a
// platform without change times): read the history then.
func RefsKey(dir string) (key string, ok bool) {
	root, ok := plainWorkTree(dir)
	if !ok || !statusCacheSupported {
		return "", false
	}
	gitDir := filepath.Join(root, ".git")
	s := &snap{}
	for _, name := range []string{"HEAD", "packed-refs", "config", "FETCH_HEAD", "shallow", "commondir"} {
		s.add(filepath.Join(gitDir, name))
	}
	if ref, ok := headRef(gitDir); ok {
		s.add(filepath.Join(gitDir, filepath.FromSlash(ref)))
	}
	remotes := filepath.Join(gitDir, "refs", "remotes")
	s.add(remotes)
	err := filepath.WalkDir(remotes, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != remotes {
			s.add(path)
		}
		return nil
	})
	if (err != nil && !errors.Is(err, fs.ErrNotExist)) || s.failed || len(s.inputs) > maxCacheEntries {
		return "", false
	}
	b, err := json.Marshal(s.inputs)
	return string(b), err == nil
}
