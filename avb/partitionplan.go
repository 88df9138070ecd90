package avb

// The part of a footer plan that every footer verb shares: the image as
// found (a plain image, one with a footer, or what an interrupted run
// left), the partition it goes in, and where the vbmeta and the footer go.
// AddHashtreeFooter lays its tree and parity out between the two;
// avbtool's add_hash_footer appends nothing there.

import (
	"fmt"
	"io"
	"os"

	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/verity"
)

// Found is what a footer verb found at the end of an image.
type Found int

const (
	// FoundNothing: a plain image, kept whole.
	FoundNothing Found = iota
	// FoundFooter: an AVB footer (the run's own output, say): the image is
	// cut back to the original size it gives and the footer made again.
	FoundFooter
	// FoundInterrupted: what an interrupted run left (a provisional footer
	// or a resume record): the run finishes it from the original image.
	FoundInterrupted
)

func (f Found) String() string {
	switch f {
	case FoundFooter:
		return "footer"
	case FoundInterrupted:
		return "interrupted run"
	}
	return "plain image"
}

// PartitionPlan is the shared part of a footer plan: everything about the
// image, the partition, the vbmeta and the footer decided before a byte is
// written. Sizes are of the image as expanded, for a sparse image.
type PartitionPlan struct {
	// Found is what the image ended in.
	Found Found
	// OriginalSize is the size of the image the run keeps: the image's,
	// or the original size a footer or an interrupted run's record gives.
	// Everything past it is written again. FoundSize is the image's size
	// as found.
	OriginalSize, FoundSize uint64
	// Sparse: an Android sparse image, which stays one.
	Sparse bool
	// Unit is what the run appends in whole multiples of: 4096 bytes, or a
	// sparse image's block size.
	Unit uint64
	// PartitionSize is the partition's size (0: the image ends with the
	// footer block), and MaxImageSize the largest image that fits in it
	// with what is reserved for the rest, as avbtool's
	// --calc_max_image_size computes it (0 without a partition size).
	PartitionSize uint64
	MaxImageSize  int64
	// VBMetaOffset is where the vbmeta goes and VBMetaSize its size.
	VBMetaOffset, VBMetaSize uint64
	// AppendVBMeta: the vbmeta and the footer go into the image (avbtool's
	// --do_not_append_vbmeta_image leaves them out).
	AppendVBMeta bool
	// FooterBlock is the offset of the block whose last FooterSize bytes
	// are the footer: the partition's last block (0 without AppendVBMeta).
	FooterBlock uint64
	// Size is the finished image's size.
	Size uint64

	t *target
	// verb is avbtool's name of the verb, for the provisional footer
	// ("" is add_hashtree_footer).
	verb string
}

// The sizes avbtool reserves, conservatively, for the metadata when it
// computes the largest image a partition takes.
const (
	maxVBMetaReserve = 64 << 10
	maxFooterReserve = 4096
)

// maxImageSize is the largest image a partition of partitionSize bytes
// takes when reserve bytes (a tree, parity) go in besides the metadata, as
// avbtool computes it: negative when nothing fits.
func maxImageSize(partitionSize, reserve uint64) int64 {
	return int64(partitionSize) - int64(reserve+maxVBMetaReserve+maxFooterReserve)
}

// requiredLibavbMinor is the minor version of libavb 1.x a footer verb's
// vbmeta needs, as avbtool computes it: descMinor, what the verb's own
// descriptor needs, raised by a rollback index location and by chained
// partitions not to be used for A/B.
func requiredLibavbMinor(descMinor, rollbackIndexLocation uint32, chains []ChainPartition) uint32 {
	m := descMinor
	if rollbackIndexLocation > 0 {
		m = 2
	}
	for _, c := range chains {
		if c.DoNotUseAB {
			m = 3
		}
	}
	return m
}

// planPartition starts the shared part of the plan for the image t in a
// partition of partitionSize bytes (0: just large enough), and checks the
// sizes as avbtool does before it reads the image.
func planPartition(t *target, partitionSize uint64) (*PartitionPlan, error) {
	ib := t.ib
	if err := checkPartitionSize(partitionSize, ib); err != nil {
		return nil, err
	}
	if partitionSize == 0 && t.wholeBlocks%ib != 0 {
		return nil, inputErr(fmt.Sprintf("give a partition size, or pad the image to a multiple of %d bytes", ib),
			"file size of %d is not a multiple of the image block size %d", t.wholeBlocks, ib)
	}
	if t.orig == 0 {
		return nil, inputErr("", "image %s is empty", t.path)
	}
	return &PartitionPlan{Found: t.found, OriginalSize: t.orig, FoundSize: t.size, Sparse: t.sw != nil, Unit: ib,
		PartitionSize: partitionSize, t: t}, nil
}

