package avb

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/veritytree/veritytree/verity"
)

// loadVBMetaBlob returns the vbmeta blob of the image at path, as
// avbtool's _load_vbmeta_blob reads it: the one the footer points to, or
// the one at the start of a vbmeta image; header, authentication and
// auxiliary blocks, nothing past them.
func loadVBMetaBlob(path string) ([]byte, error) {
	src, err := verity.OpenSource(path, &verity.SourceOptions{Role: "vbmeta image"})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	img, err := ParseImage(src, src.Size())
	if err != nil {
		return nil, prefixErr(path, err)
	}
	n, err := img.VBMeta.Header.BlobSize()
	if err != nil {
		return nil, prefixErr(path, err)
	}
	var off int64
	if img.Footer != nil {
		off = int64(img.Footer.VBMetaOffset)
	}
	b := make([]byte, n)
	if _, err := src.ReadAt(b, off); err != nil {
		return nil, ioErr("%s: reading the vbmeta at %d: %v", path, off, err)
	}
	return b, nil
}

// AppendVBMetaImage does what `avbtool append_vbmeta_image` does: it
// appends the vbmeta blob of the image at vbmetaPath (a vbmeta image, or
// an image with a footer) to the image at imagePath, padded to whole
// blocks, and a footer in the last block of a partition of partitionSize
// bytes. An earlier footer is taken off first (so a rerun gives the same
// file), as long as its original size leaves all the data its signed
// descriptors name. An Android sparse image stays one.
//
// It writes as AddHashFooter does (a provisional footer block first, or a
// sparse image's resume record; see footerrun.go): killed at any moment,
// the image is the original, the finished one, or one the same call
// finishes. Unlike avbtool, which then writes a broken image, it refuses a
// partition too small for the image and the vbmeta, leaving the image
// untouched.
func AppendVBMetaImage(ctx context.Context, imagePath, vbmetaPath string, partitionSize uint64) (*Footer, error) {
	if partitionSize == 0 {
		return nil, paramErr("PartitionSize", "give the partition's size", "no partition size given")
	}
	blob, err := loadVBMetaBlob(vbmetaPath)
	if err != nil {
		return nil, err
	}
	t, err := openTarget(imagePath, "append_vbmeta_image")
	if err != nil {
		return nil, err
	}
	defer t.f.Close()
	pp, err := planPartition(t, partitionSize)
	if err != nil {
		return nil, err
	}
	pp.verb = "append_vbmeta_image"
	if err := pp.place(roundUp(t.orig, t.ib), uint64(len(blob)), true); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	_, ft, err := pp.write(func(*verity.Source) ([]byte, error) { return blob, nil })
	return ft, err
}

// ResizeImage does what `avbtool resize_image` does: it moves the footer
// of the image at imagePath (raw) to the last block of a partition of
// partitionSize bytes, the blocks between the vbmeta and it zeros. It
// refuses a size that would cut into the vbmeta, or into the data the
// vbmeta's descriptors name. The image is read as avbtool reads it
// (ParseImageLenient): a footer whose unsigned fields are damaged (its
// original size, its vbmeta's size) is moved as it is, as long as the
// vbmeta its header describes is kept whole. An Android sparse image stays one, its chunks
// as avbtool makes them (the image cut after the vbmeta, a DONT_CARE
// chunk, the footer block in a RAW chunk; see sparsetail.go for the order
// of the writes).
//
// In place, in an order a kill cannot spoil: the footer block is written
// at its new place first (then the file ends in a footer, the same one, at
// every moment), then the file is cut (when it shrinks) and the stale
// bytes between the vbmeta and the footer block (the old footer block,
// when it grows) are zeroed; a rerun does the same writes again.
func ResizeImage(ctx context.Context, imagePath string, partitionSize uint64) error {
	f, fileSize, err := openLockedImage(imagePath)
	if err != nil {
		return err
	}
	defer f.Close()
	if isSparse(f) {
		return resizeSparse(ctx, f, imagePath, partitionSize)
	}
	const ib = imageBlockSize
	vbEnd, block, err := resizeTarget(f, fileSize, imagePath, partitionSize, ib, 0)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := writeAt(f, block, partitionSize-ib); err != nil {
		return err
	}
	if err := syncFile(f); err != nil {
		return err
	}
	if partitionSize < uint64(fileSize) {
		if err := f.Truncate(int64(partitionSize)); err != nil {
			return ioErr("image %s: %v", imagePath, err)
		}
	}
	if err := zeroRange(f, vbEnd, partitionSize-ib); err != nil {
		return err
	}
	return syncFile(f)
}

