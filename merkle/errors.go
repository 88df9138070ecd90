package merkle

import (
	"errors"
	"fmt"
)

// ErrCorrupt is wrapped by every error that says the data or the tree is
// not what the root hash vouches for.
var ErrCorrupt = errors.New("verity: corruption")

// Level says where a block lies: a tree level (0 holds the digests of the
// data blocks, Geometry.Levels-1 is the top block), or one of the named
// places below, which are not tree levels.
type Level int

const (
	// DataLevel is the level of a data block: data blocks sit one level
	// below the tree's level 0.
	DataLevel Level = -1
	// HeaderLevel is the superblock area of the hash device, outside the
	// tree: a reserved byte of the superblock, or the zero bytes between
	// the superblock and the tree (a CorruptionError's Offset is then the
	// byte's own offset).
	HeaderLevel Level = -2
	// PastTreeLevel is a block of the hash device after the tree, before
	// the FEC parity: error correction covers it, the tree does not.
	PastTreeLevel Level = -3
)

// IsTree reports whether l is a level of the tree (0 and up).
func (l Level) IsTree() bool { return l >= 0 }

// String names the level: "data", "superblock area", "past the tree", or
// "level N".
func (l Level) String() string {
	switch {
	case l == DataLevel:
		return "data"
	case l == HeaderLevel:
		return "superblock area"
	case l == PastTreeLevel:
		return "past the tree"
	case l >= 0:
		return fmt.Sprintf("level %d", int(l))
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// CorruptionError names one block that failed verification. Use errors.Is
// with ErrCorrupt, errors.As to get the block.
type CorruptionError struct {
	// Level is DataLevel for a data block, HeaderLevel for the superblock
	// area, else the tree level of a hash block.
	Level Level
	// Index is the block's index within its level (or among the data blocks).
	Index uint64
	// Offset is the block's byte offset in its file: the data device for a
	// data block, the hash device for a hash block.
	Offset uint64
	// Reason says what failed, e.g. "digest mismatch".
	Reason string
	// Fault is what failed, for a caller to act on without reading
	// Reason: FaultDigest (the zero value) or FaultPadding.
	Fault Fault
	// PaddingAt is, for FaultPadding, the byte of the block where its
	// first non-zero padding byte is.
	PaddingAt int
}

// Fault says what is wrong with a block a CorruptionError names.
type Fault uint8

const (
	// FaultDigest: the block's digest is not what its parent (or the root
	// hash) holds, or, in the superblock area, a byte differs from what it
	// must be.
	FaultDigest Fault = iota
	// FaultPadding: a hash block holds a non-zero byte where its digests
	// leave padding (the kernel requires zeros there), at PaddingAt.
	FaultPadding
)

func (e *CorruptionError) Error() string {
	switch e.Level {
	case HeaderLevel:
		return fmt.Sprintf("byte %d of the hash device (superblock area) is corrupted: %s", e.Offset, e.Reason)
	case DataLevel:
		return fmt.Sprintf("data block %d (byte %d of the data) is corrupted: %s", e.Index, e.Offset, e.Reason)
	}
	return fmt.Sprintf("hash block %d of level %d (byte %d of the hash device) is corrupted: %s", e.Index, e.Level, e.Offset, e.Reason)
}

func (e *CorruptionError) Unwrap() error { return ErrCorrupt }
