package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
)

// The layout of a bbolt file (go.etcd.io/bbolt/internal/common, format
// version 2), as far as the walk below reads it. Integers are in the
// machine's byte order: bbolt writes its structs as they are in memory.
const (
	boltMagic     = 0xED0CDAED
	boltVersion   = 2
	pageHeader    = 16 // id u64, flags u16, count u16, overflow u32
	elementSize   = 16 // branch: pos u32, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	bucketHeader  = 16 // a bucket's value: root u64, sequence u64, then the inline page if root is 0
	branchPage    = 0x01
	leafPage      = 0x02
	freelistPage  = 0x10
	bucketElement = 0x01
	noFreelist    = ^uint64(0)
	maxTreeDepth  = 64 // far beyond any real tree; a deeper one is a corrupt chain
)

var native = binary.NativeEndian

// boltMeta is the part of a meta page the walk needs.
type boltMeta struct {
	root, freelist, hwm, txid uint64
}

// readMeta reads and validates the meta page at off (page 0 or 1).
func readMeta(f io.ReaderAt, off int64) (boltMeta, error) {
	var b [pageHeader + 64]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		return boltMeta{}, fmt.Errorf("meta page at byte %d: %w", off, err)
	}
	m := b[pageHeader:]
	h := fnv.New64a()
	h.Write(m[:56])
	switch {
	case native.Uint32(m[0:]) != boltMagic:
		return boltMeta{}, fmt.Errorf("meta page at byte %d: not a bbolt meta page (bad magic)", off)
	case native.Uint32(m[4:]) != boltVersion:
		return boltMeta{}, fmt.Errorf("meta page at byte %d: format version %d, want %d", off, native.Uint32(m[4:]), boltVersion)
	case native.Uint64(m[56:]) != h.Sum64():
		return boltMeta{}, fmt.Errorf("meta page at byte %d: checksum mismatch", off)
	}
	return boltMeta{root: native.Uint64(m[16:]), freelist: native.Uint64(m[32:]),
		hwm: native.Uint64(m[40:]), txid: native.Uint64(m[48:])}, nil
}

// walker checks, with plain reads of the file, that bbolt's structures stay
// inside their pages and the file: every page that the meta, the freelist
// or a bucket refers to lies between the meta pages and the high-water mark
// and inside the file, names itself by its own ID and has the type its
// referrer expects; every element lies inside its page; no page is
// referenced twice (so there is no cycle). bbolt reads pages through a
// memory map without bounds checks, and an offset pointing past the mapping
// is a fault that ends the process, not a panic that can be recovered
// (tx.Check included): until the walk passes, bbolt must read no page but
// the metas.
type walker struct {
	f        io.ReaderAt
	size     int64 // of the file
	pageSize uint64
	hwm      uint64
	seen     map[uint64]bool
}

// walk checks the file below meta m: its size, the freelist page and every
// bucket's pages.
func (w *walker) walk(m boltMeta) error {
	w.hwm, w.seen = m.hwm, map[uint64]bool{}
	if need := m.hwm * w.pageSize; m.hwm < 2 || need/w.pageSize != m.hwm || need > uint64(w.size) {
		return fmt.Errorf("the file is truncated: its meta page counts %d pages of %d bytes, the file has %d bytes",
			m.hwm, w.pageSize, w.size)
	}
	if m.freelist != noFreelist {
		if err := w.freelist(m.freelist); err != nil {
			return err
		}
	}
	return w.tree(m.root, 0, "the root bucket")
}

// page reads page id, overflow pages included, and checks its header names
// it.
func (w *walker) page(id uint64, from string) ([]byte, error) {
	if id < 2 || id >= w.hwm {
		return nil, fmt.Errorf("%s refers to page %d, outside the data pages 2..%d", from, id, w.hwm-1)
	}
	off := int64(id * w.pageSize)
	var h [pageHeader]byte
	if _, err := w.f.ReadAt(h[:], off); err != nil {
		return nil, fmt.Errorf("page %d (byte %d): %w", id, off, err)
	}
	if got := native.Uint64(h[:]); got != id {
		return nil, fmt.Errorf("page %d (byte %d, referred to by %s) names itself page %d: its header is overwritten", id, off, from, got)
	}
	overflow := uint64(native.Uint32(h[12:]))
	if id+overflow >= w.hwm {
		return nil, fmt.Errorf("page %d (byte %d) claims %d overflow pages, past the last page %d", id, off, overflow, w.hwm-1)
	}
	for i := id; i <= id+overflow; i++ {
		if w.seen[i] {
			return nil, fmt.Errorf("page %d (byte %d, referred to by %s) is used twice", i, int64(i*w.pageSize), from)
		}
		w.seen[i] = true
	}
	p := make([]byte, (overflow+1)*w.pageSize)
	if _, err := w.f.ReadAt(p, off); err != nil {
		return nil, fmt.Errorf("page %d (byte %d): %w", id, off, err)
	}
	return p, nil
}

