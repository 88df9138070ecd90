package avb

import (
	"crypto/rand"
	"crypto/rsa"
)

// VBMetaOptions are what a vbmeta blob holds besides its descriptors.
type VBMetaOptions struct {
	// Algorithm is the signing algorithm's name; "" means NONE.
	Algorithm string
	// Key signs the blob; required for every algorithm but NONE.
	Key *rsa.PrivateKey
	// Descriptors, in order.
	Descriptors []Descriptor
	// PublicKeyMetadata is stored after the public key (avbtool's
	// --public_key_metadata).
	PublicKeyMetadata []byte
	RollbackIndex     uint64
	// Flags are the vbmeta image flags (FlagHashtreeDisabled, ...).
	Flags                 uint32
	RollbackIndexLocation uint32
	// ReleaseString "" means ReleaseString (avbtool 1.3.0's).
	ReleaseString string
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
	h, alg, pubBlob, desc, err := layOutVBMeta(o)
	if err != nil {
		return nil, err
	}
	return signVBMeta(o, h, alg, pubBlob, desc)
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
// key blob and descriptors.
func layOutVBMeta(o *VBMetaOptions) (*Header, *Algorithm, []byte, []byte, error) {
	alg, err := AlgorithmByName(o.Algorithm)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	var pubBlob []byte
	if alg.Type != 0 {
		if o.Key == nil {
			return nil, nil, nil, nil, paramErr("Key", "give the private key (PEM) the image is signed with",
				"key is required for algorithm %s", alg.Name)
		}
		if pubBlob, err = EncodePublicKey(&o.Key.PublicKey); err != nil {
			return nil, nil, nil, nil, err
		}
		if len(pubBlob) != alg.PublicKeySize {
			return nil, nil, nil, nil, paramErr("Key", "use a key of that size, or the algorithm for the key's size",
				"key is wrong size for algorithm %s: %d bits, it needs %d", alg.Name, (len(pubBlob)-8)*4, alg.KeyBits())
		}
	}
	rs := o.ReleaseString
	if rs == "" {
		rs = ReleaseString
	}
	desc := EncodeDescriptors(o.Descriptors)
	h := &Header{
		RequiredLibavbMajor: 1, RequiredLibavbMinor: o.RequiredLibavbMinor,
		AlgorithmType:      alg.Type,
		AuxiliaryBlockSize: roundUp(uint64(len(desc)+len(pubBlob)+len(o.PublicKeyMetadata)), 64),
		DescriptorsOffset:  0, DescriptorsSize: uint64(len(desc)),
		PublicKeyOffset: uint64(len(desc)), PublicKeySize: uint64(len(pubBlob)),
		PublicKeyMetadataOffset: uint64(len(desc) + len(pubBlob)), PublicKeyMetadataSize: uint64(len(o.PublicKeyMetadata)),
		AuthenticationBlockSize: roundUp(uint64(alg.HashSize+alg.SignatureSize), 64),
		HashOffset:              0, HashSize: uint64(alg.HashSize),
		SignatureOffset: uint64(alg.HashSize), SignatureSize: uint64(alg.SignatureSize),
		RollbackIndex: o.RollbackIndex, Flags: o.Flags, RollbackIndexLocation: o.RollbackIndexLocation,
		ReleaseString: rs,
	}
	if HeaderSize+h.AuthenticationBlockSize+h.AuxiliaryBlockSize > MaxVBMetaSize {
		return nil, nil, nil, nil, paramErr("", "", "vbmeta blob of %d bytes exceeds %d", HeaderSize+h.AuthenticationBlockSize+h.AuxiliaryBlockSize, MaxVBMetaSize)
	}
	return h, alg, pubBlob, desc, nil
}

// signVBMeta assembles the blob layOutVBMeta laid out and signs it.
func signVBMeta(o *VBMetaOptions, h *Header, alg *Algorithm, pubBlob, desc []byte) ([]byte, error) {
	blob := make([]byte, HeaderSize+h.AuthenticationBlockSize+h.AuxiliaryBlockSize)
	copy(blob, h.Encode())
	aux := blob[HeaderSize+h.AuthenticationBlockSize:]
	n := copy(aux, desc)
	n += copy(aux[n:], pubBlob)
	copy(aux[n:], o.PublicKeyMetadata)
	if alg.Type != 0 {
		hh := alg.Hash.New()
		hh.Write(blob[:HeaderSize])
		hh.Write(aux)
		digest := hh.Sum(nil)
		// PKCS#1 v1.5 is deterministic: the same bytes as avbtool's
		// openssl rsautl -sign -raw over its padding and the digest.
		sig, err := rsa.SignPKCS1v15(rand.Reader, o.Key, alg.Hash, digest)
		if err != nil {
			return nil, paramErr("Key", "", "signing with %s: %v", alg.Name, err)
		}
		auth := blob[HeaderSize:]
		copy(auth, digest)
		copy(auth[alg.HashSize:], sig)
	}
	return blob, nil
}
