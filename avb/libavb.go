package avb

// The decisions libavb (AOSP external/avb, libavb/) makes about a vbmeta,
// made here as it makes them, for veritycheck: the bootloader is the
// authority on what an image is worth. LIBAVB.md lists every decision and
// where it is made. avbtool's own, laxer answers (what the avbtool front
// gives) are VBMeta.Verify, CheckHashtreeData and CheckHashData.

import (
	"bytes"
	"crypto"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"unicode/utf8"

	"github.com/veritytree/veritytree/verity"
)

// The libavb whose rules these are: libavb 1.3 (AVB_VERSION_MAJOR and
// AVB_VERSION_MINOR of the AOSP tree avbtool 1.3.0 comes with).
const (
	LibavbVersionMajor = 1
	LibavbVersionMinor = 3
)

// LibavbMaxVBMetaSize is libavb's VBMETA_MAX_SIZE: a footer declaring a
// larger vbmeta is not used (libavb then looks for a vbmeta at the start
// of the partition).
const LibavbMaxVBMetaSize = 64 << 10

// MaxRollbackIndexLocations is AVB_MAX_NUMBER_OF_ROLLBACK_INDEX_LOCATIONS.
const MaxRollbackIndexLocations = 32

// libavbPartNameMax is AVB_PART_NAME_MAX_SIZE: a partition name and its
// A/B suffix, with their NUL, must fit.
const libavbPartNameMax = 32

var (
	// ErrNotSigned: the vbmeta's algorithm is NONE. libavb's
	// AVB_VBMETA_VERIFY_RESULT_OK_NOT_SIGNED, which avb_slot_verify
	// counts as a verification error (a locked device does not boot it).
	ErrNotSigned = errors.New("the vbmeta is not signed (algorithm NONE)")
	// ErrUnsupportedVersion: the vbmeta requires a libavb newer than
	// LibavbVersionMajor.LibavbVersionMinor; libavb refuses it before
	// reading anything else.
	ErrUnsupportedVersion = errors.New("the vbmeta requires an unsupported libavb version")
)

// VBMetaVerifyResult is libavb's AvbVBMetaVerifyResult.
type VBMetaVerifyResult int

// The results of avb_vbmeta_image_verify.
const (
	VBMetaOK VBMetaVerifyResult = iota
	VBMetaOKNotSigned
	VBMetaInvalidHeader
	VBMetaUnsupportedVersion
	VBMetaHashMismatch
	VBMetaSignatureMismatch
)

// String is libavb's avb_vbmeta_verify_result_to_string.
func (r VBMetaVerifyResult) String() string {
	switch r {
	case VBMetaOK:
		return "OK"
	case VBMetaOKNotSigned:
		return "OK_NOT_SIGNED"
	case VBMetaInvalidHeader:
		return "INVALID_VBMETA_HEADER"
	case VBMetaUnsupportedVersion:
		return "UNSUPPORTED_VERSION"
	case VBMetaHashMismatch:
		return "HASH_MISMATCH"
	case VBMetaSignatureMismatch:
		return "SIGNATURE_MISMATCH"
	}
	return fmt.Sprintf("VBMetaVerifyResult(%d)", int(r))
}

