package avb

// AddHashtreeFooter's run, killed at any moment, leaves the image as it
// was, the finished image, or a file that the same command finishes (the
// invariant of safefile.ResumeRecord, which the package documentation
// states). Everything is laid out before the first write: the tree, the
// parity, the vbmeta's size and the finished image's size E. Then:
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
	"github.com/veritytree/veritytree/internal/safefile"
	"io"
	"os"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/verity"
)

// provisionalValue is the value of the provisional vbmeta's one property.
const provisionalValue = "add_hashtree_footer was interrupted: run the same command again to finish it"

// target is the image AddHashtreeFooter appends to, as it found it.
type target struct {
	path string
	f    *os.File
	sw   *sparseWriter // nil for a raw image
	// ib is the unit avbtool appends in: 4096 bytes, or a sparse image's
	// block size.
	ib uint64
	// size is the image's size (expanded, for a sparse image) and fileSize
	// the file's.
	size, fileSize uint64
	// orig is the original image's size: size, or what a footer or a
	// record says.
	orig uint64
	// tail is the file offset the run's first write must not go below: the
	// end of the file, or where the provisional footer block or record of
	// an interrupted run starts (rewritten in place).
	tail uint64
	// wholeBlocks is the size avbtool wants a multiple of ib when no
	// partition size is given: the file's, or (after an interrupted run
	// that left a record) the original image's.
	wholeBlocks uint64
}

// openTarget opens and locks the image and finds where the original image
// ends.
func openTarget(imagePath string) (*target, error) {
	// Checked before the open too: opening a device or a FIFO is not
	// harmless.
	if fi, err := os.Stat(imagePath); err == nil && !fi.Mode().IsRegular() {
		return nil, inputErr("", "image %s is not a regular file", imagePath)
	}
	f, err := os.OpenFile(imagePath, os.O_RDWR, 0)
	if err != nil {
		return nil, inputErr("", "image %s: %v", imagePath, unwrapPathErr(err))
	}
	t := &target{path: imagePath, f: f, ib: imageBlockSize}
	if err := t.find(); err != nil {
		f.Close()
		return nil, err
	}
	return t, nil
}

func (t *target) find() error {
	fi, err := t.f.Stat()
	if err != nil {
		return ioErr("image %s: %v", t.path, err)
	}
	if !fi.Mode().IsRegular() {
		return inputErr("", "image %s is not a regular file", t.path)
	}
	// Locked before anything is read, until the footer is written.
	if err := lockImage(t.f, t.path); err != nil {
		return err
	}
	t.fileSize = uint64(fi.Size())
	if isSparse(t.f) {
		return t.findSparse()
	}
	t.size, t.tail, t.wholeBlocks = t.fileSize, t.fileSize, t.fileSize
	if rec := safefile.ReadResumeRecord(t.f, fi.Size()); rec != nil && !rec.Sparse {
		// An interrupted veritygen --append of the image.
		t.orig, t.tail, t.wholeBlocks = rec.OriginalSize, rec.End-safefile.ResumeRecordSize, rec.OriginalSize
		return nil
	}
	ft, vb, err := readOldFooter(t.f, t.size)
	if err != nil {
		return prefixErr(t.path, err)
	}
	t.orig = t.size
	if ft != nil {
		if err := checkRerunCut(t.f, ft, vb); err != nil {
			return prefixErr(t.path, err)
		}
		t.orig = ft.OriginalImageSize
		if provisional(vb) && ft.VBMetaOffset+t.ib == t.size {
			t.tail = ft.VBMetaOffset
		}
	}
	return nil
}

func (t *target) findSparse() error {
	sw, err := openSparseWriter(t.f)
	if err != nil {
		return prefixErr(t.path, err)
	}
	t.sw, t.ib, t.size, t.tail, t.wholeBlocks = sw, sw.blk, sw.size(), t.fileSize, sw.size()
	if rec := sw.record; rec != nil {
		if rec.OriginalSize > t.size {
			return inputErr("", "%s: the record of an interrupted run says the image was %d bytes, more than the sparse image's %d", t.path, rec.OriginalSize, t.size)
		}
		t.orig, t.tail, t.wholeBlocks = rec.OriginalSize, rec.End-safefile.ResumeRecordSize, rec.OriginalSize
		return nil
	}
	src, err := verity.OpenSource(t.path, nil)
	if err != nil {
		return err
	}
	defer src.Close()
	ft, vb, err := readOldFooter(src, t.size)
	if err != nil {
		return prefixErr(t.path, err)
	}
	t.orig = t.size
	if ft != nil {
		if err := checkRerunCut(src, ft, vb); err != nil {
			return prefixErr(t.path, err)
		}
		t.orig = ft.OriginalImageSize
	}
	return nil
}

