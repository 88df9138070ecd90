// Package fecmsg lays the error correction of a dm-verity tree over its
// files: the message the Reed-Solomon parity covers (the data blocks, then
// the hash device from the tree on), its parameters, and the progress of
// its encoding. verity, avb and the commands' tests share it; it is not
// part of the library's API.
package fecmsg

import (
	"fmt"
	"io"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/merkle"
)

// Params returns the error-correction parameters for the tree g with
// roots parity bytes per codeword, when the hash device's protected part
// ends at hashEnd: the end of the hash device for parity kept elsewhere,
// the parity's offset for parity inside the hash device (as veritysetup
// computes it). The error is fec.Params.Validate's, or says the block
// sizes differ (callers that allow that check it first, in their words).
func Params(g *merkle.Geometry, roots int, hashEnd uint64) (fec.Params, error) {
	if g.DataBlockSize != g.HashBlockSize {
		return fec.Params{}, fmt.Errorf("%w: error correction needs equal data and hash block sizes, not %d and %d",
			fec.ErrInvalidParams, g.DataBlockSize, g.HashBlockSize)
	}
	p := fec.Params{Roots: roots, BlockSize: g.DataBlockSize,
		Blocks: fec.MessageBlocks(g.DataBlocks, g.HashStartBlock, hashEnd, g.DataBlockSize)}
	if err := p.Validate(); err != nil {
		return fec.Params{}, err
	}
	return p, nil
}

// Message returns the message that the parity p covers: the data blocks,
// then the hash device's blocks from the tree's start on.
func Message(g *merkle.Geometry, p fec.Params, data, hash io.ReaderAt) io.ReaderAt {
	hashBlocks := p.Blocks - g.DataBlocks
	return fec.Concat(
		fec.Part{R: data, Off: 0, Size: int64(g.DataSize())},
		fec.Part{R: hash, Off: int64(g.TreeOffset()), Size: int64(hashBlocks) * int64(g.HashBlockSize)},
	)
}

// Progress reports the progress of fec.Encode with fp writing to w,
// through report (nil: none): it returns the writer to give Encode,
// having reported the start, and done, to call once the parity is
// complete. The work is reading the message (the data and the tree), so
// that is what is counted, in bytes, not the parity, a tenth of it or
// less: each unit of parity written stands for the message it was
// computed from.
func Progress(fp fec.Params, w io.WriterAt, report func(done, total uint64)) (io.WriterAt, func()) {
	if report == nil {
		return w, func() {}
	}
	total := fp.Blocks * uint64(fp.BlockSize)
	report(0, total)
	pw := &progressWriter{w: w, parity: fp.ParitySize(), total: total, report: report}
	return pw, func() { report(total, total) }
}

// progressWriter reports progress as the parity is written: each unit
// fec.Encode writes is that much more of the message done. Encode
// serializes its writes, so report is called from one goroutine at a time.
type progressWriter struct {
	w       io.WriterAt
	written uint64 // bytes of parity
	parity  uint64
	total   uint64 // bytes of message
	report  func(done, total uint64)
}

func (p *progressWriter) WriteAt(b []byte, off int64) (int, error) {
	n, err := p.w.WriteAt(b, off)
	p.written += uint64(n)
	// Parity is in proportion to the message it is computed from.
	done := uint64(float64(p.written) / float64(p.parity) * float64(p.total))
	if done < p.total { // the end is reported once the parity is complete
		p.report(done, p.total)
	}
	return n, err
}
