package gitctx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// A status cache lets a command that shows the work tree's state (ralph
// status) answer without starting git when nothing that git status reads
// has changed since git last answered: starting any program costs a
// millisecond or more, most of a small project's status (issue 14).
//
// The result is reused only when every input of `git status` is as it was
// just before git ran: the environment and the git program; HEAD, the ref
// it names, packed-refs, the index, the repository's config, info/exclude
// and info/attributes; the user's and the system's config, ignore and
// attributes files; every folder of the work tree (a file created, removed
// or renamed in a folder changes its times), every .gitignore and
// .gitattributes, and every tracked file. Each is compared by size, mode,
// inode, and modification and change times to the nanosecond. Content
// that changes with none of those, as git's own stat check, is caught by
// the racy rule: a snapshot in which anything changed less than racyWindow
// before it was taken is not kept, since the file system's clock may not
// have ticked between two writes.
//
// Anything outside what the snapshot can vouch for turns the cache off,
// and git runs: GIT_* variables other than the config ones, a .git file
// (a linked worktree or a submodule), nested repositories or submodules,
// sparse or intent-to-add index entries, a split index, config that
// includes other files or names other ignore or attributes files, more
// than maxCacheEntries folders and files, a platform without change
// times.

// StatusCache says where a status cache is kept and what, outside the
// repository, git status reads.
type StatusCache struct {
	// File holds the cache (ralph's is .ralph/git-status.json; losing it
	// loses nothing).
	File string
	// ConfigFiles are the user's and the system's git config, ignore and
	// attributes files (those that exist and those that could).
	ConfigFiles []string
	// Env is the environment git runs with, as "NAME=value": a cache is
	// kept for one environment only.
	Env []string
	// RacyWindow is how long before a snapshot a change makes it racy (0:
	// racyWindow). Only a file system whose clock ticks finer may use less.
	RacyWindow time.Duration
}

const (
	// maxCacheEntries bounds the folders and files a snapshot stats: past
	// it, checking costs about what git does.
	maxCacheEntries = 2000
	// racyWindow covers file systems whose clock ticks coarsely (ext4's
	// follows the kernel's tick; FAT's is 2 s).
	racyWindow = 2 * time.Second
	// minIndexEntry is the smallest entry of an index file: 62 bytes of
	// stat data, hash and flags, a path of one byte and padding.
	minIndexEntry = 64
	// cacheVersion changes when the file's meaning does.
	cacheVersion = 1
)

// fileStat is the stat data a status cache compares: what changes when a
// file is written, replaced, moved or has its mode changed.
type fileStat struct {
	Size         int64
	Mode         uint32
	Ino          uint64
	Mtime, Ctime int64 // nanoseconds since the epoch
}

// errNoStat reports a platform whose stat data the cache cannot use.
var errNoStat = errors.New("no stat data for a status cache")

// statusCacheFile is the cache as kept on disk.
type statusCacheFile struct {
	Version int
	Key     string // the environment and the git program
	Root    string
	Status  Status
	Inputs  []statInput
}

// statInput is one path git status reads and its stat data. Missing
// paths are inputs too: creating one changes the answer.
type statInput struct {
	Path    string
	Missing bool `json:",omitempty"`
	Stat    fileStat
}

// CachedCLIStatus is CLIStatus, with the result kept in c.File and
// reused while nothing git status reads has changed (see above). A cache
// that cannot be read or kept is no error: git runs.
func CachedCLIStatus(ctx context.Context, run Runner, dir string, c StatusCache, timeout time.Duration) (Status, error) {
	if !statusCacheSupported || c.File == "" {
		return CLIStatus(ctx, run, dir, timeout)
	}
	// The work tree first: outside one there is nothing to keep, and the
	// key's look for git on PATH is a stat of every folder before it.
	root, ok := plainWorkTree(dir)
	if !ok {
		return CLIStatus(ctx, run, dir, timeout)
	}
	key, ok := cacheKey(run, c.Env)
	if !ok {
		return CLIStatus(ctx, run, dir, timeout)
	}
	if st, ok := readStatusCache(c.File, key, root); ok {
		return st, nil
	}
	taken := time.Now()
	inputs, ignored, ok := snapshot(root, c.ConfigFiles)
	// The cache's own folder must be one git ignores: a cache file that
	// git status listed would change the answer it keeps.
	ok = ok && insideAny(c.File, ignored)
	st, err := CLIStatus(ctx, run, dir, timeout)
	window := c.RacyWindow
	if window <= 0 {
		window = racyWindow
	}
	if err == nil && st.Available && ok && !racy(inputs, taken, window) {
		writeStatusCache(c.File, statusCacheFile{Version: cacheVersion, Key: key, Root: root, Status: st, Inputs: inputs})
	}
	return st, err
}