// checkFits checks that an image of size bytes (padded as the verb pads
// it) fits in the partition with reserve bytes besides the metadata.
func (pp *PartitionPlan) checkFits(size, reserve uint64) error {
	if pp.PartitionSize == 0 {
		return nil
	}
	pp.MaxImageSize = maxImageSize(pp.PartitionSize, reserve)
	if pp.MaxImageSize <= 0 {
		what := "the tree, FEC and metadata"
		if reserve == 0 {
			what = "the metadata"
		}
		return inputErr("give a larger partition size",
			"a partition size of %d leaves no room for any image: %s reserved for it take %d bytes or more", pp.PartitionSize, what, uint64(int64(pp.PartitionSize)-pp.MaxImageSize))
	}
	if int64(size) > pp.MaxImageSize {
		return inputErr(fmt.Sprintf("a partition of %d bytes takes an image of at most %d bytes", pp.PartitionSize, pp.MaxImageSize),
			"image size of %d exceeds maximum image size of %d in order to fit in a partition size of %d", size, pp.MaxImageSize, pp.PartitionSize)
	}
	return nil
}

// place puts a vbmeta of vbSize bytes at vbOff (past whatever the verb
// appends to the image), then, with appendVBMeta, the footer block right
// after it or in the partition's last block, and checks that it all fits.
func (pp *PartitionPlan) place(vbOff, vbSize uint64, appendVBMeta bool) error {
	pp.VBMetaOffset, pp.VBMetaSize, pp.AppendVBMeta = vbOff, vbSize, appendVBMeta
	if !appendVBMeta {
		pp.Size = vbOff
		return nil
	}
	pp.Size = vbOff + roundUp(vbSize, pp.Unit) + pp.Unit
	if pp.PartitionSize > 0 {
		if pp.Size > pp.PartitionSize {
			what := "the image, its tree and metadata"
			if pp.verb != "" {
				what = "the image, its vbmeta and footer"
			}
			return inputErr("", "%s take %d bytes, more than the partition size %d", what, pp.Size, pp.PartitionSize)
		}
		pp.Size = pp.PartitionSize
	}
	pp.FooterBlock = pp.Size - pp.Unit
	return nil
}

// metadata returns the vbmeta blob padded to whole units and the footer
// block, as they go into the image.
func (pp *PartitionPlan) metadata(blob []byte) (padded, footerBlock []byte, ft *Footer) {
	ib := pp.Unit
	if n := roundUp(uint64(len(blob)), ib); uint64(cap(blob)) >= n {
		padded = blob[:n] // MakeVBMeta's zeros: no copy of a large blob
	} else {
		padded = make([]byte, n)
		copy(padded, blob)
	}
	ft = NewFooter(pp.OriginalSize, pp.VBMetaOffset, uint64(len(blob)))
	footerBlock = make([]byte, ib)
	copy(footerBlock[ib-FooterSize:], ft.Encode())
	return padded, footerBlock, ft
}

// verbName is avbtool's name of the verb the plan is for
// (safefile.VerbAppend for veritygen --append of a sparse image).
func (pp *PartitionPlan) verbName() string {
	if pp.verb == "" {
		return "add_hashtree_footer"
	}
	return pp.verb
}

// verbCommand is the command a record's verb is run again with: avbtool's
// name of an avb verb, or veritygen --append for safefile.VerbAppend.
func verbCommand(verb string) string {
	if verb == safefile.VerbAppend {
		return "veritygen --append"
	}
	return verb
}

// provisionalValue is the value of the provisional vbmeta's one property
// for the verb (avbtool's name of it) that wrote it.
func provisionalValue(verb string) string {
	return verb + " was interrupted: run the same command again to finish it"
}

// FooterImage is what a footer verb finds in an image, as
// ProbeFooterImage reports it. Sizes are of the image as expanded, for a
// sparse image.
type FooterImage struct {
	// Found is what the image ended in; OriginalSize the size of the
	// image a run keeps, FoundSize the image's as found.
	Found                   Found
	OriginalSize, FoundSize uint64
	// WholeBlocks is the size that must be a multiple of Unit when no
	// partition size is given (see PartitionPlan.Unit).
	WholeBlocks, Unit uint64
	Sparse            bool
}

// ProbeFooterImage opens the image at imagePath as AddHashtreeFooter and
// AddHashFooter do, with the same checks (a regular file, not locked by a
// run, a sparse image that parses, what an interrupted run left), and
// reports what they would find, writing nothing. avbtool checks the
// partition size against the image before it reads its other inputs; a
// caller that keeps its order checks that first. verb is the run's:
// "add_hash_footer" or "add_hashtree_footer" (what an interrupted run of
// another verb left is refused).
func ProbeFooterImage(imagePath, verb string) (*FooterImage, error) {
	t, err := openTarget(imagePath, verb)
	if err != nil {
		return nil, err
	}
	defer t.f.Close()
	return &FooterImage{Found: t.found, OriginalSize: t.orig, FoundSize: t.size, WholeBlocks: t.wholeBlocks, Unit: t.ib,
		Sparse: t.sw != nil}, nil
}

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
	// found is what the image ended in.
	found Found
	// verb is the run's (avbtool's name, or safefile.VerbAppend): a record
	// past a sparse image's chunks of another verb's is refused.
	verb string
}

