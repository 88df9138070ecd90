package avb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
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

// Hash descriptor flags (AvbHashDescriptorFlags).
const HashFlagDoNotUseAB = 1 << 0

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

// frameSize is the size of a descriptor whose fixed part (header included)
// is fixed bytes, followed by n bytes, zeros to a multiple of 8.
func frameSize(fixed, n int) int {
	return descHeaderSize + int(roundUp8(uint64(fixed-descHeaderSize+n)))
}

// frame appends a descriptor to dst: the header with tag and the padded
// length of a body of n bytes after the fixed part, zeros for the rest;
// it returns dst and the descriptor's bytes in it, to be filled in.
func frame(dst []byte, tag uint64, fixed int, n int) ([]byte, []byte) {
	size := frameSize(fixed, n)
	dst = slices.Grow(dst, size)
	dst = dst[:len(dst)+size]
	b := dst[len(dst)-size:]
	clear(b)
	binary.BigEndian.PutUint64(b, tag)
	binary.BigEndian.PutUint64(b[8:], uint64(size-descHeaderSize))
	return dst, b
}

// appender is implemented by this package's descriptors: appendTo appends
// the encoding to dst, and size is its length.
type appender interface {
	appendTo(dst []byte) []byte
	size() int
}

// appendDescriptor appends d's encoding to dst.
func appendDescriptor(dst []byte, d Descriptor) []byte {
	if a, ok := d.(appender); ok {
		return a.appendTo(dst)
	}
	return append(dst, d.Encode()...)
}

// encodedSize is the length of d's encoding.
func encodedSize(d Descriptor) int {
	if a, ok := d.(appender); ok {
		return a.size()
	}
	return len(d.Encode())
}

func (d *PropertyDescriptor) Encode() []byte { return d.appendTo(nil) }
func (d *PropertyDescriptor) size() int {
	return frameSize(propertyFixed, len(d.Key)+1+len(d.Value)+1)
}

func (d *PropertyDescriptor) appendTo(dst []byte) []byte {
	dst, b := frame(dst, TagProperty, propertyFixed, len(d.Key)+1+len(d.Value)+1)
	binary.BigEndian.PutUint64(b[16:], uint64(len(d.Key)))
	binary.BigEndian.PutUint64(b[24:], uint64(len(d.Value)))
	o := propertyFixed
	o += copy(b[o:], d.Key) + 1
	copy(b[o:], d.Value)
	return dst
}

func (d *HashtreeDescriptor) Encode() []byte { return d.appendTo(nil) }
func (d *HashtreeDescriptor) size() int {
	return frameSize(hashtreeFixed, len(d.PartitionName)+len(d.Salt)+len(d.RootDigest))
}

func (d *HashtreeDescriptor) appendTo(dst []byte) []byte {
	dst, b := frame(dst, TagHashtree, hashtreeFixed, len(d.PartitionName)+len(d.Salt)+len(d.RootDigest))
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
	return dst
}

func (d *HashDescriptor) Encode() []byte { return d.appendTo(nil) }
func (d *HashDescriptor) size() int {
	return frameSize(hashFixed, len(d.PartitionName)+len(d.Salt)+len(d.Digest))
}

func (d *HashDescriptor) appendTo(dst []byte) []byte {
	dst, b := frame(dst, TagHash, hashFixed, len(d.PartitionName)+len(d.Salt)+len(d.Digest))
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
	return dst
}

func (d *KernelCmdlineDescriptor) Encode() []byte { return d.appendTo(nil) }
func (d *KernelCmdlineDescriptor) size() int      { return frameSize(cmdlineFixed, len(d.Cmdline)) }

func (d *KernelCmdlineDescriptor) appendTo(dst []byte) []byte {
	dst, b := frame(dst, TagKernelCmdline, cmdlineFixed, len(d.Cmdline))
	binary.BigEndian.PutUint32(b[16:], d.Flags)
	binary.BigEndian.PutUint32(b[20:], uint32(len(d.Cmdline)))
	copy(b[cmdlineFixed:], d.Cmdline)
	return dst
}

func (d *ChainPartitionDescriptor) Encode() []byte { return d.appendTo(nil) }
func (d *ChainPartitionDescriptor) size() int {
	return frameSize(chainFixed, len(d.PartitionName)+len(d.PublicKey))
}

func (d *ChainPartitionDescriptor) appendTo(dst []byte) []byte {
	dst, b := frame(dst, TagChainPartition, chainFixed, len(d.PartitionName)+len(d.PublicKey))
	be := binary.BigEndian
	be.PutUint32(b[16:], d.RollbackIndexLocation)
	be.PutUint32(b[20:], uint32(len(d.PartitionName)))
	be.PutUint32(b[24:], uint32(len(d.PublicKey)))
	be.PutUint32(b[28:], d.Flags)
	o := chainFixed
	o += copy(b[o:], d.PartitionName)
	copy(b[o:], d.PublicKey)
	return dst
}