// freelist checks the freelist page: its IDs fit in it and name data pages.
func (w *walker) freelist(id uint64) error {
	p, err := w.page(id, "the meta page's freelist")
	if err != nil {
		return err
	}
	if flags := native.Uint16(p[8:]); flags != freelistPage {
		return fmt.Errorf("page %d (byte %d), the freelist, has type flags %#x", id, int64(id*w.pageSize), flags)
	}
	start, count := uint64(pageHeader), uint64(native.Uint16(p[10:]))
	if count == 0xFFFF { // the real count is the first element
		count, start = native.Uint64(p[pageHeader:]), pageHeader+8
	}
	if count > (uint64(len(p))-start)/8 {
		return fmt.Errorf("page %d (byte %d), the freelist, counts %d IDs, more than it can hold", id, int64(id*w.pageSize), count)
	}
	for i := range count {
		if free := native.Uint64(p[start+8*i:]); free < 2 || free >= w.hwm {
			return fmt.Errorf("page %d (byte %d), the freelist, lists page %d, outside the data pages", id, int64(id*w.pageSize), free)
		}
	}
	return nil
}

// tree checks the branch or leaf page id and the pages below it.
func (w *walker) tree(id uint64, depth int, from string) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("%s refers to page %d at depth %d: a chain of pages, not a tree", from, id, depth)
	}
	p, err := w.page(id, from)
	if err != nil {
		return err
	}
	where := fmt.Sprintf("page %d (byte %d)", id, int64(id*w.pageSize))
	count := int(native.Uint16(p[10:]))
	if pageHeader+count*elementSize > len(p) {
		return fmt.Errorf("%s counts %d elements, more than it can hold", where, count)
	}
	switch flags := native.Uint16(p[8:]); flags {
	case branchPage:
		for i := range count {
			e := pageHeader + i*elementSize
			if _, err := span(p, e, native.Uint32(p[e:]), native.Uint32(p[e+4:])); err != nil {
				return fmt.Errorf("%s, element %d: its key %w", where, i, err)
			}
			if err := w.tree(native.Uint64(p[e+8:]), depth+1, where); err != nil {
				return err
			}
		}
		return nil
	case leafPage:
		return w.leaf(p, count, depth, where)
	default:
		return fmt.Errorf("%s, referred to by %s, has type flags %#x, not a branch or leaf page", where, from, flags)
	}
}

// leaf checks the elements of a leaf page (or inline page) p, and the
// buckets they hold.
func (w *walker) leaf(p []byte, count, depth int, where string) error {
	for i := range count {
		e := pageHeader + i*elementSize
		flags, pos := native.Uint32(p[e:]), native.Uint32(p[e+4:])
		ksize, vsize := native.Uint32(p[e+8:]), native.Uint32(p[e+12:])
		kv, err := span(p, e, pos, ksize+vsize)
		if err != nil || ksize+vsize < ksize {
			return fmt.Errorf("%s, element %d: its key or value %w", where, i, errOutside)
		}
		if flags&bucketElement == 0 {
			continue
		}
		v := kv[ksize:]
		what := fmt.Sprintf("bucket %q (%s, element %d)", kv[:ksize], where, i)
		if len(v) < bucketHeader {
			return fmt.Errorf("%s: its value has %d bytes, less than a bucket header", what, len(v))
		}
		if root := native.Uint64(v); root != 0 {
			if err := w.tree(root, depth+1, what); err != nil {
				return err
			}
			continue
		}
		if err := w.inline(v[bucketHeader:], what); err != nil {
			return err
		}
	}
	return nil
}

// inline checks an inline bucket's page: a leaf page without sub-buckets
// (bbolt never inlines a bucket that has any).
func (w *walker) inline(p []byte, what string) error {
	if len(p) < pageHeader {
		return fmt.Errorf("%s: its inline page has %d bytes, less than a page header", what, len(p))
	}
	count := int(native.Uint16(p[10:]))
	if flags := native.Uint16(p[8:]); flags != leafPage || pageHeader+count*elementSize > len(p) {
		return fmt.Errorf("%s: its inline page is not a leaf page of %d elements", what, count)
	}
	for i := range count {
		if native.Uint32(p[pageHeader+i*elementSize:])&bucketElement != 0 {
			return fmt.Errorf("%s: its inline page holds a bucket", what)
		}
	}
	return w.leaf(p, count, maxTreeDepth, what+"'s inline page")
}

var errOutside = errors.New("lies outside its page")

// span returns the n bytes at pos from the element at offset e of page p,
// errOutside if they are not all inside p.
func span(p []byte, e int, pos, n uint32) ([]byte, error) {
	start := uint64(e) + uint64(pos)
	end := start + uint64(n)
	if end > uint64(len(p)) {
		return nil, errOutside
	}
	return p[start:end], nil
}