// cacheKey names the environment and the git program; ok is false when
// the environment steers git in ways the snapshot does not follow.
func cacheKey(run Runner, env []string) (string, bool) {
	if run == nil {
		return "", false
	}
	// GIT_CONFIG_KEY_n and _VALUE_n count only below GIT_CONFIG_COUNT.
	configVars := false
	for _, kv := range env {
		if name, value, _ := strings.Cut(kv, "="); name == "GIT_CONFIG_COUNT" {
			configVars = value != "" && value != "0"
		}
	}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		unused := !configVars && (name == "GIT_CONFIG_COUNT" || strings.HasPrefix(name, "GIT_CONFIG_KEY_") || strings.HasPrefix(name, "GIT_CONFIG_VALUE_"))
		if strings.HasPrefix(name, "GIT_") && !harmlessGitVar(name) && !unused {
			return "", false
		}
	}
	bin, err := run.LookPath("git")
	if err != nil {
		return "", false
	}
	fs, err := statPath(bin, os.Stat)
	if err != nil {
		return "", false
	}
	key, _ := json.Marshal(struct {
		Env []string
		Git string
		Bin fileStat
	}{env, bin, fs})
	return string(key), true
}

// harmlessGitVar reports a GIT_ variable that does not change what git
// status reads or answers: identities, transports, prompts, tracing, and
// the three that name config files (which the caller lists in
// ConfigFiles). Any other (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE,
// GIT_CONFIG_COUNT and its keys, ...) turns the cache off.
func harmlessGitVar(name string) bool {
	switch name {
	case "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_TERMINAL_PROMPT", "GIT_ASKPASS",
		"GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_PAGER", "GIT_OPTIONAL_LOCKS", "GIT_FLUSH", "GIT_PROGRESS_DELAY":
		return true
	}
	for _, p := range []string{"GIT_AUTHOR_", "GIT_COMMITTER_", "GIT_SSH", "GIT_SSL_", "GIT_HTTP_", "GIT_PROXY_", "GIT_TRACE"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// plainWorkTree finds the work tree root above dir: one with a .git
// folder (a .git file, a linked worktree's or a submodule's, is not
// followed).
func plainWorkTree(dir string) (string, bool) {
	for d := dir; ; {
		fi, err := os.Lstat(filepath.Join(d, ".git"))
		if err == nil {
			return d, fi.IsDir()
		}
		parent := filepath.Dir(d)
		if parent == d || !errors.Is(err, fs.ErrNotExist) {
			return "", false
		}
		d = parent
	}
}

// readStatusCache returns the kept status when the cache is for this key
// and root and every input is unchanged.
func readStatusCache(file, key, root string) (Status, bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		return Status{}, false
	}
	var c statusCacheFile
	if json.Unmarshal(data, &c) != nil || c.Version != cacheVersion || c.Key != key || c.Root != root || len(c.Inputs) == 0 {
		return Status{}, false
	}
	for _, in := range c.Inputs {
		cur, err := statPath(in.Path, os.Lstat)
		missing := errors.Is(err, fs.ErrNotExist)
		if (err != nil && !missing) || in.Missing != missing || cur != in.Stat {
			return Status{}, false
		}
	}
	return c.Status, true
}

// writeStatusCache keeps c in file, atomically: a reader sees the old
// cache or the new one. It is not synced: a cache lost in a crash is
// rebuilt by the next git status.
func writeStatusCache(file string, c statusCacheFile) {
	data, err := json.Marshal(c)
	if err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".*.tmp")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), file) != nil {
		_ = os.Remove(tmp.Name())
	}
}

// racy reports an input that changed less than window before taken.
func racy(inputs []statInput, taken time.Time, window time.Duration) bool {
	limit := taken.Add(-window).UnixNano()
	for _, in := range inputs {
		if !in.Missing && (in.Stat.Mtime >= limit || in.Stat.Ctime >= limit) {
			return true
		}
	}
	return false
}

// snapshot stats every input of git status in the work tree at root; ok
// is false when the cache cannot vouch for the answer.
func snapshot(root string, configFiles []string) (inputs []statInput, ignored []string, ok bool) {
	s := &snap{}
	gitDir := filepath.Join(root, ".git")
	for _, name := range []string{"HEAD", "index", "config", "packed-refs", "info/exclude", "info/attributes", "commondir", "sharedindex"} {
		s.add(filepath.Join(gitDir, filepath.FromSlash(name)))
	}
	if ref, ok := headRef(gitDir); ok {
		s.add(filepath.Join(gitDir, filepath.FromSlash(ref)))
	}
	// The repository's config is an input already (above); the caller's
	// files join it here, and every config is read for what steers git.
	for _, f := range configFiles {
		s.add(f)
	}
	for _, f := range slices.Concat(configFiles, []string{filepath.Join(gitDir, "config")}) {
		if steersFiles(f) {
			return nil, nil, false
		}
	}
	if !s.small(filepath.Join(gitDir, "index")) || !s.walk(root, root) || !s.tracked(root, filepath.Join(gitDir, "index")) {
		return nil, nil, false
	}
	return s.inputs, s.ignored, !s.failed && len(s.inputs) <= maxCacheEntries
}

