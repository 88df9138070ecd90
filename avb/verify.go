package avb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/veritytree/veritytree/fec"
	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
	"github.com/veritytree/veritytree/verity"
)

// HashtreeCheck returns what verity.Verify needs to check an image's data
// and tree against a hashtree descriptor of its vbmeta: the root digest
// (nil when the descriptor keeps none: a persistent digest), and options for verity.Verify(ctx, path, path, root, opts) with the
// image as data, hash and (when the descriptor has it) FEC device. The
// descriptor is checked against the image first: the data, tree and parity
// inside the image, before the vbmeta, not overlapping, and the tree's size
// the one its parameters give. The tree is the kernel's of the descriptor's
// dm-verity version (the table's format; avbtool writes 1).
func (img *Image) HashtreeCheck(ht *HashtreeDescriptor) ([]byte, *verity.VerifyOptions, error) {
	alg, err := LookupHash(ht.HashAlgorithm)
	if err != nil {
		return nil, nil, inputErr("", "hashtree descriptor: unknown hash algorithm %q", ht.HashAlgorithm)
	}
	if err := checkBlockSizes(ht); err != nil {
		return nil, nil, err
	}
	// The version is the table's hash type, the kernel's format: 1, or
	// 0 (the salt after the data).
	if ht.DMVerityVersion > 1 {
		return nil, nil, malformed("hashtree descriptor: dm-verity version %d (the kernel's verity target has 0 and 1)", ht.DMVerityVersion)
	}
	bs := uint64(ht.DataBlockSize)
	limit, where := img.Size, "the image's %d bytes"
	if img.Footer != nil {
		limit, where = img.Footer.VBMetaOffset, "the %d bytes before the vbmeta"
	}
	if err := checkImageSize(ht, limit, where); err != nil {
		return nil, nil, err
	}
	if len(ht.Salt) > merkle.MaxSaltSize {
		return nil, nil, malformed("hashtree descriptor: a salt of %d bytes, more than the %d dm-verity tables take", len(ht.Salt), merkle.MaxSaltSize)
	}
	want := treeSize(ht.ImageSize, bs, digestSlot(alg.Size()))
	if ht.TreeSize != want {
		if ht.TreeSize == 0 {
			return nil, nil, inputErr("", "hashtree descriptor of %q: the tree was not stored (HashtreeFooterOptions.NoHashtree)", ht.PartitionName)
		}
		return nil, nil, malformed("hashtree descriptor: tree of %d bytes, its parameters give %d", ht.TreeSize, want)
	}
	if ht.TreeOffset < ht.ImageSize || ht.TreeOffset > limit || ht.TreeSize > limit-ht.TreeOffset || ht.TreeOffset%bs != 0 {
		return nil, nil, malformed("hashtree descriptor: tree at %d, %d bytes, is not between the data (%d bytes) and the vbmeta at %d", ht.TreeOffset, ht.TreeSize, ht.ImageSize, limit)
	}
	o := &verity.VerifyOptions{TreeOptions: verity.TreeOptions{
		Hash: alg.Name(), Salt: append([]byte{}, ht.Salt...), DataBlockSize: int(bs), HashBlockSize: int(bs),
		DataBlocks: ht.ImageSize / bs, HashOffset: ht.TreeOffset, NoSuperblock: true, LegacyFormat: ht.DMVerityVersion == 0,
	}}
	if ht.FECNumRoots > 0 && ht.FECSize > 0 {
		// A property of the image, not a flag: dm-verity takes 2 to 24.
		if ht.FECNumRoots < fec.MinRoots || ht.FECNumRoots > fec.MaxRoots {
			return nil, nil, malformed("hashtree descriptor: FEC with %d roots, where dm-verity takes %d to %d", ht.FECNumRoots, fec.MinRoots, fec.MaxRoots)
		}
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

// checkBlockSizes refuses a descriptor whose block sizes dm-verity (as
// avbtool lays trees out) cannot take: equal powers of two from 512 to
// 524288.
func checkBlockSizes(ht *HashtreeDescriptor) error {
	if err := merkle.CheckBlockSize(int(min(ht.DataBlockSize, 1<<30))); err != nil {
		return malformed("hashtree descriptor: data %v", err)
	}
	if ht.DataBlockSize != ht.HashBlockSize {
		return malformed("hashtree descriptor: data block size %d and hash block size %d differ, which avbtool never writes", ht.DataBlockSize, ht.HashBlockSize)
	}
	return nil
}

// checkImageSize refuses a descriptor whose image size is not a whole
// number of blocks within the limit bytes of the file (where says which,
// with a %d for limit).
func checkImageSize(ht *HashtreeDescriptor, limit uint64, where string) error {
	bs := uint64(ht.DataBlockSize)
	switch {
	case ht.ImageSize == 0:
		return malformed("hashtree descriptor: an image size of 0 bytes: there is no data for a tree")
	case ht.ImageSize%bs != 0:
		return malformed("hashtree descriptor: an image size of %d bytes, not a multiple of its block size %d", ht.ImageSize, bs)
	case ht.ImageSize > limit:
		return malformed("hashtree descriptor: an image size of %d bytes, more than "+where, ht.ImageSize, limit)
	}
	return nil
}

// VerifyHashtree checks the image at path against the first hashtree
// descriptor of its partition (VBMeta.Partition) with verity.Verify (every corrupted block listed in
// the result; with FEC in the descriptor, what the parity can repair). An
// Android sparse image (img.Sparse) is checked as the image it expands
// to, its tree and parity read from the expansion; Repair is refused for
// it (KindInput): nothing is written into a sparse file.
// Without a root digest in the descriptor (a persistent digest) the root
// is computed from the data first, so that what is checked is that the
// tree is the data's, as avbtool verify_image checks it.
// The partition's other descriptors are CheckPartitionDescriptors'.
// opts, if not nil, gives verity.Verify's other options (Repair,
// Progress, ...); its tree and FEC fields are set from the descriptor. The
// caller closes the result.
func VerifyHashtree(ctx context.Context, path string, img *Image, opts *verity.VerifyOptions) (*verity.VerifyResult, error) {
	ht := img.VBMeta.Partition().FirstHashtree
	if ht == nil {
		return nil, inputErr("", "%s: the vbmeta has no hashtree descriptor for the image's partition", path)
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
		if root, err = ownRoot(ctx, src, o); err != nil {
			return nil, err
		}
	}
	return verity.Verify(ctx, path, path, root, o)
}

// ownRoot is the root of the tree of the data as o lays it out (its
// format too), for a persistent digest.
func ownRoot(ctx context.Context, src *verity.Source, o *verity.VerifyOptions) ([]byte, error) {
	h, err := hashes.Lookup(o.Hash)
	if err != nil {
		return nil, inputErr("", "%v", err)
	}
	format := 1
	if o.LegacyFormat {
		format = 0
	}
	bs := o.DataBlockSize
	g, err := merkle.NewGeometry(merkle.Params{Hash: h, LegacyFormat: format == 0, Salt: o.Salt, DataBlockSize: bs, HashBlockSize: bs, DataBlocks: o.DataBlocks})
	if err != nil {
		return nil, paramErr("", "", "%v", err)
	}
	root, err := merkle.Build(ctx, g, src, discard{}, &merkle.BuildOptions{Jobs: o.Jobs, Runs: src.Runs(bs, o.DataBlocks)})
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, ioErr("hashing: %v", err)
	}
	return root, nil
}

// DescriptorCheck is what CheckPartitionDescriptors found about one
// descriptor of the image's partition.
type DescriptorCheck struct {
	// Descriptor is a *HashtreeDescriptor or a *HashDescriptor; Index is
	// its place among the vbmeta's descriptors, from 1.
	Descriptor Descriptor
	Index      int
	// Matches: the image is as the descriptor says. Problem says what is
	// not ("" when it matches); Note what could not be checked (a
	// persistent digest is the device's).
	Matches       bool
	Problem, Note string
}

// CheckPartitionDescriptors checks the image at path against every
// descriptor of its partition (VBMeta.Partition) but the first hashtree
// descriptor, which VerifyHashtree checks block by block: each further
// hashtree descriptor (its root against the data hashed with its
// parameters, and the tree stored where it says: avbtool verify_image's
// check; one encoded as the first shares its verdict) and each hash
// descriptor (the digest of its salt and image_size bytes, as libavb's
// load_and_verify_hash_partition computes it). libavb checks every hash
// descriptor of a partition it loads; of several hashtree descriptors,
// any may be the one set up, so every one must match. Memory stays
// bounded: each further descriptor is one pass over the image. An error
// means a check could not be made (malformed descriptor, I/O).
func CheckPartitionDescriptors(ctx context.Context, path string, img *Image, jobs int) ([]DescriptorCheck, error) {
	p := img.VBMeta.Partition()
	if n := p.NumHashtrees + p.NumHashes; n > maxPartitionDescriptors {
		return nil, malformed("%s: the vbmeta has %d hash and hashtree descriptors for partition %q; avbtool writes one, and this check takes at most %d (each is a pass over the image)",
			path, n, p.Name, maxPartitionDescriptors)
	}
	var out []DescriptorCheck
	add := func(i int, d Descriptor, c DescriptorCheck, err error) error {
		if err != nil {
			if !namesFile(err, path) {
				err = prefixErr(path, err)
			}
			return err
		}
		c.Descriptor, c.Index = d, i+1
		out = append(out, c)
		return nil
	}
	first := true
	for i, d := range p.Hashtrees() {
		if first {
			first = false
			continue
		}
		c, err := checkOtherHashtree(ctx, path, img, p.FirstHashtree, d, jobs)
		if err := add(i, d, c, err); err != nil {
			return nil, err
		}
	}
	for i, d := range p.Hashes() {
		c, err := checkHash(ctx, path, d)
		if err := add(i, d, c, err); err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Index < out[b].Index })
	return out, nil
}

