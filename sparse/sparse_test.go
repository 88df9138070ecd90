package sparse

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestHandmade(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const bs = 4096
	b := newBuilder(bs).
		raw(randBytes(rng, 2*bs)).
		crc().
		fill(0xdeadbeef, 3).
		dontCare(5).
		fill(0, 2).
		crc().
		raw(randBytes(rng, bs)).
		raw(randBytes(rng, 3*bs)).
		fill(0x01020304, 1).
		fill(0x01020304, 2).
		dontCare(1).
		dontCare(4).
		crc()
	b.imageCRC = crc32.ChecksumIEEE(b.want)
	im := openBytes(t, b.bytes())
	checkImage(t, im, b.want, rng)
	if im.BlockSize() != bs {
		t.Fatalf("BlockSize = %d", im.BlockSize())
	}
	if err := im.CheckCRC(); err != nil {
		t.Fatalf("CheckCRC: %v", err)
	}
	want := []Extent{
		{0, 2, Raw, 0},
		{2, 3, Fill, 0xdeadbeef},
		{5, 5, DontCare, 0},
		{10, 2, Fill, 0},
		{12, 4, Raw, 0},
		{16, 3, Fill, 0x01020304},
		{19, 5, DontCare, 0},
	}
	if got := im.Extents(); !equalExtents(got, want) {
		t.Fatalf("Extents =\n%v\nwant\n%v", got, want)
	}
	if im.Trailing() != 0 {
		t.Fatalf("Trailing = %d", im.Trailing())
	}
	if !IsSparse(bytes.NewReader(b.bytes())) || IsSparse(bytes.NewReader(b.want)) || IsSparse(bytes.NewReader([]byte{0x3a, 0xff})) {
		t.Fatal("IsSparse is wrong")
	}
}

func equalExtents(a, b []Extent) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestFillPhase reads a fill with a pattern whose bytes all differ at
// every offset modulo 4 and every length.
func TestFillPhase(t *testing.T) {
	b := newBuilder(8).raw([]byte("abcdefgh")).fill(0x44332211, 3).raw([]byte("ijklmnop"))
	im := openBytes(t, b.bytes())
	for off := range len(b.want) {
		for n := 0; off+n <= len(b.want); n++ {
			p := make([]byte, n)
			if m, err := im.ReadAt(p, int64(off)); m != n || (err != nil && err != io.EOF) {
				t.Fatalf("ReadAt(%d, %d) = %d, %v", n, off, m, err)
			}
			if !bytes.Equal(p, b.want[off:off+n]) {
				t.Fatalf("ReadAt(%d, %d) = %q, want %q", n, off, p, b.want[off:off+n])
			}
		}
	}
}

// TestLargerHeaders: file and chunk headers longer than 28 and 12 bytes
// are skipped, as libsparse does; any minor version is accepted.
func TestLargerHeaders(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	b := newBuilder(1024)
	b.fileHdrSz, b.chunkHdrSz, b.minor = 40, 20, 7
	b.raw(randBytes(rng, 2048)).crc().fill(0xcafef00d, 4).dontCare(2).raw(randBytes(rng, 1024)).crc()
	im := openBytes(t, b.bytes())
	checkImage(t, im, b.want, rng)
	if err := im.CheckCRC(); err != nil {
		t.Fatalf("CheckCRC: %v", err)
	}
}

func TestSmallBlockSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	b := newBuilder(4).raw([]byte{1, 2, 3, 4, 5, 6, 7, 8}).fill(0x11223344, 5).dontCare(3).raw([]byte{9, 9, 9, 9}).crc()
	im := openBytes(t, b.bytes())
	checkImage(t, im, b.want, rng)
	if err := im.CheckCRC(); err != nil {
		t.Fatal(err)
	}
}

func TestEmptyImage(t *testing.T) {
	im := openBytes(t, newBuilder(4096).bytes())
	if im.Size() != 0 || len(im.Extents()) != 0 {
		t.Fatalf("Size %d, Extents %v", im.Size(), im.Extents())
	}
	if n, err := im.ReadAt(make([]byte, 10), 0); n != 0 || err != io.EOF {
		t.Fatalf("ReadAt = %d, %v", n, err)
	}
	if err := im.CheckCRC(); err != nil {
		t.Fatal(err)
	}
}

// TestZeroBlockChunks: chunks of zero blocks are allowed (libsparse
// accepts them) and expand to nothing.
func TestZeroBlockChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	b := newBuilder(512).fill(7, 0).raw(randBytes(rng, 512)).dontCare(0).raw(nil).fill(7, 2)
	im := openBytes(t, b.bytes())
	checkImage(t, im, b.want, rng)
	if got := im.Extents(); len(got) != 2 {
		t.Fatalf("Extents = %v", got)
	}
}

