package gitctx

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// packIndex is a version 2 pack index (gitformat-pack), mapped into
// memory and searched where it lies, as git does: opening one costs the
// same whatever the number of objects.
type packIndex struct {
	unmap  func() error
	fanout []byte // 256 big-endian counts
	names  []byte // n sorted 20-byte names
	off32  []byte // n 4-byte offsets
	off64  []byte // the 8-byte offsets that do not fit in 31 bits
	n      int
}

const (
	idxHeaderLen = 8
	idxFanoutLen = 256 * 4
	hashLen      = len(plumbing.ZeroHash)
)

var idxMagic = []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}

// openPackIndex maps the index at path and checks its shape: the header,
// a fanout that never decreases, a size that fits its object count, and
// that it belongs to the pack named sum.
func openPackIndex(path, sum string) (*packIndex, error) {
	data, unmap, err := mapFile(path)
	if err != nil {
		return nil, err
	}
	x, err := parsePackIndex(data, sum)
	if err != nil {
		_ = unmap()
		return nil, err
	}
	x.unmap = unmap
	return x, nil
}

func parsePackIndex(data []byte, sum string) (*packIndex, error) {
	if len(data) < idxHeaderLen+idxFanoutLen+2*hashLen || !bytes.Equal(data[:idxHeaderLen], idxMagic) {
		return nil, errors.New("not a version 2 pack index")
	}
	x := &packIndex{fanout: data[idxHeaderLen : idxHeaderLen+idxFanoutLen]}
	prev := uint32(0)
	for i := range 256 {
		v := binary.BigEndian.Uint32(x.fanout[4*i:])
		if v < prev {
			return nil, errors.New("pack index fanout decreases")
		}
		prev = v
	}
	x.n = int(prev)
	body := idxHeaderLen + idxFanoutLen
	end := len(data) - 2*hashLen
	if x.n > (end-body)/(hashLen+8) {
		return nil, fmt.Errorf("pack index too short for %d objects", x.n)
	}
	x.names = data[body : body+x.n*hashLen]
	crcEnd := body + x.n*hashLen + x.n*4
	x.off32 = data[crcEnd : crcEnd+x.n*4]
	x.off64 = data[crcEnd+x.n*4 : end]
	if len(x.off64)%8 != 0 {
		return nil, errors.New("pack index has a torn offset table")
	}
	if got := hex.EncodeToString(data[end : end+hashLen]); sum != "" && got != sum {
		return nil, fmt.Errorf("pack index is for pack %s", got)
	}
	return x, nil
}

func (x *packIndex) close() error {
	if x.unmap == nil {
		return nil
	}
	err := x.unmap()
	x.unmap, x.names, x.off32, x.off64, x.fanout = nil, nil, nil, nil, nil
	return err
}

// bucket is the range of names whose first byte is b.
func (x *packIndex) bucket(b byte) (lo, hi int) {
	if b > 0 {
		lo = int(binary.BigEndian.Uint32(x.fanout[4*(int(b)-1):]))
	}
	return lo, int(binary.BigEndian.Uint32(x.fanout[4*int(b):]))
}

func (x *packIndex) name(i int) []byte { return x.names[i*hashLen : (i+1)*hashLen] }

// find returns the pack offset of h.
func (x *packIndex) find(h plumbing.Hash) (int64, bool, error) {
	lo, hi := x.bucket(h[0])
	i := lo + sort.Search(hi-lo, func(i int) bool { return bytes.Compare(x.name(lo+i), h[:]) >= 0 })
	if i >= hi || !bytes.Equal(x.name(i), h[:]) {
		return 0, false, nil
	}
	off, err := x.offset(i)
	return off, err == nil, err
}

func (x *packIndex) offset(i int) (int64, error) {
	v := binary.BigEndian.Uint32(x.off32[4*i:])
	if v&0x80000000 == 0 {
		return int64(v), nil
	}
	j := int(v & 0x7fffffff)
	if 8*j+8 > len(x.off64) {
		return 0, errors.New("pack index: large offset out of range")
	}
	return int64(binary.BigEndian.Uint64(x.off64[8*j:])), nil
}

// withPrefix calls add for every name whose hexadecimal form starts with
// prefix (two digits or more).
func (x *packIndex) withPrefix(prefix string, add func(plumbing.Hash)) {
	first, err := hex.DecodeString(prefix[:2])
	if err != nil {
		return
	}
	full, _ := hex.DecodeString(prefix[:len(prefix)&^1])
	lo, hi := x.bucket(first[0])
	i := lo + sort.Search(hi-lo, func(i int) bool { return bytes.Compare(x.name(lo+i), full) >= 0 })
	for ; i < hi && bytes.HasPrefix(x.name(i), full); i++ {
		var h plumbing.Hash
		copy(h[:], x.name(i))
		if strings.HasPrefix(h.String(), prefix) {
			add(h)
		}
	}
}
