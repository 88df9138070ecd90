// Package sparse reads Android sparse images (the format of img2simg,
// fastboot and AOSP's libsparse) as the image they expand to, without
// expanding them on disk.
//
// Open parses and checks every chunk header up front and keeps an index in
// memory of at most 64K entries (2 MiB) for any number of chunks;
// Image.ReadAt then serves the expanded image from it: RAW chunks are read
// from the sparse file, FILL chunks repeat their 4-byte pattern and
// DONT_CARE chunks read as zeros. Image.WalkExtents lists the runs of
// blocks that are one fill pattern or zeros, so a hash tree builder can
// hash such a block once instead of once per block.
//
// # Format
//
// A 28-byte little-endian file header (magic 0xed26ff3a, major and minor
// version, file header size, chunk header size, block size, total blocks,
// total chunks, image CRC32) is followed by the chunks, each a header
// (type u16, reserved u16, chunk_sz u32 in output blocks, total_sz u32 in
// bytes including the header) and its data: chunk_sz*block_size bytes for
// RAW (0xCAC1), a 4-byte pattern for FILL (0xCAC2), nothing for DONT_CARE
// (0xCAC3), and for CRC32 (0xCAC4) the CRC32 of the whole output so far.
//
// # Strictness
//
// Open rejects, with an *Error naming the chunk and its byte offset in the
// sparse file:
//   - a bad magic, a major version other than 1;
//   - a file header size below 28 or a chunk header size below 12 (larger
//     sizes are allowed: the extra bytes are skipped, as libsparse does);
//   - a block size of 0 or not a multiple of 4, as current libsparse does
//     (the older libsparse of Debian's simg2img does not check; smaller
//     block sizes than img2simg's minimum of 1024 are accepted);
//   - an expanded size that does not fit in an int64;
//   - a chunk whose total_sz disagrees with its type and chunk_sz (RAW:
//     header + chunk_sz*block_size; FILL and CRC32: header + 4; DONT_CARE:
//     header only), or whose bytes run past the end of the file;
//   - chunks covering more or fewer blocks than the header declares, or a
//     file that ends before the declared number of chunks;
//   - stricter than simg2img: an unknown chunk type (libsparse logs it,
//     counts it as zero blocks and goes on reading at its data, not past
//     it);
//   - stricter than simg2img: a CRC32 chunk with a nonzero chunk_sz
//     (libsparse ignores the field and its writer always writes 0).
//
// It accepts, as simg2img does: any minor version (the format allows
// newer minor versions), a nonzero reserved field, chunks of zero blocks
// (they expand to nothing), an empty image (0 blocks, 0 chunks), and bytes
// after the last chunk (ignored; Trailing reports how many, for callers
// that want to refuse them).
//
// CRC32 chunks and the header's image CRC32 need the whole expanded image
// to check, so Open checks only their structure and CheckCRC verifies
// their values (simg2img does not verify them at all). Open reads chunk
// headers (and FILL patterns and CRC32 values), skipping RAW data: a few
// small reads per run of consecutive headers. The index has one entry per
// run of chunks of one kind and pattern (one per RAW chunk); past 64K
// runs it keeps only some, evenly spaced, and ReadAt finds a byte by
// reading the chunk headers on from the entry before it, remembering where
// it stopped for the next read nearby.
//
// # Block sizes
//
// Everything in this package that counts blocks (Extents, BlockSize)
// counts in the sparse file's block size, which need not be the block size
// of the dm-verity tree built over the image: a caller hashing 4096-byte
// data blocks over a sparse image of 1024-byte blocks must map extents to
// its own blocks itself (an extent boundary may fall inside a data block).
// ReadAt knows no block size at all: it serves any offset and length.
package sparse

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/bits"
	"sort"
	"sync"
)

// Format constants.
const (
	Magic = 0xed26ff3a

	// HeaderSize and ChunkHeaderSize are the sizes of the file and chunk
	// headers in major version 1; files may declare larger ones.
	HeaderSize      = 28
	ChunkHeaderSize = 12

	ChunkRaw      = 0xCAC1
	ChunkFill     = 0xCAC2
	ChunkDontCare = 0xCAC3
	ChunkCRC32    = 0xCAC4
)

// ErrFormat is wrapped by every error that says a sparse file is malformed.
var ErrFormat = errors.New("sparse: malformed image")