func TestTrailingBytes(t *testing.T) {
	b := newBuilder(4096).fill(1, 1)
	f := append(b.bytes(), "SignerVer02 and other footers"...)
	im := openBytes(t, f)
	if im.Trailing() != int64(len("SignerVer02 and other footers")) {
		t.Fatalf("Trailing = %d", im.Trailing())
	}
	checkImage(t, im, b.want, rand.New(rand.NewPCG(1, 1)))
}

func TestCRCMismatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	b := newBuilder(4096).raw(randBytes(rng, 4096)).crc().fill(5, 1)
	good := crc32.ChecksumIEEE(b.want)
	b.crcValue(good ^ 1).dontCare(1)
	f := b.bytes()
	im := openBytes(t, f) // Open does not read data
	checkImage(t, im, b.want, rng)
	err := im.CheckCRC()
	if !errors.Is(err, ErrChecksum) || errors.Is(err, ErrFormat) {
		t.Fatalf("CheckCRC = %v, want ErrChecksum", err)
	}
	e := asError(t, err)
	wantOff := int64(HeaderSize + 12 + 4096 + 16 + 16)
	if e.Chunk != 3 || e.Offset != wantOff {
		t.Fatalf("error at chunk %d byte %d, want chunk 3 byte %d: %v", e.Chunk, e.Offset, wantOff, err)
	}
	for _, s := range []string{"chunk 3", "CRC32 chunk holds", "first 8192 bytes"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}

	// A corrupted RAW byte is caught by a later CRC chunk.
	b = newBuilder(4096).raw(randBytes(rng, 8192)).fill(3, 2).crc()
	f = b.bytes()
	f[HeaderSize+12+100] ^= 0x80
	if err := openBytes(t, f).CheckCRC(); !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "chunk 2") {
		t.Fatalf("CheckCRC of corrupted data = %v", err)
	}

	// The header's image CRC.
	b = newBuilder(4096).raw(randBytes(rng, 4096)).dontCare(3)
	b.imageCRC = crc32.ChecksumIEEE(b.want)
	if err := openBytes(t, b.bytes()).CheckCRC(); err != nil {
		t.Fatalf("CheckCRC with a good image CRC: %v", err)
	}
	b.imageCRC++
	err = openBytes(t, b.bytes()).CheckCRC()
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "header's image CRC32") || asError(t, err).Chunk != HeaderChunk {
		t.Fatalf("CheckCRC with a bad image CRC = %v", err)
	}
}

// TestHugeImage: a sparse file of a few hundred bytes standing for ~16 TiB
// opens, reads and checks its CRCs at once: FILL and DONT_CARE runs are
// never touched byte by byte.
func TestHugeImage(t *testing.T) {
	const bs = 4096
	var p [4]byte
	binary.LittleEndian.PutUint32(p[:], 0xabcdabcd)
	// The CRCs of 16 TiB of data come from the combine arithmetic that
	// TestCRCCombine checks against hash/crc32.
	b := newBuilder(bs)
	const run2 = 1<<32 - 4
	b.chunk(ChunkFill, run2, 16, p[:])
	b.chunk(ChunkRaw, 1, 12+bs, bytes.Repeat([]byte{7}, bs))
	c := crcRepeat(crc32.ChecksumIEEE(p[:]), 4, run2*bs/4)
	c = crcCombine(c, crc32.ChecksumIEEE(bytes.Repeat([]byte{7}, bs)), bs)
	b.crcValue(c)
	b.chunk(ChunkDontCare, 2, 12, nil)
	b.blocks = run2 + 3
	b.imageCRC = crcCombine(c, crc32.ChecksumIEEE(make([]byte, 2*bs)), 2*bs)
	f := b.bytes()
	start := time.Now()
	im := openBytes(t, f)
	if im.Size() != int64(run2+3)*bs {
		t.Fatalf("Size = %d", im.Size())
	}
	tail := make([]byte, 3*bs+8)
	if n, err := im.ReadAt(tail, im.Size()-int64(len(tail))); n != len(tail) || err != nil {
		t.Fatalf("ReadAt tail = %d, %v", n, err)
	}
	want := append(append(bytes.Repeat(p[:], 2), bytes.Repeat([]byte{7}, bs)...), make([]byte, 2*bs)...)
	if !bytes.Equal(tail, want) {
		t.Fatal("tail differs")
	}
	if err := im.CheckCRC(); err != nil {
		t.Fatalf("CheckCRC: %v", err)
	}
	checkExtents(t, im, nil)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestCRCCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{0, 1, 3, 4, 5, 64, 1000, 4096, 65537, 1 << 20} {
		a, b := randBytes(rng, rng.IntN(100)), randBytes(rng, n)
		want := crc32.ChecksumIEEE(append(append([]byte{}, a...), b...))
		if got := crcCombine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), uint64(n)); got != want {
			t.Fatalf("crcCombine(len %d, len %d) = %#x, want %#x", len(a), n, got, want)
		}
	}
	for _, unit := range [][]byte{{0, 0, 0, 0}, {1, 2, 3, 4}, []byte("0123456789")} {
		for _, n := range []int{0, 1, 2, 3, 7, 8, 100, 4097, 100003} {
			want := crc32.ChecksumIEEE(bytes.Repeat(unit, n))
			if got := crcRepeat(crc32.ChecksumIEEE(unit), uint64(len(unit)), uint64(n)); got != want {
				t.Fatalf("crcRepeat(%x, %d) = %#x, want %#x", unit, n, got, want)
			}
		}
	}
}

