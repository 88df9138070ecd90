package avb

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"

	"github.com/veritytree/veritytree/hashes"
)

// Descriptor tags (AvbDescriptorTag).
const (
	TagProperty       = 0
	TagHashtree       = 1
	TagHash           = 2
	TagKernelCmdline  = 3
	TagChainPartition = 4
)

// Descriptor is one descriptor of a vbmeta blob's auxiliary block.
type Descriptor interface {
	// Tag is the descriptor's AvbDescriptorTag.
	Tag() uint64
	// Encode returns the descriptor's bytes: the 16-byte header, the body,
	// zeros to a multiple of 8.
	Encode() []byte
}

// Hashtree descriptor flags (AvbHashtreeDescriptorFlags).
const (
	HashtreeFlagDoNotUseAB      = 1 << 0
	HashtreeFlagCheckAtMostOnce = 1 << 1
)

// Kernel command-line descriptor flags.
const (
	CmdlineFlagUseOnlyIfHashtreeNotDisabled = 1 << 0
	CmdlineFlagUseOnlyIfHashtreeDisabled    = 1 << 1
)

// Chain partition descriptor flags.
const ChainFlagDoNotUseAB = 1 << 0

// PropertyDescriptor is a key and a value (any bytes).
type PropertyDescriptor struct {
	Key   string
	Value []byte
}

// HashtreeDescriptor says where a partition's dm-verity tree and parity
// are and what the tree's root digest is.
type HashtreeDescriptor struct {
	DMVerityVersion              uint32
	ImageSize                    uint64
	TreeOffset, TreeSize         uint64
	DataBlockSize, HashBlockSize uint32
	FECNumRoots                  uint32
	FECOffset, FECSize           uint64
	HashAlgorithm                string
	PartitionName                string
	Salt, RootDigest             []byte
	Flags                        uint32
}

// HashDescriptor is the digest of a whole partition (boot images).
type HashDescriptor struct {
	ImageSize     uint64
	HashAlgorithm string
	PartitionName string
	Salt, Digest  []byte
	Flags         uint32
}

// KernelCmdlineDescriptor is a snippet of the kernel command line.
type KernelCmdlineDescriptor struct {
	Flags   uint32
	Cmdline string
}

// ChainPartitionDescriptor delegates a partition to a vbmeta signed with
// another key.
type ChainPartitionDescriptor struct {
	RollbackIndexLocation uint32
	PartitionName         string
	PublicKey             []byte
	Flags                 uint32
}

// UnknownDescriptor is a descriptor of a tag this package does not know,
// kept as it is: Data is everything after the 16-byte header, padding
// included, so that it encodes to the same bytes.
type UnknownDescriptor struct {
	TagValue uint64
	Data     []byte
}

func (*PropertyDescriptor) Tag() uint64       { return TagProperty }
func (*HashtreeDescriptor) Tag() uint64       { return TagHashtree }
func (*HashDescriptor) Tag() uint64           { return TagHash }
func (*KernelCmdlineDescriptor) Tag() uint64  { return TagKernelCmdline }
func (*ChainPartitionDescriptor) Tag() uint64 { return TagChainPartition }
func (d *UnknownDescriptor) Tag() uint64      { return d.TagValue }

const (
	descHeaderSize   = 16
	propertyFixed    = 32
	hashtreeFixed    = 180
	hashFixed        = 132
	cmdlineFixed     = 24
	chainFixed       = 92
	hashAlgFieldSize = 32
)

func roundUp8(n uint64) uint64 { return (n + 7) &^ 7 }

// frame returns a descriptor buffer: header with tag and the padded length
// of a body of n bytes after the fixed part, the fixed part zeroed.
func frame(tag uint64, fixed int, n int) []byte {
	nbf := roundUp8(uint64(fixed - descHeaderSize + n))
	b := make([]byte, descHeaderSize+int(nbf))
	binary.BigEndian.PutUint64(b, tag)
	binary.BigEndian.PutUint64(b[8:], nbf)
	return b
}

func (d *PropertyDescriptor) Encode() []byte {
	b := frame(TagProperty, propertyFixed, len(d.Key)+1+len(d.Value)+1)
	binary.BigEndian.PutUint64(b[16:], uint64(len(d.Key)))
	binary.BigEndian.PutUint64(b[24:], uint64(len(d.Value)))
	o := propertyFixed
	o += copy(b[o:], d.Key) + 1
	copy(b[o:], d.Value)
	return b
}

