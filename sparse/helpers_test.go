package sparse

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"
)

// builder writes sparse files by hand, tracking the expansion they stand
// for. Header fields come from its state unless the test patches the bytes
// afterwards (put16, put32).
type builder struct {
	blockSize  uint32
	fileHdrSz  uint16 // 28 unless set before the first chunk
	chunkHdrSz uint16 // 12 unless set before the first chunk
	minor      uint16
	imageCRC   uint32
	body       []byte // encoded chunks
	chunks     uint32 // chunks written
	blocks     uint32 // output blocks of the chunks written
	want       []byte // expected expansion
}

func newBuilder(blockSize uint32) *builder {
	return &builder{blockSize: blockSize, fileHdrSz: HeaderSize, chunkHdrSz: ChunkHeaderSize}
}

// chunk appends a chunk exactly as given (for malformed files); it does not
// touch the expected expansion or the block count.
func (b *builder) chunk(typ uint16, chunkSz, totalSz uint32, data []byte) *builder {
	h := make([]byte, b.chunkHdrSz)
	binary.LittleEndian.PutUint16(h[0:], typ)
	binary.LittleEndian.PutUint32(h[4:], chunkSz)
	binary.LittleEndian.PutUint32(h[8:], totalSz)
	for i := ChunkHeaderSize; i < len(h); i++ {
		h[i] = 0x5a // extra chunk header bytes a reader must skip
	}
	b.body = append(b.body, h...)
	b.body = append(b.body, data...)
	b.chunks++
	return b
}

func (b *builder) raw(data []byte) *builder {
	if len(data)%int(b.blockSize) != 0 {
		panic("raw data not a multiple of the block size")
	}
	n := uint32(len(data)) / b.blockSize
	b.chunk(ChunkRaw, n, uint32(b.chunkHdrSz)+uint32(len(data)), data)
	b.blocks += n
	b.want = append(b.want, data...)
	return b
}

func (b *builder) fill(pattern uint32, blocks uint32) *builder {
	var p [4]byte
	binary.LittleEndian.PutUint32(p[:], pattern)
	b.chunk(ChunkFill, blocks, uint32(b.chunkHdrSz)+4, p[:])
	b.blocks += blocks
	b.want = append(b.want, bytes.Repeat(p[:], int(blocks*b.blockSize/4))...)
	return b
}

func (b *builder) dontCare(blocks uint32) *builder {
	b.chunk(ChunkDontCare, blocks, uint32(b.chunkHdrSz), nil)
	b.blocks += blocks
	b.want = append(b.want, make([]byte, blocks*b.blockSize)...)
	return b
}

// crc appends a CRC32 chunk with the right value.
func (b *builder) crc() *builder { return b.crcValue(crc32.ChecksumIEEE(b.want)) }

func (b *builder) crcValue(v uint32) *builder {
	var p [4]byte
	binary.LittleEndian.PutUint32(p[:], v)
	return b.chunk(ChunkCRC32, 0, uint32(b.chunkHdrSz)+4, p[:])
}

func (b *builder) bytes() []byte {
	h := make([]byte, b.fileHdrSz)
	le := binary.LittleEndian
	le.PutUint32(h[0:], Magic)
	le.PutUint16(h[4:], 1)
	le.PutUint16(h[6:], b.minor)
	le.PutUint16(h[8:], b.fileHdrSz)
	le.PutUint16(h[10:], b.chunkHdrSz)
	le.PutUint32(h[12:], b.blockSize)
	le.PutUint32(h[16:], b.blocks)
	le.PutUint32(h[20:], b.chunks)
	le.PutUint32(h[24:], b.imageCRC)
	for i := HeaderSize; i < len(h); i++ {
		h[i] = 0xa5 // extra file header bytes a reader must skip
	}
	return append(h, b.body...)
}

func put16(b []byte, off int, v uint16) []byte {
	binary.LittleEndian.PutUint16(b[off:], v)
	return b
}

func put32(b []byte, off int, v uint32) []byte {
	binary.LittleEndian.PutUint32(b[off:], v)
	return b
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n+8)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	return b[:n:n]
}

