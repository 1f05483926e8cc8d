package gitctx

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// gitctx decodes the three kinds of object history is made of itself
// rather than through go-git's plumbing/object, which imports an OpenPGP
// implementation (to verify signatures ralph never checks) whose package
// initialisation every ralph command paid for at start-up (issue 14).

// commitObj is a decoded commit.
type commitObj struct {
	hash      plumbing.Hash
	tree      plumbing.Hash
	parents   []plumbing.Hash
	author    signature
	committer signature
	message   string
}

// signature is an author or committer line: name, email and date.
type signature struct {
	name, email string
	when        time.Time
}

// treeEntry is one entry of a tree object.
type treeEntry struct {
	name string
	mode filemode.FileMode
	hash plumbing.Hash
}

// treeObj is a decoded tree: its entries in git's order.
type treeObj struct {
	entries []treeEntry
}

// errNoEntry reports a path that a tree does not hold.
var errNoEntry = errors.New("no such entry in the tree")

// parseCommit decodes a commit object's content. Headers it does not use
// (encoding, gpgsig, mergetag and their continuation lines) are skipped.
func parseCommit(h plumbing.Hash, data []byte) (*commitObj, error) {
	c := &commitObj{hash: h}
	sawTree := false
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte{'\n'})
		data = rest
		if len(line) == 0 {
			c.message = string(data)
			break
		}
		key, val, _ := bytes.Cut(line, []byte{' '})
		switch string(key) {
		case "tree":
			th, err := parseHex(val)
			if err != nil {
				return nil, fmt.Errorf("commit %s: tree: %w", h, err)
			}
			c.tree, sawTree = th, true
		case "parent":
			ph, err := parseHex(val)
			if err != nil {
				return nil, fmt.Errorf("commit %s: parent: %w", h, err)
			}
			c.parents = append(c.parents, ph)
		case "author":
			c.author = parseSignature(val)
		case "committer":
			c.committer = parseSignature(val)
		}
	}
	if !sawTree {
		return nil, fmt.Errorf("commit %s: no tree", h)
	}
	return c, nil
}

// parseHex decodes a full hexadecimal object name.
func parseHex(b []byte) (plumbing.Hash, error) {
	var h plumbing.Hash
	if len(b) != 2*len(h) {
		return plumbing.ZeroHash, fmt.Errorf("%q is not an object name", b)
	}
	if _, err := hex.Decode(h[:], b); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("%q is not an object name", b)
	}
	return h, nil
}

// parseSignature reads "Name <email> seconds +hhmm", leniently as go-git
// and git do: a missing date leaves the zero time, a missing or bad zone
// UTC.
func parseSignature(b []byte) signature {
	var s signature
	open, closing := bytes.LastIndexByte(b, '<'), bytes.LastIndexByte(b, '>')
	if open < 0 || closing < open {
		s.name = string(bytes.TrimSpace(b))
		return s
	}
	s.name = string(bytes.Trim(b[:open], " "))
	s.email = string(b[open+1 : closing])
	fields := bytes.Fields(b[closing+1:])
	if len(fields) == 0 {
		return s
	}
	secs, err := strconv.ParseInt(string(fields[0]), 10, 64)
	if err != nil {
		return s
	}
	s.when = time.Unix(secs, 0).In(time.UTC)
	if len(fields) > 1 {
		if off, ok := parseZone(fields[1]); ok {
			s.when = s.when.In(time.FixedZone("", off))
		}
	}
	return s
}

// parseZone reads git's "+hhmm" or "-hhmm" as seconds east of UTC.
func parseZone(z []byte) (int, bool) {
	if len(z) != 5 || (z[0] != '+' && z[0] != '-') {
		return 0, false
	}
	hh, err1 := strconv.Atoi(string(z[1:3]))
	mm, err2 := strconv.Atoi(string(z[3:5]))
	if err1 != nil || err2 != nil {
		return 0, false
	}
	off := hh*3600 + mm*60
	if z[0] == '-' {
		off = -off
	}
	return off, true
}

// parseTree decodes a tree object's content: entries of "mode name\0"
// followed by the 20-byte object name.
func parseTree(h plumbing.Hash, data []byte) (*treeObj, error) {
	t := &treeObj{}
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("tree %s: entry without a mode", h)
		}
		mode, err := filemode.New(string(data[:sp]))
		if err != nil {
			return nil, fmt.Errorf("tree %s: %w", h, err)
		}
		data = data[sp+1:]
		nul := bytes.IndexByte(data, 0)
		if nul < 0 || len(data) < nul+1+len(plumbing.ZeroHash) {
			return nil, fmt.Errorf("tree %s: truncated entry", h)
		}
		e := treeEntry{name: string(data[:nul]), mode: mode}
		copy(e.hash[:], data[nul+1:])
		t.entries = append(t.entries, e)
		data = data[nul+1+len(plumbing.ZeroHash):]
	}
	return t, nil
}

// entry returns the entry called name.
func (t *treeObj) entry(name string) (treeEntry, bool) {
	for _, e := range t.entries {
		if e.name == name {
			return e, true
		}
	}
	return treeEntry{}, false
}

// parseTagTarget reads what an annotated tag points at.
func parseTagTarget(h plumbing.Hash, data []byte) (plumbing.Hash, plumbing.ObjectType, error) {
	var target plumbing.Hash
	typ := plumbing.InvalidObject
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte{'\n'})
		data = rest
		if len(line) == 0 {
			break
		}
		key, val, _ := bytes.Cut(line, []byte{' '})
		switch string(key) {
		case "object":
			t, err := parseHex(val)
			if err != nil {
				return plumbing.ZeroHash, typ, fmt.Errorf("tag %s: object: %w", h, err)
			}
			target = t
		case "type":
			t, err := plumbing.ParseObjectType(string(val))
			if err != nil {
				return plumbing.ZeroHash, typ, fmt.Errorf("tag %s: %w", h, err)
			}
			typ = t
		}
	}
	if target.IsZero() || typ == plumbing.InvalidObject {
		return plumbing.ZeroHash, typ, fmt.Errorf("tag %s: no target", h)
	}
	return target, typ, nil
}

// encodeCommit is the inverse of parseCommit, as git writes commits.
func encodeCommit(c *commitObj) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "tree %s\n", c.tree)
	for _, p := range c.parents {
		fmt.Fprintf(&b, "parent %s\n", p)
	}
	fmt.Fprintf(&b, "author %s\ncommitter %s\n\n", c.author.encode(), c.committer.encode())
	b.WriteString(c.message)
	return b.Bytes()
}

func (s signature) encode() string {
	return fmt.Sprintf("%s <%s> %d %s", s.name, s.email, s.when.Unix(), s.when.Format("-0700"))
}

// encodeTree writes entries, which must be in git's order.
func encodeTree(entries []treeEntry) []byte {
	var b bytes.Buffer
	for _, e := range entries {
		fmt.Fprintf(&b, "%o %s", uint32(e.mode), e.name)
		b.WriteByte(0)
		b.Write(e.hash[:])
	}
	return b.Bytes()
}