// readOldFooter returns the footer r (size bytes) ends in and its vbmeta,
// or nil if it ends in none. Everything past the original size goes, so a
// footer counts only when it and the vbmeta it points to are sound, not on
// 4 bytes that happen to read AVBf.
func readOldFooter(r io.ReaderAt, size uint64) (*Footer, *VBMeta, error) {
	if size < FooterSize {
		return nil, nil, nil
	}
	b := make([]byte, FooterSize)
	if _, err := r.ReadAt(b, int64(size-FooterSize)); err != nil {
		return nil, nil, ioErr("%v", err)
	}
	old, err := ParseFooter(b)
	if err != nil {
		return nil, nil, nil
	}
	if err := old.Check(size); err != nil {
		return nil, nil, err
	}
	vb, err := ReadVBMeta(r, int64(old.VBMetaOffset), old.VBMetaSize)
	if err != nil {
		return nil, nil, err
	}
	return old, vb, nil
}

// checkRerunCut refuses a rerun that would cut the image (r, expanded) to
// the old footer's original size below the data its vbmeta's descriptors
// cover: the footer is not signed.
func checkRerunCut(r io.ReaderAt, ft *Footer, vb *VBMeta) error {
	return vb.Partition().checkCut(r, ft.OriginalImageSize, "adding the footer again (from the original image size of the footer there)")
}

// provisional reports whether vb is the provisional vbmeta of an
// interrupted AddHashtreeFooter.
func provisional(vb *VBMeta) bool {
	if vb == nil || vb.Algorithm.Type != 0 || vb.FirstHashtree() != nil {
		return false
	}
	for d := range vb.Descriptors() {
		if p, ok := d.(*PropertyDescriptor); ok && p.Key == safefile.ProvisionalAVBMarker {
			return true
		}
	}
	return false
}

// Interrupted reports whether the image is what an interrupted
// AddHashtreeFooter leaves of a raw image: its provisional footer and
// vbmeta, and no tree to check. Running the same command again finishes
// it; EraseFooter cuts it back to the original image.
func (img *Image) Interrupted() bool { return img.Footer != nil && provisional(img.VBMeta) }

// provisionalBlock returns the provisional footer block of an image whose
// original size is orig, for the offset at: an unsigned vbmeta saying only
// that the run was interrupted, and a footer pointing to it.
func provisionalBlock(orig, at, ib uint64) ([]byte, error) {
	vb, err := MakeVBMeta(&VBMetaOptions{Descriptors: []Descriptor{
		&PropertyDescriptor{Key: safefile.ProvisionalAVBMarker, Value: []byte(provisionalValue)}}})
	if err != nil {
		return nil, err
	}
	n := max(ib, roundUp(uint64(len(vb))+FooterSize, ib))
	b := make([]byte, n)
	copy(b, vb)
	copy(b[n-FooterSize:], NewFooter(orig, at, uint64(len(vb))).Encode())
	return b, nil
}

// footerPlan is everything AddHashtreeFooter writes, laid out before the
// image is touched.
type footerPlan struct {
	// ht is the hashtree descriptor, but its root digest.
	ht *HashtreeDescriptor
	// g is the tree's geometry, past the image padded to ht.ImageSize.
	g *merkle.Geometry
	// fec are the parity's parameters; nil when no parity is computed.
	fec *fec.Params
	// treeEnd is where the tree ends, padded to ib (the parity starts
	// there); vbOff where the vbmeta goes, vbSize its size.
	treeEnd, vbOff, vbSize uint64
	// end is the finished image's size (expanded).
	end uint64
}

