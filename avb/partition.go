package avb

// The footer is not covered by any signature: what the vbmeta's
// descriptors of the image's own partition say (image_size, where the tree
// and the parity are) is the authority on where the image data ends, and a
// footer that disagrees is refused rather than obeyed.

import (
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/veritytree/veritytree/verity"
)

// ErrFooterMismatch: the AVB footer (original image size, vbmeta offset)
// disagrees with the descriptors of the image's partition in its vbmeta.
var ErrFooterMismatch = errors.New("the AVB footer disagrees with the vbmeta's descriptors")

// Partition is what a vbmeta says about the partition of its own image.
// It holds no descriptor list: a vbmeta may hold a million descriptors
// for one name, so Hashtrees and Hashes walk the blob again.
type Partition struct {
	// Name is the partition of the vbmeta's first hashtree or hash
	// descriptor: avbtool's add_hashtree_footer and add_hash_footer write
	// the image's own descriptor first, and included ones after it.
	Name string
	// NumHashtrees and NumHashes count the vbmeta's descriptors of each
	// kind for that partition; both 0 when it has none of either.
	NumHashtrees, NumHashes int
	// FirstHashtree and FirstHash are the first of each, or nil.
	FirstHashtree *HashtreeDescriptor
	FirstHash     *HashDescriptor

	v *VBMeta
}

// Partition returns the descriptors of the vbmeta's own partition.
func (v *VBMeta) Partition() *Partition {
	p := &Partition{v: v}
	found := false
	for d := range v.Descriptors() {
		switch d := d.(type) {
		case *HashtreeDescriptor:
			if !found {
				p.Name, found = d.PartitionName, true
			}
			if d.PartitionName == p.Name {
				if p.NumHashtrees == 0 {
					p.FirstHashtree = d
				}
				p.NumHashtrees++
			}
		case *HashDescriptor:
			if !found {
				p.Name, found = d.PartitionName, true
			}
			if d.PartitionName == p.Name {
				if p.NumHashes == 0 {
					p.FirstHash = d
				}
				p.NumHashes++
			}
		}
	}
	return p
}

// Hashtrees walks the partition's hashtree descriptors in order, with
// their indexes among all the vbmeta's descriptors (from 0).
func (p *Partition) Hashtrees() iter.Seq2[int, *HashtreeDescriptor] {
	return func(yield func(int, *HashtreeDescriptor) bool) {
		i := 0
		for d := range p.v.Descriptors() {
			if d, ok := d.(*HashtreeDescriptor); ok && d.PartitionName == p.Name && !yield(i, d) {
				return
			}
			i++
		}
	}
}

// Hashes walks the partition's hash descriptors in order, with their
// indexes among all the vbmeta's descriptors (from 0).
func (p *Partition) Hashes() iter.Seq2[int, *HashDescriptor] {
	return func(yield func(int, *HashDescriptor) bool) {
		i := 0
		for d := range p.v.Descriptors() {
			if d, ok := d.(*HashDescriptor); ok && d.PartitionName == p.Name && !yield(i, d) {
				return
			}
			i++
		}
	}
}

// padUnit is the block avbtool pads a hashtree image to before hashing
// it: its 4096-byte image blocks, or the tree's larger blocks. Only the
// zeros of that padding lie between the original size and image_size.
func padUnit(d *HashtreeDescriptor) uint64 { return max(uint64(d.DataBlockSize), imageBlockSize) }

// checkCut refuses to cut the image (r, its expansion if sparse) to cut
// bytes when that drops bytes the partition's descriptors say are image
// data: a hash descriptor's image_size bytes, a hashtree descriptor's but
// for the zeros avbtool padded the image with to a whole block. what says
// who cuts; sizes name the footer's original image size.
func (p *Partition) checkCut(r io.ReaderAt, cut uint64, what string) error {
	for _, d := range p.Hashtrees() {
		if cut < d.ImageSize && (d.ImageSize-cut >= padUnit(d) || !zeros(r, cut, d.ImageSize)) {
			return cutErr(what, cut, "hashtree", p.Name, d.ImageSize)
		}
	}
	for _, d := range p.Hashes() {
		if cut < d.ImageSize {
			return cutErr(what, cut, "hash", p.Name, d.ImageSize)
		}
	}
	return nil
}

