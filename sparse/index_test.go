package sparse

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// randomImage builds a sparse file of n random chunks of every kind,
// zero-block chunks and CRC32 chunks included.
func randomImage(rng *rand.Rand, bs uint32, n int) *builder {
	b := newBuilder(bs)
	for range n {
		switch rng.IntN(7) {
		case 0, 1:
			b.raw(randBytes(rng, int(bs)*(1+rng.IntN(3))))
		case 2:
			b.fill(rng.Uint32()%3, uint32(1+rng.IntN(3))) // often the same pattern: runs merge
		case 3:
			b.dontCare(uint32(1 + rng.IntN(3)))
		case 4:
			b.fill(rng.Uint32(), 1)
		case 5:
			b.crc()
		default:
			b.dontCare(0)
		}
	}
	return b
}

// TestThinnedIndex: an index that keeps only some runs serves the same
// bytes, extents and checksums as a full one, to concurrent readers too.
func TestThinnedIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, limit := range []int{1, 2, 3, 7, 40} {
		for range 4 {
			b := randomImage(rng, 512, 200)
			b.imageCRC = crc32.ChecksumIEEE(b.want)
			f := b.bytes()
			wantExtents := openBytes(t, f).Extents()
			im, err := open(bytes.NewReader(f), int64(len(f)), limit)
			if err != nil {
				t.Fatal(err)
			}
			if im.exact || len(im.entries) > limit {
				t.Fatalf("limit %d: exact %v, %d entries", limit, im.exact, len(im.entries))
			}
			checkImage(t, im, b.want, rng)
			if got := im.Extents(); !equalExtents(got, wantExtents) {
				t.Fatalf("limit %d: Extents =\n%v\nwant\n%v", limit, got, wantExtents)
			}
			if err := im.CheckCRC(); err != nil {
				t.Fatalf("CheckCRC: %v", err)
			}
			concurrentReads(t, im, b.want)
		}
	}
}

// concurrentReads reads im from 20 goroutines (more than the cursors)
// at random offsets and sequentially, and compares with want.
func concurrentReads(t *testing.T, im *Image, want []byte) {
	t.Helper()
	var wg sync.WaitGroup
	for g := range 20 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			start := rng.IntN(len(want))
			for i := range 100 {
				off := rng.IntN(len(want))
				if i%2 == 0 { // sequential stretches, as a tree builder reads
					off = (start + i*700) % len(want)
				}
				n := rng.IntN(min(len(want)-off, 4<<10)) + 1
				p := make([]byte, n)
				if m, err := im.ReadAt(p, int64(off)); m != n || (err != nil && err != io.EOF) {
					t.Errorf("ReadAt = %d, %v", m, err)
					return
				}
				if !bytes.Equal(p, want[off:off+n]) {
					t.Errorf("ReadAt(%d, %d) differs", n, off)
					return
				}
			}
		})
	}
	wg.Wait()
}

// manyChunks is a sparse file of n one-block FILL chunks of 4-byte blocks,
// the pattern alternating so that no two merge, after crcs CRC32 chunks
// (of the empty image so far: 0): the worst case for an index per chunk.
func manyChunks(n, crcs int) []byte {
	const chunk = ChunkHeaderSize + 4
	f := make([]byte, HeaderSize, HeaderSize+(n+crcs)*chunk)
	le := binary.LittleEndian
	le.PutUint32(f[0:], Magic)
	le.PutUint16(f[4:], 1)
	le.PutUint16(f[8:], HeaderSize)
	le.PutUint16(f[10:], ChunkHeaderSize)
	le.PutUint32(f[12:], 4)
	le.PutUint32(f[16:], uint32(n))
	le.PutUint32(f[20:], uint32(n+crcs))
	var c [chunk]byte
	for i := range crcs + n {
		typ, blocks, value := uint16(ChunkCRC32), uint32(0), uint32(0)
		if i >= crcs {
			typ, blocks, value = ChunkFill, 1, uint32(i%2)*0x01010101
		}
		le.PutUint16(c[0:], typ)
		le.PutUint32(c[4:], blocks)
		le.PutUint32(c[8:], chunk)
		le.PutUint32(c[12:], value)
		f = append(f, c[:]...)
	}
	return f
}

// TestIndexBounded: a file of a million chunks that do not merge (and
// 100K CRC32 chunks) opens, reads and checks in a few MiB of memory, not
// the tens of bytes per chunk an index of every chunk takes.
func TestIndexBounded(t *testing.T) {
	const n = 1 << 20
	f := manyChunks(n, 100_000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	im, err := Open(bytes.NewReader(f), int64(len(f)))
	if err != nil {
		t.Fatal(err)
	}
	if err := im.CheckCRC(); err != nil {
		t.Fatal(err)
	}
	extents := 0
	if err := im.WalkExtents(func(Extent) bool { extents++; return true }); err != nil || extents != n {
		t.Fatalf("WalkExtents: %d extents, %v", extents, err)
	}
	buf := make([]byte, 256<<10)
	for off := int64(0); off < im.Size(); off += int64(len(buf)) {
		m, err := im.ReadAt(buf, off)
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		for i := 0; i < m; i += 4 {
			want := byte((off+int64(i))/4%2) * 1
			if !bytes.Equal(buf[i:i+4], []byte{want, want, want, want}) {
				t.Fatalf("byte %d: % x", off+int64(i), buf[i:i+4])
			}
		}
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 12<<20 {
		t.Fatalf("Open, CheckCRC, WalkExtents and a read of %d chunks allocated %d MiB", n, alloc>>20)
	}
	t.Logf("%d entries", len(im.entries))
}

// BenchmarkReadAt reads an image shaped as img2simg makes them (RAW
// chunks of up to 16 MiB between FILL and DONT_CARE stretches: 256 MiB
// expanded) sequentially in 256 KiB reads, as a tree builder does.
func BenchmarkReadAt(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	sb := newBuilder(4096)
	data := randBytes(rng, 16<<20)
	for i := range 16 {
		sb.raw(data[:(1+i%4)<<20])
		sb.fill(0, 512)
		sb.dontCare(uint32(1+i) * 256)
		sb.fill(0xffffffff, 3)
		sb.raw(data[:4096*7])
	}
	f := sb.bytes()
	sb.want = nil
	im, err := Open(bytes.NewReader(f), int64(len(f)))
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 256<<10)
	b.SetBytes(im.Size())
	for b.Loop() {
		for off := int64(0); off < im.Size(); off += int64(len(buf)) {
			if _, err := im.ReadAt(buf, off); err != nil && err != io.EOF {
				b.Fatal(err)
			}
		}
	}
}
