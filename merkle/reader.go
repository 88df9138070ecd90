package merkle

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/veritytree/veritytree/hashes"
)

// ReaderOptions tune a Reader. The zero value (or nil) verifies every block
// on every read, as the kernel does without optional arguments.
type ReaderOptions struct {
	// IgnoreZeroBlocks: a data block whose expected digest equals the digest
	// of an all-zero block (with this salt and format) reads as zeros
	// without touching the data device: the kernel's ignore_zero_blocks.
	IgnoreZeroBlocks bool
	// CheckAtMostOnce: data blocks that verified once are remembered in a
	// bitmap (one bit per data block) and not hashed again; later reads
	// return what the data device holds: the kernel's check_at_most_once.
	CheckAtMostOnce bool
	// CacheBlocks bounds how many verified hash blocks are cached; memory
	// is at most CacheBlocks*HashBlockSize. 0 means the default, 4 MiB worth
	// of hash blocks (1024 of 4096 bytes) but at least 16; a negative value
	// disables the cache, so every read verifies its whole path to the root.
	CacheBlocks int
}

// readerDefaultCacheBytes is the default cache size in bytes.
const readerDefaultCacheBytes = 4 << 20

// readerChunkBytes bounds the data one ReadAt reads and hashes at a time
// (per goroutine), so large reads use bounded memory.
const readerChunkBytes = 256 << 10

// Reader reads the data device through the hash tree, as dm-verity does in
// the kernel: every data block a read touches is hashed and checked against
// the tree, and each hash block on its path up to the root hash is checked
// before it is trusted. Trusted hash blocks are kept in a bounded cache, so
// a later read under the same hash block hashes only its data blocks.
//
// Memory is bounded whatever the image size: the cache (see
// ReaderOptions.CacheBlocks), per concurrent ReadAt at most 256 KiB of data
// blocks (a larger read is done in chunks; contiguous blocks are read with
// one ReadAt of the data device) and one hash block, and with
// CheckAtMostOnce one bit per data block.
//
// A Reader is safe for concurrent use by many goroutines: hashing and I/O
// run in parallel; a mutex guards only the cache.
type Reader struct {
	g          *Geometry
	data, hash io.ReaderAt
	root       []byte
	zero       []byte          // digest of an all-zero data block, with IgnoreZeroBlocks
	checked    []atomic.Uint64 // CheckAtMostOnce: one bit per verified data block
	chunk      int             // data blocks per chunk
	pool       sync.Pool       // of *rdScratch

	mu    sync.Mutex
	cache rdCache
}

// NewReader returns a Reader of the data covered by g. data and hash are the
// data and hash devices (they may be the same file); root is the expected
// root hash, exactly g.DigestSize bytes. opts may be nil. Nothing is read
// until the first ReadAt.
func NewReader(g *Geometry, data, hash io.ReaderAt, root []byte, opts *ReaderOptions) (*Reader, error) {
	if g == nil {
		return nil, errors.New("verity: NewReader: no geometry")
	}
	if data == nil || hash == nil {
		return nil, errors.New("verity: NewReader: no data or hash device")
	}
	if len(root) != g.DigestSize {
		return nil, fmt.Errorf("verity: root hash is %d bytes, but a %s digest is %d bytes", len(root), g.Hash.Name(), g.DigestSize)
	}
	if opts == nil {
		opts = &ReaderOptions{}
	}
	r := &Reader{
		g:     g,
		data:  data,
		hash:  hash,
		root:  bytes.Clone(root),
		chunk: int(min(uint64(max(1, readerChunkBytes/g.DataBlockSize)), g.DataBlocks)),
	}
	r.pool.New = func() any { return r.rdNewScratch() }

	cacheBlocks := opts.CacheBlocks
	if cacheBlocks == 0 {
		cacheBlocks = max(16, readerDefaultCacheBytes/g.HashBlockSize)
	}
	if uint64(max(cacheBlocks, 0)) > g.HashBlocks {
		cacheBlocks = int(g.HashBlocks) // no point in more
	}
	r.cache.max = cacheBlocks
	if cacheBlocks > 0 {
		r.cache.idx = make(map[uint64]int, cacheBlocks)
	}

	if opts.CheckAtMostOnce {
		r.checked = make([]atomic.Uint64, (g.DataBlocks+63)/64)
	}
	if opts.IgnoreZeroBlocks {
		s := r.rdGetScratch()
		r.zero = make([]byte, g.DigestSize)
		s.dh.HashBlocks(r.zero, g.DigestSize, make([]byte, g.DataBlockSize))
		r.pool.Put(s)
	}
	return r, nil
}

