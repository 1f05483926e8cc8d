package gitctx

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"container/list"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// objectDB reads objects from a repository's object directory the way git
// does: from the pack files, through their indexes mapped into memory and
// searched in place, then loose, then from the alternates. go-git's
// storage instead read every pack index in full at the first object,
// checked its SHA-1 and built a map of all its offsets: on a pack of
// 20,000 objects that was most of the cost of opening the repository
// (issue 14). Nothing here verifies checksums; git does not either when
// it reads.
//
// An objectDB is not safe for concurrent use: a Repo serialises it under
// its mutex.
type objectDB struct {
	dir     string  // the objects directory
	packs   []*pack // found by scanPacks
	scanned bool
	packDir fs.FileInfo // objects/pack as last scanned, to notice new packs
	alts    []*objectDB // nil until needed; see alternates
	altsErr error
	altsSet bool
	depth   int // how deep in alternates this one is
	cache   *baseCache
	zr      io.ReadCloser // reused zlib reader
	br      *bufio.Reader // reused for pack reads
	open    int           // pack files open now
}

// maxOpenPacks bounds the pack files kept open at once, so a repository
// of thousands of packs (never repacked) cannot exhaust descriptors.
const maxOpenPacks = 64

// maxAlternateDepth is git's limit on alternates of alternates.
const maxAlternateDepth = 5

// errObjectNotFound wraps plumbing.ErrObjectNotFound, as go-git's storage
// reported missing objects.
func errObjectNotFound(h plumbing.Hash) error {
	return fmt.Errorf("object %s: %w", h, plumbing.ErrObjectNotFound)
}

func newObjectDB(dir string) *objectDB {
	return &objectDB{dir: dir, cache: newBaseCache(baseCacheBytes)}
}

// close unmaps the indexes and closes the pack files.
func (db *objectDB) close() error {
	var errs []error
	for _, p := range db.packs {
		errs = append(errs, p.close())
	}
	for _, a := range db.alts {
		errs = append(errs, a.close())
	}
	db.packs, db.alts, db.scanned, db.altsSet = nil, nil, false, false
	return errors.Join(errs...)
}

// read returns an object's type and content.
func (db *objectDB) read(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	typ, data, err := db.readLocal(h)
	if !errors.Is(err, plumbing.ErrObjectNotFound) {
		return typ, data, err
	}
	// A pack may have appeared since the scan (git gc, a fetch).
	if db.rescanPacks() {
		if typ, data, err = db.readPacked(h); !errors.Is(err, plumbing.ErrObjectNotFound) {
			return typ, data, err
		}
	}
	alts, aerr := db.alternates()
	for _, a := range alts {
		if typ, data, err := a.read(h); !errors.Is(err, plumbing.ErrObjectNotFound) {
			return typ, data, err
		}
	}
	if aerr != nil {
		return plumbing.InvalidObject, nil, fmt.Errorf("%w (and the alternates cannot be read: %w)", errObjectNotFound(h), aerr)
	}
	return plumbing.InvalidObject, nil, errObjectNotFound(h)
}

// readLocal looks in this directory's packs, then its loose objects.
func (db *objectDB) readLocal(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	typ, data, err := db.readPacked(h)
	if !errors.Is(err, plumbing.ErrObjectNotFound) {
		return typ, data, err
	}
	return db.readLoose(h)
}

func (db *objectDB) readPacked(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	if err := db.scanPacks(); err != nil {
		return plumbing.InvalidObject, nil, err
	}
	for i := 0; i < len(db.packs); i++ {
		p := db.packs[i]
		off, ok, err := p.idx.find(h)
		if err != nil {
			return plumbing.InvalidObject, nil, err
		}
		if !ok {
			continue
		}
		typ, data, err := db.readPackedAt(p, off)
		if errors.Is(err, errPackGone) {
			// Repacked away since the scan (git gc): forget it; the
			// objects are in the new pack, which a rescan finds.
			db.forget(p)
			i--
			continue
		}
		return typ, data, err
	}
	return plumbing.InvalidObject, nil, errObjectNotFound(h)
}

