package gitctx

import (
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

func TestParseCommit(t *testing.T) {
	tree := strings.Repeat("a", 40)
	p1, p2 := strings.Repeat("b", 40), strings.Repeat("c", 40)
	raw := "tree " + tree + "\nparent " + p1 + "\nparent " + p2 +
		"\nauthor Ann Author <ann@example.com> 1700000000 -0130" +
		"\ncommitter C. Committer <c@example.com> 1700000060 +0545" +
		"\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n abc\n -----END PGP SIGNATURE-----" +
		"\n\nSubject line\n\nBody.\n"
	c, err := parseCommit(plumbing.ZeroHash, []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if c.tree.String() != tree || len(c.parents) != 2 || c.parents[1].String() != p2 {
		t.Errorf("tree %s, parents %v", c.tree, c.parents)
	}
	if c.author.name != "Ann Author" || c.author.email != "ann@example.com" {
		t.Errorf("author %+v", c.author)
	}
	if _, off := c.author.when.Zone(); off != -90*60 || c.author.when.Unix() != 1700000000 {
		t.Errorf("author date %s", c.author.when)
	}
	if _, off := c.committer.when.Zone(); off != (5*60+45)*60 {
		t.Errorf("committer date %s", c.committer.when)
	}
	if c.message != "Subject line\n\nBody.\n" {
		t.Errorf("message %q", c.message)
	}
	// Written back, it is byte for byte what it was (less the signature,
	// which gitctx never writes).
	back := encodeCommit(c)
	if want := strings.Replace(raw, "\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n abc\n -----END PGP SIGNATURE-----", "", 1); string(back) != want {
		t.Errorf("encoded:\n%s\nwant:\n%s", back, want)
	}

	for _, bad := range []string{"", "parent " + p1 + "\n\nno tree", "tree xyz\n\nm"} {
		if _, err := parseCommit(plumbing.ZeroHash, []byte(bad)); err == nil {
			t.Errorf("parseCommit(%q) succeeded", bad)
		}
	}
}

func TestParseSignatureLenient(t *testing.T) {
	tests := []struct {
		in          string
		name, email string
		unix        int64
	}{
		{"No Date <a@b>", "No Date", "a@b", 0},
		{"Bad Zone <a@b> 1700000000 +01", "Bad Zone", "a@b", 1700000000},
		{"<only@email> 5 +0000", "", "only@email", 5},
		{"no email at all", "no email at all", "", 0},
	}
	for _, tt := range tests {
		s := parseSignature([]byte(tt.in))
		var unix int64
		if !s.when.IsZero() {
			unix = s.when.Unix()
		}
		if s.name != tt.name || s.email != tt.email || unix != tt.unix {
			t.Errorf("parseSignature(%q) = %q %q %d", tt.in, s.name, s.email, unix)
		}
	}
}

func TestTreeRoundTrip(t *testing.T) {
	entries := []treeEntry{
		{name: "a.txt", mode: filemode.Regular, hash: plumbing.NewHash(strings.Repeat("1", 40))},
		{name: "bin", mode: filemode.Executable, hash: plumbing.NewHash(strings.Repeat("2", 40))},
		{name: "dir", mode: filemode.Dir, hash: plumbing.NewHash(strings.Repeat("3", 40))},
		{name: "link", mode: filemode.Symlink, hash: plumbing.NewHash(strings.Repeat("4", 40))},
		{name: "sub", mode: filemode.Submodule, hash: plumbing.NewHash(strings.Repeat("5", 40))},
	}
	raw := encodeTree(entries)
	if !strings.HasPrefix(string(raw), "100644 a.txt\x00") || !strings.Contains(string(raw), "40000 dir\x00") {
		t.Errorf("encoded %q", raw)
	}
	tr, err := parseTree(plumbing.ZeroHash, raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.entries) != len(entries) {
		t.Fatalf("entries %+v", tr.entries)
	}
	for i, e := range entries {
		if tr.entries[i] != e {
			t.Errorf("entry %d: %+v, want %+v", i, tr.entries[i], e)
		}
	}
	if _, err := parseTree(plumbing.ZeroHash, raw[:len(raw)-5]); err == nil {
		t.Error("a truncated tree parsed")
	}
}

func TestBaseCacheEvicts(t *testing.T) {
	c := newBaseCache(100)
	p := &pack{}
	for off := range int64(10) {
		c.put(p, off, plumbing.BlobObject, make([]byte, 10))
	}
	c.get(p, 0) // recently used: kept
	c.put(p, 10, plumbing.BlobObject, make([]byte, 10))
	if _, ok := c.get(p, 1); ok {
		t.Error("the least recently used entry is still there")
	}
	if _, ok := c.get(p, 0); !ok {
		t.Error("a recently used entry was evicted")
	}
	if c.used > 100 {
		t.Errorf("cache holds %d bytes over its budget of 100", c.used)
	}
	c.put(p, 11, plumbing.BlobObject, make([]byte, 60)) // over an eighth
	if _, ok := c.get(p, 11); ok {
		t.Error("an object larger than an eighth of the budget was kept")
	}
}