func TestConcurrentReads(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	b := newBuilder(1024)
	for range 50 {
		switch rng.IntN(3) {
		case 0:
			b.raw(randBytes(rng, 1024*(1+rng.IntN(4))))
		case 1:
			b.fill(rng.Uint32(), uint32(1+rng.IntN(4)))
		default:
			b.dontCare(uint32(1 + rng.IntN(4)))
		}
	}
	im := openBytes(t, b.bytes())
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			for range 300 {
				off := rng.IntN(len(b.want))
				n := rng.IntN(min(len(b.want)-off, 16<<10)) + 1
				p := make([]byte, n)
				if m, err := im.ReadAt(p, int64(off)); m != n || (err != nil && err != io.EOF) {
					t.Errorf("ReadAt = %d, %v", m, err)
					return
				}
				if !bytes.Equal(p, b.want[off:off+n]) {
					t.Errorf("ReadAt(%d, %d) differs", n, off)
					return
				}
			}
		})
	}
	wg.Wait()
}

// shortReader pretends to hold size bytes but holds fewer, as a file that
// shrank after Open.
type shortReader struct {
	data []byte
}

func (s shortReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(s.data)) {
		return 0, io.EOF
	}
	n := copy(p, s.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func TestShrunkFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	b := newBuilder(4096).fill(1, 1).raw(randBytes(rng, 8192)).crc()
	f := b.bytes()
	im, err := Open(shortReader{f}, int64(len(f)))
	if err != nil {
		t.Fatal(err)
	}
	im.r = shortReader{f[:len(f)-5000]}
	_, err = im.ReadAt(make([]byte, 4096), 8192)
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "chunk 1") {
		t.Fatalf("ReadAt of a shrunk file = %v", err)
	}
	if err := im.CheckCRC(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("CheckCRC of a shrunk file = %v", err)
	}
	// The size given to Open is larger than what the reader holds.
	if _, err := Open(shortReader{f[:40]}, int64(len(f))); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Open with a lying size = %v", err)
	}
}