// errPackGone reports a pack file deleted since its index was mapped.
var errPackGone = errors.New("pack file gone")

// forget drops a pack that is gone, so that a rescan may find it again
// if it comes back.
func (db *objectDB) forget(p *pack) {
	if p.f != nil {
		db.open--
	}
	_ = p.close()
	i := slices.Index(db.packs, p)
	db.packs = slices.Delete(db.packs, i, i+1)
	db.packDir = nil // rescan on the next miss
}

// typed reads h and checks that it is a want.
func (db *objectDB) typed(h plumbing.Hash, want plumbing.ObjectType) ([]byte, error) {
	typ, data, err := db.read(h)
	if err != nil {
		return nil, err
	}
	if typ != want {
		return nil, fmt.Errorf("object %s is a %s, not a %s", h, typ, want)
	}
	return data, nil
}

func (db *objectDB) commit(h plumbing.Hash) (*commitObj, error) {
	data, err := db.typed(h, plumbing.CommitObject)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", h, err)
	}
	return parseCommit(h, data)
}

func (db *objectDB) tree(h plumbing.Hash) (*treeObj, error) {
	data, err := db.typed(h, plumbing.TreeObject)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	return parseTree(h, data)
}

func (db *objectDB) blob(h plumbing.Hash) ([]byte, error) {
	return db.typed(h, plumbing.BlobObject)
}

// findEntry looks up a slash-separated path below t.
func (db *objectDB) findEntry(t *treeObj, p string) (treeEntry, error) {
	for {
		name, rest, deeper := strings.Cut(p, "/")
		e, ok := t.entry(name)
		if !ok {
			return treeEntry{}, errNoEntry
		}
		if !deeper {
			return e, nil
		}
		if e.mode != filemode.Dir {
			return treeEntry{}, errNoEntry
		}
		var err error
		if t, err = db.tree(e.hash); err != nil {
			return treeEntry{}, err
		}
		p = rest
	}
}

// withPrefix lists the objects whose hexadecimal names start with prefix
// (at least two digits), for abbreviated revisions.
func (db *objectDB) withPrefix(prefix string) ([]plumbing.Hash, error) {
	if err := db.scanPacks(); err != nil {
		return nil, err
	}
	seen := map[plumbing.Hash]bool{}
	var out []plumbing.Hash
	add := func(h plumbing.Hash) {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	for _, p := range db.packs {
		p.idx.withPrefix(prefix, add)
	}
	entries, err := os.ReadDir(filepath.Join(db.dir, prefix[:2]))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		name := prefix[:2] + e.Name()
		if strings.HasPrefix(name, prefix) {
			if h, err := parseHex([]byte(name)); err == nil {
				add(h)
			}
		}
	}
	alts, _ := db.alternates()
	for _, a := range alts {
		hs, _ := a.withPrefix(prefix)
		for _, h := range hs {
			add(h)
		}
	}
	return out, nil
}

// readLoose reads objects/xx/yyyy…: zlib over "type size\0content".
func (db *objectDB) readLoose(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	name := h.String()
	f, err := os.Open(filepath.Join(db.dir, name[:2], name[2:]))
	if errors.Is(err, fs.ErrNotExist) {
		return plumbing.InvalidObject, nil, errObjectNotFound(h)
	}
	if err != nil {
		return plumbing.InvalidObject, nil, err
	}
	defer f.Close()
	zr, err := db.inflater(bufio.NewReader(f))
	if err != nil {
		return plumbing.InvalidObject, nil, fmt.Errorf("loose object %s: %w", h, err)
	}
	br := bufio.NewReader(zr)
	hdr, err := br.ReadString(0)
	if err != nil {
		return plumbing.InvalidObject, nil, fmt.Errorf("loose object %s: header: %w", h, err)
	}
	kind, size, _ := strings.Cut(strings.TrimSuffix(hdr, "\x00"), " ")
	typ, err := plumbing.ParseObjectType(kind)
	if err != nil || !isBaseType(typ) {
		return plumbing.InvalidObject, nil, fmt.Errorf("loose object %s: bad type %q", h, kind)
	}
	n, err := strconv.ParseInt(size, 10, 64)
	if err != nil || n < 0 {
		return plumbing.InvalidObject, nil, fmt.Errorf("loose object %s: bad size %q", h, size)
	}
	data, err := readExactly(br, n)
	if err != nil {
		return plumbing.InvalidObject, nil, fmt.Errorf("loose object %s: %w", h, err)
	}
	return typ, data, nil
}

