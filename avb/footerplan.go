package avb

import (
	"fmt"
	"os"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/internal/fecmsg"
	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/verity"
)

// FooterPlan is one AddHashtreeFooter, decided before a byte is written:
// the image as found and what is kept of it, the tree's and the parity's
// layout, the vbmeta's size and the footer's place. PlanHashtreeFooter
// makes it, with the image open and locked; Apply writes it, or Close lets
// the image go untouched.
type FooterPlan struct {
	PartitionPlan
	// Descriptor is the hashtree descriptor the vbmeta will hold, but for
	// its root digest, known once the image is hashed.
	Descriptor HashtreeDescriptor
	// TreeEnd is where the tree ends, padded to whole units: where the
	// parity starts (or the vbmeta, without parity).
	TreeEnd uint64
	// RequiredLibavbMinor is the minor version of libavb 1.x the vbmeta
	// will require: the options', raised by included descriptors.
	RequiredLibavbMinor uint32

	o *HashtreeFooterOptions
	p *prepared
	// ht is Descriptor as planned (Descriptor is the caller's copy).
	ht *HashtreeDescriptor
	// g is the tree's geometry, past the image padded to ht.ImageSize.
	g *merkle.Geometry
	// fec are the parity's parameters; nil when no parity is computed.
	fec   *fec.Params
	t     *target
	vbOut *outputFile
	// done: applied or closed.
	done bool
}

// PlanHashtreeFooter checks everything AddHashtreeFooter checks (the
// options, the key, the included images, the image and its sizes) and lays
// out what it would write, without writing. The image (and the separate
// vbmeta output, if any) stays open and locked until Apply or Close.
func PlanHashtreeFooter(imagePath string, o *HashtreeFooterOptions) (*FooterPlan, error) {
	if o == nil {
		o = &HashtreeFooterOptions{}
	}
	if o.VerityAppend && !o.DoNotAppendVBMeta {
		return nil, paramErr("VerityAppend", "add HashtreeFooterOptions.DoNotAppendVBMeta, or leave VerityAppend out for add_hashtree_footer",
			"an append of the tree alone writes no vbmeta and no footer")
	}
	if err := o.checkNotSetupFromItself(imagePath); err != nil {
		return nil, err
	}
	p, err := o.prepare()
	if err != nil {
		return nil, err
	}
	pl := &FooterPlan{o: o, p: p}
	if err := pl.open(imagePath); err != nil {
		pl.Close()
		return nil, err
	}
	return pl, nil
}

// checkNotSetupFromItself refuses SetupRootfsFromKernel naming the image:
// avbtool reads IMAGE after the tree is appended and before the footer is,
// so for the image itself it finds no vbmeta and fails.
func (o *HashtreeFooterOptions) checkNotSetupFromItself(imagePath string) error {
	if o.SetupRootfsFromKernel == "" {
		return nil
	}
	a, errA := os.Stat(imagePath)
	b, errB := os.Stat(o.SetupRootfsFromKernel)
	if errA == nil && errB == nil && os.SameFile(a, b) {
		return paramErr("SetupRootfsFromKernel", "leave it out and set the image up as root with HashtreeFooterOptions.SetupAsRootfsFromKernel",
			"the image to set up as root (%s) is the image the footer is added to", o.SetupRootfsFromKernel)
	}
	return nil
}

// open opens (and locks) the separate vbmeta output and the image, and
// lays the run out.
func (pl *FooterPlan) open(imagePath string) error {
	o := pl.o
	// The separate vbmeta output is checked (and locked) before the image
	// is touched, and written once the blob is made.
	if o.OutputVBMeta != "" {
		var err error
		pl.vbOut, err = openOutputFile(o.OutputVBMeta, "output vbmeta image", "a vbmeta image", isVBMetaImage, false)
		if err != nil {
			return err
		}
	}
	if o.HashAlgorithm == "" && o.Warn != nil {
		o.Warn("no hash algorithm given: sha1, avbtool's default kept for backwards compatibility; Android wants sha256")
	}
	verb := "add_hashtree_footer"
	if o.VerityAppend {
		verb = safefile.VerbAppend
	}
	t, err := openTarget(imagePath, verb)
	if err != nil {
		return err
	}
	pl.t = t
	return pl.lay()
}