// openTarget opens and locks the image for a run of verb (see verbName)
// and finds where the original image ends.
func openTarget(imagePath, verb string) (*target, error) {
	// Checked before the open too: opening a device or a FIFO is not
	// harmless.
	if fi, err := os.Stat(imagePath); err == nil && !fi.Mode().IsRegular() {
		return nil, inputErr("", "image %s is not a regular file", imagePath)
	}
	f, err := os.OpenFile(imagePath, os.O_RDWR, 0)
	if err != nil {
		return nil, inputErr("", "image %s: %v", imagePath, unwrapPathErr(err))
	}
	t := &target{path: imagePath, f: f, ib: imageBlockSize, verb: verb}
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
	if t.verb == safefile.VerbAppend {
		return inputErr("append to a raw image with verity.Format (FormatOptions.Append)",
			"image %s is not an Android sparse image: HashtreeFooterOptions.VerityAppend is for one", t.path)
	}
	t.size, t.tail, t.wholeBlocks = t.fileSize, t.fileSize, t.fileSize
	if rec := safefile.ReadResumeRecord(t.f, fi.Size()); rec != nil && !rec.Sparse {
		if rec.Verb != "" && rec.Verb != safefile.VerbAppend {
			return inputErr("run "+rec.Verb+" again to finish it", "%s: an interrupted %s left this image with a record past its end", t.path, rec.Verb)
		}
		// An interrupted veritygen --append of the image.
		t.orig, t.tail, t.wholeBlocks = rec.OriginalSize, rec.End-safefile.ResumeRecordSize, rec.OriginalSize
		t.found = FoundInterrupted
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
		t.orig, t.found = ft.OriginalImageSize, FoundFooter
		if provisional(vb) {
			t.found = FoundInterrupted
			if ft.VBMetaOffset+t.ib == t.size {
				t.tail = ft.VBMetaOffset
			}
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
		// veritygen --append and the footer verbs do not finish each
		// other's runs: the one writes no vbmeta, the others do. A record
		// that does not name its verb keeps the guess below.
		if tailVerb(rec.Verb) || rec.Verb != "" && (rec.Verb == safefile.VerbAppend) != (t.verb == safefile.VerbAppend) {
			return inputErr("run "+verbCommand(rec.Verb)+" again to finish it",
				"%s: an interrupted %s left this sparse image with a record past its chunks", t.path, verbCommand(rec.Verb))
		}
		if rec.Verb == "" && rec.OriginalSize == t.size {
			// A record that does not name its verb: a footer verb's own
			// gives a size without its footer; this one is what a killed
			// ResizeImage or ZeroHashtree left before it changed the image
			// (see sparsetail.go).
			if ft, err := sparseFooter(t.path, t.size); err != nil || ft != nil {
				return inputErr("run resize_image or zero_hashtree, whichever was interrupted, again to finish it",
					"%s: an interrupted resize_image or zero_hashtree left this sparse image with a record past its chunks", t.path)
			}
		}
		t.orig, t.tail, t.wholeBlocks = rec.OriginalSize, rec.End-safefile.ResumeRecordSize, rec.OriginalSize
		t.found = FoundInterrupted
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
		t.orig, t.found = ft.OriginalImageSize, FoundFooter
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
	return provisionalBlockOf("add_hashtree_footer", orig, at, ib)
}

// provisionalBlockOf is provisionalBlock, saying which verb was
// interrupted.
func provisionalBlockOf(verb string, orig, at, ib uint64) ([]byte, error) {
	vb, err := MakeVBMeta(&VBMetaOptions{Descriptors: []Descriptor{
		&PropertyDescriptor{Key: safefile.ProvisionalAVBMarker, Value: []byte(provisionalValue(verb))}}})
	if err != nil {
		return nil, err
	}
	n := max(ib, roundUp(uint64(len(vb))+FooterSize, ib))
	b := make([]byte, n)
	copy(b, vb)
	copy(b[n-FooterSize:], NewFooter(orig, at, uint64(len(vb))).Encode())
	return b, nil
}

// sparseFooter returns the footer the expansion (size bytes) of the sparse
// image at path ends in, or nil.
func sparseFooter(path string, size uint64) (*Footer, error) {
	src, err := verity.OpenSource(path, nil)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	ft, _, err := readOldFooter(src, size)
	return ft, err
}