func (d *UnknownDescriptor) Encode() []byte { return d.appendTo(nil) }
func (d *UnknownDescriptor) size() int      { return descHeaderSize + len(d.Data) }

func (d *UnknownDescriptor) appendTo(dst []byte) []byte {
	dst = slices.Grow(dst, d.size())
	dst = binary.BigEndian.AppendUint64(dst, d.TagValue)
	dst = binary.BigEndian.AppendUint64(dst, uint64(len(d.Data)))
	return append(dst, d.Data...)
}

// EncodeDescriptors concatenates the descriptors' encodings.
func EncodeDescriptors(ds []Descriptor) []byte {
	n := 0
	for _, d := range ds {
		n += encodedSize(d)
	}
	b := make([]byte, 0, n)
	for _, d := range ds {
		b = appendDescriptor(b, d)
	}
	return b
}

// ParseDescriptors decodes the descriptors of an auxiliary block's
// descriptor area, all of them, into one slice: VBMeta.Descriptors walks a
// blob's descriptors one at a time instead, in bounded memory. Lengths are
// checked before anything is sliced: a descriptor going past the area, or
// whose declared sizes do not add up to its length (as avbtool requires),
// is ErrMalformed. A descriptor of an unknown tag becomes an
// UnknownDescriptor. The descriptors' byte slices are parts of b.
func ParseDescriptors(b []byte) ([]Descriptor, error) {
	var ds []Descriptor
	err := walkDescriptors(b, func(_, tag uint64, raw []byte) error {
		d, err := decodeDescriptor(tag, raw, true)
		if err == nil {
			ds = append(ds, d)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return ds, nil
}

// errStopWalk, returned by walkDescriptors' fn, ends the walk without
// error.
var errStopWalk = errors.New("stop")

// walkDescriptors calls fn with the offset, tag and bytes (header and
// body) of each descriptor of a descriptor area, checking only that each
// lies in the area; an error of fn (but errStopWalk) is returned as the
// descriptor's ErrMalformed. Nothing is allocated but on error.
func walkDescriptors(b []byte, fn func(off, tag uint64, raw []byte) error) error {
	for o := uint64(0); o < uint64(len(b)); {
		rest := uint64(len(b)) - o
		if rest < descHeaderSize {
			return malformed("descriptor at %d: %d bytes left, a header takes %d", o, rest, descHeaderSize)
		}
		tag := binary.BigEndian.Uint64(b[o:])
		nbf := binary.BigEndian.Uint64(b[o+8:])
		if nbf > rest-descHeaderSize {
			return malformed("descriptor at %d: %d bytes follow its header, only %d are left", o, nbf, rest-descHeaderSize)
		}
		raw := b[o : o+descHeaderSize+nbf : o+descHeaderSize+nbf]
		if err := fn(o, tag, raw); err == errStopWalk {
			return nil
		} else if err != nil {
			return malformed("descriptor at %d (tag %d): %v", o, tag, err)
		}
		o += descHeaderSize + nbf
	}
	return nil
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

// part is b[from:to], its capacity cut there: a descriptor's slices are
// parts of the blob, and an append to one must not write over the rest.
func part(b []byte, from, to uint64) []byte { return b[from:to:to] }

// decodeDescriptor checks a descriptor (raw: its header and body) and,
// with build, returns it decoded; without, it allocates nothing (a
// vbmeta's descriptors are all checked when it is parsed, and decoded one
// at a time when walked). Byte slices are parts of raw; strings are
// copies.
func decodeDescriptor(tag uint64, raw []byte, build bool) (Descriptor, error) {
	switch tag {
	case TagProperty:
		return decodeProperty(raw, build)
	case TagHashtree:
		return decodeHashtree(raw, build)
	case TagHash:
		return decodeHash(raw, build)
	case TagKernelCmdline:
		return decodeCmdline(raw, build)
	case TagChainPartition:
		return decodeChain(raw, build)
	}
	if !build {
		return nil, nil
	}
	return &UnknownDescriptor{TagValue: tag, Data: part(raw, descHeaderSize, uint64(len(raw)))}, nil
}

func decodeProperty(raw []byte, build bool) (Descriptor, error) {
	if len(raw) < propertyFixed {
		return nil, descErr("shorter than its fixed part")
	}
	be := binary.BigEndian
	kl, vl := be.Uint64(raw[16:]), be.Uint64(raw[24:])
	if kl > uint64(len(raw)) || vl > uint64(len(raw)) {
		return nil, descErr("a length goes past the descriptor")
	}
	v, err := body(raw, propertyFixed, kl, 1, vl, 1)
	if err != nil {
		return nil, err
	}
	if err := validUTF8("key", v[:kl]); err != nil || !build {
		return nil, err
	}
	return &PropertyDescriptor{Key: string(v[:kl]), Value: part(v, kl+1, kl+1+vl)}, nil
}

func decodeHashtree(raw []byte, build bool) (Descriptor, error) {
	if len(raw) < hashtreeFixed {
		return nil, descErr("shorter than its fixed part")
	}
	be := binary.BigEndian
	nl, sl, dl := uint64(be.Uint32(raw[104:])), uint64(be.Uint32(raw[108:])), uint64(be.Uint32(raw[112:]))
	v, err := body(raw, hashtreeFixed, nl, sl, dl)
	if err != nil {
		return nil, err
	}
	if err := validUTF8("partition name", v[:nl]); err != nil {
		return nil, err
	}
	alg := cBytes(raw[72 : 72+hashAlgFieldSize])
	if size, known := digestSize(alg); dl != 0 && known && size != int(dl) {
		return nil, descErr("root digest length does not match the hash algorithm")
	}
	if !build {
		return nil, nil
	}
	return &HashtreeDescriptor{
		DMVerityVersion: be.Uint32(raw[16:]), ImageSize: be.Uint64(raw[20:]),
		TreeOffset: be.Uint64(raw[28:]), TreeSize: be.Uint64(raw[36:]),
		DataBlockSize: be.Uint32(raw[44:]), HashBlockSize: be.Uint32(raw[48:]),
		FECNumRoots: be.Uint32(raw[52:]), FECOffset: be.Uint64(raw[56:]), FECSize: be.Uint64(raw[64:]),
		HashAlgorithm: string(alg), Flags: be.Uint32(raw[116:]),
		PartitionName: string(v[:nl]), Salt: part(v, nl, nl+sl), RootDigest: part(v, nl+sl, nl+sl+dl),
	}, nil
}

func decodeHash(raw []byte, build bool) (Descriptor, error) {
	if len(raw) < hashFixed {
		return nil, descErr("shorter than its fixed part")
	}
	be := binary.BigEndian
	nl, sl, dl := uint64(be.Uint32(raw[56:])), uint64(be.Uint32(raw[60:])), uint64(be.Uint32(raw[64:]))
	v, err := body(raw, hashFixed, nl, sl, dl)
	if err != nil {
		return nil, err
	}
	if err := validUTF8("partition name", v[:nl]); err != nil || !build {
		return nil, err
	}
	return &HashDescriptor{
		ImageSize: be.Uint64(raw[16:]), HashAlgorithm: cString(raw[24 : 24+hashAlgFieldSize]),
		PartitionName: string(v[:nl]), Salt: part(v, nl, nl+sl), Digest: part(v, nl+sl, nl+sl+dl),
		Flags: be.Uint32(raw[68:]),
	}, nil
}

func decodeCmdline(raw []byte, build bool) (Descriptor, error) {
	if len(raw) < cmdlineFixed {
		return nil, descErr("shorter than its fixed part")
	}
	be := binary.BigEndian
	v, err := body(raw, cmdlineFixed, uint64(be.Uint32(raw[20:])))
	if err != nil {
		return nil, err
	}
	if err := validUTF8("kernel command line", v); err != nil || !build {
		return nil, err
	}
	return &KernelCmdlineDescriptor{Flags: be.Uint32(raw[16:]), Cmdline: string(v)}, nil
}

func decodeChain(raw []byte, build bool) (Descriptor, error) {
	if len(raw) < chainFixed {
		return nil, descErr("shorter than its fixed part")
	}
	be := binary.BigEndian
	nl, kl := uint64(be.Uint32(raw[20:])), uint64(be.Uint32(raw[24:]))
	v, err := body(raw, chainFixed, nl, kl)
	if err != nil {
		return nil, err
	}
	if err := validUTF8("partition name", v[:nl]); err != nil || !build {
		return nil, err
	}
	return &ChainPartitionDescriptor{RollbackIndexLocation: be.Uint32(raw[16:]),
		PartitionName: string(v[:nl]), PublicKey: part(v, nl, nl+kl), Flags: be.Uint32(raw[28:])}, nil
}

// digestNames are the hashes' names and digest sizes, for checking a root
// digest's length without allocating.
var digestNames = func() (t []struct {
	name []byte
	size int
}) {
	for _, n := range hashes.Names() {
		a, _ := hashes.Lookup(n)
		t = append(t, struct {
			name []byte
			size int
		}{[]byte(n), a.Size()})
	}
	return t
}()

// digestSize is the digest size of the hash named name (any case), if it
// is known.
func digestSize(name []byte) (int, bool) {
	for _, d := range digestNames {
		if bytes.EqualFold(name, d.name) {
			return d.size, true
		}
	}
	return 0, false
}

// cBytes is a fixed-size field up to its first NUL.
func cBytes(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// cString is a fixed-size field up to its first NUL.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