// plan checks the sizes and lays out what the run writes.
func (o *HashtreeFooterOptions) plan(p *prepared, t *target) (*footerPlan, error) {
	imageSize, err := o.checkSizes(t)
	if err != nil {
		return nil, err
	}
	bs := uint64(o.blockSize())
	g, err := merkle.NewGeometry(merkle.Params{Hash: p.hash, Format: 1, Salt: p.salt, DataBlockSize: int(bs), HashBlockSize: int(bs),
		DataBlocks: imageSize / bs, HashOffset: imageSize})
	if err != nil {
		return nil, paramErr("", "", "%v", err)
	}
	ht := &HashtreeDescriptor{
		DMVerityVersion: 1, ImageSize: imageSize, TreeOffset: imageSize,
		DataBlockSize: uint32(bs), HashBlockSize: uint32(bs),
		HashAlgorithm: o.hashName(), PartitionName: o.PartitionName, Salt: p.salt, // as given, as avbtool keeps it
	}
	if o.DoNotUseAB {
		ht.Flags |= HashtreeFlagDoNotUseAB
	}
	if o.CheckAtMostOnce {
		ht.Flags |= HashtreeFlagCheckAtMostOnce
	}
	if !o.NoHashtree {
		ht.TreeSize = g.HashEnd() - g.HashOffset
		if ht.TreeSize != treeSize(imageSize, bs, digestSlot(p.hash.Size())) {
			return nil, inputErr("", "image of %d bytes: avbtool's tree layout differs from dm-verity's at this size", t.orig)
		}
	}
	pl := &footerPlan{ht: ht, g: g, treeEnd: imageSize + roundUp(ht.TreeSize, t.ib)}
	pl.vbOff = pl.treeEnd
	if o.FEC {
		ht.FECNumRoots, ht.FECOffset = uint32(o.fecRoots()), pl.treeEnd
		if !o.NoHashtree {
			// The message ends where the parity starts: a tree padded to
			// the sparse block size has its padding covered, as the kernel
			// (fec_blocks = fec_offset / block size) reads it.
			fp, err := verity.FECParams(g, o.fecRoots(), pl.treeEnd)
			if err != nil {
				return nil, err
			}
			pl.fec, ht.FECSize = &fp, fp.ParitySize()
			pl.vbOff += roundUp(ht.FECSize, t.ib)
		}
	}
	return pl, o.planMetadata(p, t, pl)
}

// checkSizes checks the image's sizes against the options, as avbtool does,
// and returns the image's size padded to whole blocks.
func (o *HashtreeFooterOptions) checkSizes(t *target) (uint64, error) {
	ib := t.ib
	if err := checkPartitionSize(o.PartitionSize, ib); err != nil {
		return 0, err
	}
	if o.PartitionSize == 0 && t.wholeBlocks%ib != 0 {
		return 0, inputErr(fmt.Sprintf("give a partition size, or pad the image to a multiple of %d bytes", ib),
			"file size of %d is not a multiple of the image block size %d", t.wholeBlocks, ib)
	}
	orig := t.orig
	if orig == 0 {
		return 0, inputErr("", "image %s is empty", t.path)
	}
	bs := uint64(o.blockSize())
	rounded := roundUp(orig, bs)
	if o.PartitionSize > 0 {
		maxSize, err := MaxImageSize(o)
		if err != nil {
			return 0, err
		}
		if maxSize <= 0 {
			return 0, inputErr("give a larger partition size",
				"a partition size of %d leaves no room for any image: the tree, FEC and metadata reserved for it take %d bytes or more", o.PartitionSize, uint64(int64(o.PartitionSize)-maxSize))
		}
		if int64(rounded) > maxSize {
			return 0, inputErr(fmt.Sprintf("a partition of %d bytes takes an image of at most %d bytes", o.PartitionSize, maxSize),
				"image size of %d exceeds maximum image size of %d in order to fit in a partition size of %d", rounded, maxSize, o.PartitionSize)
		}
	}
	// avbtool pads the image to its own blocks too, and lays the tree out
	// for the image rounded to the tree's blocks only: with blocks under
	// 4096 the two sizes can give trees of different sizes, for which
	// avbtool writes a tree the kernel would not read.
	imageSize := roundUp(orig, max(bs, ib))
	slot := digestSlot(o.hashSize())
	if treeSize(rounded, bs, slot) != treeSize(imageSize, bs, slot) {
		return 0, inputErr(fmt.Sprintf("pad the image with zeros to %d bytes first", imageSize),
			"image of %d bytes: avbtool's tree layout for %d-byte blocks is inconsistent at this size", orig, bs)
	}
	if t.sw != nil && imageSize != orig {
		return 0, inputErr("", "sparse image of %d bytes is not a multiple of the tree's block size %d", orig, bs)
	}
	if imageSize > 1<<62 {
		return 0, inputErr("", "image %s is too large", t.path)
	}
	return imageSize, nil
}