// VerifyVBMetaBlob decides about the vbmeta blob b (the bytes a bootloader
// reads: the footer's vbmeta size) as libavb's avb_vbmeta_image_verify
// does, check for check and in its order, the required version first. The
// error says why the result is not VBMetaOK: ErrNotSigned (KindCorrupt)
// for VBMetaOKNotSigned, ErrSignature (KindCorrupt) for a hash or
// signature mismatch, ErrUnsupportedVersion or ErrMalformed (KindInput).
// Where libavb's arithmetic would not verify a signature (a key blob whose
// n0inv or R^2 does not fit its modulus), neither does this.
func VerifyVBMetaBlob(b []byte) (VBMetaVerifyResult, error) {
	if len(b) < HeaderSize {
		return VBMetaInvalidHeader, malformed("vbmeta of %d bytes is shorter than its header", len(b))
	}
	if !bytes.Equal(b[:4], vbmetaMagic) {
		return VBMetaInvalidHeader, malformed("no vbmeta magic AVB0")
	}
	h, _ := ParseHeader(b)
	if h.RequiredLibavbMajor != LibavbVersionMajor || h.RequiredLibavbMinor > LibavbVersionMinor {
		return VBMetaUnsupportedVersion, &verity.Error{Kind: verity.KindInput,
			Hint: "a bootloader refuses a vbmeta it is too old for, before reading anything else in it; make the image with avbtool 1.3 or older, or with this package (MakeVBMeta, AddHashtreeFooter)",
			Err: fmt.Errorf("%w: it requires libavb %d.%d, libavb %d.%d (whose rules this check follows) refuses it",
				ErrUnsupportedVersion, h.RequiredLibavbMajor, h.RequiredLibavbMinor, LibavbVersionMajor, LibavbVersionMinor)}
	}
	if b[128+releaseStringSize-1] != 0 {
		return VBMetaInvalidHeader, malformed("vbmeta release string does not end with a NUL byte")
	}
	if err := libavbBlocks(h, uint64(len(b))); err != nil {
		return VBMetaInvalidHeader, err
	}
	if h.AlgorithmType == 0 {
		return VBMetaOKNotSigned, &verity.Error{Kind: verity.KindCorrupt, Err: ErrNotSigned}
	}
	alg, err := AlgorithmByType(h.AlgorithmType)
	if err != nil {
		return VBMetaInvalidHeader, malformed("%v", err)
	}
	if h.HashSize != uint64(alg.HashSize) {
		return VBMetaInvalidHeader, malformed("vbmeta hash of %d bytes, %s has %d", h.HashSize, alg.Name, alg.HashSize)
	}
	auth := b[HeaderSize : HeaderSize+h.AuthenticationBlockSize]
	aux := b[HeaderSize+h.AuthenticationBlockSize : HeaderSize+h.AuthenticationBlockSize+h.AuxiliaryBlockSize]
	hh := alg.Hash.New()
	hh.Write(b[:HeaderSize])
	hh.Write(aux)
	digest := hh.Sum(nil)
	if !bytes.Equal(auth[h.HashOffset:h.HashOffset+h.HashSize], digest) {
		return VBMetaHashMismatch, signatureErr("the hash of the header and auxiliary block does not match the stored hash")
	}
	key := aux[h.PublicKeyOffset : h.PublicKeyOffset+h.PublicKeySize]
	sig := auth[h.SignatureOffset : h.SignatureOffset+h.SignatureSize]
	if why := libavbRSAVerify(key, sig, digest, alg); why != "" {
		return VBMetaSignatureMismatch, signatureErr(fmt.Sprintf("%s signature does not verify with the embedded key: %s", alg.Name, why))
	}
	return VBMetaOK, nil
}

// libavbBlocks makes avb_vbmeta_image_verify's checks of the header's
// blocks: sizes multiples of 64 that fit in length bytes; the hash and the
// signature in the authentication block, the public key (and its metadata,
// if any) in the auxiliary block. The descriptors are not checked here:
// libavb reads them only after the signature, bounded by the blob.
func libavbBlocks(h *Header, length uint64) error {
	if h.AuthenticationBlockSize%64 != 0 || h.AuxiliaryBlockSize%64 != 0 {
		return malformed("vbmeta block sizes %d and %d are not multiples of 64", h.AuthenticationBlockSize, h.AuxiliaryBlockSize)
	}
	if h.AuthenticationBlockSize > length || h.AuxiliaryBlockSize > length-h.AuthenticationBlockSize ||
		HeaderSize > length-h.AuthenticationBlockSize-h.AuxiliaryBlockSize {
		return malformed("vbmeta blocks of %d and %d bytes do not fit in the %d bytes of the vbmeta", h.AuthenticationBlockSize, h.AuxiliaryBlockSize, length)
	}
	checks := []struct {
		what      string
		off, size uint64
		block     uint64
	}{
		{"hash", h.HashOffset, h.HashSize, h.AuthenticationBlockSize},
		{"signature", h.SignatureOffset, h.SignatureSize, h.AuthenticationBlockSize},
		{"public key", h.PublicKeyOffset, h.PublicKeySize, h.AuxiliaryBlockSize},
	}
	if h.PublicKeyMetadataSize > 0 {
		checks = append(checks, struct {
			what      string
			off, size uint64
			block     uint64
		}{"public key metadata", h.PublicKeyMetadataOffset, h.PublicKeyMetadataSize, h.AuxiliaryBlockSize})
	}
	for _, c := range checks {
		if err := within(c.what, c.off, c.size, c.block); err != nil {
			return err
		}
	}
	return nil
}