// Close releases the image and the vbmeta output; after Apply it does
// nothing.
func (pl *FooterPlan) Close() error {
	if pl.done {
		return nil
	}
	pl.done = true
	if pl.vbOut != nil {
		pl.vbOut.Abort()
	}
	if pl.t != nil {
		return pl.t.f.Close()
	}
	return nil
}

// lay checks the sizes and lays out, in the image, the tree, the parity,
// the vbmeta and the footer.
func (pl *FooterPlan) lay() error {
	o, t := pl.o, pl.t
	pp, err := planPartition(t, o.PartitionSize)
	if err != nil {
		return err
	}
	pl.PartitionPlan = *pp
	if o.VerityAppend {
		pl.verb = safefile.VerbAppend
	}
	bs := uint64(o.blockSize())
	if err := pl.checkFits(roundUp(t.orig, bs), o.treeReserve(o.PartitionSize, pl.p.hash.Size())); err != nil {
		return err
	}
	imageSize, err := o.paddedImageSize(t)
	if err != nil {
		return err
	}
	if err := pl.layTree(imageSize); err != nil {
		return err
	}
	vbOff := pl.TreeEnd
	if err := pl.layParity(); err != nil {
		return err
	}
	if pl.fec != nil {
		vbOff += roundUp(pl.ht.FECSize, t.ib)
	}
	vbSize, err := pl.vbmetaSize()
	if err != nil {
		return err
	}
	if err := pl.place(vbOff, vbSize, !o.DoNotAppendVBMeta); err != nil {
		return err
	}
	pl.Descriptor, pl.RequiredLibavbMinor = *pl.ht, pl.p.minor
	return nil
}

// treeReserve is what avbtool reserves in a partition of partitionSize
// bytes for the tree and the parity, digests of hashSize bytes: as for an
// image as large as the partition. With FEC the parity is counted whatever
// the block size, as avbtool asks its fec tool, which does not care.
func (o *HashtreeFooterOptions) treeReserve(partitionSize uint64, hashSize int) uint64 {
	if o.NoHashtree {
		return 0
	}
	tree := treeSize(partitionSize, uint64(o.blockSize()), digestSlot(hashSize))
	if o.FEC {
		return tree + FECSize(partitionSize, o.fecRoots())
	}
	return tree
}