// Size returns the number of data bytes the tree covers: g.DataSize().
func (r *Reader) Size() int64 { return int64(r.g.DataSize()) }

// ReadAt reads len(p) bytes of the covered data at off (io.ReaderAt). Each
// data block the read touches is verified, with its path of hash blocks up
// to the root, before any of its bytes are returned. Past the end of the
// covered data it returns io.EOF.
//
// On failure n counts the bytes of p before the first block that failed, all
// of them verified (the bytes of p past n are undefined), and err is the
// failure of that first block: a *CorruptionError, wrapping ErrCorrupt,
// naming the data block or the hash block on its path that did not match,
// or an I/O error of the data or hash device, wrapped with the block it was
// reading (a device ending too early is reported as truncated, wrapping
// io.ErrUnexpectedEOF).
func (r *Reader) ReadAt(p []byte, off int64) (n int, err error) {
	if off < 0 {
		return 0, errors.New("verity: ReadAt: negative offset")
	}
	size := r.Size()
	if off >= size {
		return 0, io.EOF
	}
	var eof error
	if int64(len(p)) > size-off {
		p = p[:size-off]
		eof = io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	s := r.rdGetScratch()
	defer r.pool.Put(s)
	dbs := int64(r.g.DataBlockSize)
	last := uint64((off + int64(len(p)) - 1) / dbs)
	for n < len(p) {
		pos := off + int64(n)
		first := uint64(pos / dbs)
		count := int(min(last-first+1, uint64(r.chunk)))
		done, err := r.rdChunk(s, first, count)
		skip := pos - int64(first)*dbs
		if end := int64(done) * dbs; end > skip {
			n += copy(p[n:], s.data[skip:end])
		}
		if err != nil {
			return n, err
		}
	}
	return n, eof
}

// VerifyBlock verifies data block index, and its path to the root, as a read
// of it would (options included), without returning its bytes.
func (r *Reader) VerifyBlock(index uint64) error {
	if index >= r.g.DataBlocks {
		return fmt.Errorf("verity: data block %d is out of range: the tree covers %d blocks", index, r.g.DataBlocks)
	}
	if r.rdIsChecked(index) {
		return nil // CheckAtMostOnce: verified before
	}
	s := r.rdGetScratch()
	defer r.pool.Put(s)
	_, err := r.rdChunk(s, index, 1)
	return err
}

// rdScratch is one goroutine's working memory: the hashers, which are not
// safe for concurrent use, and buffers for one chunk of data blocks.
type rdScratch struct {
	dh, hh *hashes.BlockHasher // data block and hash block hashers
	hbuf   []byte              // one hash block
	want   []byte              // expected digest of hbuf's block
	got    []byte              // computed digest of hbuf's block
	data   []byte              // data blocks, up to a chunk
	exp    []byte              // expected digests of the chunk's blocks, DigestSize stride
	sum    []byte              // computed digests of the chunk's blocks
	state  []rdBlockState
}

type rdBlockState uint8

const (
	rdVerify  rdBlockState = iota // read and hash
	rdTrusted                     // verified before (CheckAtMostOnce): read only
	rdZero                        // expected digest is the zero block's (IgnoreZeroBlocks): neither
)

func (r *Reader) rdNewScratch() *rdScratch {
	g := r.g
	return &rdScratch{
		dh:   g.Hash.NewBlockHasher(g.DataBlockSize, g.Salt, g.SaltPosition()),
		hh:   g.Hash.NewBlockHasher(g.HashBlockSize, g.Salt, g.SaltPosition()),
		hbuf: make([]byte, g.HashBlockSize),
		want: make([]byte, g.DigestSize),
		got:  make([]byte, g.DigestSize),
	}
}

// rdGrow makes room in s for count data blocks (at most the chunk size):
// small reads keep small buffers.
func (r *Reader) rdGrow(s *rdScratch, count int) {
	if len(s.state) >= count {
		return
	}
	g := r.g
	count = min(r.chunk, max(count, 2*len(s.state)))
	s.data = make([]byte, count*g.DataBlockSize)
	s.exp = make([]byte, count*g.DigestSize)
	s.sum = make([]byte, count*g.DigestSize)
	s.state = make([]rdBlockState, count)
}

func (r *Reader) rdGetScratch() *rdScratch { return r.pool.Get().(*rdScratch) }

func (r *Reader) rdIsChecked(b uint64) bool {
	return r.checked != nil && r.checked[b/64].Load()&(1<<(b%64)) != 0
}

// rdChunk verifies the count data blocks from first into s.data. It returns
// how many leading blocks were verified and, if fewer than count, the error
// of the first block that was not.
func (r *Reader) rdChunk(s *rdScratch, first uint64, count int) (int, error) {
	g := r.g
	ds, dbs := g.DigestSize, g.DataBlockSize
	r.rdGrow(s, count)
	stop := count
	var err error

	// Expected digests, from the (cached or newly verified) tree.
	for k := 0; k < count; {
		b := first + uint64(k)
		if r.rdIsChecked(b) {
			s.state[k] = rdTrusted
			k++
			continue
		}
		n := 1
		if g.Levels == 0 {
			copy(s.exp[k*ds:], r.root)
		} else {
			// The run of unverified blocks sharing b's level-0 hash block.
			parent, slot := g.Parent(DataLevel, b)
			for k+n < count {
				c := b + uint64(n)
				if pc, _ := g.Parent(DataLevel, c); pc != parent || r.rdIsChecked(c) {
					break
				}
				n++
			}
			if e := r.rdDigests(s, 0, parent, slot, n, s.exp[k*ds:]); e != nil {
				stop, err = k, e
				break
			}
		}
		for j := k; j < k+n; j++ {
			s.state[j] = rdVerify
			if r.zero != nil && bytes.Equal(s.exp[j*ds:(j+1)*ds], r.zero) {
				s.state[j] = rdZero
			}
		}
		k += n
	}

	// Data, in runs of blocks that are to be read.
	for k := 0; k < stop; {
		if s.state[k] == rdZero {
			clear(s.data[k*dbs : (k+1)*dbs])
			k++
			continue
		}
		j := k + 1
		for j < stop && s.state[j] != rdZero {
			j++
		}
		buf := s.data[k*dbs : j*dbs]
		off := int64(first+uint64(k)) * int64(dbs)
		if m, e := r.data.ReadAt(buf, off); m < len(buf) {
			bad := k + m/dbs
			b := first + uint64(bad)
			if e == nil || e == io.EOF || errors.Is(e, io.ErrUnexpectedEOF) {
				e = fmt.Errorf("the data device is truncated: it ends at byte %d, but the tree covers %d bytes: %w",
					off+int64(m), g.DataSize(), io.ErrUnexpectedEOF)
			}
			stop, err = bad, fmt.Errorf("verity: reading data block %d (byte %d of the data device): %w", b, b*uint64(dbs), e)
			break
		}
		k = j
	}

	// Hashes, in runs of blocks to verify; stop at the first mismatch.
hashing:
	for k := 0; k < stop; {
		if s.state[k] != rdVerify {
			k++
			continue
		}
		j := k + 1
		for j < stop && s.state[j] == rdVerify {
			j++
		}
		s.dh.HashBlocks(s.sum[k*ds:], ds, s.data[k*dbs:j*dbs])
		for i := k; i < j; i++ {
			if !bytes.Equal(s.sum[i*ds:(i+1)*ds], s.exp[i*ds:(i+1)*ds]) {
				b := first + uint64(i)
				reason := "digest mismatch"
				if g.Levels == 0 {
					reason = "digest mismatch: its digest is not the root hash"
				}
				stop, err = i, &CorruptionError{Level: DataLevel, Index: b, Offset: b * uint64(dbs), Reason: reason}
				break hashing
			}
		}
		k = j
	}

	if r.checked != nil {
		for k := range stop {
			if s.state[k] == rdVerify {
				b := first + uint64(k)
				r.checked[b/64].Or(1 << (b % 64))
			}
		}
	}
	return stop, err
}

// rdDigests copies n digests, from slot index slot on, of hash block index
// of level into out (DigestSize stride), verifying the block and the
// uncached part of its path to the root first.
func (r *Reader) rdDigests(s *rdScratch, level Level, index uint64, slot, n int, out []byte) error {
	g := r.g
	ds := g.DigestSize
	copyOut := func(blk []byte) {
		for i := range n {
			o := slot + i*g.DigestSlot
			copy(out[i*ds:(i+1)*ds], blk[o:o+ds])
		}
	}

	// Find the lowest trusted ancestor (or the root) and the digest it
	// holds for the highest untrusted block of the path.
	r.mu.Lock()
	if blk := r.cache.get(g.LevelStart[level] + index); blk != nil {
		copyOut(blk)
		r.mu.Unlock()
		return nil
	}
	top, topIndex := level, index
	copy(s.want, r.root)
	for top < g.TopLevel() {
		pi, o := g.Parent(top, topIndex)
		if blk := r.cache.get(g.LevelStart[top+1] + pi); blk != nil {
			copy(s.want, blk[o:o+ds])
			break
		}
		top, topIndex = top+1, pi
	}
	r.mu.Unlock()

	// Verify down the path; each block vouches for the next.
	for l := top; ; l-- {
		i := index >> (uint(l-level) * g.hpbShift)
		if err := r.rdHashBlock(s, l, i); err != nil {
			return err
		}
		r.mu.Lock()
		r.cache.put(g.LevelStart[l]+i, s.hbuf)
		r.mu.Unlock()
		if l == level {
			copyOut(s.hbuf)
			return nil
		}
		_, o := g.Parent(l-1, index>>(uint(l-1-level)*g.hpbShift))
		copy(s.want, s.hbuf[o:o+ds])
	}
}

// rdHashBlock reads hash block index of level into s.hbuf and checks that
// its digest is s.want.
func (r *Reader) rdHashBlock(s *rdScratch, level Level, index uint64) error {
	g := r.g
	off := g.BlockOffset(level, index)
	if m, err := r.hash.ReadAt(s.hbuf, int64(off)); m < len(s.hbuf) {
		if err == nil || err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("verity: the hash device is truncated: hash block %d of level %d is bytes %d to %d, but the device ends at byte %d: %w",
				index, level, off, off+uint64(g.HashBlockSize), off+uint64(m), io.ErrUnexpectedEOF)
		}
		return fmt.Errorf("verity: reading hash block %d of level %d (byte %d of the hash device): %w", index, level, off, err)
	}
	s.hh.HashBlocks(s.got, g.DigestSize, s.hbuf)
	if bytes.Equal(s.got, s.want) {
		return nil
	}
	reason := "digest mismatch: its digest is not the root hash"
	if level < g.TopLevel() {
		pi, _ := g.Parent(level, index)
		reason = fmt.Sprintf("digest mismatch: its digest is not the one in hash block %d of level %d", pi, level+1)
	}
	return &CorruptionError{Level: level, Index: index, Offset: off, Reason: reason}
}

