package avb

// AddHashtreeFooter's run, killed at any moment, leaves the image as it
// was, the finished image, or a file that the same command finishes (the
// invariant of safefile.ResumeRecord, which the package documentation
// states). Everything is laid out before the first write (a FooterPlan):
// the tree, the parity, the vbmeta's size and the finished image's size E.
// Then Apply:
//
//   - A raw image first gets a provisional footer block at E or past
//     whatever the file holds (an AVB footer with an unsigned vbmeta saying
//     only safefile.ProvisionalAVBMarker, whose original image size is the
//     image's). It is the file's last block from then on: a rerun, of
//     veritygen or of avbtool, finds the original size in it, as in a
//     finished image's footer. The tree, the parity, the vbmeta and the
//     final footer block (at E minus a block) go in below it; the last step
//     cuts the file at E, which drops the provisional block.
//   - An Android sparse image first gets a safefile.ResumeRecord past its last
//     chunk (where sparse readers ignore what they find), then its header
//     says the image is the original one again (one 8-byte write), the new
//     chunks go in after the original's, still not counted, and one write
//     of the header's counts makes them the image; the last step cuts the
//     file after the last chunk, which drops the record.
//
// A failure (not a kill) cuts the image back to its original size, as
// avbtool does.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/internal/fecmsg"
	"github.com/veritytree/veritytree/verity"
)

// Apply writes what was planned (see the top of this file), cutting the
// image back to its original size if anything fails, and releases the
// image. A plan is applied once.
func (pl *FooterPlan) Apply(ctx context.Context) (*HashtreeFooterResult, error) {
	if pl.done {
		return nil, errors.New("avb: the footer plan was already applied or closed")
	}
	defer pl.Close()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := pl.t
	if t.sw == nil {
		res, err := pl.writeRaw(ctx)
		if err != nil {
			_ = t.f.Truncate(int64(t.orig))
		}
		return res, err
	}
	cut, err := t.sw.planCut(t.orig)
	if err != nil {
		return nil, prefixErr(t.path, err)
	}
	res, err := pl.writeSparse(ctx, cut)
	if err != nil {
		if t.sw.applyCut(cut) == nil {
			_ = t.f.Truncate(cut.end)
		}
	}
	return res, err
}

// vbmeta makes the vbmeta blob for the root digest, and writes it to the
// separate vbmeta output if there is one.
func (pl *FooterPlan) vbmeta(root []byte) (*HashtreeDescriptor, []byte, error) {
	ht := *pl.ht
	if !pl.o.UsePersistentDigest {
		ht.RootDigest = root
	}
	blob, err := MakeVBMeta(pl.o.vbmetaOptions(pl.p, pl.o.descriptors(pl.p, &ht)))
	if err != nil {
		return nil, nil, err
	}
	if uint64(len(blob)) != pl.VBMetaSize {
		return nil, nil, fmt.Errorf("avb: internal error: vbmeta of %d bytes, %d planned", len(blob), pl.VBMetaSize)
	}
	if pl.vbOut != nil {
		if err := pl.vbOut.Commit(blob); err != nil {
			return nil, nil, err
		}
	}
	return &ht, blob, nil
}

// hash builds the tree of the padded image src into w (at the tree's first
// byte; discard{} with NoHashtree) and returns its root digest.
func (pl *FooterPlan) hash(ctx context.Context, src *verity.Source, w io.WriterAt) ([]byte, error) {
	if pl.o.NoHashtree {
		w = discard{}
	}
	if pl.o.blockSize() > 4096 && pl.o.Warn != nil {
		pl.o.Warn("Linux refuses data blocks larger than its page size (4096 bytes on most machines); this tree may not open there")
	}
	return rootOnly(ctx, src, pl.t.sw != nil, pl.ht.ImageSize, uint64(pl.o.blockSize()), pl.p.hash, pl.p.salt, pl.o, w)
}

// parity computes the parity of the data in src and the tree in hash (read
// at its offsets in the expanded image) into out at off.
func (pl *FooterPlan) parity(ctx context.Context, src *verity.Source, hash io.ReaderAt, out io.WriterAt, off int64) error {
	if pl.fec == nil {
		return nil
	}
	fp := *pl.fec
	var data io.ReaderAt = src
	if pl.t.sw != nil {
		data = zeroPadded(src) // as hash reads it
	}
	msg := fecmsg.Message(pl.g, fp, data, hash)
	var report func(done, total uint64)
	if progress := pl.o.Progress; progress != nil {
		report = func(done, total uint64) { progress(verity.StageFEC, done, total) }
	}
	out, done := fecmsg.Progress(fp, out, report)
	if err := fec.Encode(ctx, fp, msg, out, off, pl.o.Jobs); err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return ioErr("computing the error correction: %v", err)
	}
	done()
	return nil
}

// result is what the run wrote.
func (pl *FooterPlan) result(ht *HashtreeDescriptor, root, blob []byte, ft *Footer) *HashtreeFooterResult {
	if pl.o.DoNotAppendVBMeta {
		ft = nil
	}
	return &HashtreeFooterResult{Descriptor: ht, RootDigest: root, VBMeta: blob, Footer: ft,
		OriginalSize: pl.t.orig, Size: pl.Size, Sparse: pl.t.sw != nil}
}

