package avb

import (
	"context"
	"fmt"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/verity"
)

// VerifyVBMeta checks the image's vbmeta signature with its embedded key
// and, if key is not nil (an AVB public key blob), that the embedded key is
// that one. A signature that does not verify is verity.KindCorrupt with
// ErrSignature.
func (img *Image) VerifyVBMeta(key []byte) error {
	if key != nil {
		return img.VBMeta.VerifyWith(key)
	}
	return img.VBMeta.Verify()
}

// HashtreeCheck returns what verity.Verify needs to check an image's data
// and tree against a hashtree descriptor of its vbmeta: the root digest
// (nil when the descriptor keeps none: a persistent digest), and options for verity.Verify(ctx, path, path, root, opts) with the
// image as data, hash and (when the descriptor has it) FEC device. The
// descriptor is checked against the image first: the data, tree and parity
// inside the image, before the vbmeta, not overlapping, and the tree's size
// the one its parameters give.
func (img *Image) HashtreeCheck(ht *HashtreeDescriptor) ([]byte, *verity.VerifyOptions, error) {
	alg, err := hashes.Lookup(ht.HashAlgorithm)
	if err != nil {
		return nil, nil, inputErr("", "hashtree descriptor: unknown hash algorithm %q", ht.HashAlgorithm)
	}
	if ht.DataBlockSize != ht.HashBlockSize || merkle.CheckBlockSize(int(ht.DataBlockSize)) != nil {
		return nil, nil, malformed("hashtree descriptor: block sizes %d and %d", ht.DataBlockSize, ht.HashBlockSize)
	}
	bs := uint64(ht.DataBlockSize)
	limit := img.Size
	if img.Footer != nil {
		limit = img.Footer.VBMetaOffset
	}
	if ht.ImageSize == 0 || ht.ImageSize%bs != 0 || ht.ImageSize > limit {
		return nil, nil, malformed("hashtree descriptor: image size %d (block size %d) does not fit the %d bytes before the vbmeta", ht.ImageSize, bs, limit)
	}
	want := treeSize(ht.ImageSize, bs, digestSlot(alg.Size()))
	if ht.TreeSize != want {
		if ht.TreeSize == 0 {
			return nil, nil, inputErr("", "hashtree descriptor of %q: the tree was not stored (avbtool --no_hashtree)", ht.PartitionName)
		}
		return nil, nil, malformed("hashtree descriptor: tree of %d bytes, its parameters give %d", ht.TreeSize, want)
	}
	if ht.TreeOffset < ht.ImageSize || ht.TreeOffset > limit || ht.TreeSize > limit-ht.TreeOffset || ht.TreeOffset%bs != 0 {
		return nil, nil, malformed("hashtree descriptor: tree at %d, %d bytes, is not between the data (%d bytes) and the vbmeta at %d", ht.TreeOffset, ht.TreeSize, ht.ImageSize, limit)
	}
	o := &verity.VerifyOptions{TreeOptions: verity.TreeOptions{
		Hash: alg.Name(), Salt: append([]byte{}, ht.Salt...), DataBlockSize: int(bs), HashBlockSize: int(bs),
		DataBlocks: ht.ImageSize / bs, HashOffset: ht.TreeOffset, NoSuperblock: true,
	}}
	if ht.FECNumRoots > 0 && ht.FECSize > 0 {
		if ht.FECOffset < ht.TreeOffset+ht.TreeSize || ht.FECOffset > limit || ht.FECSize > limit-ht.FECOffset || ht.FECOffset%bs != 0 {
			return nil, nil, malformed("hashtree descriptor: parity at %d, %d bytes, is not between the tree and the vbmeta at %d", ht.FECOffset, ht.FECSize, limit)
		}
		o.FECOffset, o.FECRoots = ht.FECOffset, int(ht.FECNumRoots)
	}
	var root []byte
	if len(ht.RootDigest) > 0 {
		root = append([]byte{}, ht.RootDigest...)
	}
	return root, o, nil
}

// VerifyHashtree checks the image at path against its vbmeta's first
// hashtree descriptor with verity.Verify (every corrupted block listed in
// the result; with FEC in the descriptor, what the parity can repair). An
// Android sparse image (img.Sparse) is checked as the image it expands
// to, its tree and parity read from the expansion; Repair is refused for
// it (KindInput): nothing is written into a sparse file.
// Without a root digest in the descriptor (a persistent digest) the root
// is computed from the data first, so that what is checked is that the
// tree is the data's, as avbtool verify_image checks it.
// opts, if not nil, gives verity.Verify's other options (Repair,
// Progress, ...); its tree and FEC fields are set from the descriptor. The
// caller closes the result.
func VerifyHashtree(ctx context.Context, path string, img *Image, opts *verity.VerifyOptions) (*verity.VerifyResult, error) {
	ht := img.VBMeta.FirstHashtree()
	if ht == nil {
		return nil, inputErr("", "%s: the vbmeta has no hashtree descriptor", path)
	}
	root, o, err := img.HashtreeCheck(ht)
	if err != nil {
		return nil, prefixErr(path, err)
	}
	if opts != nil {
		c := *opts
		c.TreeOptions, c.FECOffset, c.FECRoots = o.TreeOptions, o.FECOffset, o.FECRoots
		o = &c
	}
	if o.FECRoots > 0 {
		o.FECDevice = path
	}
	if img.Sparse && o.Repair {
		// Checked here too, before a persistent digest's root is computed.
		return nil, inputErr(fmt.Sprintf("expand it first (simg2img %s image.raw), repair that, and make it sparse again (img2simg) if needed", path),
			"%s is an Android sparse image: a repair cannot write into it", path)
	}
	if root == nil {
		src, err := verity.OpenSource(path, &verity.SourceOptions{Raw: !img.Sparse})
		if err != nil {
			return nil, err
		}
		defer src.Close()
		h, _ := hashes.Lookup(o.Hash)
		ho := &HashtreeFooterOptions{BlockSize: o.DataBlockSize, Jobs: o.Jobs}
		if root, err = rootOnly(ctx, src, ht.ImageSize, uint64(o.DataBlockSize), h, o.Salt, ho, discard{}); err != nil {
			return nil, err
		}
	}
	return verity.Verify(ctx, path, path, root, o)
}