func (o *HashtreeFooterOptions) hashSize() int {
	alg, err := o.checkTree()
	if err != nil {
		return 32 // checked by prepare already
	}
	return alg.Size()
}

// planMetadata lays out the vbmeta (its size, from the descriptors with a
// placeholder root digest of the right size) and the footer, and checks
// that they fit in the partition.
func (o *HashtreeFooterOptions) planMetadata(p *prepared, t *target, pl *footerPlan) error {
	ht := *pl.ht
	if !o.UsePersistentDigest {
		ht.RootDigest = make([]byte, p.hash.Size())
	}
	n, err := vbmetaSize(o.vbmetaOptions(p, o.descriptors(p, &ht)))
	if err != nil {
		return err
	}
	pl.vbSize = n
	if o.DoNotAppendVBMeta {
		pl.end = pl.vbOff
		return nil
	}
	pl.end = pl.vbOff + roundUp(n, t.ib) + t.ib
	if o.PartitionSize > 0 {
		if pl.end > o.PartitionSize {
			return inputErr("", "the image, its tree and metadata take %d bytes, more than the partition size %d", pl.end, o.PartitionSize)
		}
		pl.end = o.PartitionSize
	}
	return nil
}

// descriptors returns the vbmeta's descriptors in avbtool's
// _generate_vbmeta_blob order: the hashtree descriptor, chained
// partitions, properties, the lines from --setup_rootfs_from_kernel IMAGE,
// those of --setup_as_rootfs_from_kernel, --kernel_cmdline, included ones.
func (o *HashtreeFooterOptions) descriptors(p *prepared, ht *HashtreeDescriptor) []Descriptor {
	descs := []Descriptor{ht}
	descs = append(descs, p.chains...)
	for _, pr := range o.Properties {
		descs = append(descs, &PropertyDescriptor{Key: pr.Key, Value: pr.Value})
	}
	descs = append(descs, p.rootfsFrom...)
	if o.SetupAsRootfsFromKernel {
		descs = append(descs, RootfsCmdlineDescriptors(ht)...)
	}
	for _, c := range o.KernelCmdlines {
		descs = append(descs, &KernelCmdlineDescriptor{Cmdline: c})
	}
	return descs // the included ones follow, encoded (vbmetaOptions)
}

func (o *HashtreeFooterOptions) vbmetaOptions(p *prepared, descs []Descriptor) *VBMetaOptions {
	return &VBMetaOptions{
		Algorithm: o.Algorithm, Key: o.Key, Descriptors: descs, encoded: p.included, PublicKeyMetadata: o.PublicKeyMetadata,
		RollbackIndex: o.RollbackIndex, Flags: o.Flags, RollbackIndexLocation: o.RollbackIndexLocation,
		ReleaseString: p.release, RequiredLibavbMinor: p.minor,
	}
}

// footerRun is one AddHashtreeFooter, planned.
type footerRun struct {
	o     *HashtreeFooterOptions
	p     *prepared
	t     *target
	pl    *footerPlan
	vbOut *outputFile
}

// vbmeta makes the vbmeta blob for the root digest, and writes it to the
// separate vbmeta output if there is one.
func (r *footerRun) vbmeta(root []byte) (*HashtreeDescriptor, []byte, error) {
	ht := *r.pl.ht
	if !r.o.UsePersistentDigest {
		ht.RootDigest = root
	}
	blob, err := MakeVBMeta(r.o.vbmetaOptions(r.p, r.o.descriptors(r.p, &ht)))
	if err != nil {
		return nil, nil, err
	}
	if uint64(len(blob)) != r.pl.vbSize {
		return nil, nil, fmt.Errorf("avb: internal error: vbmeta of %d bytes, %d planned", len(blob), r.pl.vbSize)
	}
	if r.vbOut != nil {
		if err := r.vbOut.Commit(blob); err != nil {
			return nil, nil, err
		}
	}
	return &ht, blob, nil
}

// metadata returns the vbmeta padded to whole blocks and the footer block,
// as they go into the image.
func (r *footerRun) metadata(blob []byte) (padded, footerBlock []byte, ft *Footer) {
	ib := r.t.ib
	if n := roundUp(uint64(len(blob)), ib); uint64(cap(blob)) >= n {
		padded = blob[:n] // MakeVBMeta's zeros: no copy of a large blob
	} else {
		padded = make([]byte, n)
		copy(padded, blob)
	}
	ft = NewFooter(r.t.orig, r.pl.vbOff, uint64(len(blob)))
	footerBlock = make([]byte, ib)
	copy(footerBlock[ib-FooterSize:], ft.Encode())
	return padded, footerBlock, ft
}

