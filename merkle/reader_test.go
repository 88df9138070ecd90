package merkle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/veritytree/veritytree/hashes"
)

// rdImage is a tree built with Build, with the bytes it was built from.
type rdImage struct {
	g    *Geometry
	src  []byte   // the data device: the covered data, maybe a partial block more
	hash *memFile // the hash device
	root []byte
}

func rdBuild(t testing.TB, p Params, src []byte) *rdImage {
	t.Helper()
	g, err := NewGeometry(p)
	if err != nil {
		t.Fatal(err)
	}
	hash := &memFile{}
	root, err := Build(context.Background(), g, &memFile{b: src}, hash, &BuildOptions{Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	return &rdImage{g: g, src: src, hash: hash, root: root}
}

func rdRandomBytes(rng *rand.Rand, n int) []byte {
	var seed [32]byte
	for i := range seed {
		seed[i] = byte(rng.Uint32())
	}
	b := make([]byte, n)
	rand.NewChaCha8(seed).Read(b)
	return b
}

// rdRandomImage builds p over random data plus up to a block of trailing
// bytes, which the tree does not cover.
func rdRandomImage(t testing.TB, rng *rand.Rand, p Params) *rdImage {
	t.Helper()
	size := p.DataBlocks*uint64(p.DataBlockSize) + uint64(rng.IntN(p.DataBlockSize))
	return rdBuild(t, p, rdRandomBytes(rng, int(size)))
}

func (im *rdImage) reader(t testing.TB, opts *ReaderOptions) *Reader {
	t.Helper()
	r, err := NewReader(im.g, &memFile{b: im.src}, im.hash, im.root, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func rdName(p Params) string {
	return fmt.Sprintf("%s-v%d-%d-%d-n%d-salt%d-sb%v-off%d", p.Hash.Name(), p.Format(), p.DataBlockSize,
		p.HashBlockSize, p.DataBlocks, len(p.Salt), p.Superblock, p.HashOffset)
}

// rdHPB is FORMAT.md's digests per hash block, computed here, not by Geometry.
func rdHPB(p Params) uint64 { return 1 << (bits.Len(uint(p.HashBlockSize/p.Hash.Size())) - 1) }

// rdFault says how a read of a data block must fail: nil if it must not.
type rdFault func(block uint64) *CorruptionError

func rdNoFault(uint64) *CorruptionError { return nil }

// rdCheckRead reads length bytes at off from r and checks the outcome
// against src (the source data), the covered size and fault: every byte
// before the first faulty block is returned, and the error names that block.
// It returns an error rather than failing, for use from many goroutines.
func rdCheckRead(r io.ReaderAt, src []byte, size int64, dbs int, fault rdFault, off int64, length int) error {
	p := bytes.Repeat([]byte{0xa5}, length)
	n, err := r.ReadAt(p, off)
	what := fmt.Sprintf("ReadAt(%d bytes at %d)", length, off)
	if off >= size {
		if n != 0 || err != io.EOF {
			return fmt.Errorf("%s past the end = %d, %v; want 0, EOF", what, n, err)
		}
		return nil
	}
	end := min(off+int64(length), size)
	wantN := int(end - off)
	var want *CorruptionError
	if length > 0 {
		for b := uint64(off) / uint64(dbs); b <= uint64(end-1)/uint64(dbs); b++ {
			if c := fault(b); c != nil {
				want = c
				wantN = int(max(0, int64(b)*int64(dbs)-off))
				break
			}
		}
	}
	if n != wantN {
		return fmt.Errorf("%s: n = %d, want %d (err %v)", what, n, wantN, err)
	}
	if !bytes.Equal(p[:n], src[off:off+int64(n)]) {
		return fmt.Errorf("%s: the %d bytes returned differ from the data", what, n)
	}
	switch {
	case want != nil:
		var ce *CorruptionError
		if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
			return fmt.Errorf("%s: err = %v, want a CorruptionError", what, err)
		}
		if ce.Level != want.Level || ce.Index != want.Index || ce.Offset != want.Offset || ce.Reason == "" {
			return fmt.Errorf("%s: err names level %d block %d at %d, want level %d block %d at %d (%v)",
				what, ce.Level, ce.Index, ce.Offset, want.Level, want.Index, want.Offset, err)
		}
	case end < off+int64(length):
		if err != io.EOF {
			return fmt.Errorf("%s across the end: err = %v, want EOF", what, err)
		}
	case err != nil:
		return fmt.Errorf("%s: %v", what, err)
	}
	return nil
}

type rdSpan struct {
	off int64
	n   int
}

// rdSpans returns reads worth trying on size bytes of dbs-byte blocks: the
// edges, block boundaries, the end and past it, empty reads, random ones.
func rdSpans(rng *rand.Rand, size int64, dbs int, random int) []rdSpan {
	d := int64(dbs)
	cands := []rdSpan{
		{0, 0}, {0, 1}, {0, dbs}, {0, int(size) + 1}, {1, int(size) - 2},
		{d - 1, 2}, {d - 5, dbs + 10}, {d, dbs}, {2*d - 1, 3},
		{size - 1, 1}, {size - 1, 10}, {size - d, dbs}, {size - d - 3, dbs + 3}, {size - 7, dbs + 7},
		{size / 2, 0}, {size, 0}, {size, 5}, {size + 100, 5},
	}
	for range random {
		off := rng.Int64N(size)
		var n int
		switch rng.IntN(3) {
		case 0:
			n = rng.IntN(dbs + 1)
		case 1:
			n = rng.IntN(4*dbs + 1)
		default:
			n = rng.IntN(64*dbs + 1)
		}
		cands = append(cands, rdSpan{off, n})
	}
	var spans []rdSpan
	for _, s := range cands {
		if s.off >= 0 && s.n >= 0 {
			spans = append(spans, s)
		}
	}
	return spans
}

// rdParamCases are the fixed geometries: level-fill boundaries, deep trees
// (hpb 8), unequal block sizes, formats 0 and 1, salts, offsets.
func rdParamCases() []Params {
	var ps []Params
	add := func(p Params, counts ...uint64) {
		for _, n := range counts {
			p.DataBlocks = n
			ps = append(ps, p)
		}
	}
	salt := func(n int) []byte { return bytes.Repeat([]byte{0x5a, 0x13, 0xc7}, 100)[:n] }
	add(Params{Hash: hashes.SHA256, Salt: salt(32), DataBlockSize: 4096, HashBlockSize: 4096, Superblock: true},
		1, 2, 128, 129, 1000)
	add(Params{Hash: hashes.SHA512, LegacyFormat: true, Salt: salt(1), DataBlockSize: 512, HashBlockSize: 512},
		1, 2, 8, 9, 64, 65, 513, 3000)
	add(Params{Hash: hashes.SHA1, DataBlockSize: 1024, HashBlockSize: 8192, HashOffset: 8192},
		1, 256, 257)
	add(Params{Hash: hashes.BLAKE2b256, Salt: salt(256), DataBlockSize: 8192, HashBlockSize: 512,
		Superblock: true, HashOffset: 3 * 512}, 16, 17, 300)
	add(Params{Hash: hashes.SHA1, LegacyFormat: true, Salt: salt(100), DataBlockSize: 2048, HashBlockSize: 1024,
		HashOffset: 2048}, 32, 33, 1025)
	return ps
}

// rdAllParams is rdParamCases and random ones from the builder's tests, cut
// to at most 4 MiB of data to keep the tests quick under the race detector.
func rdAllParams(rng *rand.Rand, random int) []Params {
	ps := rdParamCases()
	for range random {
		p := randomParams(rng)
		p.DataBlocks = min(p.DataBlocks, uint64(4<<20/p.DataBlockSize))
		ps = append(ps, p)
	}
	return ps
}

func TestReaderReadsBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i, p := range rdAllParams(rng, campaignSize(12, 3)) {
		t.Run(fmt.Sprintf("%d-%s", i, rdName(p)), func(t *testing.T) {
			im := rdRandomImage(t, rng, p)
			for o, opts := range []*ReaderOptions{
				nil,
				{CacheBlocks: 1},
				{CacheBlocks: -1, CheckAtMostOnce: true},
				{IgnoreZeroBlocks: true, CheckAtMostOnce: true, CacheBlocks: 3},
			} {
				r := im.reader(t, opts)
				size, dbs := r.Size(), im.g.DataBlockSize
				if size != int64(p.DataBlocks)*int64(dbs) {
					t.Fatalf("Size() = %d, want %d", size, int64(p.DataBlocks)*int64(dbs))
				}
				for _, s := range rdSpans(rng, size, dbs, 25) {
					if err := rdCheckRead(r, im.src, size, dbs, rdNoFault, s.off, s.n); err != nil {
						t.Fatalf("options %+v: %v", opts, err)
					}
				}
				for b := range p.DataBlocks {
					if err := r.VerifyBlock(b); err != nil {
						t.Fatalf("VerifyBlock(%d): %v", b, err)
					}
				}

				if o%2 == 1 {
					continue
				}
				// Through a SectionReader: all of it, in odd-sized reads, and
				// after a seek.
				sr := io.NewSectionReader(r, 0, r.Size())
				var got []byte
				buf := make([]byte, 777+rng.IntN(3*dbs))
				for {
					n, err := sr.Read(buf)
					got = append(got, buf[:n]...)
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				if !bytes.Equal(got, im.src[:size]) {
					t.Fatalf("reading through a SectionReader: %d bytes differ from the data's %d", len(got), size)
				}
				at := rng.Int64N(size)
				if _, err := sr.Seek(at, io.SeekStart); err != nil {
					t.Fatal(err)
				}
				rest, err := io.ReadAll(sr)
				if err != nil || !bytes.Equal(rest, im.src[at:size]) {
					t.Fatalf("ReadAll after Seek(%d): %d bytes, %v", at, len(rest), err)
				}
			}
		})
	}
}

func TestReaderCorruptData(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i, p := range rdAllParams(rng, campaignSize(10, 3)) {
		t.Run(fmt.Sprintf("%d-%s", i, rdName(p)), func(t *testing.T) {
			im := rdRandomImage(t, rng, p)
			dbs := p.DataBlockSize
			bad := rng.Uint64N(p.DataBlocks)
			pos := int(bad)*dbs + rng.IntN(dbs)
			orig := im.src[pos]
			im.src[pos] ^= byte(1 + rng.IntN(255))
			r := im.reader(t, &ReaderOptions{CacheBlocks: rng.IntN(4) - 1, CheckAtMostOnce: rng.IntN(2) == 0})
			fault := func(b uint64) *CorruptionError {
				if b == bad {
					return &CorruptionError{Level: DataLevel, Index: bad, Offset: bad * uint64(dbs)}
				}
				return nil
			}
			size, d := r.Size(), int64(dbs)
			spans := []rdSpan{
				{int64(bad) * d, dbs}, {int64(bad)*d + 1, 1}, {int64(bad)*d - 3, 4}, {int64(bad)*d - d - 3, 3 * dbs},
				{int64(bad)*d + d, dbs}, {int64(bad)*d - 1, 1},
			}
			spans = append(spans, rdSpans(rng, size, dbs, 60)...)
			for _, s := range spans {
				if s.off < 0 {
					continue
				}
				if err := rdCheckRead(r, im.src, size, dbs, fault, s.off, s.n); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.VerifyBlock(bad); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("VerifyBlock(%d) of the corrupted block: %v", bad, err)
			}
			// Fixed again, it reads: nothing about the failure was kept.
			im.src[pos] = orig
			if err := rdCheckRead(r, im.src, size, dbs, rdNoFault, int64(bad)*d, dbs); err != nil {
				t.Fatalf("after the fix: %v", err)
			}
		})
	}
}

// rdUnder returns the fault of hash block (level, index): computed from the
// format, not Geometry, every data block in [index*hpb^(level+1),
// (index+1)*hpb^(level+1)) is under it.
func rdUnder(g *Geometry, level int, index uint64) (first, end uint64, fault rdFault) {
	span := uint64(1)
	for range level + 1 {
		span *= rdHPB(g.Params)
	}
	first, end = index*span, min((index+1)*span, g.DataBlocks)
	want := &CorruptionError{Level: Level(level), Index: index, Offset: g.BlockOffset(Level(level), index)}
	return first, end, func(b uint64) *CorruptionError {
		if b >= first && b < end {
			return want
		}
		return nil
	}
}

// rdHashBlockSpans returns reads under and around data blocks [first, end).
func rdHashBlockSpans(rng *rand.Rand, g *Geometry, first, end uint64) []rdSpan {
	d := int64(g.DataBlockSize)
	f, e := int64(first)*d, int64(end)*d
	mid := f + rng.Int64N(e-f)
	spans := []rdSpan{
		{f, int(d)}, {e - 1, 1}, {mid, 1}, {f - 10, 11}, {f - d, int(d)}, {e, int(d)}, {e - 1, int(d)},
		{f - 2*d, int(4 * d)}, {0, int(f)}, {e, int(g.DataSize())},
	}
	spans = append(spans, rdSpans(rng, int64(g.DataSize()), g.DataBlockSize, 30)...)
	rng.Shuffle(len(spans), func(i, j int) { spans[i], spans[j] = spans[j], spans[i] })
	return spans
}

func TestReaderCorruptHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i, p := range rdAllParams(rng, campaignSize(10, 3)) {
		g, err := NewGeometry(p)
		if err != nil {
			t.Fatal(err)
		}
		if g.Levels == 0 {
			continue
		}
		t.Run(fmt.Sprintf("%d-%s", i, rdName(p)), func(t *testing.T) {
			im := rdRandomImage(t, rng, p)
			hbs, ds := p.HashBlockSize, p.Hash.Size()
			hpb := rdHPB(p)
			slot := ds
			if !p.LegacyFormat {
				slot = 1 << bits.Len(uint(ds-1))
			}
			for level := range g.Levels {
				// Blocks at this level, and children (digests) they hold.
				children := p.DataBlocks
				for range level {
					children = (children + hpb - 1) / hpb
				}
				blocks := (children + hpb - 1) / hpb
				index := rng.Uint64N(blocks)
				used := int(min(hpb, children-index*hpb))
				for _, where := range []string{"slot", "padding"} {
					var pos int
					switch {
					case where == "slot":
						pos = rng.IntN(used)*slot + rng.IntN(ds)
					case used*slot < hbs && (slot == ds || rng.IntN(2) == 0):
						pos = used*slot + rng.IntN(hbs-used*slot)
					case slot > ds:
						pos = rng.IntN(used)*slot + ds + rng.IntN(slot-ds)
					default:
						continue // a full block of packed digests: no padding
					}
					off := int(g.BlockOffset(Level(level), index)) + pos
					orig := im.hash.b[off]
					im.hash.b[off] ^= byte(1 + rng.IntN(255))
					first, end, fault := rdUnder(g, level, index)
					r := im.reader(t, &ReaderOptions{CacheBlocks: rng.IntN(6) - 1, CheckAtMostOnce: rng.IntN(2) == 0})
					for _, s := range rdHashBlockSpans(rng, g, first, end) {
						if s.off < 0 {
							continue
						}
						if err := rdCheckRead(r, im.src, r.Size(), p.DataBlockSize, fault, s.off, s.n); err != nil {
							t.Fatalf("level %d block %d, byte %d (%s) corrupted: %v", level, index, pos, where, err)
						}
					}
					if err := r.VerifyBlock(first); !errors.Is(err, ErrCorrupt) {
						t.Fatalf("VerifyBlock(%d) under the corrupted hash block: %v", first, err)
					}
					// Restored, the same reader reads it all: the failed
					// block was not cached.
					im.hash.b[off] = orig
					if err := rdCheckRead(r, im.src, r.Size(), p.DataBlockSize, rdNoFault, 0, int(r.Size())); err != nil {
						t.Fatalf("level %d block %d restored: %v", level, index, err)
					}
				}
			}
		})
	}
}

func TestReaderWrongRoot(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i, p := range rdAllParams(rng, 5) {
		t.Run(fmt.Sprintf("%d-%s", i, rdName(p)), func(t *testing.T) {
			im := rdRandomImage(t, rng, p)
			im.root[rng.IntN(len(im.root))] ^= 0x80
			g := im.g
			want := &CorruptionError{Level: DataLevel, Index: 0, Offset: 0}
			if g.Levels > 0 {
				want = &CorruptionError{Level: Level(g.Levels - 1), Index: 0, Offset: g.BlockOffset(g.TopLevel(), 0)}
			}
			fault := func(uint64) *CorruptionError { return want }
			r := im.reader(t, nil)
			for _, s := range rdSpans(rng, r.Size(), p.DataBlockSize, 10) {
				if err := rdCheckRead(r, im.src, r.Size(), p.DataBlockSize, fault, s.off, s.n); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// rdCountingReaderAt counts the reads of a device and records their ranges.
type rdCountingReaderAt struct {
	ra    io.ReaderAt
	calls atomic.Int64
	mu    sync.Mutex
	spans []rdSpan
}

func (c *rdCountingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.calls.Add(1)
	c.mu.Lock()
	c.spans = append(c.spans, rdSpan{off, len(p)})
	c.mu.Unlock()
	return c.ra.ReadAt(p, off)
}

// reset returns the calls so far and forgets them.
func (c *rdCountingReaderAt) reset() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spans = nil
	return c.calls.Swap(0)
}

func TestReaderCache(t *testing.T) {
	// hpb 16 and 1000 blocks: three levels of 63, 4 and 1 blocks.
	rng := rand.New(rand.NewPCG(9, 10))
	im := rdRandomImage(t, rng, Params{Hash: hashes.SHA256, Salt: []byte{1, 2, 3}, DataBlockSize: 1024,
		HashBlockSize: 512, DataBlocks: 1000, Superblock: true})
	g := im.g
	if g.Levels != 3 {
		t.Fatalf("%d levels, want 3", g.Levels)
	}
	open := func(opts *ReaderOptions) (*Reader, *rdCountingReaderAt, *rdCountingReaderAt) {
		data := &rdCountingReaderAt{ra: &memFile{b: im.src}}
		hash := &rdCountingReaderAt{ra: im.hash}
		r, err := NewReader(g, data, hash, im.root, opts)
		if err != nil {
			t.Fatal(err)
		}
		return r, data, hash
	}
	read := func(r *Reader, block uint64) {
		t.Helper()
		if err := rdCheckRead(r, im.src, r.Size(), 1024, rdNoFault, int64(block)*1024, 1024); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(what string, c *rdCountingReaderAt, want int64) {
		t.Helper()
		if got := c.reset(); got != want {
			t.Fatalf("%s: %d reads, want %d", what, got, want)
		}
	}

	r, data, hash := open(nil)
	read(r, 480) // level-0 block 30, level-1 block 1
	expect("first read, hash device", hash, 3)
	expect("first read, data device", data, 1)
	read(r, 480)
	expect("same block again, hash device", hash, 0)
	expect("same block again, data device", data, 1)
	read(r, 495) // same level-0 block
	expect("neighbour, hash device", hash, 0)
	read(r, 496) // next level-0 block, same level-1 block
	expect("next level-0 block, hash device", hash, 1)
	read(r, 999) // another level-1 block
	expect("another level-1 block, hash device", hash, 2)

	// Reading everything verifies each hash block exactly once.
	r, _, hash = open(nil)
	if err := rdCheckRead(r, im.src, r.Size(), 1024, rdNoFault, 0, int(r.Size())); err != nil {
		t.Fatal(err)
	}
	expect("whole image", hash, int64(g.HashBlocks))

	// Without a cache, every read goes up to the root.
	r, _, hash = open(&ReaderOptions{CacheBlocks: -1})
	for range 3 {
		read(r, 500)
		expect("no cache", hash, 3)
	}

	// A small cache stays small, whatever is read.
	r, _, _ = open(&ReaderOptions{CacheBlocks: 5})
	for range 300 {
		read(r, rng.Uint64N(g.DataBlocks))
		if len(r.cache.ents) > 5 || len(r.cache.idx) != len(r.cache.ents) {
			t.Fatalf("cache of 5 holds %d entries, %d indexed", len(r.cache.ents), len(r.cache.idx))
		}
	}
}

func TestReaderIgnoreZeroBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, p := range []Params{
		{Hash: hashes.SHA256, Salt: []byte("salt"), DataBlockSize: 4096, HashBlockSize: 4096, DataBlocks: 300},
		{Hash: hashes.SHA1, LegacyFormat: true, Salt: []byte("salt"), DataBlockSize: 512, HashBlockSize: 1024, DataBlocks: 200, Superblock: true},
		{Hash: hashes.SHA512, DataBlockSize: 1024, HashBlockSize: 512, DataBlocks: 1},
	} {
		t.Run(rdName(p), func(t *testing.T) {
			dbs := p.DataBlockSize
			src := rdRandomBytes(rng, int(p.DataBlocks)*dbs)
			zero := map[uint64]bool{}
			for _, b := range []uint64{0, 5, 6, 7, 8, 9, 10, p.DataBlocks - 1, 100, 150} {
				if b < p.DataBlocks {
					zero[b] = true
					clear(src[int(b)*dbs : int(b+1)*dbs])
				}
			}
			im := rdBuild(t, p, src)
			// The device holds garbage where the zero blocks were.
			dev := bytes.Clone(src)
			for b := range zero {
				copy(dev[int(b)*dbs:], rdRandomBytes(rng, dbs))
			}
			data := &rdCountingReaderAt{ra: &memFile{b: dev}}
			r, err := NewReader(im.g, data, im.hash, im.root, &ReaderOptions{IgnoreZeroBlocks: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range rdSpans(rng, r.Size(), dbs, 50) {
				if err := rdCheckRead(r, src, r.Size(), dbs, rdNoFault, s.off, s.n); err != nil {
					t.Fatal(err)
				}
			}
			for b := range zero {
				if err := r.VerifyBlock(b); err != nil {
					t.Fatal(err)
				}
			}
			read := false
			for _, s := range data.spans {
				read = read || s.n > 0
				for b := range zero {
					if s.off < int64(b+1)*int64(dbs) && s.off+int64(s.n) > int64(b)*int64(dbs) {
						t.Fatalf("read %d bytes at %d of the data device: zero block %d touched", s.n, s.off, b)
					}
				}
			}
			if !read && len(zero) < int(p.DataBlocks) {
				t.Fatal("the data device was never read")
			}

			// Without the option the garbage is corruption.
			r, err = NewReader(im.g, &memFile{b: dev}, im.hash, im.root, nil)
			if err != nil {
				t.Fatal(err)
			}
			fault := func(b uint64) *CorruptionError {
				if zero[b] {
					return &CorruptionError{Level: DataLevel, Index: b, Offset: b * uint64(dbs)}
				}
				return nil
			}
			for _, s := range rdSpans(rng, r.Size(), dbs, 50) {
				if err := rdCheckRead(r, dev, r.Size(), dbs, fault, s.off, s.n); err != nil {
					t.Fatal(err)
				}
			}
		})
	}

	// A device that cannot be read at all is fine if all of it is zeros.
	g, _ := NewGeometry(Params{Hash: hashes.SHA256, DataBlockSize: 4096, HashBlockSize: 4096, DataBlocks: 1})
	im := rdBuild(t, g.Params, make([]byte, 4096))
	r, err := NewReader(g, errReaderAt{err: errors.New("no medium")}, im.hash, im.root, &ReaderOptions{IgnoreZeroBlocks: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := rdCheckRead(r, im.src, r.Size(), 4096, rdNoFault, 0, 4096); err != nil {
		t.Fatal(err)
	}
}

func TestReaderCheckAtMostOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, once := range []bool{true, false} {
		t.Run(fmt.Sprint("once=", once), func(t *testing.T) {
			im := rdRandomImage(t, rng, Params{Hash: hashes.BLAKE2b256, DataBlockSize: 4096, HashBlockSize: 4096, DataBlocks: 100})
			r := im.reader(t, &ReaderOptions{CheckAtMostOnce: once})
			const b, c = 40, 60
			faultAt := func(blocks ...uint64) rdFault {
				return func(x uint64) *CorruptionError {
					for _, y := range blocks {
						if x == y {
							return &CorruptionError{Level: DataLevel, Index: y, Offset: y * 4096}
						}
					}
					return nil
				}
			}
			check := func(fault rdFault, off int64, n int) {
				t.Helper()
				if err := rdCheckRead(r, im.src, r.Size(), 4096, fault, off, n); err != nil {
					t.Fatal(err)
				}
			}
			check(rdNoFault, (b-2)*4096, 5*4096) // verifies b-2..b+2
			im.src[b*4096+123] ^= 0xff           // corrupt the device after that
			im.src[c*4096+7] ^= 0x01             // and a block never read
			if once {
				// Verified once: the corrupted bytes are returned unchecked.
				check(rdNoFault, b*4096, 4096)
				check(rdNoFault, (b-2)*4096, 5*4096)
				if err := r.VerifyBlock(b); err != nil {
					t.Fatal(err)
				}
				check(faultAt(c), 0, int(r.Size()))
			} else {
				check(faultAt(b), b*4096, 4096)
				check(faultAt(b, c), 0, int(r.Size()))
			}
			// A block that failed is not remembered as verified.
			check(faultAt(c), c*4096, 4096)
			im.src[c*4096+7] ^= 0x01
			check(rdNoFault, c*4096, 4096)
			im.src[c*4096+7] ^= 0x01
			if once {
				check(rdNoFault, c*4096, 4096)
			} else {
				check(faultAt(c), c*4096, 4096)
			}
		})
	}
}

func TestReaderConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	p := Params{Hash: hashes.SHA256, Salt: []byte("concurrent"), DataBlockSize: 1024, HashBlockSize: 512,
		DataBlocks: 2000, Superblock: true}
	im := rdRandomImage(t, rng, p)
	g := im.g
	// One corrupted data block and one level-0 hash block with a bad slot.
	badData := uint64(1234)
	im.src[int(badData)*1024+500] ^= 0x10
	hashIndex := uint64(20) // data blocks 320..335
	im.hash.b[g.BlockOffset(0, hashIndex)+3*uint64(g.DigestSlot)] ^= 0x01
	_, _, hashFault := rdUnder(g, 0, hashIndex)
	fault := func(b uint64) *CorruptionError {
		if c := hashFault(b); c != nil {
			return c
		}
		if b == badData {
			return &CorruptionError{Level: DataLevel, Index: b, Offset: b * 1024}
		}
		return nil
	}
	for _, opts := range []*ReaderOptions{nil, {CacheBlocks: 3}, {CacheBlocks: 2, CheckAtMostOnce: true, IgnoreZeroBlocks: true}} {
		r := im.reader(t, opts)
		var wg sync.WaitGroup
		for w := range 12 {
			seed := rng.Uint64()
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(seed, uint64(w)))
				for _, s := range rdSpans(rng, r.Size(), 1024, 150) {
					if err := rdCheckRead(r, im.src, r.Size(), 1024, fault, s.off, s.n); err != nil {
						t.Errorf("goroutine %d, options %+v: %v", w, opts, err)
						return
					}
					b := rng.Uint64N(g.DataBlocks)
					if err := r.VerifyBlock(b); (err != nil) != (fault(b) != nil) {
						t.Errorf("goroutine %d: VerifyBlock(%d) = %v", w, b, err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
}

// rdFailingReaderAt reads ra but fails reads that reach from on.
type rdFailingReaderAt struct {
	ra   io.ReaderAt
	from int64
	err  error
}

func (f rdFailingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.from {
		n, _ := f.ra.ReadAt(p[:max(0, f.from-off)], off)
		return n, f.err
	}
	return f.ra.ReadAt(p, off)
}

func TestReaderErrors(t *testing.T) {
	p := Params{Hash: hashes.SHA256, DataBlockSize: 4096, HashBlockSize: 4096, DataBlocks: 1000, Superblock: true}
	g, err := NewGeometry(p)
	if err != nil {
		t.Fatal(err)
	}
	zeros := errReaderAt{size: 1 << 40}
	hash := &memFile{}
	root, err := Build(context.Background(), g, zeros, hash, nil)
	if err != nil {
		t.Fatal(err)
	}

	for _, bad := range [][]byte{nil, root[:31], append(bytes.Clone(root), 0)} {
		if _, err := NewReader(g, zeros, hash, bad, nil); err == nil {
			t.Errorf("NewReader with a %d-byte root: no error", len(bad))
		}
	}
	if _, err := NewReader(nil, zeros, hash, root, nil); err == nil {
		t.Error("NewReader without geometry: no error")
	}

	isIOErr := func(err error, target error, substr string, wantN, n int) {
		t.Helper()
		if n != wantN || !errors.Is(err, target) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), substr) {
			t.Errorf("n = %d (want %d), err = %v; want %v mentioning %q, not corruption", n, wantN, err, target, substr)
		}
	}
	buf := make([]byte, 10*4096)

	// The data device fails, or ends, at block 5.
	medium := errors.New("medium error")
	r, _ := NewReader(g, errReaderAt{size: 5*4096 + 17, err: medium}, hash, root, nil)
	n, err := r.ReadAt(buf, 100)
	isIOErr(err, medium, "data block 5", 5*4096-100, n)
	if err := r.VerifyBlock(5); !errors.Is(err, medium) {
		t.Errorf("VerifyBlock(5): %v", err)
	}
	r, _ = NewReader(g, errReaderAt{size: 5*4096 + 17, err: io.EOF}, hash, root, nil)
	n, err = r.ReadAt(buf, 0)
	isIOErr(err, io.ErrUnexpectedEOF, "data device is truncated", 5*4096, n)

	// The hash device ends inside level-0 block 3 (data blocks 384..511).
	short := &memFile{b: hash.b[:g.BlockOffset(0, 3)+100]}
	r, _ = NewReader(g, zeros, short, root, nil)
	n, err = r.ReadAt(buf, 380*4096)
	isIOErr(err, io.ErrUnexpectedEOF, "hash device is truncated", 4*4096, n)
	if err := rdCheckRead(r, make([]byte, g.DataSize()), r.Size(), 4096, rdNoFault, 0, 384*4096); err != nil {
		t.Error(err)
	}

	// The hash device fails from level-0 block 3 on.
	r, _ = NewReader(g, zeros, rdFailingReaderAt{hash, int64(g.BlockOffset(0, 3)), medium}, root, nil)
	n, err = r.ReadAt(buf, 380*4096)
	isIOErr(err, medium, "hash block 3 of level 0", 4*4096, n)

	if n, err := r.ReadAt(buf, -1); n != 0 || err == nil {
		t.Errorf("negative offset: %d, %v", n, err)
	}
	if err := r.VerifyBlock(1000); err == nil || errors.Is(err, ErrCorrupt) {
		t.Errorf("VerifyBlock past the end: %v", err)
	}
}