func isBaseType(t plumbing.ObjectType) bool {
	switch t {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
		return true
	}
	return false
}

// inflater returns the reused zlib reader, reset to read r.
func (db *objectDB) inflater(r io.Reader) (io.Reader, error) {
	if db.zr == nil {
		zr, err := zlib.NewReader(r)
		if err != nil {
			return nil, err
		}
		db.zr = zr
		return zr, nil
	}
	if err := db.zr.(zlib.Resetter).Reset(r, nil); err != nil {
		return nil, err
	}
	return db.zr, nil
}

// readExactly reads n bytes, growing the buffer as data arrives rather
// than trusting a (possibly corrupt) size up front.
func readExactly(r io.Reader, n int64) ([]byte, error) {
	const trusted = 64 << 20
	if n <= trusted {
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("content: %w", err)
		}
		return b, nil
	}
	var buf bytes.Buffer
	got, err := io.Copy(&buf, io.LimitReader(r, n))
	if err != nil {
		return nil, fmt.Errorf("content: %w", err)
	}
	if got != n {
		return nil, fmt.Errorf("content: %w", io.ErrUnexpectedEOF)
	}
	return buf.Bytes(), nil
}

// alternates opens the object directories objects/info/alternates names.
func (db *objectDB) alternates() ([]*objectDB, error) {
	if db.altsSet {
		return db.alts, db.altsErr
	}
	db.altsSet = true
	b, err := os.ReadFile(filepath.Join(db.dir, "info", "alternates"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		db.altsErr = err
		return nil, err
	}
	if db.depth >= maxAlternateDepth {
		db.altsErr = fmt.Errorf("%s: alternates nested more than %d deep", db.dir, maxAlternateDepth)
		return nil, db.altsErr
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !filepath.IsAbs(line) {
			line = filepath.Join(db.dir, line)
		}
		a := newObjectDB(filepath.Clean(line))
		a.depth, a.cache = db.depth+1, db.cache
		db.alts = append(db.alts, a)
	}
	return db.alts, nil
}

// scanPacks maps the index of every pack in objects/pack, once.
func (db *objectDB) scanPacks() error {
	if db.scanned {
		return nil
	}
	dir := filepath.Join(db.dir, "pack")
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		db.scanned = true
		return nil
	}
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, p := range db.packs {
		known[p.base] = true
	}
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), ".idx")
		if !ok || !strings.HasPrefix(base, "pack-") || known[base] {
			continue
		}
		path := filepath.Join(dir, base)
		if _, err := os.Stat(path + ".pack"); err != nil {
			continue // an index written before its pack, or a pack gone
		}
		idx, err := openPackIndex(path+".idx", strings.TrimPrefix(base, "pack-"))
		if err != nil {
			return fmt.Errorf("pack %s: %w", e.Name(), err)
		}
		db.packs = append(db.packs, &pack{base: base, path: path + ".pack", idx: idx})
	}
	db.scanned, db.packDir = true, fi
	return nil
}