// libavbRSAVerify is libavb's avb_rsa_verify: the key blob parsed as
// iavb_parse_key_data parses it (2048, 4096 or 8192 bits, exact length),
// the signature as long as the modulus, the padding as long as the
// signature less the digest, then sig^65537 mod n compared with padding
// and digest. libavb computes in Montgomery form with the blob's own n0inv
// and R^2 mod n, so a blob whose n0inv or R^2 does not fit its modulus
// verifies nothing there, nor here. It returns why the signature does not
// verify, or "".
func libavbRSAVerify(key, sig, digest []byte, alg *Algorithm) string {
	if len(key) < 8 {
		return fmt.Sprintf("the public key of %d bytes is shorter than its header", len(key))
	}
	bits := binary.BigEndian.Uint32(key)
	if bits != 2048 && bits != 4096 && bits != 8192 {
		return fmt.Sprintf("the public key is of %d bits (libavb takes 2048, 4096 or 8192)", bits)
	}
	nb := uint64(bits / 8)
	if uint64(len(key)) != 8+2*nb {
		return fmt.Sprintf("the public key of %d bits takes %d bytes, not %d", bits, 8+2*nb, len(key))
	}
	if uint64(len(sig)) != nb {
		return fmt.Sprintf("the signature of %d bytes does not fit the %d-bit key", len(sig), bits)
	}
	padding := alg.padding()
	if len(padding) != len(sig)-len(digest) {
		return fmt.Sprintf("%s does not go with a %d-bit key", alg.Name, bits)
	}
	n := new(big.Int).SetBytes(key[8 : 8+nb])
	if n.Bit(0) == 0 {
		return "the public key's modulus is even"
	}
	m32 := new(big.Int).Lsh(big.NewInt(1), 32)
	inv := new(big.Int).ModInverse(new(big.Int).Mod(n, m32), m32)
	n0inv := new(big.Int).Sub(m32, inv).Uint64()
	if uint64(binary.BigEndian.Uint32(key[4:])) != n0inv {
		return "the public key's n0inv does not fit its modulus (libavb computes with it)"
	}
	r := new(big.Int).Lsh(big.NewInt(1), uint(bits))
	rr := new(big.Int).Mod(new(big.Int).Mul(r, r), n)
	if rr.Cmp(new(big.Int).SetBytes(key[8+nb:])) != 0 {
		return "the public key's R^2 mod n does not fit its modulus (libavb computes with it)"
	}
	s := new(big.Int).SetBytes(sig)
	if s.Cmp(n) >= 0 {
		return "the signature is not below the modulus"
	}
	em := new(big.Int).Exp(s, big.NewInt(65537), n).FillBytes(make([]byte, nb))
	if !bytes.Equal(em[:len(padding)], padding) || !bytes.Equal(em[len(padding):], digest) {
		return "it is not the signature of the vbmeta's hash"
	}
	return ""
}

// VerifyVBMeta decides about the image's vbmeta as libavb's avb_slot_verify
// does about a partition's: the footer must point at a vbmeta a bootloader
// loads (LibavbMaxVBMetaSize, which bounds a vbmeta image's blob too), the
// blob must verify (VerifyVBMetaBlob) and,
// if key is not nil (an AVB public key blob), be signed with that key
// (libavb's expected or trusted key). nil means a signature was checked
// and holds. An unsigned vbmeta (NONE) is ErrNotSigned whatever key it
// embeds, a failed or foreign signature ErrSignature (both KindCorrupt: a
// locked device refuses them); an unsupported required version is
// ErrUnsupportedVersion, a malformed header ErrMalformed (KindInput: no
// bootloader goes on from these).
func (img *Image) VerifyVBMeta(key []byte) error {
	if f := img.Footer; f != nil && f.VBMetaSize > LibavbMaxVBMetaSize {
		return malformed("the AVB footer declares a vbmeta of %d bytes; libavb loads at most %d, so a bootloader does not use this footer", f.VBMetaSize, LibavbMaxVBMetaSize)
	}
	if len(img.VBMeta.Raw) > LibavbMaxVBMetaSize {
		return malformed("a vbmeta of %d bytes: libavb loads at most %d", len(img.VBMeta.Raw), LibavbMaxVBMetaSize)
	}
	return img.VBMeta.VerifyWith(key)
}

// VerifyWith decides about the blob as libavb does (VerifyVBMetaBlob) and,
// when key is not nil, requires the embedded public key to be key (the AVB
// public key blob of the key expected): nil only when a signature was
// checked and holds. An unsigned blob is ErrNotSigned, even when it embeds
// key: embedding a public key proves nothing.
func (v *VBMeta) VerifyWith(key []byte) error {
	res, err := VerifyVBMetaBlob(v.Raw)
	switch {
	case res == VBMetaOKNotSigned && key != nil:
		return &verity.Error{Kind: verity.KindCorrupt, Err: fmt.Errorf("%w, so not with the key given", ErrNotSigned)}
	case res != VBMetaOK:
		return err
	case key != nil && !bytes.Equal(key, v.PublicKey):
		return signatureErr("the embedded public key is not the key given")
	}
	return nil
}

