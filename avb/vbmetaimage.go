package avb

import (
	"bytes"
	"context"
	"crypto/rsa"
)

// VBMetaImageOptions are avbtool make_vbmeta_image's options.
type VBMetaImageOptions struct {
	// Algorithm is the signing algorithm ("" means NONE); Key or Signer
	// signs (Signer wins if both are given).
	Algorithm string
	Key       *rsa.PrivateKey
	Signer    Signer
	// ChainPartitions, in the order given; avbtool puts those with
	// DoNotUseAB (--chain_partition_do_not_use_ab) after the others.
	ChainPartitions []ChainPartition
	// Properties, in order: avbtool puts those of --prop before those of
	// --prop_from_file.
	Properties []Property
	// SetupRootfsFromKernel, if not "", is the path of an image (with a
	// footer, or a vbmeta image) whose first hashtree descriptor gives the
	// two kernel command-line descriptors that set its partition up with
	// dm-verity as the root file system.
	SetupRootfsFromKernel string
	KernelCmdlines        []string
	// IncludeDescriptorsFrom are images (with a footer, or vbmeta images)
	// whose descriptors are copied in, as avbtool's
	// --include_descriptors_from_image copies them.
	IncludeDescriptorsFrom []string
	PublicKeyMetadata      []byte
	RollbackIndex          uint64
	RollbackIndexLocation  uint32
	// Flags are the vbmeta image flags (FlagHashtreeDisabled for
	// --set_hashtree_disabled_flag).
	Flags uint32
	// ReleaseString, if not nil, replaces avbtool 1.3.0's release string
	// (new("") leaves none, as avbtool's --internal_release_string '');
	// AppendToReleaseString, if not nil, is added after a space, even
	// when empty, as avbtool adds it. nil is an option not given.
	ReleaseString, AppendToReleaseString *string
	// PaddingSize, if not 0, pads the image MakeVBMetaImage writes with
	// zeros to a multiple of it (at most 1 GiB).
	PaddingSize uint64
}

// maxPaddingSize bounds PaddingSize: the zeros are written, not held, but
// a padding larger than any vbmeta image is a mistake.
const maxPaddingSize = 1 << 30

// RequiredLibavbMinor is the minor version of libavb 1.x the image needs,
// what avbtool's --print_required_libavb_version prints after "1.": 2 with
// a rollback index location, 3 with a chain partition that does not use
// A/B, at least that of each image included (whose headers it reads).
func (o *VBMetaImageOptions) RequiredLibavbMinor() (uint32, error) {
	p := &prepared{minor: o.ownMinor()}
	if err := p.include(o.IncludeDescriptorsFrom); err != nil {
		return 0, err
	}
	return p.minor, nil
}

func (o *VBMetaImageOptions) ownMinor() uint32 {
	var m uint32
	if o.RollbackIndexLocation > 0 {
		m = 2
	}
	for _, c := range o.ChainPartitions {
		if c.DoNotUseAB {
			m = 3
		}
	}
	return m
}

// common returns the options' vbmeta inputs.
func (o *VBMetaImageOptions) common() *VBMetaCommonOptions {
	return &VBMetaCommonOptions{
		Algorithm: o.Algorithm, Key: o.Key, Signer: o.Signer, ChainPartitions: o.ChainPartitions, Properties: o.Properties,
		KernelCmdlines: o.KernelCmdlines, SetupRootfsFromKernel: o.SetupRootfsFromKernel, IncludeDescriptorsFrom: o.IncludeDescriptorsFrom,
		PublicKeyMetadata: o.PublicKeyMetadata, RollbackIndex: o.RollbackIndex, RollbackIndexLocation: o.RollbackIndexLocation,
		Flags: o.Flags, ReleaseString: o.ReleaseString, AppendToReleaseString: o.AppendToReleaseString,
	}
}

// VBMetaImage returns the vbmeta blob avbtool's make_vbmeta_image makes
// of o, byte for byte, without the padding (see MakeVBMetaImage): its
// descriptors are, in order, the chain partitions (those that use A/B,
// then the others), the properties, the two command lines of
// SetupRootfsFromKernel, the kernel command lines, and the included
// descriptors (see IncludeDescriptorsFrom). Every input is read, and
// bounded, before anything is signed; ctx ends a signing helper's run.
func VBMetaImage(ctx context.Context, o *VBMetaImageOptions) ([]byte, error) {
	if o.PaddingSize > maxPaddingSize {
		return nil, paramErr("PaddingSize", "e.g. 4096", "padding size %d is larger than %d", o.PaddingSize, maxPaddingSize)
	}
	c := o.common()
	p := &prepared{minor: o.ownMinor()}
	if err := c.prepareVBMeta(p, nil); err != nil {
		return nil, err
	}
	blob, err := MakeVBMetaContext(ctx, c.vbmetaOptions(p, c.descriptors(p, nil, nil)))
	if err != nil {
		return nil, err
	}
	return blob, nil
}

// writePadded commits b, then zeros up to a multiple of padding (0:
// none), to out, the zeros a block at a time.
func writePadded(ctx context.Context, out *outputFile, b []byte, padding uint64) error {
	if padding == 0 {
		return out.Commit(b)
	}
	w := out.Writer(ctx)
	if _, err := w.Write(b); err != nil {
		return err
	}
	zeros := make([]byte, 64<<10)
	for left := roundUp(uint64(len(b)), padding) - uint64(len(b)); left > 0; {
		n := min(left, uint64(len(zeros)))
		if _, err := w.Write(zeros[:n]); err != nil {
			return err
		}
		left -= n
	}
	return out.Commit(nil)
}

// isVBMetaImage recognizes an output it may replace: a vbmeta image.
func isVBMetaImage(head []byte) bool { return bytes.HasPrefix(head, vbmetaMagic) }

// MakeVBMetaImage writes the vbmeta blob VBMetaImage makes, then zeros to
// a multiple of o.PaddingSize, to outputPath, under the rules of safefile.OpenOutputFile: an existing file
// is replaced only if it is empty or a vbmeta image, and only once the
// image is made (a failure leaves it as it was).
func MakeVBMetaImage(ctx context.Context, outputPath string, o *VBMetaImageOptions) error {
	out, err := openOutputFile(outputPath, "output", "a vbmeta image", isVBMetaImage, false)
	if err != nil {
		return err
	}
	defer out.Abort()
	blob, err := VBMetaImage(ctx, o)
	if err != nil {
		return err
	}
	return writePadded(ctx, out, blob, o.PaddingSize)
}