func TestMalformed(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	data := randBytes(rng, 4096)
	valid := func() *builder { return newBuilder(4096).raw(data).fill(0x12345678, 2).dontCare(1) }
	const c0 = HeaderSize             // offset of chunk 0
	const c1 = HeaderSize + 12 + 4096 // offset of chunk 1
	type tc struct {
		name   string
		file   func() []byte
		chunk  int
		offset int64
		want   []string
		crc    bool // the error comes from CheckCRC
	}
	cases := []tc{
		{"empty file", func() []byte { return nil }, HeaderChunk, 0, []string{"0 bytes", "shorter than the 28-byte"}, false},
		{"short header", func() []byte { return valid().bytes()[:27] }, HeaderChunk, 0, []string{"27 bytes"}, false},
		{"bad magic", func() []byte { return put32(valid().bytes(), 0, 0x12345678) }, HeaderChunk, 0, []string{"bad magic 0x12345678", "not an Android sparse image"}, false},
		{"major version 2", func() []byte { return put16(valid().bytes(), 4, 2) }, HeaderChunk, 4, []string{"major version 2"}, false},
		{"major version 0", func() []byte { return put16(valid().bytes(), 4, 0) }, HeaderChunk, 4, []string{"major version 0"}, false},
		{"file header size 27", func() []byte { return put16(valid().bytes(), 8, 27) }, HeaderChunk, 8, []string{"file header size 27", "minimum of 28"}, false},
		{"file header size 0", func() []byte { return put16(valid().bytes(), 8, 0) }, HeaderChunk, 8, []string{"file header size 0"}, false},
		{"chunk header size 11", func() []byte { return put16(valid().bytes(), 10, 11) }, HeaderChunk, 10, []string{"chunk header size 11", "minimum of 12"}, false},
		{"block size 0", func() []byte { return put32(valid().bytes(), 12, 0) }, HeaderChunk, 12, []string{"block size 0", "multiple of 4"}, false},
		{"block size 4098", func() []byte { return put32(valid().bytes(), 12, 4098) }, HeaderChunk, 12, []string{"block size 4098"}, false},
		{"block size 1", func() []byte { return put32(valid().bytes(), 12, 1) }, HeaderChunk, 12, []string{"block size 1 "}, false},
		{"file header past EOF", func() []byte {
			b := newBuilder(4096)
			return put16(b.bytes(), 8, 1000)
		}, HeaderChunk, 8, []string{"file header size 1000", "past the end"}, false},
		{"size overflows int64", func() []byte {
			return put32(put32(newBuilder(4096).bytes(), 12, 0xfffffffc), 16, 0xffffffff)
		}, HeaderChunk, 16, []string{"overflow"}, false},
		{"absurd chunk count", func() []byte { return put32(valid().bytes(), 20, 0xffffffff) }, HeaderChunk, 20, []string{"declares 4294967295 chunks", "at most"}, false},
		{"RAW total_sz below header", func() []byte { return newBuilder(4096).chunk(ChunkRaw, 0, 8, nil).bytes() }, 0, c0, []string{"total_sz 8", "smaller than the 12-byte chunk header"}, false},
		{"RAW total_sz too small", func() []byte {
			b := newBuilder(4096).chunk(ChunkRaw, 1, 12+4095, data[:4095])
			b.blocks = 1
			return b.bytes()
		}, 0, c0, []string{"RAW chunk of 1 blocks of 4096 bytes needs total_sz 4108", "has total_sz 4107"}, false},
		{"RAW total_sz too large", func() []byte {
			b := newBuilder(4096).chunk(ChunkRaw, 1, 12+4100, append(data, 1, 2, 3, 4))
			b.blocks = 1
			return b.bytes()
		}, 0, c0, []string{"needs total_sz 4108", "has total_sz 4112"}, false},
		{"RAW total_sz for the wrong block count", func() []byte {
			b := newBuilder(4096).raw(data).chunk(ChunkRaw, 2, 12+4096, data)
			b.blocks = 3
			return b.bytes()
		}, 1, c1, []string{"RAW chunk of 2 blocks", "needs total_sz 8204", "has total_sz 4108"}, false},
		{"FILL total_sz 20", func() []byte {
			b := newBuilder(4096).raw(data).chunk(ChunkFill, 1, 20, make([]byte, 8))
			b.blocks = 2
			return b.bytes()
		}, 1, c1, []string{"FILL chunk has total_sz 20, want 16"}, false},
		{"FILL total_sz 12", func() []byte {
			b := newBuilder(4096).chunk(ChunkFill, 1, 12, nil)
			b.blocks = 1
			return b.bytes()
		}, 0, c0, []string{"FILL chunk has total_sz 12, want 16"}, false},
		{"DONT_CARE with data", func() []byte {
			b := newBuilder(4096).raw(data).chunk(ChunkDontCare, 1, 16, make([]byte, 4))
			b.blocks = 2
			return b.bytes()
		}, 1, c1, []string{"DONT_CARE chunk has total_sz 16, want 12"}, false},
		{"CRC32 total_sz 20", func() []byte { return newBuilder(4096).chunk(ChunkCRC32, 0, 20, make([]byte, 8)).bytes() }, 0, c0, []string{"CRC32 chunk has total_sz 20, want 16"}, false},
		{"CRC32 with blocks", func() []byte { return newBuilder(4096).chunk(ChunkCRC32, 1, 16, make([]byte, 4)).bytes() }, 0, c0, []string{"CRC32 chunk has chunk_sz 1, want 0"}, false},
		{"unknown chunk type", func() []byte {
			b := valid()
			b.chunk(0xcac5, 1, 12, nil)
			return b.bytes()
		}, 3, c1 + 16 + 12, []string{"unknown chunk type 0xcac5"}, false},
		{"chunks over total blocks", func() []byte {
			f := valid().bytes()
			return put32(f, 16, 2)
		}, 1, c1, []string{"FILL chunk of 2 blocks ends at block 3", "past the header's total of 2 blocks"}, false},
		{"chunks under total blocks", func() []byte { return put32(valid().bytes(), 16, 6) }, HeaderChunk, 16, []string{"cover 4 blocks", "declares 6"}, false},
		{"fewer chunks than declared, data chunks", func() []byte {
			return put32(newBuilder(4096).raw(data).raw(data).bytes(), 20, 3)
		}, 2, HeaderSize + 2*(12+4096), []string{"file ends at byte 8244", "declares 3 chunks, found 2"}, false},
		{"fewer chunks than declared, no room", func() []byte {
			return put32(newBuilder(4096).fill(1, 1).fill(2, 1).bytes(), 20, 3)
		}, HeaderChunk, 20, []string{"declares 3 chunks", "at most 2"}, false},
		{"truncated RAW data", func() []byte {
			f := valid().bytes()
			return f[:c0+12+4000]
		}, 0, c0, []string{"RAW chunk of 4108 bytes runs past the end of the file", "truncated", "up to 4136", "has 4040"}, false},
		{"truncated last chunk", func() []byte {
			f := newBuilder(4096).raw(data).fill(9, 1).bytes()
			return f[:len(f)-2]
		}, 1, c1, []string{"FILL chunk of 16 bytes runs past the end"}, false},
		{"truncated chunk header", func() []byte {
			f := newBuilder(4096).raw(data).fill(9, 1).bytes()
			return f[:c1+6]
		}, 1, c1, []string{"file ends at byte 4142, inside or before this chunk's 12-byte header", "declares 2 chunks, found 1"}, false},
		{"CRC32 chunk mismatch", func() []byte {
			return valid().crcValue(0xdeadbeef).bytes()
		}, 3, c1 + 16 + 12, []string{"CRC32 chunk holds 0xdeadbeef"}, true},
		{"CRC32 chunk mismatch mid-file", func() []byte {
			return newBuilder(4096).raw(data).crcValue(1).fill(1, 1).crc().bytes()
		}, 1, c1, []string{"CRC32 chunk holds 0x00000001", "first 4096 bytes"}, true},
		{"image CRC mismatch", func() []byte { return put32(valid().bytes(), 24, 42) }, HeaderChunk, 24, []string{"header's image CRC32 is 0x0000002a"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := c.file()
			im, err := Open(bytes.NewReader(f), int64(len(f)))
			if c.crc {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				err = im.CheckCRC()
				if !errors.Is(err, ErrChecksum) {
					t.Fatalf("CheckCRC = %v, want ErrChecksum", err)
				}
			} else {
				if err == nil {
					t.Fatalf("Open succeeded (Size %d)", im.Size())
				}
				if !errors.Is(err, ErrFormat) {
					t.Fatalf("Open = %v, not ErrFormat", err)
				}
			}
			e := asError(t, err)
			if e.Chunk != c.chunk || e.Offset != c.offset {
				t.Errorf("error at chunk %d byte %d, want chunk %d byte %d", e.Chunk, e.Offset, c.chunk, c.offset)
			}
			for _, s := range c.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			t.Log(err)
		})
	}
}