func openBytes(t testing.TB, b []byte) *Image {
	t.Helper()
	im, err := Open(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return im
}

// checkImage checks im against the expected expansion want: Size, a full
// read, random reads, reads past the end, and Extents.
func checkImage(t testing.TB, im *Image, want []byte, rng *rand.Rand) {
	t.Helper()
	if im.Size() != int64(len(want)) {
		t.Fatalf("Size = %d, want %d", im.Size(), len(want))
	}
	got := make([]byte, len(want))
	if n, err := im.ReadAt(got, 0); n != len(want) || (err != nil && err != io.EOF) {
		t.Fatalf("full ReadAt = %d, %v; want %d", n, err, len(want))
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("full read differs from the expected expansion at byte %d", firstDiff(got, want))
	}
	for range 200 {
		if len(want) == 0 {
			break
		}
		off := rng.IntN(len(want))
		n := rng.IntN(min(len(want)-off, 3*im.BlockSize()) + 1)
		if rng.IntN(8) == 0 {
			n = rng.IntN(len(want)-off) + 1
		}
		p := make([]byte, n)
		m, err := im.ReadAt(p, int64(off))
		if m != n || (err != nil && !(err == io.EOF && off+n == len(want))) {
			t.Fatalf("ReadAt(%d bytes at %d) = %d, %v", n, off, m, err)
		}
		if !bytes.Equal(p, want[off:off+n]) {
			t.Fatalf("ReadAt(%d bytes at %d) differs at byte %d", n, off, off+firstDiff(p, want[off:off+n]))
		}
	}
	// Past the end: short count and io.EOF.
	p := make([]byte, 100)
	off := max(int64(len(want))-37, 0)
	m, err := im.ReadAt(p, off)
	if wantN := int(int64(len(want)) - off); m != wantN || err != io.EOF {
		t.Fatalf("ReadAt across the end = %d, %v; want %d, EOF", m, err, wantN)
	}
	if m, err := im.ReadAt(p, im.Size()+5); m != 0 || err != io.EOF {
		t.Fatalf("ReadAt past the end = %d, %v; want 0, EOF", m, err)
	}
	if _, err := im.ReadAt(p, -1); err == nil {
		t.Fatal("ReadAt at -1 succeeded")
	}
	checkExtents(t, im, want)
}

// checkExtents checks that Extents cover the image in order, without gaps,
// and that Fill and DontCare extents hold what they say.
func checkExtents(t testing.TB, im *Image, want []byte) {
	t.Helper()
	bs := uint64(im.BlockSize())
	var next uint64
	ext := im.Extents()
	for i, e := range ext {
		if e.Start != next || e.Blocks == 0 {
			t.Fatalf("extent %d = %+v, want start %d and blocks > 0", i, e, next)
		}
		if i > 0 && ext[i-1].Kind == e.Kind && ext[i-1].Fill == e.Fill {
			t.Fatalf("extents %d and %d not merged: %+v %+v", i-1, i, ext[i-1], e)
		}
		next += e.Blocks
		if want == nil {
			continue
		}
		region := want[e.Start*bs : (e.Start+e.Blocks)*bs]
		switch e.Kind {
		case Fill:
			var p [4]byte
			binary.LittleEndian.PutUint32(p[:], e.Fill)
			if !bytes.Equal(region, bytes.Repeat(p[:], len(region)/4)) {
				t.Fatalf("fill extent %+v does not match the data", e)
			}
		case DontCare:
			if !bytes.Equal(region, make([]byte, len(region))) {
				t.Fatalf("dont-care extent %+v is not zeros in the data", e)
			}
		case Raw:
			if e.Fill != 0 {
				t.Fatalf("raw extent %+v has a fill", e)
			}
		default:
			t.Fatalf("extent %+v has a bad kind", e)
		}
	}
	if next*bs != uint64(im.Size()) {
		t.Fatalf("extents cover %d blocks of %d, Size is %d", next, bs, im.Size())
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func asError(t testing.TB, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *sparse.Error", err, err)
	}
	return e
}