// resizeTarget checks a resize of the image r (size bytes, as expanded)
// to partitionSize as avbtool does, blocks of ib bytes, and that it cuts
// no bytes the signed descriptors say are image data; it returns where the
// vbmeta ends (rounded up to a block) and the footer block to write last.
// imageEnd, when not 0, is the image's size, which the vbmeta must not
// pass (a sparse image's chunks say it).
func resizeTarget(r io.ReaderAt, size int64, imagePath string, partitionSize, ib, imageEnd uint64) (uint64, []byte, error) {
	if err := checkPartitionSize(partitionSize, ib); err != nil {
		return 0, nil, err
	}
	img, err := ParseImageLenient(r, size)
	if err != nil {
		return 0, nil, prefixErr(imagePath, err)
	}
	if img.Footer == nil {
		return 0, nil, inputErr("", "%s: %w", imagePath, ErrNoFooter)
	}
	// As avbtool computes it, from the footer's (unsigned) fields; a sum
	// that would wrap is an end past any partition.
	vbEnd := satAdd(img.Footer.VBMetaOffset, img.Footer.VBMetaSize)
	if vbEnd > ^uint64(0)-2*ib {
		return 0, nil, inputErr("", "%s: the footer puts the vbmeta's end past %d: no partition size fits it", imagePath, vbEnd)
	}
	vbEnd = roundUp(vbEnd, ib)
	if blobEnd := img.Footer.VBMetaOffset + uint64(len(img.VBMeta.Raw)); blobEnd > vbEnd {
		return 0, nil, malformed("%s: the footer's vbmeta size %d would cut the vbmeta at %d, which its header makes %d bytes",
			imagePath, img.Footer.VBMetaSize, img.Footer.VBMetaOffset, len(img.VBMeta.Raw))
	}
	if partitionSize < vbEnd+ib {
		return 0, nil, inputErr(fmt.Sprintf("at least %d: the image and its vbmeta take %d bytes, the footer a block", vbEnd+ib, vbEnd),
			"%s: a size of %d is too small for an image of %d bytes", imagePath, partitionSize, vbEnd+ib)
	}
	if imageEnd != 0 && vbEnd > imageEnd {
		return 0, nil, malformed("%s: the vbmeta ends at %d, past the image's %d bytes", imagePath, vbEnd, imageEnd)
	}
	if err := img.VBMeta.Partition().checkCut(r, img.Footer.VBMetaOffset, "resizing"); err != nil {
		return 0, nil, prefixErr(imagePath, err)
	}
	block := make([]byte, ib)
	copy(block[ib-FooterSize:], img.Footer.Encode())
	return vbEnd, block, nil
}

// zeroTarget reads the image r (size bytes, as expanded) for ZeroHashtree:
// its first hashtree descriptor and the areas to zero with marker blocks
// of ib bytes (see zeroedAreas).
func zeroTarget(r io.ReaderAt, size int64, imagePath string, ib uint64) (*HashtreeDescriptor, [][2]uint64, error) {
	img, err := ParseImage(r, size)
	if err != nil {
		return nil, nil, prefixErr(imagePath, err)
	}
	if img.Footer == nil {
		return nil, nil, inputErr("", "%s: %w", imagePath, ErrNoFooter)
	}
	ht := img.VBMeta.FirstHashtree()
	if ht == nil {
		return nil, nil, inputErr("", "%s: no hashtree descriptor: nothing to zero", imagePath)
	}
	areas, err := zeroedAreas(ht, img.Footer.VBMetaOffset, ib)
	if err != nil {
		return nil, nil, prefixErr(imagePath, err)
	}
	return ht, areas, nil
}

// zeroedMarker starts each zeroed area of ZeroHashtree, as avbtool marks
// it, so that a tool knows to compute the tree again.
const zeroedMarker = "ZeRoHaSH"

// ZeroHashtree does what `avbtool zero_hashtree` does: it zeroes the tree
// and the parity the first hashtree descriptor of the image at imagePath
// names, each area's first block starting with "ZeRoHaSH". The areas must
// lie between the image data and the vbmeta (the descriptor is signed, the
// footer is not: both are checked). An Android sparse image stays one, its
// chunks as avbtool makes them (the image cut at the tree, for each area a
// RAW chunk of the marker block and a FILL chunk of zeros, then the rest
// of the image as one RAW chunk; see sparsetail.go for the order of the
// writes).
//
// In place: the markers first, then the zeros, so that a kill leaves an
// image a reader sees as zeroed (or the original), and a rerun does the
// same writes again.
func ZeroHashtree(ctx context.Context, imagePath string) error {
	f, fileSize, err := openLockedImage(imagePath)
	if err != nil {
		return err
	}
	defer f.Close()
	if isSparse(f) {
		return zeroSparse(ctx, f, imagePath)
	}
	_, areas, err := zeroTarget(f, fileSize, imagePath, imageBlockSize)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	marker := make([]byte, imageBlockSize)
	copy(marker, zeroedMarker)
	for _, a := range areas {
		if err := writeAt(f, marker, a[0]); err != nil {
			return err
		}
	}
	if err := syncFile(f); err != nil {
		return err
	}
	for _, a := range areas {
		if err := zeroRange(f, a[0]+imageBlockSize, a[1]); err != nil {
			return err
		}
	}
	return syncFile(f)
}

