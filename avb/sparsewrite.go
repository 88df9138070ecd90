package avb

import (
	"encoding/binary"
	"io"
	"os"

	"github.com/veritytree/veritytree/internal/safefile"
)

// sparseWriter appends to and cuts an Android sparse image the way
// avbtool's ImageHandler does, so that its output is avbtool's byte for
// byte: each append is one new chunk after the last, and the header's
// block and chunk counts follow. It reads the chunk headers as it goes and
// keeps none of them: memory stays bounded for any number of chunks.
type sparseWriter struct {
	f           *os.File
	blk         uint64
	totalBlocks uint32
	totalChunks uint32
	end         int64 // where the chunks end in the file
	// record is the safefile.ResumeRecord the file ends in, past its chunks,
	// left by an interrupted AddHashtreeFooter; nil if none.
	record *safefile.ResumeRecord
	// fileSize is the file's size when opened: end, or past the record.
	fileSize int64
}

const (
	sparseHeaderSize = 28
	chunkHeaderSize  = 12
	chunkRaw         = 0xcac1
	chunkFill        = 0xcac2
	chunkDontCare    = 0xcac3
	chunkCRC32       = 0xcac4
)

type sparseChunk struct {
	typ       uint16
	offset    int64  // of the chunk header in the file
	outOffset uint64 // in the expanded image
	blocks    uint32
	totalSize uint32
}

func openSparseWriter(f *os.File) (*sparseWriter, error) {
	h := make([]byte, sparseHeaderSize)
	if _, err := f.ReadAt(h, 0); err != nil {
		return nil, ioErr("reading the sparse header: %v", err)
	}
	le := binary.LittleEndian
	if le.Uint32(h) != 0xed26ff3a {
		return nil, inputErr("", "not an Android sparse image")
	}
	if le.Uint16(h[4:]) != 1 || le.Uint16(h[6:]) != 0 || le.Uint16(h[8:]) != sparseHeaderSize || le.Uint16(h[10:]) != chunkHeaderSize {
		return nil, inputErr("", "sparse image version %d.%d with header sizes %d and %d: only 1.0, 28 and 12 are written to",
			le.Uint16(h[4:]), le.Uint16(h[6:]), le.Uint16(h[8:]), le.Uint16(h[10:]))
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, ioErr("reading the sparse image: %v", err)
	}
	if s := readStaging(f, fi.Size()); s != nil {
		// Its header does not yet count the chunks phase B writes.
		return nil, inputErr("run "+s.verb+" again to finish it", "an interrupted %s left this sparse image half rewritten", s.verb)
	}
	w := &sparseWriter{f: f, blk: uint64(le.Uint32(h[12:])), totalBlocks: le.Uint32(h[16:]), totalChunks: le.Uint32(h[20:])}
	if w.blk == 0 || w.blk%4 != 0 {
		return nil, inputErr("", "sparse block size %d", w.blk)
	}
	end, _, err := w.walk(func(sparseChunk) bool { return false })
	if err != nil {
		return nil, err
	}
	w.end = end
	w.fileSize = fi.Size()
	if w.fileSize != end {
		// Past the chunks, only what an interrupted AddHashtreeFooter
		// wrote, ending in its record, is taken as its own.
		rec := safefile.ReadResumeRecord(f, w.fileSize)
		if rec == nil || !rec.Sparse || rec.End-safefile.ResumeRecordSize < uint64(end) {
			return nil, inputErr("", "%d bytes after the last chunk of the sparse image", fi.Size()-end)
		}
		w.record = rec
	}
	return w, nil
}

// walk reads the chunk headers in order until stop returns true; it
// returns where it stopped (the end of the chunks if it did not) and the
// chunk it stopped at.
func (w *sparseWriter) walk(stop func(sparseChunk) bool) (int64, *sparseChunk, error) {
	le := binary.LittleEndian
	off := int64(sparseHeaderSize)
	var out uint64
	// The headers are read through a window of the file: one read for
	// thousands of small chunks, not one each.
	win := make([]byte, 64<<10)
	var winAt, winLen int64
	var blocks uint64
	for i := uint32(0); i < w.totalChunks; i++ {
		if off < winAt || off+chunkHeaderSize > winAt+winLen {
			n, err := w.f.ReadAt(win, off)
			if n < chunkHeaderSize {
				if err == nil || err == io.EOF {
					return 0, nil, inputErr("", "sparse chunk %d at %d: the file ends in its header", i, off)
				}
				return 0, nil, inputErr("", "sparse chunk %d at %d: %v", i, off, err)
			}
			winAt, winLen = off, int64(n)
		}
		hb := win[off-winAt : off-winAt+chunkHeaderSize]
		c := sparseChunk{typ: le.Uint16(hb), offset: off, outOffset: out, blocks: le.Uint32(hb[4:]), totalSize: le.Uint32(hb[8:])}
		want := uint64(chunkHeaderSize)
		switch c.typ {
		case chunkRaw:
			want += uint64(c.blocks) * w.blk
		case chunkFill:
			want += 4
		case chunkDontCare:
		case chunkCRC32:
			return 0, nil, inputErr("", "sparse image with a CRC32 chunk (at %d): not written to", off)
		default:
			return 0, nil, inputErr("", "sparse chunk %d at %d: unknown type %#x", i, off, c.typ)
		}
		if uint64(c.totalSize) != want {
			return 0, nil, inputErr("", "sparse chunk %d at %d: %d bytes, its type needs %d", i, off, c.totalSize, want)
		}
		if stop(c) {
			return off, &c, nil
		}
		off += int64(c.totalSize)
		out += uint64(c.blocks) * w.blk
		blocks += uint64(c.blocks)
	}
	if blocks != uint64(w.totalBlocks) {
		return 0, nil, inputErr("", "sparse chunks cover %d blocks, the header says %d", blocks, w.totalBlocks)
	}
	return off, nil, nil
}

