package avb

import (
	"bytes"
	"crypto/rsa"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"io"
	"iter"

	"github.com/veritytree/veritytree/verity"
)

// HeaderSize is the size of AvbVBMetaImageHeader.
const HeaderSize = 256

// MaxVBMetaSize bounds the vbmeta blobs this package reads, so that a
// footer or header declaring huge blocks is refused before anything is
// allocated. libavb itself reads at most 64 KiB; avbtool writes blobs far
// smaller.
const MaxVBMetaSize = 16 << 20

// ReleaseString is the release string avbtool 1.3.0 writes, which this
// package writes by default so that its output is avbtool's byte for byte.
const ReleaseString = "avbtool 1.3.0"

// releaseStringSize is the release string field; its last byte stays NUL.
const releaseStringSize = 48

// VBMeta image flags (AvbVBMetaImageFlags).
const (
	FlagHashtreeDisabled     = 1 << 0
	FlagVerificationDisabled = 1 << 1
)

var vbmetaMagic = []byte("AVB0")

// Header is AvbVBMetaImageHeader. Offsets of the hash and signature are
// in the authentication block, those of the key, key metadata and
// descriptors in the auxiliary block.
type Header struct {
	RequiredLibavbMajor, RequiredLibavbMinor       uint32
	AuthenticationBlockSize, AuxiliaryBlockSize    uint64
	AlgorithmType                                  uint32
	HashOffset, HashSize                           uint64
	SignatureOffset, SignatureSize                 uint64
	PublicKeyOffset, PublicKeySize                 uint64
	PublicKeyMetadataOffset, PublicKeyMetadataSize uint64
	DescriptorsOffset, DescriptorsSize             uint64
	RollbackIndex                                  uint64
	Flags                                          uint32
	RollbackIndexLocation                          uint32
	ReleaseString                                  string
}

// Encode returns the header's 256 bytes. A release string longer than 47
// bytes is cut, as avbtool does.
func (h *Header) Encode() []byte {
	b := make([]byte, HeaderSize)
	be := binary.BigEndian
	copy(b, vbmetaMagic)
	be.PutUint32(b[4:], h.RequiredLibavbMajor)
	be.PutUint32(b[8:], h.RequiredLibavbMinor)
	be.PutUint64(b[12:], h.AuthenticationBlockSize)
	be.PutUint64(b[20:], h.AuxiliaryBlockSize)
	be.PutUint32(b[28:], h.AlgorithmType)
	for i, v := range []uint64{h.HashOffset, h.HashSize, h.SignatureOffset, h.SignatureSize,
		h.PublicKeyOffset, h.PublicKeySize, h.PublicKeyMetadataOffset, h.PublicKeyMetadataSize,
		h.DescriptorsOffset, h.DescriptorsSize, h.RollbackIndex} {
		be.PutUint64(b[32+8*i:], v)
	}
	be.PutUint32(b[120:], h.Flags)
	be.PutUint32(b[124:], h.RollbackIndexLocation)
	rs := h.ReleaseString
	if len(rs) > releaseStringSize-1 {
		rs = rs[:releaseStringSize-1]
	}
	copy(b[128:128+releaseStringSize-1], rs)
	return b
}

// ParseHeader decodes a vbmeta header (the first 256 bytes of a blob).
func ParseHeader(b []byte) (*Header, error) {
	if len(b) < HeaderSize {
		return nil, malformed("vbmeta header: %d bytes, needs %d", len(b), HeaderSize)
	}
	if !bytes.Equal(b[:4], vbmetaMagic) {
		return nil, malformed("no vbmeta magic AVB0")
	}
	be := binary.BigEndian
	h := &Header{
		RequiredLibavbMajor: be.Uint32(b[4:]), RequiredLibavbMinor: be.Uint32(b[8:]),
		AuthenticationBlockSize: be.Uint64(b[12:]), AuxiliaryBlockSize: be.Uint64(b[20:]),
		AlgorithmType: be.Uint32(b[28:]),
		Flags:         be.Uint32(b[120:]), RollbackIndexLocation: be.Uint32(b[124:]),
		ReleaseString: cString(b[128 : 128+releaseStringSize-1]), // the last byte is the NUL
	}
	v := make([]uint64, 11)
	for i := range v {
		v[i] = be.Uint64(b[32+8*i:])
	}
	h.HashOffset, h.HashSize, h.SignatureOffset, h.SignatureSize = v[0], v[1], v[2], v[3]
	h.PublicKeyOffset, h.PublicKeySize, h.PublicKeyMetadataOffset, h.PublicKeyMetadataSize = v[4], v[5], v[6], v[7]
	h.DescriptorsOffset, h.DescriptorsSize, h.RollbackIndex = v[8], v[9], v[10]
	return h, nil
}