// CheckMetadata makes libavb's checks of what a verified vbmeta holds
// (avb_slot_verify's, after the signature): the rollback index location
// in range; every descriptor as libavb validates it (its size a multiple
// of 8, a chain partition's rollback index location not 0); for the
// image's own partition, its hash descriptors' algorithm (sha256 or
// sha512) and digest size, and the partition name that persistent digests
// and hash descriptors look up. A failure is ErrMalformed (libavb's
// AVB_SLOT_VERIFY_RESULT_ERROR_INVALID_METADATA: no bootloader goes on).
func (img *Image) CheckMetadata() error {
	v := img.VBMeta
	if loc := v.Header.RollbackIndexLocation; loc >= MaxRollbackIndexLocations {
		return malformed("vbmeta rollback index location %d: libavb has locations 0 to %d", loc, MaxRollbackIndexLocations-1)
	}
	i := 0
	for d := range v.Descriptors() {
		i++
		if err := libavbDescriptor(d); err != nil {
			return malformed("descriptor %d (%s): %v", i, descriptorKind(d), err)
		}
	}
	p := v.Partition()
	for _, d := range p.Hashes() {
		if err := libavbHash(d); err != nil {
			return malformed("hash descriptor of partition %q: %v", d.PartitionName, err)
		}
	}
	for _, d := range p.Hashtrees() {
		if len(d.RootDigest) == 0 && len(d.PartitionName) >= libavbPartNameMax {
			return malformed("hashtree descriptor with a persistent digest: partition name of %d bytes, libavb takes at most %d", len(d.PartitionName), libavbPartNameMax-1)
		}
		if len(d.RootDigest) == 0 && libavbDigestSize(d.HashAlgorithm, true) == 0 {
			return malformed("hashtree descriptor with a persistent digest: hash algorithm %q (libavb reads persistent digests of sha1, sha256 and sha512)", d.HashAlgorithm)
		}
	}
	return nil
}

func libavbDescriptor(d Descriptor) error {
	switch d := d.(type) {
	case *UnknownDescriptor:
		// avb_descriptor_foreach stops at it: libavb would not see the
		// descriptors after it.
		if len(d.Data)%8 != 0 {
			return fmt.Errorf("%d bytes follow its header, not a multiple of 8 (libavb stops reading descriptors there)", len(d.Data))
		}
	case *ChainPartitionDescriptor:
		if d.RollbackIndexLocation == 0 {
			return errors.New("rollback index location 0 (libavb requires at least 1)")
		}
		if !utf8.ValidString(d.PartitionName) {
			return errors.New("partition name is not UTF-8")
		}
	}
	return nil
}

func libavbHash(d *HashDescriptor) error {
	size := libavbDigestSize(d.HashAlgorithm, false)
	if size == 0 {
		return fmt.Errorf("hash algorithm %q: libavb checks sha256 and sha512 digests only", d.HashAlgorithm)
	}
	if len(d.Digest) != 0 && len(d.Digest) != size {
		return fmt.Errorf("a %s digest of %d bytes", d.HashAlgorithm, len(d.Digest))
	}
	if len(d.PartitionName) >= libavbPartNameMax {
		return fmt.Errorf("partition name of %d bytes, libavb takes at most %d", len(d.PartitionName), libavbPartNameMax-1)
	}
	return nil
}

// libavbDigestSize is the digest size of the hash algorithms libavb knows:
// sha256 and sha512 for hash descriptors, sha1 too for persistent hashtree
// digests; 0 for another.
func libavbDigestSize(name string, sha1 bool) int {
	switch {
	case name == "sha256":
		return crypto.SHA256.Size()
	case name == "sha512":
		return crypto.SHA512.Size()
	case name == "sha1" && sha1:
		return crypto.SHA1.Size()
	}
	return 0
}

func descriptorKind(d Descriptor) string {
	switch d.(type) {
	case *PropertyDescriptor:
		return "property"
	case *HashtreeDescriptor:
		return "hashtree"
	case *HashDescriptor:
		return "hash"
	case *KernelCmdlineDescriptor:
		return "kernel cmdline"
	case *ChainPartitionDescriptor:
		return "chain partition"
	}
	return fmt.Sprintf("tag %d", d.Tag())
}