func (d *HashtreeDescriptor) Encode() []byte {
	b := frame(TagHashtree, hashtreeFixed, len(d.PartitionName)+len(d.Salt)+len(d.RootDigest))
	be := binary.BigEndian
	be.PutUint32(b[16:], d.DMVerityVersion)
	be.PutUint64(b[20:], d.ImageSize)
	be.PutUint64(b[28:], d.TreeOffset)
	be.PutUint64(b[36:], d.TreeSize)
	be.PutUint32(b[44:], d.DataBlockSize)
	be.PutUint32(b[48:], d.HashBlockSize)
	be.PutUint32(b[52:], d.FECNumRoots)
	be.PutUint64(b[56:], d.FECOffset)
	be.PutUint64(b[64:], d.FECSize)
	copy(b[72:72+hashAlgFieldSize], d.HashAlgorithm)
	be.PutUint32(b[104:], uint32(len(d.PartitionName)))
	be.PutUint32(b[108:], uint32(len(d.Salt)))
	be.PutUint32(b[112:], uint32(len(d.RootDigest)))
	be.PutUint32(b[116:], d.Flags)
	o := hashtreeFixed
	o += copy(b[o:], d.PartitionName)
	o += copy(b[o:], d.Salt)
	copy(b[o:], d.RootDigest)
	return b
}

func (d *HashDescriptor) Encode() []byte {
	b := frame(TagHash, hashFixed, len(d.PartitionName)+len(d.Salt)+len(d.Digest))
	be := binary.BigEndian
	be.PutUint64(b[16:], d.ImageSize)
	copy(b[24:24+hashAlgFieldSize], d.HashAlgorithm)
	be.PutUint32(b[56:], uint32(len(d.PartitionName)))
	be.PutUint32(b[60:], uint32(len(d.Salt)))
	be.PutUint32(b[64:], uint32(len(d.Digest)))
	be.PutUint32(b[68:], d.Flags)
	o := hashFixed
	o += copy(b[o:], d.PartitionName)
	o += copy(b[o:], d.Salt)
	copy(b[o:], d.Digest)
	return b
}

func (d *KernelCmdlineDescriptor) Encode() []byte {
	b := frame(TagKernelCmdline, cmdlineFixed, len(d.Cmdline))
	binary.BigEndian.PutUint32(b[16:], d.Flags)
	binary.BigEndian.PutUint32(b[20:], uint32(len(d.Cmdline)))
	copy(b[cmdlineFixed:], d.Cmdline)
	return b
}

func (d *ChainPartitionDescriptor) Encode() []byte {
	b := frame(TagChainPartition, chainFixed, len(d.PartitionName)+len(d.PublicKey))
	be := binary.BigEndian
	be.PutUint32(b[16:], d.RollbackIndexLocation)
	be.PutUint32(b[20:], uint32(len(d.PartitionName)))
	be.PutUint32(b[24:], uint32(len(d.PublicKey)))
	be.PutUint32(b[28:], d.Flags)
	o := chainFixed
	o += copy(b[o:], d.PartitionName)
	copy(b[o:], d.PublicKey)
	return b
}

func (d *UnknownDescriptor) Encode() []byte {
	b := make([]byte, descHeaderSize+len(d.Data))
	binary.BigEndian.PutUint64(b, d.TagValue)
	binary.BigEndian.PutUint64(b[8:], uint64(len(d.Data)))
	copy(b[descHeaderSize:], d.Data)
	return b
}

// EncodeDescriptors concatenates the descriptors' encodings.
func EncodeDescriptors(ds []Descriptor) []byte {
	var b []byte
	for _, d := range ds {
		b = append(b, d.Encode()...)
	}
	return b
}

// ParseDescriptors decodes the descriptors of an auxiliary block's
// descriptor area. Lengths are checked before anything is sliced: a
// descriptor going past the area, or whose declared sizes do not add up
// to its length (as avbtool requires), is ErrMalformed. A descriptor of an
// unknown tag becomes an UnknownDescriptor.
func ParseDescriptors(b []byte) ([]Descriptor, error) {
	var ds []Descriptor
	for o := uint64(0); o < uint64(len(b)); {
		rest := uint64(len(b)) - o
		if rest < descHeaderSize {
			return nil, malformed("descriptor at %d: %d bytes left, a header takes %d", o, rest, descHeaderSize)
		}
		tag := binary.BigEndian.Uint64(b[o:])
		nbf := binary.BigEndian.Uint64(b[o+8:])
		if nbf > rest-descHeaderSize {
			return nil, malformed("descriptor at %d: %d bytes follow its header, only %d are left", o, nbf, rest-descHeaderSize)
		}
		raw := b[o : o+descHeaderSize+nbf]
		d, err := parseDescriptor(tag, raw)
		if err != nil {
			return nil, malformed("descriptor at %d (tag %d): %v", o, tag, err)
		}
		ds = append(ds, d)
		o += descHeaderSize + nbf
	}
	return ds, nil
}

type descErr string

func (e descErr) Error() string { return string(e) }

// body checks the fixed part and the variable lengths of a descriptor and
// returns its variable part, cut at the lengths' sum.
func body(raw []byte, fixed int, lens ...uint64) ([]byte, error) {
	if len(raw) < fixed {
		return nil, descErr("shorter than its fixed part")
	}
	var sum uint64
	for _, l := range lens {
		if l > uint64(len(raw)) {
			return nil, descErr("a length goes past the descriptor")
		}
		sum += l
	}
	if roundUp8(uint64(fixed-descHeaderSize)+sum) != uint64(len(raw)-descHeaderSize) {
		return nil, descErr("its lengths do not add up to its size")
	}
	return raw[fixed : uint64(fixed)+sum], nil
}