// paddedImageSize returns the image's size padded to whole blocks, as
// avbtool pads it, and refuses the sizes avbtool would lay out wrong.
func (o *HashtreeFooterOptions) paddedImageSize(t *target) (uint64, error) {
	orig, bs := t.orig, uint64(o.blockSize())
	// avbtool pads the image to its own blocks too, and lays the tree out
	// for the image rounded to the tree's blocks only: with blocks under
	// 4096 the two sizes can give trees of different sizes, for which
	// avbtool writes a tree the kernel would not read.
	imageSize := roundUp(orig, max(bs, t.ib))
	slot := digestSlot(o.hashSize())
	if treeSize(roundUp(orig, bs), bs, slot) != treeSize(imageSize, bs, slot) {
		return 0, inputErr(fmt.Sprintf("pad the image with zeros to %d bytes first", imageSize),
			"image of %d bytes: avbtool's tree layout for %d-byte blocks is inconsistent at this size", orig, bs)
	}
	// avbtool pads a sparse image with a RAW chunk of zeros, which must be
	// whole blocks of the sparse image (it is, for blocks of powers of two).
	if t.sw != nil && (imageSize-orig)%t.ib != 0 {
		return 0, inputErr("", "sparse image of %d bytes in %d-byte blocks cannot be padded to the tree's block size %d", orig, t.ib, bs)
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

// layTree lays the tree out right after the image padded to imageSize
// bytes, and makes the hashtree descriptor but for its root digest and its
// parity.
func (pl *FooterPlan) layTree(imageSize uint64) error {
	o, p := pl.o, pl.p
	bs := uint64(o.blockSize())
	g, err := merkle.NewGeometry(merkle.Params{Hash: p.hash, Salt: p.salt, DataBlockSize: int(bs), HashBlockSize: int(bs),
		DataBlocks: imageSize / bs, HashOffset: imageSize})
	if err != nil {
		return paramErr("", "", "%v", err)
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
			return inputErr("", "image of %d bytes: avbtool's tree layout differs from dm-verity's at this size", pl.t.orig)
		}
	}
	pl.ht, pl.g, pl.TreeEnd = ht, g, imageSize+roundUp(ht.TreeSize, pl.t.ib)
	return nil
}

// layParity lays the parity out right after the tree. With no tree
// (avbtool's --no_hashtree) the descriptor still names FEC, of 0 bytes.
func (pl *FooterPlan) layParity() error {
	o, ht := pl.o, pl.ht
	if !o.FEC {
		return nil
	}
	ht.FECNumRoots, ht.FECOffset = uint32(o.fecRoots()), pl.TreeEnd
	if o.NoHashtree {
		return nil
	}
	// The message ends where the parity starts: a tree padded to the
	// sparse block size has its padding covered, as the kernel (fec_blocks
	// = fec_offset / block size) reads it.
	fp, err := fecmsg.Params(pl.g, o.fecRoots(), pl.TreeEnd)
	if err != nil {
		return &verity.Error{Kind: verity.KindParam, Err: err}
	}
	pl.fec, ht.FECSize = &fp, fp.ParitySize()
	return nil
}

// vbmetaSize is the size of the vbmeta: made from the descriptors with a
// placeholder root digest of the right size.
func (pl *FooterPlan) vbmetaSize() (uint64, error) {
	ht := *pl.ht
	if !pl.o.UsePersistentDigest {
		ht.RootDigest = make([]byte, pl.p.hash.Size())
	}
	return vbmetaSize(pl.o.vbmetaOptions(pl.p, pl.o.descriptors(pl.p, &ht)))
}

// MaxImageSize is the largest image that fits, with its tree, parity and
// metadata, in a partition of o.PartitionSize bytes, as avbtool's
// --calc_max_image_size computes it: negative when nothing fits, 0 when
// PartitionSize is 0. The parity is counted whatever the block size, as
// avbtool counts it.
func MaxImageSize(o *HashtreeFooterOptions) (int64, error) {
	alg, err := o.checkSizeOptions()
	if err != nil {
		return 0, err
	}
	if o.PartitionSize == 0 {
		return 0, nil
	}
	if err := checkPartitionSizeLimit(o.PartitionSize); err != nil {
		return 0, err
	}
	if o.FEC && !o.NoHashtree {
		if r := o.fecRoots(); r < 1 || r > 254 {
			return 0, paramErr("FECRoots", "2 (the default) to 24", "FEC roots %d: a Reed-Solomon codeword has 255 bytes", r)
		}
	}
	return maxImageSize(o.PartitionSize, o.treeReserve(o.PartitionSize, alg.Size())), nil
}

// descriptors returns the vbmeta's descriptors in avbtool's
// _generate_vbmeta_blob order, ht first (see
// VBMetaCommonOptions.descriptors), with those of
// --setup_as_rootfs_from_kernel.
func (o *HashtreeFooterOptions) descriptors(p *prepared, ht *HashtreeDescriptor) []Descriptor {
	var asRootfs []Descriptor
	if o.SetupAsRootfsFromKernel {
		asRootfs = RootfsCmdlineDescriptors(ht)
	}
	return o.common().descriptors(p, []Descriptor{ht}, asRootfs)
}

func (o *HashtreeFooterOptions) vbmetaOptions(p *prepared, descs []Descriptor) *VBMetaOptions {
	return o.common().vbmetaOptions(p, descs)
}
