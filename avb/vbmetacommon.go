package avb

import (
	"crypto/rsa"
	"sort"
)

// VBMetaCommonOptions are the vbmeta inputs every avbtool verb that makes
// a vbmeta takes (add_hash_footer, add_hashtree_footer,
// make_vbmeta_image): the signing, the descriptors besides the verb's own,
// and the header's fields.
type VBMetaCommonOptions struct {
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
	// KernelCmdlines are kernel command-line descriptors (flags 0).
	KernelCmdlines []string
	// SetupRootfsFromKernel, if not "", is the path of an image (with a
	// footer, or a vbmeta image) whose first hashtree descriptor gives the
	// two kernel command-line descriptors that set its partition up with
	// dm-verity as the root file system.
	SetupRootfsFromKernel string
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
}

// signer is what signs: Signer, or Key.
func (c *VBMetaCommonOptions) signer() Signer {
	switch {
	case c.Signer != nil:
		return c.Signer
	case c.Key != nil:
		return KeySigner{c.Key}
	}
	return nil
}

// prepareVBMeta reads and checks the common options into p before
// anything is written: the key against the algorithm, the chained
// partitions, SetupRootfsFromKernel's image, the included images (which
// raise p.minor, set by the caller to the verb's own), the release string,
// and that a vbmeta with own (the verb's descriptor, as large as it will
// be) fits.
func (c *VBMetaCommonOptions) prepareVBMeta(p *prepared, own Descriptor) error {
	sigAlg, err := AlgorithmByName(c.Algorithm)
	if err != nil {
		return err
	}
	// The key is checked now, not after the hashing, so that a wrong key
	// leaves the image untouched.
	if sigAlg.Type != 0 {
		if err := checkSignerKey(c.signer(), sigAlg); err != nil {
			return err
		}
	}
	if p.chains, err = c.chainDescriptors(); err != nil {
		return err
	}
	if c.SetupRootfsFromKernel != "" {
		if p.rootfsFrom, err = SetupRootfsFromKernelDescriptors(c.SetupRootfsFromKernel); err != nil {
			return err
		}
	}
	if err := p.include(c.IncludeDescriptorsFrom); err != nil {
		return err
	}
	if err := c.checkVBMetaSize(p, sigAlg, own); err != nil {
		return err
	}
	p.release = ReleaseString
	if c.ReleaseString != nil {
		p.release = *c.ReleaseString
	}
	if c.AppendToReleaseString != nil {
		p.release += " " + *c.AppendToReleaseString
	}
	return nil
}

// checkSignerKey refuses a missing key, or one of the wrong size for alg.
func checkSignerKey(s Signer, alg *Algorithm) error {
	if s == nil || s.PublicKey() == nil {
		return paramErr("Key", "give the private key (PEM) the image is signed with", "key is required for algorithm %s", alg.Name)
	}
	blob, err := EncodePublicKey(s.PublicKey())
	if err != nil {
		return err
	}
	if len(blob) != alg.PublicKeySize {
		return paramErr("Key", "use a key of that size, or the algorithm for the key's size",
			"key is wrong size for algorithm %s: %d bits, it needs %d", alg.Name, (len(blob)-8)*4, alg.KeyBits())
	}
	return nil
}

// chainDescriptors returns the chain partition descriptors in avbtool
// 1.3.0's order: those that use A/B, then the others, each in the order
// given. A rollback index location is used once.
func (c *VBMetaCommonOptions) chainDescriptors() ([]Descriptor, error) {
	chains := append([]ChainPartition{}, c.ChainPartitions...)
	sort.SliceStable(chains, func(i, j int) bool { return !chains[i].DoNotUseAB && chains[j].DoNotUseAB })
	var descs []Descriptor
	used := map[uint32]bool{c.RollbackIndexLocation: true}
	for _, ch := range chains {
		if used[ch.RollbackIndexLocation] {
			return nil, paramErr("ChainPartitions", "give each chained partition a location of its own, and not the vbmeta's own",
				"chained partition %s: rollback index location %d is already in use", ch.Name, ch.RollbackIndexLocation)
		}
		used[ch.RollbackIndexLocation] = true
		if ch.RollbackIndexLocation < 1 {
			return nil, paramErr("ChainPartitions", "", "chained partition %s: rollback index location must be 1 or larger", ch.Name)
		}
		d := &ChainPartitionDescriptor{RollbackIndexLocation: ch.RollbackIndexLocation, PartitionName: ch.Name, PublicKey: ch.PublicKey}
		if ch.DoNotUseAB {
			d.Flags |= ChainFlagDoNotUseAB
		}
		descs = append(descs, d)
	}
	return descs, nil
}

// descriptors returns the vbmeta's descriptors in avbtool's
// _generate_vbmeta_blob order: the verb's own, chained partitions,
// properties, the lines from SetupRootfsFromKernel's image, asRootfs (the
// lines of --setup_as_rootfs_from_kernel), the kernel command lines. The
// included ones follow, encoded (vbmetaOptions).
func (c *VBMetaCommonOptions) descriptors(p *prepared, own []Descriptor, asRootfs []Descriptor) []Descriptor {
	descs := append([]Descriptor{}, own...)
	descs = append(descs, p.chains...)
	for _, pr := range c.Properties {
		descs = append(descs, &PropertyDescriptor{Key: pr.Key, Value: pr.Value})
	}
	descs = append(descs, p.rootfsFrom...)
	descs = append(descs, asRootfs...)
	for _, cl := range c.KernelCmdlines {
		descs = append(descs, &KernelCmdlineDescriptor{Cmdline: cl})
	}
	return descs
}

// vbmetaOptions are MakeVBMeta's options for descs and the included
// descriptors.
func (c *VBMetaCommonOptions) vbmetaOptions(p *prepared, descs []Descriptor) *VBMetaOptions {
	return &VBMetaOptions{
		Algorithm: c.Algorithm, Key: c.Key, Signer: c.Signer, Descriptors: descs, encoded: p.included,
		PublicKeyMetadata: c.PublicKeyMetadata, RollbackIndex: c.RollbackIndex, Flags: c.Flags,
		RollbackIndexLocation: c.RollbackIndexLocation, ReleaseString: &p.release, RequiredLibavbMinor: p.minor,
	}
}

// checkVBMetaSize refuses, before the image is touched, a vbmeta that
// could not be made: what is known of it (own, every descriptor but the
// kernel command lines of the as-rootfs options, the key and its
// metadata) takes more than MaxVBMetaSize.
func (c *VBMetaCommonOptions) checkVBMetaSize(p *prepared, alg *Algorithm, own Descriptor) error {
	size := uint64(HeaderSize) + roundUp(uint64(alg.HashSize+alg.SignatureSize), 64) + uint64(alg.PublicKeySize+len(c.PublicKeyMetadata))
	if own != nil {
		size += uint64(encodedSize(own))
	}
	for _, d := range p.chains {
		size += uint64(encodedSize(d))
	}
	for _, d := range p.rootfsFrom {
		size += uint64(encodedSize(d))
	}
	for _, pr := range c.Properties {
		size += uint64((&PropertyDescriptor{Key: pr.Key, Value: pr.Value}).size())
	}
	for _, cl := range c.KernelCmdlines {
		size += uint64((&KernelCmdlineDescriptor{Cmdline: cl}).size())
	}
	for _, e := range p.included {
		size += uint64(len(e))
	}
	if size > MaxVBMetaSize {
		return paramErr("", "", "the vbmeta would take at least %d bytes, more than the %d a vbmeta is read in", size, MaxVBMetaSize)
	}
	return nil
}
