package merkle

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/veritytree/veritytree/hashes"
)

// Superblock layout (little-endian, 512 bytes); see FORMAT.md.
const (
	sbSignature     = "verity\x00\x00"
	sbVersion       = 1
	sbOffVersion    = 8
	sbOffHashType   = 12
	sbOffUUID       = 16
	sbOffAlgorithm  = 32
	sbAlgorithmLen  = 32
	sbOffDataBlock  = 64
	sbOffHashBlock  = 68
	sbOffDataBlocks = 72
	sbOffSaltSize   = 80
	sbOffPad1       = 82
	sbOffSalt       = 88
	sbOffPad2       = sbOffSalt + MaxSaltSize
)

// ErrBadSuperblock is wrapped by every error ParseSuperblock returns.
var ErrBadSuperblock = errors.New("bad verity superblock")

// SuperblockError says which field of a superblock is wrong.
type SuperblockError struct {
	Field  string
	Offset int // byte offset of the field in the superblock
	Reason string
	// Name is the algorithm named, when that is what is wrong: not one
	// hashes.Lookup takes.
	Name string
}

func (e *SuperblockError) Error() string {
	return fmt.Sprintf("bad verity superblock: %s (at byte %d): %s", e.Field, e.Offset, e.Reason)
}

func (e *SuperblockError) Unwrap() error { return ErrBadSuperblock }

// EncodeSuperblock returns the 512-byte superblock describing g.
func EncodeSuperblock(g *Geometry) []byte { return encodeParams(g.Params) }

func encodeParams(g Params) []byte {
	b := make([]byte, SuperblockSize)
	copy(b, sbSignature)
	le := binary.LittleEndian
	le.PutUint32(b[sbOffVersion:], sbVersion)
	le.PutUint32(b[sbOffHashType:], uint32(g.Format()))
	copy(b[sbOffUUID:], g.UUID[:])
	copy(b[sbOffAlgorithm:sbOffAlgorithm+sbAlgorithmLen-1], g.SuperblockHashName())
	le.PutUint32(b[sbOffDataBlock:], uint32(g.DataBlockSize))
	le.PutUint32(b[sbOffHashBlock:], uint32(g.HashBlockSize))
	le.PutUint64(b[sbOffDataBlocks:], g.DataBlocks)
	le.PutUint16(b[sbOffSaltSize:], uint16(len(g.Salt)))
	copy(b[sbOffSalt:], g.Salt)
	return b
}

// ParseSuperblock decodes and strictly validates a superblock: signature,
// version, hash type, a known algorithm, block sizes, salt size, and that
// every reserved and padding byte is zero. It returns the parameters it
// describes, with HashOffset 0 and Superblock true; the caller sets the
// offset it read the superblock from.
func ParseSuperblock(b []byte) (Params, error) {
	p, err := DecodeSuperblock(b)
	if err != nil {
		return p, err
	}
	if bad := paddingDiffs(b[:SuperblockSize], p, 1); bad != nil {
		i := bad[0]
		field := "reserved"
		switch {
		case i >= sbOffAlgorithm && i < sbOffAlgorithm+sbAlgorithmLen:
			field = "algorithm"
		case i >= sbOffSalt && i < sbOffPad2:
			field = "salt"
		}
		return Params{}, &SuperblockError{Field: field, Offset: i, Reason: "non-zero padding byte"}
	}
	return p, nil
}

// paddingDiffs returns the offsets (at most limit of them; all if limit < 0)
// of the bytes of b that differ from the canonical encoding of p. Once the
// fields have decoded, only reserved and padding bytes can differ.
func paddingDiffs(b []byte, p Params, limit int) []int {
	want := encodeParams(p)
	var bad []int
	for i := range want {
		if b[i] != want[i] {
			if bad = append(bad, i); len(bad) == limit {
				break
			}
		}
	}
	return bad
}

