package merkle

import (
	"errors"
	"fmt"
)

// ErrCorrupt is wrapped by every error that says the data or the tree is
// not what the root hash vouches for.
var ErrCorrupt = errors.New("verity: corruption")

// DataLevel is the Level of a data block in a CorruptionError: data blocks
// sit one level below the tree's level 0.
const DataLevel = -1

// HeaderLevel is the Level of a CorruptionError in the hash device outside
// the tree: a reserved byte of the superblock, or the zero bytes between
// the superblock and the tree. Offset is then the byte's own offset.
const HeaderLevel = -2

// CorruptionError names one block that failed verification. Use errors.Is
// with ErrCorrupt, errors.As to get the block.
type CorruptionError struct {
	// Level is DataLevel for a data block, HeaderLevel for the superblock
	// area, else the tree level of a hash block.
	Level int
	// Index is the block's index within its level (or among the data blocks).
	Index uint64
	// Offset is the block's byte offset in its file: the data device for a
	// data block, the hash device for a hash block.
	Offset uint64
	// Reason says what failed, e.g. "digest mismatch".
	Reason string
}

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