func (w *sparseWriter) size() uint64 { return uint64(w.totalBlocks) * w.blk }

func (w *sparseWriter) writeCounts() error {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint32(b, w.totalBlocks)
	binary.LittleEndian.PutUint32(b[4:], w.totalChunks)
	if _, err := w.f.WriteAt(b, 16); err != nil {
		return ioErr("writing the sparse header: %v", err)
	}
	return nil
}

// startChunk writes a chunk header at the end and counts the chunk.
func (w *sparseWriter) startChunk(typ uint16, blocks uint32, dataSize uint64) error {
	if _, err := w.f.WriteAt(chunkHeader(typ, blocks, dataSize), w.end); err != nil {
		return ioErr("writing a sparse chunk: %v", err)
	}
	w.totalChunks++
	w.totalBlocks += blocks
	return w.writeCounts()
}

// appendRaw appends data (whole blocks) as one RAW chunk.
func (w *sparseWriter) appendRaw(data []byte) error {
	n := uint64(len(data))
	if err := w.startChunk(chunkRaw, uint32(n/w.blk), n); err != nil {
		return err
	}
	if _, err := w.f.WriteAt(data, w.end+chunkHeaderSize); err != nil {
		return ioErr("writing a sparse chunk: %v", err)
	}
	w.end += chunkHeaderSize + int64(n)
	return nil
}

// appendDontCare appends n bytes (whole blocks) of DONT_CARE.
func (w *sparseWriter) appendDontCare(n uint64) error {
	if err := w.startChunk(chunkDontCare, uint32(n/w.blk), 0); err != nil {
		return err
	}
	w.end += chunkHeaderSize
	return nil
}

// chunkHeader returns the header of a chunk of typ with blocks blocks and
// dataSize bytes of data after the header.
func chunkHeader(typ uint16, blocks uint32, dataSize uint64) []byte {
	h := make([]byte, chunkHeaderSize)
	binary.LittleEndian.PutUint16(h, typ)
	binary.LittleEndian.PutUint32(h[4:], blocks)
	binary.LittleEndian.PutUint32(h[8:], uint32(chunkHeaderSize+dataSize))
	return h
}

// sparseCut is where cutting the expanded image to a size leaves the
// sparse file: the chunks and blocks kept, where they end, and the header
// of a chunk cut in its middle (nil if none) with its offset.
type sparseCut struct {
	chunks, blocks uint32
	end            int64
	header         []byte
	headerAt       int64
}

// planCut returns how to cut the expanded image to size (whole blocks, no
// more than its size), as avbtool's ImageHandler.truncate cuts it: a chunk
// cut in its middle keeps its first blocks.
func (w *sparseWriter) planCut(size uint64) (*sparseCut, error) {
	if size%w.blk != 0 {
		return nil, inputErr("", "cannot cut a sparse image at %d, not a multiple of its block size %d", size, w.blk)
	}
	if size > w.size() {
		return nil, inputErr("", "cannot cut a sparse image of %d bytes at %d", w.size(), size)
	}
	if size == w.size() {
		return &sparseCut{chunks: w.totalChunks, blocks: w.totalBlocks, end: w.end}, nil
	}
	var idx uint32
	_, c, err := w.walk(func(c sparseChunk) bool {
		if c.outOffset+uint64(c.blocks)*w.blk > size {
			return true
		}
		idx++
		return false
	})
	if err != nil {
		return nil, err
	}
	if c == nil { // walk checked that the chunks cover the image
		return nil, inputErr("", "sparse image: no chunk at %d", size)
	}
	cut := &sparseCut{chunks: idx, blocks: uint32(size / w.blk), end: c.offset}
	if c.outOffset != size {
		keep := size - c.outOffset
		var data uint64
		switch c.typ {
		case chunkRaw:
			data = keep
		case chunkFill:
			data = 4
		}
		cut.header, cut.headerAt = chunkHeader(c.typ, uint32(keep/w.blk), data), c.offset
		cut.end = c.offset + chunkHeaderSize + int64(data)
		cut.chunks = idx + 1
	}
	return cut, nil
}

// applyCut makes the header (and the chunk cut in its middle) say what
// cut keeps; the bytes past cut.end are left in the file.
func (w *sparseWriter) applyCut(cut *sparseCut) error {
	if cut.header != nil {
		if _, err := w.f.WriteAt(cut.header, cut.headerAt); err != nil {
			return ioErr("writing the sparse image: %v", err)
		}
	}
	if cut.chunks != w.totalChunks || cut.blocks != w.totalBlocks {
		w.totalChunks, w.totalBlocks = cut.chunks, cut.blocks
		if err := w.writeCounts(); err != nil {
			return err
		}
	}
	w.end = cut.end
	return nil
}

// truncate cuts the expanded image to size (whole blocks), as avbtool's
// ImageHandler.truncate (see planCut), and the file after its last chunk;
// a larger size appends DONT_CARE.
func (w *sparseWriter) truncate(size uint64) error {
	if size > w.size() {
		return w.appendDontCare(size - w.size())
	}
	cut, err := w.planCut(size)
	if err != nil {
		return err
	}
	if err := w.applyCut(cut); err != nil {
		return err
	}
	if err := w.f.Truncate(cut.end); err != nil {
		return ioErr("writing the sparse image: %v", err)
	}
	w.fileSize = cut.end
	return nil
}