// rescanPacks looks for packs added since the last scan, and reports
// whether it found any.
func (db *objectDB) rescanPacks() bool {
	fi, err := os.Stat(filepath.Join(db.dir, "pack"))
	if err != nil || (db.packDir != nil && fi.ModTime().Equal(db.packDir.ModTime()) && fi.Size() == db.packDir.Size()) {
		return false
	}
	n := len(db.packs)
	db.scanned = false
	if db.scanPacks() != nil {
		return false
	}
	return len(db.packs) > n
}

// pack is one pack file and its index.
type pack struct {
	base string // pack-<hash>
	path string // of the .pack file
	idx  *packIndex
	f    *os.File // open while reading from it; see file
	size int64
}

func (p *pack) close() error {
	var errs []error
	if p.f != nil {
		errs = append(errs, p.f.Close())
		p.f = nil
	}
	errs = append(errs, p.idx.close())
	return errors.Join(errs...)
}

// file opens the pack file on first use; past maxOpenPacks open ones the
// others are closed first.
func (db *objectDB) file(p *pack) (*os.File, error) {
	if p.f != nil {
		return p.f, nil
	}
	if db.open >= maxOpenPacks {
		for _, o := range db.packs {
			if o.f != nil {
				_ = o.f.Close()
				o.f = nil
			}
		}
		db.open = 0
	}
	f, err := os.Open(p.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %w", errPackGone, err)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	p.f, p.size = f, fi.Size()
	db.open++
	return f, nil
}

// Pack object types (gitformat-pack).
const (
	packOfsDelta = 6
	packRefDelta = 7
)

// maxDeltaChain guards against a corrupt pack whose deltas never reach a
// base; git's own packs stay far below it.
const maxDeltaChain = 10_000

// readPackedAt reads the object at off in p, applying its chain of deltas
// to the base found at the chain's end.
func (db *objectDB) readPackedAt(p *pack, off int64) (plumbing.ObjectType, []byte, error) {
	type link struct {
		off   int64
		delta []byte
	}
	var chain []link
	var typ plumbing.ObjectType
	var data []byte
	for cur := off; ; {
		if len(chain) > maxDeltaChain {
			return plumbing.InvalidObject, nil, fmt.Errorf("pack %s: delta chain at %d longer than %d", p.base, off, maxDeltaChain)
		}
		if c, ok := db.cache.get(p, cur); ok {
			typ, data = c.typ, c.data
			break
		}
		h, body, err := db.entryAt(p, cur)
		if err != nil {
			return plumbing.InvalidObject, nil, err
		}
		if isBaseType(h.typ) {
			typ, data = h.typ, body
			db.cache.put(p, cur, typ, data)
			break
		}
		chain = append(chain, link{cur, body})
		if h.typ == packOfsDelta {
			cur = h.base
			continue
		}
		// A ref delta's base is named, and may be anywhere.
		if typ, data, err = db.read(h.baseHash); err != nil {
			return plumbing.InvalidObject, nil, fmt.Errorf("pack %s: delta base %s: %w", p.base, h.baseHash, err)
		}
		break
	}
	for i := len(chain) - 1; i >= 0; i-- {
		var err error
		if data, err = packfile.PatchDelta(data, chain[i].delta); err != nil {
			return plumbing.InvalidObject, nil, fmt.Errorf("pack %s: delta at %d: %w", p.base, chain[i].off, err)
		}
		db.cache.put(p, chain[i].off, typ, data)
	}
	return typ, data, nil
}

// entryHeader is a pack entry's header.
type entryHeader struct {
	typ      plumbing.ObjectType // a base type, or packOfsDelta or packRefDelta
	size     int64               // of the inflated data (a delta's own size)
	base     int64               // an offset delta's base
	baseHash plumbing.Hash       // a ref delta's base
}

// entryAt reads and inflates the entry at off.
func (db *objectDB) entryAt(p *pack, off int64) (entryHeader, []byte, error) {
	f, err := db.file(p)
	if err != nil {
		return entryHeader{}, nil, err
	}
	if off < 12 || off >= p.size {
		return entryHeader{}, nil, fmt.Errorf("pack %s: offset %d out of range", p.base, off)
	}
	sr := io.NewSectionReader(f, off, p.size-off)
	if db.br == nil {
		db.br = bufio.NewReaderSize(sr, 8<<10)
	} else {
		db.br.Reset(sr)
	}
	h, err := readEntryHeader(db.br, off)
	if err != nil {
		return entryHeader{}, nil, fmt.Errorf("pack %s: entry at %d: %w", p.base, off, err)
	}
	zr, err := db.inflater(db.br)
	if err != nil {
		return entryHeader{}, nil, fmt.Errorf("pack %s: entry at %d: %w", p.base, off, err)
	}
	data, err := readExactly(zr, h.size)
	if err != nil {
		return entryHeader{}, nil, fmt.Errorf("pack %s: entry at %d: %w", p.base, off, err)
	}
	return h, data, nil
}

// readEntryHeader decodes the type and size varint and, for a delta, the
// reference to its base.
func readEntryHeader(br *bufio.Reader, off int64) (entryHeader, error) {
	c, err := br.ReadByte()
	if err != nil {
		return entryHeader{}, err
	}
	h := entryHeader{typ: plumbing.ObjectType((c >> 4) & 7), size: int64(c & 15)}
	for shift := 4; c&0x80 != 0; shift += 7 {
		if shift > 56 {
			return entryHeader{}, errors.New("size too large")
		}
		if c, err = br.ReadByte(); err != nil {
			return entryHeader{}, err
		}
		h.size |= int64(c&0x7f) << shift
	}
	switch {
	case isBaseType(h.typ):
	case h.typ == packOfsDelta:
		if c, err = br.ReadByte(); err != nil {
			return entryHeader{}, err
		}
		rel := int64(c & 0x7f)
		for c&0x80 != 0 {
			if rel > 1<<55 {
				return entryHeader{}, errors.New("base offset too large")
			}
			if c, err = br.ReadByte(); err != nil {
				return entryHeader{}, err
			}
			rel = (rel+1)<<7 | int64(c&0x7f)
		}
		if rel <= 0 || rel >= off {
			return entryHeader{}, fmt.Errorf("base offset %d out of range", rel)
		}
		h.base = off - rel
	case h.typ == packRefDelta:
		if _, err := io.ReadFull(br, h.baseHash[:]); err != nil {
			return entryHeader{}, err
		}
	default:
		return entryHeader{}, fmt.Errorf("unknown entry type %d", h.typ)
	}
	return h, nil
}

// baseCacheBytes bounds the cache of pack objects that deltas are built
// on (git's core.deltaBaseCacheLimit is 96 MiB; ralph reads far less).
const baseCacheBytes = 32 << 20

// baseCache keeps recently read pack objects by position, least recently
// used out first, so that a walk of history does not rebuild the same
// delta chains again and again.
type baseCache struct {
	budget, used int
	order        *list.List // of *cached, most recent at the front
	byPos        map[cachePos]*list.Element
}

type cachePos struct {
	p   *pack
	off int64
}

type cached struct {
	pos  cachePos
	typ  plumbing.ObjectType
	data []byte
}

func newBaseCache(budget int) *baseCache {
	return &baseCache{budget: budget, order: list.New(), byPos: map[cachePos]*list.Element{}}
}

func (c *baseCache) get(p *pack, off int64) (*cached, bool) {
	e, ok := c.byPos[cachePos{p, off}]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cached), true
}

func (c *baseCache) put(p *pack, off int64, typ plumbing.ObjectType, data []byte) {
	pos := cachePos{p, off}
	if _, ok := c.byPos[pos]; ok || len(data) > c.budget/8 {
		return
	}
	c.byPos[pos] = c.order.PushFront(&cached{pos, typ, data})
	c.used += len(data)
	for c.used > c.budget {
		last := c.order.Back()
		old := last.Value.(*cached)
		c.order.Remove(last)
		delete(c.byPos, old.pos)
		c.used -= len(old.data)
	}
}