// ErrChecksum is wrapped by CheckCRC's errors: a CRC32 chunk or the
// header's image CRC32 does not match the expanded data.
var ErrChecksum = errors.New("sparse: checksum mismatch")

// HeaderChunk is the Chunk of an Error about the file header, or about the
// file as a whole (such as chunks not adding up to the declared blocks).
const HeaderChunk = -1

// Error is the error of Open, ReadAt and CheckCRC: what is wrong, and
// where in the sparse file. Use errors.Is with ErrFormat or ErrChecksum
// (or the underlying I/O error), errors.As to get the position.
type Error struct {
	// Chunk is the index of the chunk (from 0) the error is about, or
	// HeaderChunk.
	Chunk int
	// Offset is a byte offset in the sparse file: the start of the chunk's
	// header, or of the header field at fault.
	Offset int64
	// Reason says what is wrong.
	Reason string
	// Err is ErrFormat, ErrChecksum or an I/O error from the sparse file.
	Err error
}

func (e *Error) Error() string {
	if e.Chunk == HeaderChunk {
		return fmt.Sprintf("sparse: header (byte %d): %s", e.Offset, e.Reason)
	}
	return fmt.Sprintf("sparse: chunk %d (byte %d): %s", e.Chunk, e.Offset, e.Reason)
}

func (e *Error) Unwrap() error { return e.Err }

// Kind is the kind of an Extent.
type Kind uint8

const (
	// Raw blocks are stored in the sparse file as they are.
	Raw Kind = iota + 1
	// Fill blocks repeat a 4-byte pattern (Extent.Fill). A fill of 0 is
	// all zeros, just as DontCare.
	Fill
	// DontCare blocks are not stored; they read as zeros.
	DontCare
)