// hash builds the tree of the padded image src into w (at the tree's first
// byte; discard{} with NoHashtree) and returns its root digest.
func (r *footerRun) hash(ctx context.Context, src *verity.Source, w io.WriterAt) ([]byte, error) {
	if r.o.NoHashtree {
		w = discard{}
	}
	if r.o.blockSize() > 4096 && r.o.Warn != nil {
		r.o.Warn("Linux refuses data blocks larger than its page size (4096 bytes on most machines); this tree may not open there")
	}
	return rootOnly(ctx, src, r.pl.ht.ImageSize, uint64(r.o.blockSize()), r.p.hash, r.p.salt, r.o, w)
}

// parity computes the parity of the data in src and the tree in hash (read
// at its offsets in the expanded image) into out at off.
func (r *footerRun) parity(ctx context.Context, src *verity.Source, hash io.ReaderAt, out io.WriterAt, off int64) error {
	if r.pl.fec == nil {
		return nil
	}
	fp := *r.pl.fec
	msg := verity.FECMessage(r.pl.g, fp, src, hash)
	size := fp.ParitySize()
	if r.o.Progress != nil {
		r.o.Progress(verity.StageFEC, 0, size)
		out = &fecProgress{w: out, total: size, progress: r.o.Progress}
	}
	if err := fec.Encode(ctx, fp, msg, out, off, r.o.Jobs); err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return ioErr("computing the error correction: %v", err)
	}
	if r.o.Progress != nil {
		r.o.Progress(verity.StageFEC, size, size)
	}
	return nil
}

// result is what the run wrote.
func (r *footerRun) result(ht *HashtreeDescriptor, root, blob []byte, ft *Footer) *HashtreeFooterResult {
	if r.o.DoNotAppendVBMeta {
		ft = nil
	}
	return &HashtreeFooterResult{Descriptor: ht, RootDigest: root, VBMeta: blob, Footer: ft,
		OriginalSize: r.t.orig, Size: r.pl.end, Sparse: r.t.sw != nil}
}

// writeRaw appends to a raw image (see the top of this file).
func (r *footerRun) writeRaw(ctx context.Context) (*HashtreeFooterResult, error) {
	t, pl, f := r.t, r.pl, r.t.f
	at := roundUp(max(pl.end, t.tail), t.ib)
	prov, err := provisionalBlock(t.orig, at, t.ib)
	if err != nil {
		return nil, err
	}
	if err := writeAt(f, prov, at); err != nil {
		return nil, err
	}
	// What an earlier run left below the finished image's end reads as
	// zeros: the padding and the gaps are zeros in the finished image.
	if err := zeroRange(f, t.orig, min(t.fileSize, pl.end)); err != nil {
		return nil, err
	}
	src, err := verity.OpenSource(t.path, &verity.SourceOptions{Raw: true})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	root, err := r.hash(ctx, src, io.NewOffsetWriter(f, int64(pl.ht.TreeOffset)))
	if err != nil {
		return nil, err
	}
	if err := r.parity(ctx, src, f, f, int64(pl.treeEnd)); err != nil {
		return nil, err
	}
	ht, blob, err := r.vbmeta(root)
	if err != nil {
		return nil, err
	}
	padded, footerBlock, ft := r.metadata(blob)
	if !r.o.DoNotAppendVBMeta {
		if err := writeAt(f, padded, pl.vbOff); err != nil {
			return nil, err
		}
		if err := writeAt(f, footerBlock, pl.end-t.ib); err != nil {
			return nil, err
		}
	}
	// Everything reaches the disk before the provisional block goes.
	if err := syncFile(f); err != nil {
		return nil, err
	}
	if err := f.Truncate(int64(pl.end)); err != nil {
		return nil, ioErr("image %s: %v", t.path, err)
	}
	if err := syncFile(f); err != nil {
		return nil, err
	}
	return r.result(ht, root, blob, ft), nil
}

// sparseChunk is a chunk the run appends to a sparse image.
type newChunk struct {
	typ    uint16
	blocks uint32
	data   uint64
	at     int64 // of its header in the file
}