func cutErr(what string, cut uint64, kind, name string, size uint64) error {
	return &verity.Error{Kind: verity.KindRefused, Value: size,
		Hint: fmt.Sprintf("nothing was cut; the footer, which no signature covers, is wrong: if the image is as signed, put %d back as the footer's original image size (Footer.OriginalImageSize; Image.CheckFooter names both numbers)", size),
		Err: fmt.Errorf("%w: %s would cut the image to %d bytes, but the %s descriptor of partition %q says its image data is %d bytes",
			ErrFooterMismatch, what, cut, kind, name, size)}
}

// zeros reports whether the bytes [from, to) of r are all zero (a short
// read is not).
func zeros(r io.ReaderAt, from, to uint64) bool {
	buf := make([]byte, min(to-from, 64<<10))
	for off := from; off < to; {
		b := buf[:min(to-off, uint64(len(buf)))]
		if n, _ := r.ReadAt(b, int64(off)); n != len(b) {
			return false
		}
		for _, c := range b {
			if c != 0 {
				return false
			}
		}
		off += uint64(len(b))
	}
	return true
}

// CheckFooter checks the image's footer, which no signature covers,
// against the descriptors of its partition (Partition), which the
// signature does: the original image size must be where their image data
// ends (a hashtree image's up to the zeros padding its last block, a hash
// image's exactly), and the vbmeta must start past the data, the tree and
// the parity. r reads the image (its expansion, for a sparse one). libavb
// never reads the original size; avbtool's erase_footer and a rerun of
// add_hashtree_footer cut the image to it. A mismatch is ErrMalformed and
// ErrFooterMismatch (KindInput), naming both numbers. An image without
// footer, or whose vbmeta describes no partition, passes.
func (img *Image) CheckFooter(r io.ReaderAt) error {
	f := img.Footer
	if f == nil {
		return nil
	}
	p := img.VBMeta.Partition()
	orig := f.OriginalImageSize
	for _, d := range p.Hashtrees() {
		if orig > d.ImageSize || d.ImageSize-orig >= padUnit(d) {
			return footerErr("the footer's original image size is %d bytes, but the hashtree descriptor of partition %q covers %d bytes of image data", orig, p.Name, d.ImageSize)
		}
		if !zeros(r, orig, d.ImageSize) {
			return footerErr("the footer's original image size is %d bytes, but the hashtree descriptor of partition %q covers %d bytes of image data, and the bytes between are not zero padding", orig, p.Name, d.ImageSize)
		}
		end := max(d.ImageSize, satAdd(d.TreeOffset, d.TreeSize))
		if d.FECSize > 0 {
			end = max(end, satAdd(d.FECOffset, d.FECSize))
		}
		if f.VBMetaOffset < end {
			return footerErr("the footer puts the vbmeta at byte %d, inside the data, tree and parity of partition %q, which end at byte %d", f.VBMetaOffset, p.Name, end)
		}
	}
	for _, d := range p.Hashes() {
		if orig != d.ImageSize {
			return footerErr("the footer's original image size is %d bytes, but the hash descriptor of partition %q covers %d bytes of image data", orig, p.Name, d.ImageSize)
		}
		if f.VBMetaOffset < d.ImageSize {
			return footerErr("the footer puts the vbmeta at byte %d, inside the %d bytes of image data of partition %q", f.VBMetaOffset, d.ImageSize, p.Name)
		}
	}
	return nil
}

func footerErr(format string, args ...any) error {
	return &verity.Error{Kind: verity.KindInput,
		Hint: "the footer is not signed: a tool trusting it would cut or misread the image (avbtool erase_footer, a rerun of add_hashtree_footer); EraseFooter and AddHashtreeFooter refuse to",
		Err:  fmt.Errorf("%w: %w: "+format, append([]any{ErrMalformed, ErrFooterMismatch}, args...)...)}
}

// satAdd is a+b, or the largest uint64 when that overflows: an end no
// offset reaches.
func satAdd(a, b uint64) uint64 {
	if a > ^uint64(0)-b {
		return ^uint64(0)
	}
	return a + b
}