func validUTF8(what string, b []byte) error {
	if !utf8.Valid(b) {
		return descErr(what + " is not UTF-8")
	}
	return nil
}

func clone(b []byte) []byte { return append([]byte{}, b...) }

func parseDescriptor(tag uint64, raw []byte) (Descriptor, error) {
	be := binary.BigEndian
	switch tag {
	case TagProperty:
		if len(raw) < propertyFixed {
			return nil, descErr("shorter than its fixed part")
		}
		kl, vl := be.Uint64(raw[16:]), be.Uint64(raw[24:])
		if kl > uint64(len(raw)) || vl > uint64(len(raw)) {
			return nil, descErr("a length goes past the descriptor")
		}
		v, err := body(raw, propertyFixed, kl, 1, vl, 1)
		if err != nil {
			return nil, err
		}
		if err := validUTF8("key", v[:kl]); err != nil {
			return nil, err
		}
		return &PropertyDescriptor{Key: string(v[:kl]), Value: clone(v[kl+1 : kl+1+vl])}, nil
	case TagHashtree:
		if len(raw) < hashtreeFixed {
			return nil, descErr("shorter than its fixed part")
		}
		nl, sl, dl := uint64(be.Uint32(raw[104:])), uint64(be.Uint32(raw[108:])), uint64(be.Uint32(raw[112:]))
		v, err := body(raw, hashtreeFixed, nl, sl, dl)
		if err != nil {
			return nil, err
		}
		d := &HashtreeDescriptor{
			DMVerityVersion: be.Uint32(raw[16:]), ImageSize: be.Uint64(raw[20:]),
			TreeOffset: be.Uint64(raw[28:]), TreeSize: be.Uint64(raw[36:]),
			DataBlockSize: be.Uint32(raw[44:]), HashBlockSize: be.Uint32(raw[48:]),
			FECNumRoots: be.Uint32(raw[52:]), FECOffset: be.Uint64(raw[56:]), FECSize: be.Uint64(raw[64:]),
			HashAlgorithm: cString(raw[72 : 72+hashAlgFieldSize]),
			Flags:         be.Uint32(raw[116:]),
		}
		if err := validUTF8("partition name", v[:nl]); err != nil {
			return nil, err
		}
		d.PartitionName = string(v[:nl])
		d.Salt = clone(v[nl : nl+sl])
		d.RootDigest = clone(v[nl+sl:])
		if dl != 0 {
			if a, err := hashes.Lookup(d.HashAlgorithm); err == nil && a.Size() != int(dl) {
				return nil, descErr("root digest length does not match the hash algorithm")
			}
		}
		return d, nil
	case TagHash:
		if len(raw) < hashFixed {
			return nil, descErr("shorter than its fixed part")
		}
		nl, sl, dl := uint64(be.Uint32(raw[56:])), uint64(be.Uint32(raw[60:])), uint64(be.Uint32(raw[64:]))
		v, err := body(raw, hashFixed, nl, sl, dl)
		if err != nil {
			return nil, err
		}
		if err := validUTF8("partition name", v[:nl]); err != nil {
			return nil, err
		}
		return &HashDescriptor{
			ImageSize: be.Uint64(raw[16:]), HashAlgorithm: cString(raw[24 : 24+hashAlgFieldSize]),
			PartitionName: string(v[:nl]), Salt: clone(v[nl : nl+sl]), Digest: clone(v[nl+sl:]),
			Flags: be.Uint32(raw[68:]),
		}, nil
	case TagKernelCmdline:
		if len(raw) < cmdlineFixed {
			return nil, descErr("shorter than its fixed part")
		}
		cl := uint64(be.Uint32(raw[20:]))
		v, err := body(raw, cmdlineFixed, cl)
		if err != nil {
			return nil, err
		}
		if err := validUTF8("kernel command line", v); err != nil {
			return nil, err
		}
		return &KernelCmdlineDescriptor{Flags: be.Uint32(raw[16:]), Cmdline: string(v)}, nil
	case TagChainPartition:
		if len(raw) < chainFixed {
			return nil, descErr("shorter than its fixed part")
		}
		nl, kl := uint64(be.Uint32(raw[20:])), uint64(be.Uint32(raw[24:]))
		v, err := body(raw, chainFixed, nl, kl)
		if err != nil {
			return nil, err
		}
		if err := validUTF8("partition name", v[:nl]); err != nil {
			return nil, err
		}
		return &ChainPartitionDescriptor{RollbackIndexLocation: be.Uint32(raw[16:]),
			PartitionName: string(v[:nl]), PublicKey: clone(v[nl:]), Flags: be.Uint32(raw[28:])}, nil
	}
	return &UnknownDescriptor{TagValue: tag, Data: clone(raw[descHeaderSize:])}, nil
}

// cString is a fixed-size field up to its first NUL.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
