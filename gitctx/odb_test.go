package gitctx

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	gt "github.com/ralph-dev/ralph/gitctx/gitctxtest"
)

// historyRepo makes a repository of 30 commits that rewrite a few long
// files a line at a time (so that packing stores them as deltas), with an
// annotated tag, a tag of that tag, a side branch merged back, and a
// directory that comes and goes.
func historyRepo(t *testing.T) string {
	t.Helper()
	gt.Isolate(t)
	dir := t.TempDir()
	gt.Git(t, dir, "init", "-q", "-b", "main")
	lines := make([]string, 200)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d of a file long enough to be stored as a delta", i)
	}
	for c := range 30 {
		lines[c*5%200] = fmt.Sprintf("changed by commit %d", c)
		gt.WriteFile(t, dir, "big.txt", strings.Join(lines, "\n")+"\n")
		gt.WriteFile(t, dir, fmt.Sprintf("d%d/f.txt", c%4), fmt.Sprintf("commit %d\n", c))
		if c == 12 {
			gt.Git(t, dir, "rm", "-rq", "d1")
		}
		gt.Commit(t, dir, fmt.Sprintf("commit %d", c), c)
		switch c {
		case 10:
			gt.GitAt(t, dir, c, "tag", "-a", "-m", "version one", "v1")
			gt.GitAt(t, dir, c, "tag", "-a", "-m", "a tag of a tag", "v1-again", "v1")
		case 15:
			gt.Git(t, dir, "checkout", "-q", "-b", "side", "HEAD~3")
			gt.WriteFile(t, dir, "side.txt", "side\n")
			gt.Commit(t, dir, "side", 100)
			gt.Git(t, dir, "checkout", "-q", "main")
			gt.GitAt(t, dir, 101, "merge", "-q", "--no-edit", "side")
			gt.Git(t, dir, "tag", "merged")
		}
	}
	return dir
}