// BlobSize is the size of the whole vbmeta blob the header describes, or
// an error when the blocks' sizes are not multiples of 64 (libavb's rule)
// or exceed MaxVBMetaSize.
func (h *Header) BlobSize() (uint64, error) {
	if h.AuthenticationBlockSize%64 != 0 || h.AuxiliaryBlockSize%64 != 0 {
		return 0, malformed("vbmeta block sizes %d and %d are not multiples of 64", h.AuthenticationBlockSize, h.AuxiliaryBlockSize)
	}
	if h.AuthenticationBlockSize > MaxVBMetaSize || h.AuxiliaryBlockSize > MaxVBMetaSize-HeaderSize-h.AuthenticationBlockSize {
		return 0, malformed("vbmeta blocks of %d and %d bytes exceed %d bytes", h.AuthenticationBlockSize, h.AuxiliaryBlockSize, MaxVBMetaSize)
	}
	return HeaderSize + h.AuthenticationBlockSize + h.AuxiliaryBlockSize, nil
}

// VBMeta is a parsed vbmeta blob.
type VBMeta struct {
	Header *Header
	// Algorithm is the header's algorithm.
	Algorithm *Algorithm
	// Hash and Signature are from the authentication block; PublicKey
	// (the AVB public key blob) and PublicKeyMetadata from the auxiliary
	// block, as are the descriptors (see Descriptors). All are parts of
	// Raw.
	Hash, Signature, PublicKey, PublicKeyMetadata []byte
	// Raw is the blob: header, authentication and auxiliary blocks.
	Raw []byte
	// descs is the descriptor area, every descriptor in it checked;
	// count is how many there are.
	descs []byte
	count int
}

// within checks that [off, off+size) lies in a block of blockSize bytes.
func within(what string, off, size, blockSize uint64) error {
	if off > blockSize || size > blockSize-off {
		return malformed("vbmeta %s at %d, %d bytes, goes past its block of %d bytes", what, off, size, blockSize)
	}
	return nil
}

// ParseVBMeta decodes a vbmeta blob; b may go on past the blob (a vbmeta
// image padded with zeros). Every offset and size is checked against its
// block, and every descriptor is checked, before use; the descriptors are
// decoded only when walked (Descriptors), one at a time, so that the
// memory a blob takes is its own size whatever it holds. The VBMeta keeps
// parts of b, which must not change while it is used.
func ParseVBMeta(b []byte) (*VBMeta, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	size, err := h.BlobSize()
	if err != nil {
		return nil, err
	}
	if size > uint64(len(b)) {
		return nil, malformed("vbmeta blob of %d bytes, only %d given", size, len(b))
	}
	alg, err := AlgorithmByType(h.AlgorithmType)
	if err != nil {
		return nil, malformed("%v", err)
	}
	raw := b[:size:size]
	auth := raw[HeaderSize : HeaderSize+h.AuthenticationBlockSize]
	aux := raw[HeaderSize+h.AuthenticationBlockSize:]
	for _, c := range []struct {
		what      string
		off, size uint64
		block     []byte
	}{
		{"hash", h.HashOffset, h.HashSize, auth},
		{"signature", h.SignatureOffset, h.SignatureSize, auth},
		{"public key", h.PublicKeyOffset, h.PublicKeySize, aux},
		{"public key metadata", h.PublicKeyMetadataOffset, h.PublicKeyMetadataSize, aux},
		{"descriptors", h.DescriptorsOffset, h.DescriptorsSize, aux},
	} {
		// An empty public key metadata may point anywhere (libavb and
		// avbtool read nothing there).
		if c.size == 0 && c.what == "public key metadata" {
			continue
		}
		if err := within(c.what, c.off, c.size, uint64(len(c.block))); err != nil {
			return nil, err
		}
	}
	v := &VBMeta{Header: h, Algorithm: alg, Raw: raw,
		Hash:      part(auth, h.HashOffset, h.HashOffset+h.HashSize),
		Signature: part(auth, h.SignatureOffset, h.SignatureOffset+h.SignatureSize),
		PublicKey: part(aux, h.PublicKeyOffset, h.PublicKeyOffset+h.PublicKeySize),
		descs:     part(aux, h.DescriptorsOffset, h.DescriptorsOffset+h.DescriptorsSize),
	}
	// An empty public key metadata may point anywhere: nothing is read.
	if h.PublicKeyMetadataSize > 0 {
		v.PublicKeyMetadata = part(aux, h.PublicKeyMetadataOffset, h.PublicKeyMetadataOffset+h.PublicKeyMetadataSize)
	}
	if err := walkDescriptors(v.descs, v.checkDescriptor); err != nil {
		return nil, err
	}
	return v, nil
}

func (v *VBMeta) checkDescriptor(_, tag uint64, raw []byte) error {
	_, err := decodeDescriptor(tag, raw, false)
	v.count++
	return err
}