// zeroedAreas returns the areas ZeroHashtree zeroes: the tree and the
// parity, [from, to), each at least a marker block of ib bytes, adjacent,
// past the image data and before the vbmeta at vbOff.
func zeroedAreas(ht *HashtreeDescriptor, vbOff, ib uint64) ([][2]uint64, error) {
	var areas [][2]uint64
	add := func(what string, off, size uint64) error {
		if size < ib {
			return inputErr("", "the %s is %d bytes, less than the block its marker takes", what, size)
		}
		if off < ht.ImageSize || off > vbOff || size > vbOff-off {
			return malformed("the %s at %d, %d bytes, is not between the image data (%d bytes) and the vbmeta at %d", what, off, size, ht.ImageSize, vbOff)
		}
		areas = append(areas, [2]uint64{off, off + size})
		return nil
	}
	if err := add("tree", ht.TreeOffset, ht.TreeSize); err != nil {
		return nil, err
	}
	if ht.FECOffset > 0 {
		if ht.FECOffset != ht.TreeOffset+ht.TreeSize {
			return nil, inputErr("", "the tree and the parity are not adjacent (avbtool zeroes only adjacent ones)")
		}
		if err := add("parity", ht.FECOffset, ht.FECSize); err != nil {
			return nil, err
		}
	}
	return areas, nil
}

// resizeSparse is ResizeImage of an Android sparse image.
func resizeSparse(ctx context.Context, f *os.File, imagePath string, partitionSize uint64) error {
	fileSize, err := fileSizeOf(f)
	if err != nil {
		return err
	}
	if _, err := finishStaged(f, fileSize); err != nil {
		return err
	}
	sw, src, err := openSparseTail(f, imagePath)
	if err != nil {
		return err
	}
	defer src.Close()
	ib := sw.blk
	vbEnd, block, err := resizeTarget(src, src.Size(), imagePath, partitionSize, ib, sw.size())
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	gap := partitionSize - vbEnd - ib
	if gap/ib > 1<<32-1 {
		return inputErr("", "%s: a DONT_CARE chunk of %d bytes: more blocks than a chunk counts", imagePath, gap)
	}
	return rewriteTail(ctx, sw, "resize_image", vbEnd, []stagedChunk{
		{typ: chunkDontCare, blocks: uint32(gap / ib)},
		{typ: chunkRaw, blocks: 1, n: ib, data: rawData(block)},
	})
}

// zeroSparse is ZeroHashtree of an Android sparse image.
func zeroSparse(ctx context.Context, f *os.File, imagePath string) error {
	fileSize, err := fileSizeOf(f)
	if err != nil {
		return err
	}
	if _, err := finishStaged(f, fileSize); err != nil {
		return err
	}
	sw, src, err := openSparseTail(f, imagePath)
	if err != nil {
		return err
	}
	defer src.Close()
	ib := sw.blk
	ht, areas, err := zeroTarget(src, src.Size(), imagePath, ib)
	if err != nil {
		return err
	}
	zeroEnd := areas[len(areas)-1][1]
	for _, v := range []uint64{areas[0][0], areas[0][1], zeroEnd, sw.size()} {
		if v%ib != 0 {
			return inputErr("", "%s: the tree and the parity do not start and end on the sparse image's %d-byte blocks", imagePath, ib)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	marker := make([]byte, ib)
	copy(marker, zeroedMarker)
	var chunks []stagedChunk
	for _, a := range areas {
		chunks = append(chunks, stagedChunk{typ: chunkRaw, blocks: 1, n: ib, data: rawData(marker)},
			stagedChunk{typ: chunkFill, blocks: uint32((a[1] - a[0] - ib) / ib)})
	}
	rest := sw.size() - zeroEnd
	if rest/ib > 1<<32-1 {
		return inputErr("", "%s: %d bytes after the tree: more blocks than a chunk counts", imagePath, rest)
	}
	chunks = append(chunks, stagedChunk{typ: chunkRaw, blocks: uint32(rest / ib), n: rest, data: copyData(src, zeroEnd, rest)})
	return rewriteTail(ctx, sw, "zero_hashtree", ht.TreeOffset, chunks)
}

func fileSizeOf(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, ioErr("image %s: %v", f.Name(), err)
	}
	return fi.Size(), nil
}
