// Package sparse reads Android sparse images (the format of img2simg,
// fastboot and AOSP's libsparse) as the image they expand to, without
// expanding them on disk.
//
// Open parses and checks every chunk header up front and keeps an index in
// memory, one entry per chunk; Image.ReadAt then serves the expanded image
// from it: RAW chunks are read from the sparse file, FILL chunks repeat
// their 4-byte pattern and DONT_CARE chunks read as zeros. Image.Extents
// lists the runs of blocks that are one fill pattern or zeros, so a hash
// tree builder can hash such a block once instead of once per block.
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
// small reads per run of consecutive headers, and in memory one index
// entry per chunk (the declared chunk count is checked against the file
// size before anything is allocated).
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

// chunk is one index entry: a RAW, FILL or DONT_CARE chunk of at least one
// block.
type chunk struct {
	out   int64 // offset in the expanded image
	len   int64 // expanded bytes
	data  int64 // RAW: offset of the data in the sparse file
	hdr   int64 // offset of the chunk header in the sparse file
	index int   // chunk index in the file
	fill  uint32
	kind  Kind
}

// crcChunk is a CRC32 chunk: the CRC32 of the expanded image before at.
type crcChunk struct {
	at    int64
	hdr   int64
	index int
	value uint32
}

// Image is an opened sparse image. Its methods are safe for concurrent
// use, provided the underlying io.ReaderAt is (as io.ReaderAt requires).
type Image struct {
	r           io.ReaderAt
	blockSize   int64
	size        int64
	imageCRC    uint32
	chunks      []chunk
	crcs        []crcChunk
	end         int64 // end of the last chunk in the sparse file
	fileSize    int64
	totalChunks int
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
	hr := &headerReader{r: r, size: size}
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
		fileSize:    size,
		totalChunks: int(totalChunks),
	}
	off := fileHdrSz
	var blocks uint64 // output blocks so far
	for i := 0; i < int(totalChunks); i++ {
		cerr := func(format string, args ...any) error {
			return &Error{Chunk: i, Offset: off, Reason: fmt.Sprintf(format, args...), Err: ErrFormat}
		}
		if size-off < chunkHdrSz {
			return nil, cerr("file ends at byte %d, inside or before this chunk's %d-byte header: header declares %d chunks, found %d",
				size, chunkHdrSz, totalChunks, i)
		}
		ch, err := hr.read(off, ChunkHeaderSize)
		if err != nil {
			return nil, ioErr(i, off, "reading the chunk header", err)
		}
		typ := le.Uint16(ch[0:])
		chunkSz := uint64(le.Uint32(ch[4:]))
		totalSz := int64(le.Uint32(ch[8:]))
		if totalSz < chunkHdrSz {
			return nil, cerr("total_sz %d is smaller than the %d-byte chunk header", totalSz, chunkHdrSz)
		}
		dataLen := totalSz - chunkHdrSz
		dataOff := off + chunkHdrSz
		var name string
		var want int64
		switch typ {
		case ChunkRaw:
			hi, lo := bits.Mul64(chunkSz, uint64(blkSz))
			if hi != 0 || lo != uint64(dataLen) {
				return nil, cerr("RAW chunk of %d blocks of %d bytes needs total_sz %d (%d-byte header + %d bytes of data), has total_sz %d",
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
				return nil, cerr("CRC32 chunk has chunk_sz %d, want 0", chunkSz)
			}
		default:
			return nil, cerr("unknown chunk type %#04x (want RAW 0xcac1, FILL 0xcac2, DONT_CARE 0xcac3 or CRC32 0xcac4)", typ)
		}
		if dataLen != want {
			return nil, cerr("%s chunk has total_sz %d, want %d (%d-byte header + %d bytes of data)",
				name, totalSz, chunkHdrSz+want, chunkHdrSz, want)
		}
		if totalSz > size-off {
			return nil, cerr("%s chunk of %d bytes runs past the end of the file: it needs bytes up to %d, the file has %d (truncated)",
				name, totalSz, off+totalSz, size)
		}
		if typ == ChunkCRC32 {
			v, err := hr.read(dataOff, 4)
			if err != nil {
				return nil, ioErr(i, off, "reading the CRC32 chunk's value", err)
			}
			im.crcs = append(im.crcs, crcChunk{at: int64(blocks) * blkSz, hdr: off, index: i, value: le.Uint32(v)})
			off += totalSz
			continue
		}
		if chunkSz > totalBlks-blocks {
			return nil, cerr("%s chunk of %d blocks ends at block %d, past the header's total of %d blocks",
				name, chunkSz, blocks+chunkSz, totalBlks)
		}
		if chunkSz > 0 {
			c := chunk{out: int64(blocks) * blkSz, len: int64(chunkSz) * blkSz, hdr: off, index: i}
			switch typ {
			case ChunkRaw:
				c.kind, c.data = Raw, dataOff
			case ChunkFill:
				v, err := hr.read(dataOff, 4)
				if err != nil {
					return nil, ioErr(i, off, "reading the FILL chunk's pattern", err)
				}
				c.kind, c.fill = Fill, le.Uint32(v)
			case ChunkDontCare:
				c.kind = DontCare
			}
			im.chunks = append(im.chunks, c)
		}
		blocks += chunkSz
		off += totalSz
	}
	if blocks != totalBlks {
		return nil, hdrErr(16, "the %d chunks (ending at byte %d) cover %d blocks, but the header declares %d",
			totalChunks, off, blocks, totalBlks)
	}
	im.end = off
	return im, nil
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
	i := sort.Search(len(im.chunks), func(i int) bool {
		c := &im.chunks[i]
		return c.out+c.len > off
	})
	n := 0
	for n < len(p) && i < len(im.chunks) {
		c := &im.chunks[i]
		pos := off + int64(n)
		within := pos - c.out
		k := int(min(int64(len(p)-n), c.len-within))
		dst := p[n : n+k]
		switch c.kind {
		case Raw:
			m, err := im.r.ReadAt(dst, c.data+within)
			if m < k {
				if err == nil || err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return n + m, &Error{Chunk: c.index, Offset: c.hdr,
					Reason: fmt.Sprintf("reading RAW data at byte %d of the sparse file: %v", c.data+within+int64(m), err), Err: err}
			}
		case Fill:
			fillPattern(dst, c.fill, pos)
		default:
			clear(dst)
		}
		n += k
		i++
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
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

// Extents returns the expanded image as runs of blocks, in order, without
// gaps, covering exactly Size()/BlockSize() blocks. Adjacent chunks of the
// same kind (and, for Fill, the same pattern) are merged into one extent.
// Blocks are in units of BlockSize.
func (im *Image) Extents() []Extent {
	var out []Extent
	for _, c := range im.chunks {
		start, blocks := uint64(c.out/im.blockSize), uint64(c.len/im.blockSize)
		if n := len(out); n > 0 && out[n-1].Kind == c.kind && out[n-1].Fill == c.fill {
			out[n-1].Blocks += blocks
			continue
		}
		out = append(out, Extent{Start: start, Blocks: blocks, Kind: c.kind, Fill: c.fill})
	}
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
	if len(im.crcs) == 0 && im.imageCRC == 0 {
		return nil
	}
	var crc uint32
	crcs := im.crcs
	check := func(upto int64) error {
		for ; len(crcs) > 0 && crcs[0].at <= upto; crcs = crcs[1:] {
			c := crcs[0]
			if c.value != crc {
				return &Error{Chunk: c.index, Offset: c.hdr, Err: ErrChecksum,
					Reason: fmt.Sprintf("CRC32 chunk holds %#08x, but the first %d bytes of the expanded image have CRC32 %#08x", c.value, c.at, crc)}
			}
		}
		return nil
	}
	var buf []byte
	for i := range im.chunks {
		c := &im.chunks[i]
		if err := check(c.out); err != nil {
			return err
		}
		switch c.kind {
		case Raw:
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
			var pat [4]byte
			binary.LittleEndian.PutUint32(pat[:], c.fill) // 0 for DontCare
			run := crcRepeat(crc32.ChecksumIEEE(pat[:]), 4, uint64(c.len/4))
			crc = crcCombine(crc, run, uint64(c.len))
		}
	}
	if err := check(im.size); err != nil {
		return err
	}
	if im.imageCRC != 0 && im.imageCRC != crc {
		return &Error{Chunk: HeaderChunk, Offset: 24, Err: ErrChecksum,
			Reason: fmt.Sprintf("header's image CRC32 is %#08x, but the %d-byte expanded image has CRC32 %#08x", im.imageCRC, im.size, crc)}
	}
	return nil
}