// ReadVBMeta reads and parses the vbmeta blob at offset in r, of at most
// maxSize bytes (the footer's vbmeta size, or a vbmeta image's size).
func ReadVBMeta(r io.ReaderAt, offset int64, maxSize uint64) (*VBMeta, error) {
	hb := make([]byte, HeaderSize)
	if maxSize < HeaderSize {
		return nil, malformed("vbmeta of %d bytes is shorter than its header", maxSize)
	}
	if _, err := r.ReadAt(hb, offset); err != nil {
		return nil, ioErr("reading the vbmeta header at %d: %w", offset, err)
	}
	h, err := ParseHeader(hb)
	if err != nil {
		return nil, err
	}
	size, err := h.BlobSize()
	if err != nil {
		return nil, err
	}
	if size > maxSize {
		return nil, malformed("vbmeta header declares %d bytes, more than the %d there are", size, maxSize)
	}
	b := make([]byte, size)
	if _, err := r.ReadAt(b, offset); err != nil {
		return nil, ioErr("reading the vbmeta blob at %d: %w", offset, err)
	}
	return ParseVBMeta(b)
}

// NumDescriptors is the number of descriptors in the blob.
func (v *VBMeta) NumDescriptors() int { return v.count }

// Descriptors walks the blob's descriptors in order, each decoded when
// reached (all were checked by ParseVBMeta): a blob of a million
// descriptors is walked in the memory of one. The descriptors' byte
// slices are parts of Raw.
func (v *VBMeta) Descriptors() iter.Seq[Descriptor] {
	return func(yield func(Descriptor) bool) {
		v.walk(func(tag uint64, raw []byte) bool {
			d, err := decodeDescriptor(tag, raw, true)
			return err != nil || yield(d) // checked already: err is nil
		})
	}
}

// walk calls fn with the tag and the bytes of each descriptor until fn
// returns false, allocating nothing.
func (v *VBMeta) walk(fn func(tag uint64, raw []byte) bool) {
	walkDescriptors(v.descs, func(_, tag uint64, raw []byte) error {
		if !fn(tag, raw) {
			return errStopWalk
		}
		return nil
	})
}

// HashtreeDescriptors walks the blob's hashtree descriptors in order.
func (v *VBMeta) HashtreeDescriptors() iter.Seq[*HashtreeDescriptor] {
	return func(yield func(*HashtreeDescriptor) bool) {
		v.walk(func(tag uint64, raw []byte) bool {
			if tag != TagHashtree {
				return true
			}
			d, err := decodeDescriptor(tag, raw, true)
			return err != nil || yield(d.(*HashtreeDescriptor))
		})
	}
}

// FirstHashtree returns the blob's first hashtree descriptor, or nil if it
// has none.
func (v *VBMeta) FirstHashtree() *HashtreeDescriptor {
	for d := range v.HashtreeDescriptors() {
		return d
	}
	return nil
}

// Verify checks the blob's hash and signature with its embedded public
// key as avbtool's verify_image does (verify_vbmeta_signature): an
// unsigned blob (NONE) passes, and only the key's modulus is used. It is
// what the avbtool front answers with; a bootloader decides otherwise
// (VerifyWith, Image.VerifyVBMeta). A hash or signature that does not
// match is an error of kind verity.KindCorrupt matching ErrSignature; a
// malformed key is ErrMalformed.
func (v *VBMeta) Verify() error {
	a := v.Algorithm
	if a.Type == 0 {
		return nil
	}
	h := v.Header
	if h.HashSize != uint64(a.HashSize) || h.SignatureSize != uint64(a.SignatureSize) {
		return malformed("vbmeta hash or signature size does not fit %s", a.Name)
	}
	if len(v.PublicKey) != a.PublicKeySize {
		return malformed("vbmeta public key of %d bytes does not fit %s", len(v.PublicKey), a.Name)
	}
	pub, err := DecodePublicKey(v.PublicKey)
	if err != nil {
		return err
	}
	aux := v.Raw[HeaderSize+h.AuthenticationBlockSize:]
	hh := a.Hash.New()
	hh.Write(v.Raw[:HeaderSize])
	hh.Write(aux)
	digest := hh.Sum(nil)
	if subtle.ConstantTimeCompare(digest, v.Hash) != 1 {
		return signatureErr("the hash of the header and auxiliary block does not match the stored hash")
	}
	if err := rsa.VerifyPKCS1v15(pub, a.Hash, digest, v.Signature); err != nil {
		return signatureErr(fmt.Sprintf("%s signature does not verify with the embedded key", a.Name))
	}
	return nil
}

func signatureErr(msg string) error {
	return &verity.Error{Kind: verity.KindCorrupt, Err: fmt.Errorf("%w: %s", ErrSignature, msg)}
}