// rdCache holds verified hash blocks, keyed by their block number in the hash
// device, evicting with the CLOCK algorithm. Callers hold Reader.mu; blocks
// it returns are valid only until the lock is released.
type rdCache struct {
	max  int // 0 or less: caching is off
	idx  map[uint64]int
	ents []rdCacheEntry
	hand int
}

type rdCacheEntry struct {
	key  uint64
	ref  bool
	data []byte
}

func (c *rdCache) get(key uint64) []byte {
	i, ok := c.idx[key]
	if !ok {
		return nil
	}
	c.ents[i].ref = true
	return c.ents[i].data
}

// put stores a copy of blk, which must have been verified.
func (c *rdCache) put(key uint64, blk []byte) {
	if c.max <= 0 {
		return
	}
	if i, ok := c.idx[key]; ok { // another goroutine verified it too
		c.ents[i].ref = true
		return
	}
	if len(c.ents) < c.max {
		c.idx[key] = len(c.ents)
		c.ents = append(c.ents, rdCacheEntry{key: key, data: bytes.Clone(blk)})
		return
	}
	for c.ents[c.hand].ref {
		c.ents[c.hand].ref = false
		c.hand = (c.hand + 1) % len(c.ents)
	}
	e := &c.ents[c.hand]
	delete(c.idx, e.key)
	e.key = key
	copy(e.data, blk)
	c.idx[key] = c.hand
	c.hand = (c.hand + 1) % len(c.ents)
}
