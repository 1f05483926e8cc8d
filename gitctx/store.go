package gitctx

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"

	"github.com/ralph-dev/ralph/gitctx/gitconfig"
)

// store is a repository's files other than its objects, read and written
// as git lays them out: references (loose, then packed-refs), the config,
// the index, the shallow list, info/exclude and the lock files of Commit.
// It replaces go-git's storage, whose config parser and URL rules cost
// about 0.6 ms of every ralph start in package inits (issue 14).
//
// In a linked worktree a few files are the worktree's own (HEAD, the
// index, refs/bisect, refs/worktree, refs/rewritten, logs/HEAD) and the
// rest are shared through its commondir file, as in git.
type store struct {
	dir    string // the work tree's git directory
	common string // the shared git directory: dir, or a linked worktree's commondir
}

// sharedTop are the entries of a git directory that live in the shared
// one when a worktree has its own (git's path.c, common_list).
var sharedTop = map[string]bool{
	"objects": true, "refs": true, "packed-refs": true, "config": true, "branches": true, "hooks": true,
	"info": true, "remotes": true, "logs": true, "shallow": true, "worktrees": true,
}

// worktreeOwn are the paths under those that are each worktree's own.
var worktreeOwn = []string{"logs/HEAD", "refs/bisect", "refs/worktree", "refs/rewritten"}

// path is where name, slash-separated and relative to a git directory,
// lives.
func (s *store) path(name string) string {
	return filepath.Join(s.dirOf(name), filepath.FromSlash(name))
}

func (s *store) dirOf(name string) string {
	if s.common == s.dir {
		return s.dir
	}
	for _, own := range worktreeOwn {
		if name == own || strings.HasPrefix(name, own+"/") {
			return s.dir
		}
	}
	top, _, _ := strings.Cut(name, "/")
	if sharedTop[top] {
		return s.common
	}
	return s.dir
}

// maxSymrefDepth bounds a chain of symbolic references, as git's does.
const maxSymrefDepth = 5

// reference reads the reference name, loose or packed, without following
// a symbolic one; plumbing.ErrReferenceNotFound when there is none. A
// loose file that cannot be read, or is empty, gives way to packed-refs,
// as in go-git. Its content is taken as go-git took it: "ref: TARGET", or
// a hash (anything else reads as the zero hash).
func (s *store) reference(name plumbing.ReferenceName) (*plumbing.Reference, error) {
	if err := checkRefName(name); err != nil {
		return nil, err
	}
	if b, err := os.ReadFile(s.path(string(name))); err == nil && len(b) > 0 {
		return plumbing.NewReferenceFromStrings(string(name), strings.TrimSpace(string(b))), nil
	}
	return s.packedRef(name)
}

// checkRefName refuses a name that would leave the git directory or that
// no ref can have.
func checkRefName(name plumbing.ReferenceName) error {
	n := string(name)
	if n == "" || strings.HasPrefix(n, "/") || strings.ContainsAny(n, "\\\x00") {
		return fmt.Errorf("invalid reference name %q", n)
	}
	for _, part := range strings.Split(n, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("invalid reference name %q", n)
		}
	}
	return nil
}

// packedRef finds name in packed-refs.
func (s *store) packedRef(name plumbing.ReferenceName) (*plumbing.Reference, error) {
	f, err := os.Open(s.path("packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, plumbing.ErrReferenceNotFound
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue // a comment or a peeled tag's commit
		}
		hash, ref, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("malformed packed-refs line %q", line)
		}
		if ref == string(name) {
			return plumbing.NewReferenceFromStrings(ref, hash), nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read packed-refs: %w", err)
	}
	return nil, plumbing.ErrReferenceNotFound
}

// resolve reads name and follows symbolic references to a hash one.
func (s *store) resolve(name plumbing.ReferenceName) (*plumbing.Reference, error) {
	r, err := s.reference(name)
	for depth := 0; err == nil && r.Type() == plumbing.SymbolicReference; depth++ {
		if depth == maxSymrefDepth {
			return nil, fmt.Errorf("%s: symbolic references nest more than %d deep", name, maxSymrefDepth)
		}
		r, err = s.reference(r.Target())
	}
	return r, err
}

// config reads the repository's config (an empty one when there is none).
func (s *store) config() (*gitconfig.Config, error) {
	return readConfig(s.path("config"))
}

// readConfig parses the config file at path, or an empty one when there
// is no such file.
func readConfig(path string) (*gitconfig.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	cfg, err := gitconfig.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// index reads the index: an empty one (version 2) when there is none. Its
// ModTime is the file's.
func (s *store) index() (*index.Index, error) {
	idx := &index.Index{Version: 2}
	f, err := os.Open(s.path("index"))
	if errors.Is(err, fs.ErrNotExist) {
		return idx, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil {
		idx.ModTime = fi.ModTime()
	}
	if err := index.NewDecoder(bufio.NewReader(f)).Decode(idx); err != nil {
		return nil, err
	}
	return idx, nil
}

// shallow reads the commits at a shallow clone's boundary (none when the
// clone is complete).
func (s *store) shallow() ([]plumbing.Hash, error) {
	b, err := os.ReadFile(s.path("shallow"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var hs []plumbing.Hash
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			hs = append(hs, plumbing.NewHash(line))
		}
	}
	return hs, nil
}

// writeObject stores data as a loose object of type t: compressed into a
// temporary file beside the others and renamed into place, so that a kill
// leaves the object whole or absent. An object already there is kept.
func (s *store) writeObject(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	h := plumbing.ComputeHash(t, data)
	hex := h.String()
	dir := filepath.Join(s.path("objects"), hex[:2])
	final := filepath.Join(dir, hex[2:])
	if _, err := os.Lstat(final); err == nil {
		return h, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return plumbing.ZeroHash, err
	}
	var buf bytes.Buffer
	w := objfile.NewWriter(&buf)
	if err := w.WriteHeader(t, int64(len(data))); err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	tmp, err := os.CreateTemp(dir, "tmp_obj_")
	if err != nil {
		return plumbing.ZeroHash, err
	}
	_, err = tmp.Write(buf.Bytes())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// Loose objects are read-only, as git makes them.
		err = os.Chmod(tmp.Name(), 0o444)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), final)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return plumbing.ZeroHash, err
	}
	return h, nil
}