// checkHistory compares what gitctx reads with what git says.
func checkHistory(t *testing.T, r *Repo, dir string, more ...string) {
	t.Helper()
	ctx := context.Background()
	log, err := r.Log(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range log {
		got = append(got, c.Hash)
		want := strings.Fields(gt.Git(t, dir, "show", "--first-parent", "--name-only", "--no-renames", "--format=", c.Hash))
		slices.Sort(want)
		if !slices.Equal(c.Files, want) && !(len(c.Files) == 0 && len(want) == 0) {
			t.Errorf("files of %s %q: %q, git says %q", c.Hash[:7], c.Subject, c.Files, want)
		}
	}
	if want := strings.Fields(gt.Git(t, dir, "log", "--format=%H", "-n", "100")); !slices.Equal(got, want) {
		t.Errorf("log:\n got %q\nwant %q", got, want)
	}
	short := gt.Git(t, dir, "rev-parse", "--short=7", "HEAD~4")
	for _, rev := range append(more, "HEAD", "main", "heads/main", "refs/heads/main", "HEAD~3", "HEAD^", "merged^2", "merged^1^", "merged^2~1", "HEAD~2^0", "v1", "tags/v1", "v1^{}", "v1-again", "v1-again^{commit}~2", short, strings.ToUpper(short)) {
		want, err := gt.GitEnv(dir, nil, "show", rev+":big.txt")
		if err != nil {
			t.Fatalf("git show %s: %v", rev, err)
		}
		b, err := r.FileAt(ctx, rev, "big.txt")
		if err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("FileAt(%s): %d bytes, %v; git has %d", rev, len(b), err, len(want))
		}
	}
	for _, rev := range []string{"nope", "HEAD~99", "merged^3", "HEAD@{1}", "v1^{/commit}", "0000000"} {
		if _, err := r.FileAt(ctx, rev, "big.txt"); !errors.Is(err, ErrUnknownRevision) {
			t.Errorf("FileAt(%s): %v, want ErrUnknownRevision", rev, err)
		}
	}
	state, err := r.StateCommits(ctx, []string{"d1/f.txt"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	var stateHashes []string
	for _, c := range state {
		stateHashes = append(stateHashes, c.Hash)
	}
	if want := strings.Fields(gt.Git(t, dir, "log", "--format=%H", "-n", "3", "--", "d1/f.txt")); !slices.Equal(stateHashes, want) {
		t.Errorf("state commits:\n got %q\nwant %q", stateHashes, want)
	}
}

// packEntryTypes counts the entry types of every pack in dir.
func packEntryTypes(t *testing.T, dir string) map[plumbing.ObjectType]int {
	t.Helper()
	db := newObjectDB(filepath.Join(dir, ".git", "objects"))
	defer db.close()
	if err := db.scanPacks(); err != nil {
		t.Fatal(err)
	}
	counts := map[plumbing.ObjectType]int{}
	for _, p := range db.packs {
		f, err := db.file(p)
		if err != nil {
			t.Fatal(err)
		}
		for i := range p.idx.n {
			off, err := p.idx.offset(i)
			if err != nil {
				t.Fatal(err)
			}
			h, err := readEntryHeader(bufio.NewReader(io.NewSectionReader(f, off, p.size-off)), off)
			if err != nil {
				t.Fatal(err)
			}
			counts[h.typ]++
		}
	}
	return counts
}

// TestObjectReading reads the same history loose, from packs of offset
// deltas, from packs of ref deltas, half packed, and through alternates.
func TestObjectReading(t *testing.T) {
	dir := historyRepo(t)
	t.Run("loose", func(t *testing.T) {
		checkHistory(t, openT(t, dir), dir, "side")
	})
	t.Run("offset deltas", func(t *testing.T) {
		gt.Git(t, dir, "repack", "-adfq", "--depth=50", "--window=50")
		if n := packEntryTypes(t, dir)[packOfsDelta]; n == 0 {
			t.Fatal("the pack has no offset deltas")
		}
		checkHistory(t, openT(t, dir), dir)
	})
	t.Run("ref deltas", func(t *testing.T) {
		gt.Git(t, dir, "-c", "repack.useDeltaBaseOffset=false", "repack", "-adfq", "--depth=50", "--window=50")
		if n := packEntryTypes(t, dir)[packRefDelta]; n == 0 {
			t.Fatal("the pack has no ref deltas")
		}
		checkHistory(t, openT(t, dir), dir)
	})
	t.Run("loose on top of a pack", func(t *testing.T) {
		gt.WriteFile(t, dir, "big.txt", "rewritten after packing\n")
		gt.Commit(t, dir, "after packing", 200)
		checkHistory(t, openT(t, dir), dir)
	})
	t.Run("alternates", func(t *testing.T) {
		clone := filepath.Join(t.TempDir(), "clone")
		gt.Git(t, dir, "clone", "-q", "--shared", dir, clone)
		if _, err := os.Stat(filepath.Join(clone, ".git", "objects", "info", "alternates")); err != nil {
			t.Fatal(err)
		}
		checkHistory(t, openT(t, clone), clone, "origin/side", "origin/main~2", "remotes/origin/side")
	})
}

// TestRepackedWhileOpen: git gc replaces the pack a Repo has mapped and
// prunes the loose objects it knew; the Repo finds them in the new pack.
func TestRepackedWhileOpen(t *testing.T) {
	dir := historyRepo(t)
	gt.Git(t, dir, "repack", "-adq")
	r := openT(t, dir)
	ctx := context.Background()
	if _, err := r.FileAt(ctx, "HEAD~20", "big.txt"); err != nil {
		t.Fatal(err) // the first pack's file is open now
	}
	gt.WriteFile(t, dir, "big.txt", "after\n")
	gt.Commit(t, dir, "loose", 300)
	if _, err := r.FileAt(ctx, "HEAD", "big.txt"); err != nil {
		t.Fatal(err)
	}
	gt.Git(t, dir, "repack", "-adfq") // a new pack; the old one deleted
	gt.Git(t, dir, "prune-packed")
	checkHistory(t, r, dir)
	// A pack this Repo had mapped but never opened (HEAD is loose),
	// deleted the same way.
	gt.WriteFile(t, dir, "big.txt", "after again\n")
	gt.Commit(t, dir, "loose again", 301)
	r2 := openT(t, dir)
	if len(r2.db.packs) != 1 || r2.db.packs[0].f != nil {
		t.Fatalf("want one pack mapped and not open, have %d", len(r2.db.packs))
	}
	gt.Git(t, dir, "repack", "-adfq", "--window=0")
	gt.Git(t, dir, "prune-packed")
	checkHistory(t, r2, dir)
}

// TestCorruptPackIndex: a damaged index is ErrCorrupt at Open.
func TestCorruptPackIndex(t *testing.T) {
	for _, damage := range []string{"magic", "truncated", "other pack"} {
		t.Run(damage, func(t *testing.T) {
			dir := historyRepo(t)
			gt.Git(t, dir, "repack", "-adq")
			idxs, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.idx"))
			if len(idxs) != 1 {
				t.Fatalf("packs: %q", idxs)
			}
			b, err := os.ReadFile(idxs[0])
			if err != nil {
				t.Fatal(err)
			}
			switch damage {
			case "magic":
				b[1] = 'X'
			case "truncated":
				b = b[:len(b)/2]
			case "other pack":
				b[len(b)-2*hashLen] ^= 0xff
			}
			must(t, os.Chmod(idxs[0], 0o644))
			must(t, os.WriteFile(idxs[0], b, 0o644))
			_, err = Open(dir, gt.Runner{})
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open: %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestPackIndexLargeOffsets reads an index whose offsets need the 64-bit
// table (packs over 2 GiB), built by hand since such packs are too big to
// make in a test.
func TestPackIndexLargeOffsets(t *testing.T) {
	names := []plumbing.Hash{plumbing.NewHash("01" + strings.Repeat("0", 38)), plumbing.NewHash("ab" + strings.Repeat("1", 38)), plumbing.NewHash("ab" + strings.Repeat("2", 38))}
	offs := []int64{12, 5 << 30, 3 << 31}
	b := append([]byte{}, idxMagic...)
	var fan [256]uint32
	for _, h := range names {
		for i := int(h[0]); i < 256; i++ {
			fan[i]++
		}
	}
	for _, v := range fan {
		b = be32(b, v)
	}
	for _, h := range names {
		b = append(b, h[:]...)
	}
	b = append(b, make([]byte, 4*len(names))...) // CRCs
	var large []int64
	for _, o := range offs {
		if o < 1<<31 {
			b = be32(b, uint32(o))
		} else {
			b = be32(b, 0x80000000|uint32(len(large)))
			large = append(large, o)
		}
	}
	for _, o := range large {
		b = be32(be32(b, uint32(o>>32)), uint32(o))
	}
	b = append(b, make([]byte, 2*hashLen)...)
	x, err := parsePackIndex(b, "")
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range names {
		off, ok, err := x.find(h)
		if err != nil || !ok || off != offs[i] {
			t.Errorf("find %s: %d, %v, %v; want %d", h, off, ok, err, offs[i])
		}
	}
	if _, ok, _ := x.find(plumbing.NewHash("ab" + strings.Repeat("3", 38))); ok {
		t.Error("found a name the index does not hold")
	}
	var pre []plumbing.Hash
	x.withPrefix("ab", func(h plumbing.Hash) { pre = append(pre, h) })
	if len(pre) != 2 {
		t.Errorf("prefix ab: %v", pre)
	}
}

func be32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func openT(t *testing.T, dir string) *Repo {
	t.Helper()
	r, err := Open(dir, gt.Runner{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
