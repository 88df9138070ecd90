package avb

import (
	"context"
	"crypto/rsa"
)

// VBMetaOptions are what a vbmeta blob holds besides its descriptors.
type VBMetaOptions struct {
	// Algorithm is the signing algorithm's name; "" means NONE.
	Algorithm string
	// Key signs the blob, or Signer does (which wins if both are given);
	// one is required for every algorithm but NONE.
	Key    *rsa.PrivateKey
	Signer Signer
	// Descriptors, in order.
	Descriptors []Descriptor
	// encoded are more descriptors, after those, already encoded (those
	// included from other images).
	encoded [][]byte
	// PublicKeyMetadata is stored after the public key (avbtool's
	// --public_key_metadata).
	PublicKeyMetadata []byte
	RollbackIndex     uint64
	// Flags are the vbmeta image flags (FlagHashtreeDisabled, ...).
	Flags                 uint32
	RollbackIndexLocation uint32
	// ReleaseString is the header's release string; nil means
	// ReleaseString (avbtool 1.3.0's), new("") none.
	ReleaseString *string
	// RequiredLibavbMinor is the minor version of libavb 1.x the blob
	// needs.
	RequiredLibavbMinor uint32
}

func roundUp(n, m uint64) uint64 { return (n + m - 1) / m * m }

// MakeVBMeta builds and signs a vbmeta blob laid out as avbtool lays it
// out: header; authentication block (hash, signature, zeros to a multiple
// of 64); auxiliary block (descriptors, public key, public key metadata,
// zeros to a multiple of 64).
func MakeVBMeta(o *VBMetaOptions) ([]byte, error) {
	return MakeVBMetaContext(context.Background(), o)
}

// MakeVBMetaContext is MakeVBMeta with a context, which ends the run of a
// signing helper (see HelperSigner).
func MakeVBMetaContext(ctx context.Context, o *VBMetaOptions) ([]byte, error) {
	h, alg, pubBlob, descSize, err := layOutVBMeta(o)
	if err != nil {
		return nil, err
	}
	return signVBMeta(ctx, o, h, alg, pubBlob, descSize)
}

// signer is what signs for o: its Signer, or its Key.
func (o *VBMetaOptions) signer() Signer {
	switch {
	case o.Signer != nil:
		return o.Signer
	case o.Key != nil:
		return KeySigner{o.Key}
	}
	return nil
}

// vbmetaSize is the size of the blob MakeVBMeta makes of o, without signing
// it: the size depends on the descriptors' sizes and the algorithm only.
func vbmetaSize(o *VBMetaOptions) (uint64, error) {
	h, _, _, _, err := layOutVBMeta(o)
	if err != nil {
		return 0, err
	}
	return HeaderSize + h.AuthenticationBlockSize + h.AuxiliaryBlockSize, nil
}

// layOutVBMeta checks o and returns the blob's header, algorithm, public
// key blob and the size of its descriptors.
func layOutVBMeta(o *VBMetaOptions) (*Header, *Algorithm, []byte, uint64, error) {
	alg, err := AlgorithmByName(o.Algorithm)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	var pubBlob []byte
	if alg.Type != 0 {
		s := o.signer()
		if s == nil || s.PublicKey() == nil {
			return nil, nil, nil, 0, paramErr("Key", "give the private key (PEM) the image is signed with",
				"key is required for algorithm %s", alg.Name)
		}
		if pubBlob, err = EncodePublicKey(s.PublicKey()); err != nil {
			return nil, nil, nil, 0, err
		}
		if len(pubBlob) != alg.PublicKeySize {
			return nil, nil, nil, 0, paramErr("Key", "use a key of that size, or the algorithm for the key's size",
				"key is wrong size for algorithm %s: %d bits, it needs %d", alg.Name, (len(pubBlob)-8)*4, alg.KeyBits())
		}
	}
	rs := ReleaseString
	if o.ReleaseString != nil {
		rs = *o.ReleaseString
	}
	var descSize uint64
	for _, e := range o.encoded {
		descSize += uint64(len(e))
	}
	for _, d := range o.Descriptors {
		descSize += uint64(encodedSize(d))
	}
	h := &Header{
		RequiredLibavbMajor: 1, RequiredLibavbMinor: o.RequiredLibavbMinor,
		AlgorithmType:      alg.Type,
		AuxiliaryBlockSize: roundUp(descSize+uint64(len(pubBlob)+len(o.PublicKeyMetadata)), 64),
		DescriptorsOffset:  0, DescriptorsSize: descSize,
		PublicKeyOffset: descSize, PublicKeySize: uint64(len(pubBlob)),
		PublicKeyMetadataOffset: descSize + uint64(len(pubBlob)), PublicKeyMetadataSize: uint64(len(o.PublicKeyMetadata)),
		AuthenticationBlockSize: roundUp(uint64(alg.HashSize+alg.SignatureSize), 64),
		HashOffset:              0, HashSize: uint64(alg.HashSize),
		SignatureOffset: uint64(alg.HashSize), SignatureSize: uint64(alg.SignatureSize),
		RollbackIndex: o.RollbackIndex, Flags: o.Flags, RollbackIndexLocation: o.RollbackIndexLocation,
		ReleaseString: rs,
	}
	if HeaderSize+h.AuthenticationBlockSize+h.AuxiliaryBlockSize > MaxVBMetaSize {
		return nil, nil, nil, 0, paramErr("", "", "vbmeta blob of %d bytes exceeds %d", HeaderSize+h.AuthenticationBlockSize+h.AuxiliaryBlockSize, MaxVBMetaSize)
	}
	return h, alg, pubBlob, descSize, nil
}

// signVBMeta assembles the blob layOutVBMeta laid out and signs it.
func signVBMeta(ctx context.Context, o *VBMetaOptions, h *Header, alg *Algorithm, pubBlob []byte, descSize uint64) ([]byte, error) {
	// Made once, the descriptors encoded in place; zeros up to a whole
	// 4096-byte block are there for AddHashtreeFooter to append.
	size := HeaderSize + h.AuthenticationBlockSize + h.AuxiliaryBlockSize
	blob := make([]byte, size, roundUp(size, imageBlockSize))
	copy(blob, h.Encode())
	aux := blob[HeaderSize+h.AuthenticationBlockSize:]
	desc := aux[:0:descSize]
	for _, d := range o.Descriptors {
		desc = appendDescriptor(desc, d)
	}
	for _, e := range o.encoded {
		desc = append(desc, e...)
	}
	if uint64(len(desc)) != descSize {
		return nil, paramErr("Descriptors", "", "a descriptor's encoding changed its size")
	}
	n := copy(aux[descSize:], pubBlob)
	copy(aux[descSize+uint64(n):], o.PublicKeyMetadata)
	if alg.Type != 0 {
		hh := alg.Hash.New()
		hh.Write(blob[:HeaderSize])
		hh.Write(aux)
		digest := hh.Sum(nil)
		sig, err := o.signer().Sign(ctx, alg, digest)
		if err != nil {
			return nil, err
		}
		if len(sig) != alg.SignatureSize {
			return nil, paramErr("Signer", "", "the signer gave a signature of %d bytes, not %d", len(sig), alg.SignatureSize)
		}
		auth := blob[HeaderSize:]
		copy(auth, digest)
		copy(auth[alg.HashSize:], sig)
	}
	return blob, nil
}