func (k Kind) String() string {
	switch k {
	case Raw:
		return "raw"
	case Fill:
		return "fill"
	case DontCare:
		return "dont-care"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Extent is a run of blocks of one kind, in units of the sparse file's
// block size (BlockSize), not of any tree's data block size.
type Extent struct {
	Start, Blocks uint64
	Kind          Kind
	// Fill is the pattern of a Fill extent, as the little-endian uint32 of
	// its 4 bytes in the file: the expanded bytes are Fill's little-endian
	// encoding, repeated from the start of the extent. 0 for other kinds.
	Fill uint32
}

// entry is one index entry: where a run of chunks of one kind (and one
// fill pattern) starts, a RAW chunk, or, in a thinned index, where
// scanning the chunk headers may start (see Image.entries).
type entry struct {
	out   int64  // offset in the expanded image
	hdr   int64  // offset of its first chunk's header in the sparse file
	index uint32 // its first chunk's index in the file
	fill  uint32
	kind  Kind
}

// maxEntries caps the index: 64K entries of 32 bytes, 2 MiB, for any
// number of chunks.
const maxEntries = 1 << 16

// nCursors is how many positions of header scanning a thinned index
// remembers: enough for the readers of a hash tree builder that read
// different stretches at once, each then going on from where it stopped.
const nCursors = 16

// Image is an opened sparse image. Its methods are safe for concurrent
// use, provided the underlying io.ReaderAt is (as io.ReaderAt requires).
type Image struct {
	r           io.ReaderAt
	blockSize   int64
	size        int64
	imageCRC    uint32
	hasCRC      bool // some chunk is a CRC32 chunk
	fileHdrSz   int64
	chunkHdrSz  int64
	totalBlocks uint64
	end         int64 // end of the last chunk in the sparse file
	fileSize    int64
	totalChunks int

	// entries is the index. When exact, there is one entry per maximal run
	// of chunks of one kind (RAW: one per chunk) and an entry ends where the
	// next begins. Otherwise (more runs than maxEntries) it keeps only
	// every stride-th run's start: ReadAt then scans the chunk headers from
	// the nearest one, through cursors that remember where a scan stopped.
	entries []entry
	exact   bool

	mu      sync.Mutex
	cursors [nCursors]cursor
	tick    uint64
}

// cursor is a scan of the chunk headers in progress, and the chunk it
// found last.
type cursor struct {
	s    *scanner
	last chunkInfo // valid if last.blocks > 0
	used uint64
}

// IsSparse reports whether r starts with the sparse image magic.
func IsSparse(r io.ReaderAt) bool {
	var b [4]byte
	n, _ := r.ReadAt(b[:], 0)
	return n == 4 && binary.LittleEndian.Uint32(b[:]) == Magic
}

// Open parses the sparse image in the first size bytes of r and checks
// every chunk header (see the package documentation for what it rejects).
// It reads only headers, not data; CheckCRC verifies checksums.
func Open(r io.ReaderAt, size int64) (*Image, error) {
	return open(r, size, maxEntries)
}

// open is Open with an index of at most limit entries (tests thin the
// index of small images with a small limit).
func open(r io.ReaderAt, size int64, limit int) (*Image, error) {
	hr := headerReader{r: r, size: size}
	if size < HeaderSize {
		return nil, hdrErr(0, "file is %d bytes, shorter than the %d-byte sparse header", size, HeaderSize)
	}
	h, err := hr.read(0, HeaderSize)
	if err != nil {
		return nil, ioErr(HeaderChunk, 0, "reading the header", err)
	}
	le := binary.LittleEndian
	magic := le.Uint32(h[0:])
	major := le.Uint16(h[4:])
	fileHdrSz := int64(le.Uint16(h[8:]))
	chunkHdrSz := int64(le.Uint16(h[10:]))
	blkSz := int64(le.Uint32(h[12:]))
	totalBlks := uint64(le.Uint32(h[16:]))
	totalChunks := int64(le.Uint32(h[20:]))
	imageCRC := le.Uint32(h[24:])

	switch {
	case magic != Magic:
		return nil, hdrErr(0, "bad magic %#08x, want %#08x: not an Android sparse image", magic, uint32(Magic))
	case major != 1:
		return nil, hdrErr(4, "unsupported major version %d, want 1", major)
	case fileHdrSz < HeaderSize:
		return nil, hdrErr(8, "file header size %d is below the minimum of %d", fileHdrSz, HeaderSize)
	case chunkHdrSz < ChunkHeaderSize:
		return nil, hdrErr(10, "chunk header size %d is below the minimum of %d", chunkHdrSz, ChunkHeaderSize)
	case blkSz == 0 || blkSz%4 != 0:
		return nil, hdrErr(12, "block size %d is not a positive multiple of 4", blkSz)
	case fileHdrSz > size:
		return nil, hdrErr(8, "file header size %d is past the end of the %d-byte file", fileHdrSz, size)
	}
	if hi, lo := bits.Mul64(totalBlks, uint64(blkSz)); hi != 0 || lo > math.MaxInt64 {
		return nil, hdrErr(16, "%d blocks of %d bytes overflow a 63-bit size", totalBlks, blkSz)
	}
	if room := (size - fileHdrSz) / chunkHdrSz; totalChunks > room {
		return nil, hdrErr(20, "header declares %d chunks, but the %d bytes after the header hold at most %d chunk headers of %d bytes",
			totalChunks, size-fileHdrSz, room, chunkHdrSz)
	}

	im := &Image{
		r:           r,
		blockSize:   blkSz,
		size:        int64(totalBlks) * blkSz,
		imageCRC:    imageCRC,
		fileHdrSz:   fileHdrSz,
		chunkHdrSz:  chunkHdrSz,
		totalBlocks: totalBlks,
		fileSize:    size,
		totalChunks: int(totalChunks),
	}
	s := &scanner{im: im, hr: hr, off: fileHdrSz}
	// runs counts the index's runs so far; every stride-th gets an entry.
	runs, stride := 0, 1
	var prevKind Kind
	var prevFill uint32
	for s.index < im.totalChunks {
		c, err := s.next()
		if err != nil {
			return nil, err
		}
		if c.typ == ChunkCRC32 {
			im.hasCRC = true
			continue
		}
		if c.blocks == 0 {
			continue
		}
		k := kindOf(c.typ)
		if runs > 0 && k != Raw && k == prevKind && c.value == prevFill {
			continue // the run goes on
		}
		prevKind, prevFill = k, c.value
		if runs%stride == 0 {
			im.entries = append(im.entries, entry{out: c.out, hdr: c.hdr, index: uint32(c.index), fill: c.value, kind: k})
			if len(im.entries) > limit {
				// Thin out: keep every other entry, twice as far apart.
				n := 0
				for i := 0; i < len(im.entries); i += 2 {
					im.entries[n] = im.entries[i]
					n++
				}
				im.entries = im.entries[:n]
				stride *= 2
			}
		}
		runs++
	}
	if s.blocks != totalBlks {
		return nil, hdrErr(16, "the %d chunks (ending at byte %d) cover %d blocks, but the header declares %d",
			totalChunks, s.off, s.blocks, totalBlks)
	}
	im.end = s.off
	im.exact = stride == 1
	return im, nil
}

// chunkInfo is one chunk as its header describes it.
type chunkInfo struct {
	typ    uint16
	index  int
	hdr    int64 // offset of the header in the sparse file
	data   int64 // offset of the data in the sparse file
	out    int64 // offset in the expanded image
	len    int64 // expanded bytes
	blocks uint64
	value  uint32 // FILL: the pattern; CRC32: the checksum; else 0
}

func kindOf(typ uint16) Kind {
	switch typ {
	case ChunkRaw:
		return Raw
	case ChunkFill:
		return Fill
	}
	return DontCare
}

// scanner reads and checks chunk headers in order, from any chunk whose
// place (off, blocks, index) is known.
type scanner struct {
	im     *Image
	hr     headerReader
	off    int64  // offset of the next chunk's header
	blocks uint64 // output blocks before it
	index  int    // its index
}

// next parses and checks the next chunk; the caller has checked that
// there is one (s.index < im.totalChunks). The checks are Open's, so a
// file that changed since Open gives an error, not a wrong chunk.
func (s *scanner) next() (chunkInfo, error) {
	im := s.im
	le := binary.LittleEndian
	i, off, size, chunkHdrSz, blkSz := s.index, s.off, im.fileSize, im.chunkHdrSz, im.blockSize
	cerr := func(format string, args ...any) error {
		return &Error{Chunk: i, Offset: off, Reason: fmt.Sprintf(format, args...), Err: ErrFormat}
	}
	if size-off < chunkHdrSz {
		return chunkInfo{}, cerr("file ends at byte %d, inside or before this chunk's %d-byte header: header declares %d chunks, found %d",
			size, chunkHdrSz, im.totalChunks, i)
	}
	ch, err := s.hr.read(off, ChunkHeaderSize)
	if err != nil {
		return chunkInfo{}, ioErr(i, off, "reading the chunk header", err)
	}
	typ := le.Uint16(ch[0:])
	chunkSz := uint64(le.Uint32(ch[4:]))
	totalSz := int64(le.Uint32(ch[8:]))
	if totalSz < chunkHdrSz {
		return chunkInfo{}, cerr("total_sz %d is smaller than the %d-byte chunk header", totalSz, chunkHdrSz)
	}
	dataLen := totalSz - chunkHdrSz
	dataOff := off + chunkHdrSz
	var name string
	var want int64
	switch typ {
	case ChunkRaw:
		hi, lo := bits.Mul64(chunkSz, uint64(blkSz))
		if hi != 0 || lo != uint64(dataLen) {
			return chunkInfo{}, cerr("RAW chunk of %d blocks of %d bytes needs total_sz %d (%d-byte header + %d bytes of data), has total_sz %d",
				chunkSz, blkSz, uint64(chunkHdrSz)+lo, chunkHdrSz, lo, totalSz)
		}
		name, want = "RAW", dataLen
	case ChunkFill:
		name, want = "FILL", 4
	case ChunkDontCare:
		name, want = "DONT_CARE", 0
	case ChunkCRC32:
		name, want = "CRC32", 4
		if chunkSz != 0 {
			return chunkInfo{}, cerr("CRC32 chunk has chunk_sz %d, want 0", chunkSz)
		}
	default:
		return chunkInfo{}, cerr("unknown chunk type %#04x (want RAW 0xcac1, FILL 0xcac2, DONT_CARE 0xcac3 or CRC32 0xcac4)", typ)
	}
	if dataLen != want {
		return chunkInfo{}, cerr("%s chunk has total_sz %d, want %d (%d-byte header + %d bytes of data)",
			name, totalSz, chunkHdrSz+want, chunkHdrSz, want)
	}
	if totalSz > size-off {
		return chunkInfo{}, cerr("%s chunk of %d bytes runs past the end of the file: it needs bytes up to %d, the file has %d (truncated)",
			name, totalSz, off+totalSz, size)
	}
	c := chunkInfo{typ: typ, index: i, hdr: off, data: dataOff, out: int64(s.blocks) * blkSz}
	if typ == ChunkCRC32 {
		v, err := s.hr.read(dataOff, 4)
		if err != nil {
			return chunkInfo{}, ioErr(i, off, "reading the CRC32 chunk's value", err)
		}
		c.value = le.Uint32(v)
	} else {
		if chunkSz > im.totalBlocks-s.blocks {
			return chunkInfo{}, cerr("%s chunk of %d blocks ends at block %d, past the header's total of %d blocks",
				name, chunkSz, s.blocks+chunkSz, im.totalBlocks)
		}
		if typ == ChunkFill && chunkSz > 0 {
			v, err := s.hr.read(dataOff, 4)
			if err != nil {
				return chunkInfo{}, ioErr(i, off, "reading the FILL chunk's pattern", err)
			}
			c.value = le.Uint32(v)
		}
		c.blocks, c.len = chunkSz, int64(chunkSz)*blkSz
	}
	s.blocks += c.blocks
	s.off += totalSz
	s.index++
	return c, nil
}

// walk calls fn with every chunk, in order, reading the headers again.
func (im *Image) walk(fn func(c *chunkInfo) error) error {
	s := &scanner{im: im, hr: headerReader{r: im.r, size: im.fileSize}, off: im.fileHdrSz}
	var c chunkInfo // one for all: fn may keep &c, so a new one each time would be allocated
	for s.index < im.totalChunks {
		var err error
		if c, err = s.next(); err != nil {
			return err
		}
		if err := fn(&c); err != nil {
			return err
		}
	}
	return nil
}

func hdrErr(off int64, format string, args ...any) error {
	return &Error{Chunk: HeaderChunk, Offset: off, Reason: fmt.Sprintf(format, args...), Err: ErrFormat}
}

func ioErr(chunk int, off int64, what string, err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return &Error{Chunk: chunk, Offset: off, Reason: fmt.Sprintf("%s: %v", what, err), Err: err}
}

// headerReader reads the small fields of headers through a window that
// adapts to the layout: reading on past its end (a run of FILL, DONT_CARE
// and CRC32 headers) doubles it, up to maxWindow, so such a run costs a
// few ReadAts, not one per chunk; jumping past it (over RAW data) shrinks
// it back to minWindow, so skipping RAW chunks does not read their data.
type headerReader struct {
	r      io.ReaderAt
	size   int64
	buf    []byte
	off    int64 // file offset of buf[0]
	window int
}

const (
	minWindow = 512
	maxWindow = 64 << 10
)

// read returns n bytes at off; the caller has checked off+n <= size.
func (h *headerReader) read(off int64, n int) ([]byte, error) {
	end := h.off + int64(len(h.buf))
	if off >= h.off && off+int64(n) <= end {
		return h.buf[off-h.off:][:n], nil
	}
	if off >= h.off && off <= end && h.buf != nil {
		h.window = min(2*h.window, maxWindow)
	} else {
		h.window = minWindow
	}
	w := max(min(int64(h.window), h.size-off), int64(n))
	if int64(cap(h.buf)) < w {
		h.buf = make([]byte, 0, max(w, maxWindow))
	}
	h.buf = h.buf[:w]
	m, err := h.r.ReadAt(h.buf, off)
	h.buf, h.off = h.buf[:m], off
	if m >= n {
		return h.buf[:n], nil
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return nil, err
}

// Size returns the size of the expanded image in bytes: total blocks times
// the block size.
func (im *Image) Size() int64 { return im.size }

// BlockSize returns the sparse file's block size in bytes, the unit of
// Extents.
func (im *Image) BlockSize() int { return int(im.blockSize) }

// Trailing returns the number of bytes after the last chunk, which Open
// ignores (as libsparse does).
func (im *Image) Trailing() int64 { return im.fileSize - im.end }

// ReadAt reads the expanded image. It is safe for concurrent use.
func (im *Image) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("sparse: ReadAt at negative offset %d", off)
	}
	if off >= im.size {
		return 0, io.EOF
	}
	want := len(p)
	p = p[:min(int64(want), im.size-off)]
	var err error
	n := 0
	if im.exact {
		// The first entry that ends after off.
		i := sort.Search(len(im.entries), func(i int) bool { return im.entries[i].out > off }) - 1
		for ; n < len(p) && err == nil; i++ {
			e := &im.entries[i]
			end := im.size
			if i+1 < len(im.entries) {
				end = im.entries[i+1].out
			}
			c := chunkInfo{index: int(e.index), hdr: e.hdr, data: e.hdr + im.chunkHdrSz, out: e.out, len: end - e.out, value: e.fill}
			var k int
			k, err = im.readChunk(p[n:], off+int64(n), &c, e.kind)
			n += k
		}
	} else {
		for n < len(p) && err == nil {
			var c chunkInfo
			if c, err = im.locate(off + int64(n)); err == nil {
				var k int
				k, err = im.readChunk(p[n:], off+int64(n), &c, kindOf(c.typ))
				n += k
			}
		}
	}
	if err != nil {
		return n, err
	}
	if n < want {
		return n, io.EOF
	}
	return n, nil
}

// readChunk fills the start of dst, at expanded offset pos inside c (of
// kind k), up to the end of c or of dst.
func (im *Image) readChunk(dst []byte, pos int64, c *chunkInfo, k Kind) (int, error) {
	within := pos - c.out
	dst = dst[:min(int64(len(dst)), c.len-within)]
	switch k {
	case Raw:
		m, err := im.r.ReadAt(dst, c.data+within)
		if m < len(dst) {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return m, &Error{Chunk: c.index, Offset: c.hdr,
				Reason: fmt.Sprintf("reading RAW data at byte %d of the sparse file: %v", c.data+within+int64(m), err), Err: err}
		}
	case Fill:
		fillPattern(dst, c.value, pos)
	default:
		clear(dst)
	}
	return len(dst), nil
}

// locate returns the chunk holding expanded byte pos (< im.size) of a
// thinned index, scanning chunk headers from the cursor closest before pos
// or, if none is, from the index entry before it.
func (im *Image) locate(pos int64) (chunkInfo, error) {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.tick++
	e := &im.entries[sort.Search(len(im.entries), func(i int) bool { return im.entries[i].out > pos })-1]
	var best *cursor
	for i := range im.cursors {
		c := &im.cursors[i]
		if c.s == nil {
			continue
		}
		if c.last.len > 0 && c.last.out <= pos && pos < c.last.out+c.last.len {
			c.used = im.tick
			return c.last, nil
		}
		if at := int64(c.s.blocks) * im.blockSize; at <= pos && at >= e.out && (best == nil || at > int64(best.s.blocks)*im.blockSize) {
			best = c
		}
	}
	if best == nil {
		best = &im.cursors[0]
		for i := range im.cursors {
			if im.cursors[i].used < best.used {
				best = &im.cursors[i]
			}
		}
		if best.s == nil {
			best.s = &scanner{im: im, hr: headerReader{r: im.r, size: im.fileSize}}
		}
		best.s.off, best.s.blocks, best.s.index = e.hdr, uint64(e.out/im.blockSize), int(e.index)
		best.last = chunkInfo{}
	}
	best.used = im.tick
	for best.s.index < im.totalChunks {
		c, err := best.s.next()
		if err != nil {
			best.s, best.used = nil, 0
			return chunkInfo{}, err
		}
		if c.len > 0 && pos < c.out+c.len {
			best.last = c
			return c, nil
		}
	}
	// Only a file changed since Open gets here.
	s := best.s
	best.s, best.used = nil, 0
	return chunkInfo{}, &Error{Chunk: s.index, Offset: s.off, Err: ErrFormat,
		Reason: fmt.Sprintf("the chunks end before byte %d of the expanded image: the file changed since it was opened", pos)}
}

// fillPattern fills dst, which starts at expanded offset pos, with the
// little-endian bytes of fill repeated from offset 0 (pattern starts are
// 4-aligned, as chunks start at multiples of the block size).
func fillPattern(dst []byte, fill uint32, pos int64) {
	var pat [4]byte
	binary.LittleEndian.PutUint32(pat[:], fill)
	ph := int(pos & 3)
	for j := 0; j < len(dst) && j < 4; j++ {
		dst[j] = pat[(ph+j)&3]
	}
	for done := 4; done < len(dst); done *= 2 {
		copy(dst[done:], dst[:done])
	}
}

// errStop ends a walk early.
var errStop = errors.New("stop")

// WalkExtents calls fn with the expanded image as runs of blocks, in
// order, without gaps, covering exactly Size()/BlockSize() blocks, until fn
// returns false. Adjacent chunks of the same kind (and, for Fill, the same
// pattern) are merged into one extent. Blocks are in units of BlockSize.
// It needs memory for one extent at a time; with an index that does not
// hold every run (images of more than 64K runs) it reads the chunk headers
// again, and returns the error of a failed read.
func (im *Image) WalkExtents(fn func(Extent) bool) error {
	var cur Extent
	stopped := false
	add := func(e Extent) bool {
		if cur.Blocks > 0 && cur.Kind == e.Kind && cur.Fill == e.Fill {
			cur.Blocks += e.Blocks
			return true
		}
		if cur.Blocks > 0 && !fn(cur) {
			stopped = true
			return false
		}
		cur = e
		return true
	}
	bs := im.blockSize
	if im.exact {
		for i := range im.entries {
			e := &im.entries[i]
			end := im.size
			if i+1 < len(im.entries) {
				end = im.entries[i+1].out
			}
			if !add(Extent{Start: uint64(e.out / bs), Blocks: uint64((end - e.out) / bs), Kind: e.kind, Fill: e.fill}) {
				return nil
			}
		}
	} else {
		err := im.walk(func(c *chunkInfo) error {
			if c.blocks == 0 {
				return nil
			}
			if !add(Extent{Start: uint64(c.out / bs), Blocks: c.blocks, Kind: kindOf(c.typ), Fill: c.value}) {
				return errStop
			}
			return nil
		})
		if err == errStop {
			return nil
		}
		if err != nil {
			return err
		}
	}
	if cur.Blocks > 0 && !stopped {
		fn(cur)
	}
	return nil
}

// Extents returns what WalkExtents gives, as a slice: one entry per
// extent, so only for images known to have few; it stops at the first read
// error, which WalkExtents returns.
func (im *Image) Extents() []Extent {
	var out []Extent
	im.WalkExtents(func(e Extent) bool {
		out = append(out, e)
		return true
	})
	return out
}

// crcBuf is the read size of CheckCRC over RAW data.
const crcBuf = 1 << 20

// CheckCRC verifies every CRC32 chunk (the CRC32 of the expanded image
// before it) and, when nonzero, the header's image CRC32 (of the whole
// expanded image). It reads every RAW byte once, streaming with bounded
// memory; FILL and DONT_CARE runs cost O(log length), not their length.
// The first mismatch is returned as an *Error wrapping ErrChecksum.
func (im *Image) CheckCRC() error {
	if !im.hasCRC && im.imageCRC == 0 {
		return nil
	}
	var crc uint32
	var buf []byte
	var pat [4]byte // out here: crc32 keeps it on the heap
	err := im.walk(func(c *chunkInfo) error {
		switch {
		case c.typ == ChunkCRC32:
			if c.value != crc {
				return &Error{Chunk: c.index, Offset: c.hdr, Err: ErrChecksum,
					Reason: fmt.Sprintf("CRC32 chunk holds %#08x, but the first %d bytes of the expanded image have CRC32 %#08x", c.value, c.out, crc)}
			}
		case c.len == 0:
		case c.typ == ChunkRaw:
			if buf == nil {
				buf = make([]byte, min(crcBuf, c.len))
			}
			for done := int64(0); done < c.len; {
				b := buf[:min(int64(len(buf)), c.len-done)]
				m, err := im.r.ReadAt(b, c.data+done)
				if m < len(b) {
					if err == nil || err == io.EOF {
						err = io.ErrUnexpectedEOF
					}
					return &Error{Chunk: c.index, Offset: c.hdr,
						Reason: fmt.Sprintf("reading RAW data at byte %d of the sparse file: %v", c.data+done+int64(m), err), Err: err}
				}
				crc = crc32.Update(crc, crc32.IEEETable, b)
				done += int64(m)
			}
		default:
			binary.LittleEndian.PutUint32(pat[:], c.value) // 0 for DontCare
			run := crcRepeat(crc32.ChecksumIEEE(pat[:]), 4, uint64(c.len/4))
			crc = crcCombine(crc, run, uint64(c.len))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if im.imageCRC != 0 && im.imageCRC != crc {
		return &Error{Chunk: HeaderChunk, Offset: 24, Err: ErrChecksum,
			Reason: fmt.Sprintf("header's image CRC32 is %#08x, but the %d-byte expanded image has CRC32 %#08x", im.imageCRC, im.size, crc)}
	}
	return nil
}