// countingReader counts the ReadAt calls and bytes of Open.
type countingReader struct {
	r            io.ReaderAt
	calls, bytes int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.calls++
	c.bytes += len(p)
	return c.r.ReadAt(p, off)
}

// TestOpenReadsLittle: Open skips RAW data, and reads a run of many
// headers in a few calls. -short makes the RAW chunks 64 KiB, not 1 MiB:
// 512 KiB of them is still four times what Open may read, and the check of
// the expansion (8 MiB read back many times under -race) is what cost.
func TestOpenReadsLittle(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	b := newBuilder(4096)
	rawBlocks := 256 // 1 MiB
	if testing.Short() {
		rawBlocks = 16
	}
	for i := range 8 {
		b.raw(randBytes(rng, rawBlocks*4096))
		b.fill(uint32(i), 1).dontCare(1)
	}
	for i := range 2000 {
		b.fill(uint32(i), 1)
		if i%2 == 0 {
			b.dontCare(1)
		}
	}
	f := b.bytes()
	c := &countingReader{r: bytes.NewReader(f)}
	im, err := Open(c, int64(len(f)))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Open of %d chunks in %d bytes: %d ReadAt calls, %d bytes", b.chunks, len(f), c.calls, c.bytes)
	if c.bytes > 128<<10 || c.calls > 60 { // of an 8 MiB file (0.5 MiB with -short)
		t.Fatalf("Open read %d bytes in %d calls", c.bytes, c.calls)
	}
	checkImage(t, im, b.want, rng)
}
