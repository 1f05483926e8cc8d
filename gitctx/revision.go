package gitctx

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// resolve turns a revision into a commit, the way `git rev-parse
// REV^{commit}` does for the forms ralph uses and a person is likely to
// type: a full or abbreviated object name, a ref name as git expands it
// (HEAD, main, heads/main, v1.0, origin/main), then any run of ^, ^N, ~,
// ~N, ^{} and ^{commit}. Annotated tags are peeled. Reflog (@{…}) and
// message-search (^{/…}) forms are refused. The caller holds r.mu.
func (r *Repo) resolve(rev string) (*commitObj, error) {
	c, err := r.resolveRev(rev)
	if err != nil {
		return nil, fmt.Errorf("resolve %q: %w: %w", rev, ErrUnknownRevision, err)
	}
	return c, nil
}

func (r *Repo) resolveRev(rev string) (*commitObj, error) {
	name, ops := rev, ""
	if i := strings.IndexAny(rev, "^~"); i >= 0 {
		name, ops = rev[:i], rev[i:]
	}
	if name == "@" {
		name = "HEAD"
	}
	if name == "" || strings.Contains(name, "@{") {
		return nil, errors.New("not a revision gitctx reads")
	}
	h, err := r.resolveName(name)
	if err != nil {
		return nil, err
	}
	c, err := r.peelToCommit(h)
	if err != nil {
		return nil, err
	}
	for ops != "" {
		if peel, ok := strings.CutPrefix(ops, "^{"); ok {
			inner, rest, closed := strings.Cut(peel, "}")
			if !closed || (inner != "" && inner != "commit") {
				return nil, fmt.Errorf("%q: only ^{} and ^{commit} are read", ops)
			}
			ops = rest
			continue
		}
		op := ops[0]
		n, rest := leadingNumber(ops[1:])
		ops = rest
		if op == '~' {
			for range n {
				if c, err = r.parent(c, 1); err != nil {
					return nil, err
				}
			}
		} else if n > 0 {
			if c, err = r.parent(c, n); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// leadingNumber reads the count after ^ or ~: 1 when there is none.
func leadingNumber(s string) (int, string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 1, s
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil {
		n = -1 // too large: no commit has that parent
	}
	return n, s[i:]
}

// parent returns c's nth parent (from 1).
func (r *Repo) parent(c *commitObj, n int) (*commitObj, error) {
	if n < 1 || n > len(c.parents) {
		return nil, fmt.Errorf("commit %s has no parent %d", c.hash, n)
	}
	return r.db.commit(c.parents[n-1])
}

// resolveName finds the object a revision's name part names. As in git, a
// full object name is taken as one, then refs are tried by git's rules,
// then an abbreviated object name of four digits or more.
func (r *Repo) resolveName(name string) (plumbing.Hash, error) {
	if isHex(name) && len(name) == 2*hashLen {
		return parseHex([]byte(name))
	}
	for _, rule := range plumbing.RefRevParseRules {
		ref, err := r.st.resolve(plumbing.ReferenceName(fmt.Sprintf(rule, name)))
		if err == nil && ref != nil {
			return ref.Hash(), nil
		}
	}
	if !isHex(name) || len(name) < 4 {
		return plumbing.ZeroHash, fmt.Errorf("%q names no ref or object", name)
	}
	hs, err := r.db.withPrefix(strings.ToLower(name))
	if err != nil {
		return plumbing.ZeroHash, err
	}
	switch len(hs) {
	case 0:
		return plumbing.ZeroHash, fmt.Errorf("%q names no ref or object", name)
	case 1:
		return hs[0], nil
	default:
		return plumbing.ZeroHash, fmt.Errorf("%q is ambiguous: %d objects start with it", name, len(hs))
	}
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return s != ""
}

// maxTagChain bounds tags of tags, against a corrupt cycle.
const maxTagChain = 16

// peelToCommit follows annotated tags from h to the commit they name.
func (r *Repo) peelToCommit(h plumbing.Hash) (*commitObj, error) {
	for range maxTagChain {
		typ, data, err := r.db.read(h)
		if err != nil {
			return nil, err
		}
		switch typ {
		case plumbing.CommitObject:
			return parseCommit(h, data)
		case plumbing.TagObject:
			if h, _, err = parseTagTarget(h, data); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("%s names a %s, not a commit", h, typ)
		}
	}
	return nil, fmt.Errorf("tags nested more than %d deep", maxTagChain)
}