// small reports an index that may list few enough files: an entry takes
// at least minIndexEntry bytes, so a bigger index is not worth decoding
// (nor the work tree worth walking) when git will run all the same.
func (s *snap) small(indexFile string) bool {
	fi, err := os.Stat(indexFile)
	return err != nil || fi.Size() <= maxCacheEntries*minIndexEntry
}

// insideAny reports whether file is in one of the folders.
func insideAny(file string, folders []string) bool {
	for _, d := range folders {
		if rel, err := filepath.Rel(d, file); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			return true
		}
	}
	return false
}

// snap collects a snapshot's inputs.
type snap struct {
	inputs  []statInput
	ignored []string // folders not walked: ignored by name
	failed  bool     // a path could not be statted, for another reason than its absence
}

// add records path's stat data, or that it is missing.
func (s *snap) add(path string) {
	st, err := statPath(path, os.Lstat)
	missing := errors.Is(err, fs.ErrNotExist)
	s.failed = s.failed || (err != nil && !missing)
	s.inputs = append(s.inputs, statInput{Path: path, Missing: missing, Stat: st})
}

// walk records every folder under dir and the ignore and attributes files
// in them; a nested repository (or submodule) stops the snapshot, as does
// a tree past maxCacheEntries.
func (s *snap) walk(root, dir string) bool {
	s.add(dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	ignored := ignoredFolders(filepath.Join(dir, ".gitignore"))
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == ".git" && dir == root:
		case name == ".git" || name == ".gitmodules":
			return false
		case name == ".gitignore" || name == ".gitattributes":
			s.add(filepath.Join(dir, name))
		case e.IsDir() && ignored[name]:
			// Nothing in it can show: git does not look into an ignored
			// folder, and no pattern re-includes what is in one. Its
			// tracked files are inputs all the same (tracked).
			s.ignored = append(s.ignored, filepath.Join(dir, name))
		case e.IsDir():
			if len(s.inputs) > maxCacheEntries || !s.walk(root, filepath.Join(dir, name)) {
				return false
			}
		}
	}
	return len(s.inputs) <= maxCacheEntries
}

// tracked records every file in the index. Entries the work tree does not
// mirror one to one (sparse, intent-to-add, submodules, conflicts) stop
// the snapshot.
func (s *snap) tracked(root, indexFile string) bool {
	f, err := os.Open(indexFile)
	if errors.Is(err, fs.ErrNotExist) {
		return true // no index yet: nothing tracked
	}
	if err != nil {
		return false
	}
	defer f.Close()
	var idx index.Index
	if index.NewDecoder(f).Decode(&idx) != nil || len(idx.Entries)+len(s.inputs) > maxCacheEntries {
		return false
	}
	for _, e := range idx.Entries {
		// Stage 0 is a merged entry (go-git's index.Merged is 1, the
		// ancestor's stage, despite its name).
		if e.SkipWorktree || e.IntentToAdd || e.Mode == filemode.Submodule || e.Stage != 0 {
			return false
		}
		s.add(filepath.Join(root, filepath.FromSlash(e.Name)))
	}
	return true
}

// headRef is the ref HEAD names ("refs/heads/main"), if it names one.
func headRef(gitDir string) (string, bool) {
	data, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", false
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "ref: ")
	return ref, ok && strings.HasPrefix(ref, "refs/") && !strings.Contains(ref, "..")
}

// steersFiles reports a config file that makes git read files the
// snapshot does not know of: included config, another excludes or
// attributes file, a file system monitor.
func steersFiles(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	data = bytes.ToLower(data)
	for _, word := range []string{"include", "excludesfile", "attributesfile", "fsmonitor", "worktree"} {
		if bytes.Contains(data, []byte(word)) {
			return true
		}
	}
	return false
}

// ignoredFolders are the folders a .gitignore ignores by name at its own
// level ("name/", "/name/", "name", "/name": ralph's ".ralph/" among
// them). Other patterns are left to git: the folders they match are
// walked like any other, and so is a name a later line takes back
// ("!build/"); a negation of any other pattern makes the file name none.
func ignoredFolders(gitignore string) map[string]bool {
	data, err := os.ReadFile(gitignore)
	if err != nil {
		return nil
	}
	names := map[string]bool{}
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimRight(line, " \r")
		line, negated := strings.CutPrefix(line, "!")
		line = strings.TrimSuffix(strings.TrimPrefix(line, "/"), "/")
		plain := line != "" && !strings.ContainsAny(line, "*?[]!#\\/ ")
		switch {
		case negated && !plain:
			return nil // it may take back any name: walk them all
		case negated:
			delete(names, line) // the last line that matches wins
		case plain:
			names[line] = true
		}
	}
	return names
}