// writeRaw appends to a raw image (see the top of this file).
func (pl *FooterPlan) writeRaw(ctx context.Context) (*HashtreeFooterResult, error) {
	var ht *HashtreeDescriptor
	var root []byte
	blob, ft, err := pl.appendRaw(func(src *verity.Source) ([]byte, error) {
		var err error
		f := pl.t.f
		if root, err = pl.hash(ctx, src, io.NewOffsetWriter(f, int64(pl.ht.TreeOffset))); err != nil {
			return nil, err
		}
		if err := pl.parity(ctx, src, f, f, int64(pl.TreeEnd)); err != nil {
			return nil, err
		}
		var blob []byte
		ht, blob, err = pl.vbmeta(root)
		return blob, err
	})
	if err != nil {
		return nil, err
	}
	return pl.result(ht, root, blob, ft), nil
}

// appendRaw appends to a raw image as a footer verb does (see the top of
// this file): the provisional footer block, zeros over what an earlier run
// left below the finished image's end, then what fill writes below the
// vbmeta (reading the image, padded with zeros, from src) and the vbmeta
// blob it returns, then the vbmeta and the footer, and last the cut that
// drops the provisional block.
func (pp *PartitionPlan) appendRaw(fill func(src *verity.Source) ([]byte, error)) ([]byte, *Footer, error) {
	t, f := pp.t, pp.t.f
	at := roundUp(max(pp.Size, t.tail), t.ib)
	prov, err := provisionalBlockOf(pp.verbName(), t.orig, at, t.ib)
	if err != nil {
		return nil, nil, err
	}
	if err := writeAt(f, prov, at); err != nil {
		return nil, nil, err
	}
	// What an earlier run left below the finished image's end reads as
	// zeros: the padding and the gaps are zeros in the finished image.
	if err := zeroRange(f, t.orig, min(t.fileSize, pp.Size)); err != nil {
		return nil, nil, err
	}
	src, err := verity.OpenSource(t.path, &verity.SourceOptions{Raw: true})
	if err != nil {
		return nil, nil, err
	}
	defer src.Close()
	blob, err := fill(src)
	if err != nil {
		return nil, nil, err
	}
	padded, footerBlock, ft := pp.metadata(blob)
	if pp.AppendVBMeta {
		if err := writeAt(f, padded, pp.VBMetaOffset); err != nil {
			return nil, nil, err
		}
		if err := writeAt(f, footerBlock, pp.FooterBlock); err != nil {
			return nil, nil, err
		}
	}
	// Everything reaches the disk before the provisional block goes.
	if err := syncFile(f); err != nil {
		return nil, nil, err
	}
	if err := f.Truncate(int64(pp.Size)); err != nil {
		return nil, nil, ioErr("image %s: %v", t.path, err)
	}
	if err := syncFile(f); err != nil {
		return nil, nil, err
	}
	return blob, ft, nil
}

// newChunk is a chunk the run appends to a sparse image.
type newChunk struct {
	typ    uint16
	blocks uint32
	data   uint64
	at     int64 // of its header in the file
}

// sparseChunks lays out the chunks appended to a sparse image from the file
// offset from on, as avbtool appends them: a RAW chunk for each of the
// verb's sizes in data, then the vbmeta, DONT_CARE up to the footer's
// block (with a partition size, even empty), the footer block.
func (pp *PartitionPlan) sparseChunks(from int64, data []uint64) []newChunk {
	blk := pp.Unit
	var cs []newChunk
	add := func(typ uint16, n uint64) {
		c := newChunk{typ: typ, blocks: uint32(n / blk), at: from}
		if typ == chunkRaw {
			c.data = n
		}
		from += chunkHeaderSize + int64(c.data)
		cs = append(cs, c)
	}
	for _, n := range data {
		add(chunkRaw, n)
	}
	if pp.AppendVBMeta {
		add(chunkRaw, roundUp(pp.VBMetaSize, blk))
		if pp.PartitionSize > 0 {
			add(chunkDontCare, pp.Size-pp.VBMetaOffset-roundUp(pp.VBMetaSize, blk)-blk)
		}
		add(chunkRaw, blk)
	}
	return cs
}

// treeChunks are the sizes of the RAW chunks the padding, the tree and the
// parity go in: zeros up to a whole tree block (if the image is not one),
// the tree (if any), the parity (with FEC, even empty).
func (pl *FooterPlan) treeChunks() []uint64 {
	var data []uint64
	if pad := pl.ht.ImageSize - pl.t.orig; pad > 0 {
		data = append(data, pad)
	}
	if tree := pl.TreeEnd - pl.ht.ImageSize; tree > 0 {
		data = append(data, tree)
	}
	if pl.o.FEC {
		data = append(data, pl.VBMetaOffset-pl.TreeEnd)
	}
	return data
}

