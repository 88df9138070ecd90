package sparse

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// refExpand is a naive expansion of a sparse file that Open accepted, to
// compare ReadAt against; it trusts the checks Open made.
func refExpand(f []byte) []byte {
	le := binary.LittleEndian
	fileHdr, chunkHdr := int(le.Uint16(f[8:])), int(le.Uint16(f[10:]))
	bs := int(le.Uint32(f[12:]))
	var out []byte
	off := fileHdr
	for range int(le.Uint32(f[20:])) {
		typ, n, total := le.Uint16(f[off:]), int(le.Uint32(f[off+4:])), int(le.Uint32(f[off+8:]))
		data := f[off+chunkHdr : off+total]
		switch typ {
		case ChunkRaw:
			out = append(out, data...)
		case ChunkFill:
			out = append(out, bytes.Repeat(data, n*bs/4)...)
		case ChunkDontCare:
			out = append(out, make([]byte, n*bs)...)
		}
		off += total
	}
	return out
}

func fuzzSeeds() [][]byte {
	rng := rand.New(rand.NewPCG(1, 1))
	b := newBuilder(8)
	b.fileHdrSz, b.chunkHdrSz = 30, 14
	huge := newBuilder(4096).chunk(ChunkFill, 1<<20, 16, []byte{1, 0, 0, 0})
	huge.blocks, huge.imageCRC = 1<<20, 1
	return [][]byte{
		newBuilder(4096).bytes(),
		newBuilder(16).raw(randBytes(rng, 32)).fill(0xdeadbeef, 3).dontCare(2).crc().bytes(),
		newBuilder(4).fill(0x01020304, 5).raw([]byte{9, 8, 7, 6}).crcValue(7).bytes(),
		b.raw(randBytes(rng, 8)).dontCare(1).fill(5, 2).crc().bytes(),
		put32(newBuilder(8).fill(1, 1).bytes(), 16, 4), // blocks do not add up
		newBuilder(8).chunk(ChunkRaw, 1, 19, randBytes(rng, 7)).bytes(),
		huge.bytes(), // 4 GiB fill, bad image CRC
	}
}

// FuzzOpen: Open never panics; when it succeeds, Size is blocks times the
// block size, ReadAt serves the whole image (compared with a naive
// expansion when small), Extents cover it, and CheckCRC either passes or
// reports a checksum mismatch.
func FuzzOpen(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := Open(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			checkOpenError(t, data, err)
			return
		}
		le := binary.LittleEndian
		bs, blocks := int64(le.Uint32(data[12:])), int64(le.Uint32(data[16:]))
		if im.Size() != bs*blocks || int64(im.BlockSize()) != bs {
			t.Fatalf("Size %d, BlockSize %d; header says %d blocks of %d", im.Size(), im.BlockSize(), blocks, bs)
		}
		if im.Trailing() < 0 || im.Trailing() > int64(len(data)) {
			t.Fatalf("Trailing = %d", im.Trailing())
		}
		checkExtents(t, im, nil)
		if im.Size() <= 1<<20 {
			checkExpansion(t, im, data)
		} else {
			checkWindows(t, im, bs)
		}
		if err := im.CheckCRC(); err != nil && !errors.Is(err, ErrChecksum) {
			t.Fatalf("CheckCRC = %v", err)
		}
	})
}

// checkOpenError: an Open that fails says so as a format *Error, at a
// position in data.
func checkOpenError(t *testing.T, data []byte, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrFormat) || e.Reason == "" {
		t.Fatalf("Open error %v (%T) is not a format *Error", err, err)
	}
	if e.Offset < 0 || e.Offset > int64(len(data)) || e.Chunk < HeaderChunk {
		t.Fatalf("error position out of range: %+v", e)
	}
}

// checkExpansion: a small image im of data reads as the naive expansion,
// through its index and through one thinned to 2 entries.
func checkExpansion(t *testing.T, im *Image, data []byte) {
	t.Helper()
	want := refExpand(data)
	got := make([]byte, im.Size())
	if n, err := im.ReadAt(got, 0); n != len(got) || (err != nil && err != io.EOF) {
		t.Fatalf("ReadAt = %d, %v", n, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("ReadAt differs from the naive expansion at byte %d", firstDiff(got, want))
	}
	checkExtents(t, im, want)
	// The same through an index thinned to 2 entries, which
	// finds chunks by reading their headers again.
	thin, err := open(bytes.NewReader(data), int64(len(data)), 2)
	if err != nil {
		t.Fatalf("Open with a thinned index: %v", err)
	}
	clear(got)
	if n, err := thin.ReadAt(got, 0); n != len(got) || (err != nil && err != io.EOF) || !bytes.Equal(got, want) {
		t.Fatalf("thinned ReadAt = %d, %v; differs at byte %d", n, err, firstDiff(got, want))
	}
	if !equalExtents(thin.Extents(), im.Extents()) {
		t.Fatalf("thinned Extents =\n%v\nwant\n%v", thin.Extents(), im.Extents())
	}
}

// checkWindows: an image im too big to expand (blocks of bs bytes) reads
// windows at the start, the middle and the end, and around every extent
// boundary.
func checkWindows(t *testing.T, im *Image, bs int64) {
	t.Helper()
	p := make([]byte, 64<<10)
	for _, off := range []int64{0, im.Size() / 2, im.Size() - int64(len(p))} {
		if n, err := im.ReadAt(p, off); n != len(p) || (err != nil && err != io.EOF) {
			t.Fatalf("ReadAt(%d) = %d, %v", off, n, err)
		}
	}
	for i, e := range im.Extents() {
		if i > 100 {
			break
		}
		off := max(int64(e.Start)*bs-3, 0)
		if n, err := im.ReadAt(p[:64], off); n != min(64, int(im.Size()-off)) || (err != nil && err != io.EOF) {
			t.Fatalf("ReadAt(%d) = %d, %v", off, n, err)
		}
	}
}