// sparseChunks lays out the chunks appended to a sparse image from the file
// offset from on, as avbtool appends them: the tree (if any), the parity
// (with FEC, even empty), the vbmeta, DONT_CARE up to the footer's block
// (with a partition size, even empty), the footer block.
func (r *footerRun) sparseChunks(from int64) []newChunk {
	pl, blk := r.pl, r.t.ib
	var cs []newChunk
	add := func(typ uint16, n uint64) {
		c := newChunk{typ: typ, blocks: uint32(n / blk), at: from}
		if typ == chunkRaw {
			c.data = n
		}
		from += chunkHeaderSize + int64(c.data)
		cs = append(cs, c)
	}
	if tree := pl.treeEnd - pl.ht.ImageSize; tree > 0 {
		add(chunkRaw, tree)
	}
	if r.o.FEC {
		add(chunkRaw, pl.vbOff-pl.treeEnd)
	}
	if !r.o.DoNotAppendVBMeta {
		add(chunkRaw, roundUp(pl.vbSize, blk))
		if r.o.PartitionSize > 0 {
			add(chunkDontCare, pl.end-pl.vbOff-roundUp(pl.vbSize, blk)-blk)
		}
		add(chunkRaw, blk)
	}
	return cs
}

// writeSparse appends to an Android sparse image (see the top of this
// file); cut is where the original image's chunks end.
func (r *footerRun) writeSparse(ctx context.Context, cut *sparseCut) (*HashtreeFooterResult, error) {
	t, f, sw := r.t, r.t.f, r.t.sw
	chunks := r.sparseChunks(cut.end)
	end := cut.end
	blocks := cut.blocks
	for _, c := range chunks {
		end = c.at + chunkHeaderSize + int64(c.data)
		blocks += c.blocks
	}
	if _, err := writeResumeRecord(f, max(uint64(end), t.tail), t.orig, true); err != nil {
		return nil, err
	}
	// The header says the image is the original one again; the chunks
	// past it are not counted until the end.
	if err := sw.applyCut(cut); err != nil {
		return nil, err
	}
	if err := zeroRange(f, uint64(cut.end), min(t.fileSize, uint64(end))); err != nil {
		return nil, err
	}
	for _, c := range chunks {
		if err := writeAt(f, chunkHeader(c.typ, c.blocks, c.data), uint64(c.at)); err != nil {
			return nil, err
		}
	}
	root, ht, blob, ft, err := r.fillSparse(ctx, chunks)
	if err != nil {
		return nil, err
	}
	if err := syncFile(f); err != nil {
		return nil, err
	}
	sw.totalChunks, sw.totalBlocks, sw.end = cut.chunks+uint32(len(chunks)), blocks, end
	if err := sw.writeCounts(); err != nil {
		return nil, err
	}
	if err := f.Truncate(end); err != nil {
		return nil, ioErr("image %s: %v", t.path, err)
	}
	if err := syncFile(f); err != nil {
		return nil, err
	}
	return r.result(ht, root, blob, ft), nil
}

// fillSparse writes the data of the new chunks: the tree, the parity of
// the expanded image, the vbmeta and the footer block.
func (r *footerRun) fillSparse(ctx context.Context, chunks []newChunk) ([]byte, *HashtreeDescriptor, []byte, *Footer, error) {
	pl, f := r.pl, r.t.f
	src, err := verity.OpenSource(r.t.path, nil) // the original image's expansion
	if err != nil {
		return nil, nil, nil, nil, err
	}
	defer src.Close()
	next := 0
	chunk := func() int64 { next++; return chunks[next-1].at + chunkHeaderSize }
	var treeOut io.WriterAt = discard{}
	treeData := int64(pl.ht.TreeOffset) // no tree: nothing is read there
	if pl.treeEnd > pl.ht.ImageSize {
		treeData = chunk()
		treeOut = io.NewOffsetWriter(f, treeData)
	}
	root, err := r.hash(ctx, src, treeOut)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if r.o.FEC {
		tree := &shiftedReader{r: f, delta: treeData - int64(pl.ht.TreeOffset)}
		if err := r.parity(ctx, src, tree, f, chunk()); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	ht, blob, err := r.vbmeta(root)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	padded, footerBlock, ft := r.metadata(blob)
	if !r.o.DoNotAppendVBMeta {
		if err := writeAt(f, padded, uint64(chunk())); err != nil {
			return nil, nil, nil, nil, err
		}
		footerData := chunks[len(chunks)-1].at + chunkHeaderSize
		if err := writeAt(f, footerBlock, uint64(footerData)); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	return root, ht, blob, ft, nil
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