// writeSparse appends to an Android sparse image (see the top of this
// file); cut is where the original image's chunks end.
func (pl *FooterPlan) writeSparse(ctx context.Context, cut *sparseCut) (*HashtreeFooterResult, error) {
	var ht *HashtreeDescriptor
	var root []byte
	blob, ft, err := pl.appendSparse(cut, pl.treeChunks(), func(src *verity.Source, at []int64) ([]byte, error) {
		var err error
		f := pl.t.f
		var treeOut io.WriterAt = discard{}
		treeData := int64(pl.ht.TreeOffset) // no tree: nothing is read there
		if pl.ht.ImageSize > pl.t.orig {
			at = at[1:] // the padding's chunk: zeros already (appendSparse)
		}
		if pl.TreeEnd > pl.ht.ImageSize {
			treeData, at = at[0], at[1:]
			treeOut = io.NewOffsetWriter(f, treeData)
		}
		if root, err = pl.hash(ctx, src, treeOut); err != nil {
			return nil, err
		}
		if pl.o.FEC {
			tree := &shiftedReader{r: f, delta: treeData - int64(pl.ht.TreeOffset)}
			if err := pl.parity(ctx, src, tree, f, at[0]); err != nil {
				return nil, err
			}
		}
		var blob []byte
		ht, blob, err = pl.vbmeta(root)
		return blob, err
	})
	if err != nil {
		return nil, err
	}
	return pl.result(ht, root, blob, ft), nil
}

// appendSparse appends to an Android sparse image as a footer verb does
// (see the top of this file), past cut, where the original image's chunks
// end: a RAW chunk of each size in data, which fill writes (given the
// original image's expansion and the chunks' data offsets in the file),
// then the vbmeta fill returns and the footer, in their chunks.
func (pp *PartitionPlan) appendSparse(cut *sparseCut, data []uint64, fill func(src *verity.Source, at []int64) ([]byte, error)) ([]byte, *Footer, error) {
	t, f, sw := pp.t, pp.t.f, pp.t.sw
	chunks := pp.sparseChunks(cut.end, data)
	end := cut.end
	blocks := cut.blocks
	for _, c := range chunks {
		end = c.at + chunkHeaderSize + int64(c.data)
		blocks += c.blocks
	}
	if _, err := writeResumeRecord(f, max(uint64(end), t.tail), t.orig, pp.verbName()); err != nil {
		return nil, nil, err
	}
	// The header says the image is the original one again; the chunks
	// past it are not counted until the end.
	if err := sw.applyCut(cut); err != nil {
		return nil, nil, err
	}
	if err := zeroRange(f, uint64(cut.end), min(t.fileSize, uint64(end))); err != nil {
		return nil, nil, err
	}
	for _, c := range chunks {
		if err := writeAt(f, chunkHeader(c.typ, c.blocks, c.data), uint64(c.at)); err != nil {
			return nil, nil, err
		}
	}
	blob, ft, err := pp.fillSparse(chunks, len(data), fill)
	if err != nil {
		return nil, nil, err
	}
	if err := syncFile(f); err != nil {
		return nil, nil, err
	}
	sw.totalChunks, sw.totalBlocks, sw.end = cut.chunks+uint32(len(chunks)), blocks, end
	if err := sw.writeCounts(); err != nil {
		return nil, nil, err
	}
	if err := f.Truncate(end); err != nil {
		return nil, nil, ioErr("image %s: %v", t.path, err)
	}
	if err := syncFile(f); err != nil {
		return nil, nil, err
	}
	return blob, ft, nil
}

// fillSparse writes the data of the new chunks: the verb's first n (fill),
// then the vbmeta and the footer block.
func (pp *PartitionPlan) fillSparse(chunks []newChunk, n int, fill func(src *verity.Source, at []int64) ([]byte, error)) ([]byte, *Footer, error) {
	f := pp.t.f
	src, err := verity.OpenSource(pp.t.path, nil) // the original image's expansion
	if err != nil {
		return nil, nil, err
	}
	defer src.Close()
	at := make([]int64, len(chunks))
	for i, c := range chunks {
		at[i] = c.at + chunkHeaderSize
	}
	blob, err := fill(src, at[:n])
	if err != nil {
		return nil, nil, err
	}
	padded, footerBlock, ft := pp.metadata(blob)
	if pp.AppendVBMeta {
		if err := writeAt(f, padded, uint64(at[n])); err != nil {
			return nil, nil, err
		}
		if err := writeAt(f, footerBlock, uint64(at[len(at)-1])); err != nil {
			return nil, nil, err
		}
	}
	return blob, ft, nil
}

// shiftedReader reads r at offsets moved by delta: the tree, read at its
// offsets in the expanded image, from its chunk's data in the sparse file.
type shiftedReader struct {
	r     io.ReaderAt
	delta int64
}

func (s *shiftedReader) ReadAt(p []byte, off int64) (int, error) { return s.r.ReadAt(p, off+s.delta) }

func writeAt(f *os.File, b []byte, off uint64) error {
	if _, err := f.WriteAt(b, int64(off)); err != nil {
		return ioErr("image %s: %v", f.Name(), err)
	}
	return nil
}

func syncFile(f *os.File) error {
	if err := f.Sync(); err != nil {
		return ioErr("image %s: %v", f.Name(), err)
	}
	return nil
}