// SuperblockPaddingErrors lists the offset of every reserved or padding
// byte of a superblock that is not zero. It returns nil if b does not
// decode with DecodeSuperblock.
func SuperblockPaddingErrors(b []byte) []int {
	p, err := DecodeSuperblock(b)
	if err != nil {
		return nil
	}
	return paddingDiffs(b[:SuperblockSize], p, -1)
}

// DecodeSuperblock is ParseSuperblock without the checks of reserved and
// padding bytes: it fails only when the fields that define the tree are
// unusable, so a checker can still verify, and report, the rest.
func DecodeSuperblock(b []byte) (Params, error) {
	bad := func(field string, off int, format string, args ...any) (Params, error) {
		return Params{}, &SuperblockError{Field: field, Offset: off, Reason: fmt.Sprintf(format, args...)}
	}
	if len(b) < SuperblockSize {
		return bad("length", 0, "%d bytes, need %d", len(b), SuperblockSize)
	}
	b = b[:SuperblockSize]
	le := binary.LittleEndian
	if string(b[:8]) != sbSignature {
		return bad("signature", 0, "%x is not %x (\"verity\" and two NULs)", b[:8], sbSignature)
	}
	if v := le.Uint32(b[sbOffVersion:]); v != sbVersion {
		return bad("version", sbOffVersion, "%d, only version 1 exists", v)
	}
	p := Params{Superblock: true}
	ht := le.Uint32(b[sbOffHashType:])
	if ht > 1 {
		return bad("hash type", sbOffHashType, "%d is not 0 or 1", ht)
	}
	p.LegacyFormat = ht == 0
	copy(p.UUID[:], b[sbOffUUID:])

	algField := b[sbOffAlgorithm : sbOffAlgorithm+sbAlgorithmLen]
	name, _, _ := bytes.Cut(algField, []byte{0})
	if len(name) == sbAlgorithmLen {
		return bad("algorithm", sbOffAlgorithm, "name is not NUL-terminated")
	}
	alg, err := hashes.Lookup(string(name))
	if err != nil {
		return Params{}, &SuperblockError{Field: "algorithm", Offset: sbOffAlgorithm, Reason: err.Error(), Name: string(name)}
	}
	if strings.ToLower(string(name)) != string(name) {
		return bad("algorithm", sbOffAlgorithm, "%q is not in lower case", name)
	}
	p.Hash = alg
	if alg.Name() != string(name) {
		p.HashName = string(name) // veritysetup's other spelling: "ripemd160", "sha2-256"
	}

	p.DataBlockSize = int(le.Uint32(b[sbOffDataBlock:]))
	if err := CheckBlockSize(p.DataBlockSize); err != nil {
		return bad("data block size", sbOffDataBlock, "%v", err)
	}
	p.HashBlockSize = int(le.Uint32(b[sbOffHashBlock:]))
	if err := CheckBlockSize(p.HashBlockSize); err != nil {
		return bad("hash block size", sbOffHashBlock, "%v", err)
	}
	p.DataBlocks = le.Uint64(b[sbOffDataBlocks:])
	if p.DataBlocks == 0 {
		return bad("data blocks", sbOffDataBlocks, "zero")
	}
	if p.DataBlocks > (1<<63)/uint64(p.DataBlockSize) {
		return bad("data blocks", sbOffDataBlocks, "%d blocks of %d bytes overflow", p.DataBlocks, p.DataBlockSize)
	}
	saltSize := int(le.Uint16(b[sbOffSaltSize:]))
	if saltSize > MaxSaltSize {
		return bad("salt size", sbOffSaltSize, "%d is more than %d", saltSize, MaxSaltSize)
	}
	p.Salt = append([]byte{}, b[sbOffSalt:sbOffSalt+saltSize]...)
	return p, nil
}

// firstNonZero returns the index of the first non-zero byte of b, or -1.
func firstNonZero(b []byte) int {
	for i, c := range b {
		if c != 0 {
			return i
		}
	}
	return -1
}