// maxPartitionDescriptors bounds the descriptors of one partition that
// CheckPartitionDescriptors checks: each is a pass over the image, and a
// crafted vbmeta could name the partition thousands of times.
const maxPartitionDescriptors = 16

func checkOtherHashtree(ctx context.Context, path string, img *Image, first, d *HashtreeDescriptor, jobs int) (DescriptorCheck, error) {
	if bytes.Equal(d.Encode(), first.Encode()) {
		return DescriptorCheck{Matches: true, Note: "the same as the first hashtree descriptor"}, nil
	}
	if _, _, err := img.HashtreeCheck(d); err != nil {
		return DescriptorCheck{}, err
	}
	r, err := CheckHashtreeData(ctx, path, d, jobs)
	if err != nil {
		return DescriptorCheck{}, err
	}
	switch {
	case !r.RootMatches:
		return DescriptorCheck{Problem: fmt.Sprintf("its root digest is %x, the data hashed with its parameters gives %x", d.RootDigest, r.Root)}, nil
	case !r.TreeMatches:
		return DescriptorCheck{Problem: fmt.Sprintf("the tree at byte %d (%d bytes) is not the tree of the data hashed with its parameters", d.TreeOffset, d.TreeSize)}, nil
	}
	return DescriptorCheck{Matches: true}, nil
}

// checkHash is libavb's check of a hash descriptor (CheckMetadata has
// checked its algorithm and digest size).
func checkHash(ctx context.Context, path string, d *HashDescriptor) (DescriptorCheck, error) {
	got, err := hashDigest(ctx, path, d)
	if err != nil {
		return DescriptorCheck{}, err
	}
	switch {
	case len(d.Digest) == 0:
		return DescriptorCheck{Matches: true, Note: fmt.Sprintf("persistent digest: the device holds it (the image's %s is %x)", d.HashAlgorithm, got)}, nil
	case !bytes.Equal(got, d.Digest):
		return DescriptorCheck{Problem: fmt.Sprintf("its %s digest is %x, the image's %d bytes give %x", d.HashAlgorithm, d.Digest, d.ImageSize, got)}, nil
	}
	return DescriptorCheck{Matches: true}, nil
}
