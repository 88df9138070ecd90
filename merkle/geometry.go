// Package merkle lays out, builds and verifies dm-verity hash trees, byte for
// byte as the Linux kernel reads them and as veritysetup and avbtool write them.
//
// Geometry is the one description of a tree's shape that the builder, the
// checker and error correction share: given Params it says how many levels
// there are, where each hash block lives in the hash device and where the
// digest of any block is stored.
package merkle

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"

	"github.com/veritytree/veritytree/hashes"
)

// Limits of the format.
const (
	MinBlockSize   = 512
	MaxBlockSize   = 512 << 10
	MaxSaltSize    = 256
	SuperblockSize = 512
	// MaxLevels is the kernel's limit on tree height.
	MaxLevels = 63
)

// Params are the parameters that define a tree: what veritysetup takes as
// flags and stores in the superblock.
type Params struct {
	Hash *hashes.Algorithm
	// HashName is the algorithm's name as the superblock stores it, when
	// it is not Hash.Name(): veritysetup stores the --hash given, in lower
	// case, and takes OpenSSL's names too ("ripemd160" for rmd160,
	// "sha2-256" for sha256). "", or a name of another algorithm, means
	// Hash.Name(). The kernel table names Hash.Name() whatever it is.
	HashName string
	// LegacyFormat selects hash type 0 (Chrome OS: the salt after each
	// block, digests packed); the zero value is hash type 1 (the salt
	// before, digests in power-of-two slots), veritysetup's default.
	LegacyFormat  bool
	Salt          []byte
	DataBlockSize int
	HashBlockSize int
	// DataBlocks is how many data blocks the tree covers; at least 1.
	DataBlocks uint64
	// HashOffset is the byte offset in the hash device where the
	// superblock (or, without one, the tree) starts.
	HashOffset uint64
	// Superblock says whether a superblock precedes the tree.
	Superblock bool
	// UUID is stored in the superblock.
	UUID [16]byte
}

// ErrInvalidParams is wrapped by every error NewGeometry returns.
var ErrInvalidParams = errors.New("invalid verity parameters")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidParams, fmt.Sprintf(format, args...))
}

// Geometry is the shape of a tree: computed once from Params, then read-only.
type Geometry struct {
	Params
	// DigestSize is the algorithm's digest size.
	DigestSize int
	// DigestSlot is the bytes each digest takes in a hash block: the next
	// power of two in format 1, the digest itself in format 0.
	DigestSlot int
	// HashesPerBlock is how many digests a hash block holds: a power of two,
	// at least 2.
	HashesPerBlock int
	hpbShift       uint
	// Levels is the number of tree levels; 0 when there is one data block.
	Levels int
	// LevelBlocks[i] is the number of hash blocks of level i; level 0 holds
	// the digests of the data blocks, level i+1 those of level i.
	LevelBlocks []uint64
	// LevelStart[i] is the index, in hash blocks from the start of the hash
	// device, of the first block of level i. The highest level comes first.
	LevelStart []uint64
	// HashStartBlock is where the tree starts, in hash blocks from the start
	// of the hash device: the kernel table's hash_start_block.
	HashStartBlock uint64
	// HashBlocks is the number of blocks in the tree (superblock excluded).
	HashBlocks uint64
}

func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// CheckBlockSize returns an error unless n is a valid block size.
func CheckBlockSize(n int) error {
	if !isPow2(n) || n < MinBlockSize || n > MaxBlockSize {
		return fmt.Errorf("block size %d: must be a power of two from %d to %d", n, MinBlockSize, MaxBlockSize)
	}
	return nil
}

// NewGeometry validates p and computes the tree's shape. Errors wrap
// ErrInvalidParams.
func NewGeometry(p Params) (*Geometry, error) {
	if p.Hash == nil {
		return nil, invalid("no hash algorithm")
	}
	if len(p.Salt) > MaxSaltSize {
		return nil, invalid("salt is %d bytes, more than %d", len(p.Salt), MaxSaltSize)
	}
	if err := CheckBlockSize(p.DataBlockSize); err != nil {
		return nil, invalid("data %v", err)
	}
	if err := CheckBlockSize(p.HashBlockSize); err != nil {
		return nil, invalid("hash %v", err)
	}
	if p.DataBlocks == 0 {
		return nil, invalid("no data blocks")
	}
	if p.DataBlocks > (1<<63)/uint64(p.DataBlockSize) {
		return nil, invalid("%d data blocks of %d bytes do not fit in 63 bits", p.DataBlocks, p.DataBlockSize)
	}
	if p.HashOffset > 1<<62 {
		return nil, invalid("hash offset %d is beyond any device", p.HashOffset)
	}
	if p.HashOffset%SuperblockSize != 0 {
		return nil, invalid("hash offset %d is not a multiple of 512", p.HashOffset)
	}
	if !p.Superblock && p.HashOffset%uint64(p.HashBlockSize) != 0 {
		return nil, invalid("hash offset %d is not a multiple of the hash block size %d (required without a superblock)",
			p.HashOffset, p.HashBlockSize)
	}

	g := &Geometry{Params: p}
	g.Salt = append([]byte(nil), p.Salt...)
	g.DigestSize = p.Hash.Size()
	g.DigestSlot = g.DigestSize
	if !p.LegacyFormat {
		g.DigestSlot = 1 << bits.Len(uint(g.DigestSize-1))
	}
	// Digests per block is a power of two in both formats.
	hpb := p.HashBlockSize / g.DigestSize
	if hpb < 2 {
		return nil, invalid("hash block size %d holds fewer than two %s digests", p.HashBlockSize, p.Hash.Name())
	}
	g.hpbShift = uint(bits.Len(uint(hpb)) - 1)
	g.HashesPerBlock = 1 << g.hpbShift
	if g.HashesPerBlock*g.DigestSlot > p.HashBlockSize {
		// Cannot happen for the supported digests; kept as a guard.
		return nil, invalid("hash block size %d too small for its digests", p.HashBlockSize)
	}

	for g.Levels = 0; (p.DataBlocks-1)>>(uint(g.Levels)*g.hpbShift) != 0; g.Levels++ {
		if uint(g.Levels+1)*g.hpbShift >= 64 || g.Levels+1 > MaxLevels {
			return nil, invalid("too many tree levels")
		}
	}

	hbs := uint64(p.HashBlockSize)
	g.HashStartBlock = p.HashOffset / hbs
	if p.Superblock {
		g.HashStartBlock = (p.HashOffset + SuperblockSize + hbs - 1) / hbs
	}
	g.LevelBlocks = make([]uint64, g.Levels)
	g.LevelStart = make([]uint64, g.Levels)
	for i := range g.Levels {
		shift := uint(i+1) * g.hpbShift
		g.LevelBlocks[i] = ((p.DataBlocks - 1) >> shift) + 1
	}
	next := g.HashStartBlock
	for i := g.Levels - 1; i >= 0; i-- {
		g.LevelStart[i] = next
		next += g.LevelBlocks[i]
		g.HashBlocks += g.LevelBlocks[i]
	}
	if next > (1<<63)/hbs {
		return nil, invalid("hash device end does not fit in 63 bits")
	}
	return g, nil
}

// SuperblockHashName is the algorithm's name as the superblock stores it:
// HashName in lower case when it names Hash, else Hash.Name().
func (p *Params) SuperblockHashName() string {
	if p.HashName != "" && p.Hash != nil && p.Hash.Is(p.HashName) {
		return strings.ToLower(p.HashName)
	}
	if p.Hash == nil {
		return ""
	}
	return p.Hash.Name()
}

// Format is the hash type, as the superblock and the kernel table give
// it: 0 with LegacyFormat, else 1.
func (p *Params) Format() int {
	if p.LegacyFormat {
		return 0
	}
	return 1
}

// SaltPosition is where each block's salt goes in this format.
func (g *Geometry) SaltPosition() hashes.SaltPosition {
	if g.LegacyFormat {
		return hashes.SaltAfter
	}
	return hashes.SaltBefore
}

// DataSize is the number of data bytes the tree covers.
func (g *Geometry) DataSize() uint64 { return g.DataBlocks * uint64(g.DataBlockSize) }

// TreeOffset is the byte offset of the tree in the hash device.
func (g *Geometry) TreeOffset() uint64 { return g.HashStartBlock * uint64(g.HashBlockSize) }

// HashEnd is the byte offset in the hash device just past the tree: the
// hash device's size when nothing follows the tree.
func (g *Geometry) HashEnd() uint64 {
	return (g.HashStartBlock + g.HashBlocks) * uint64(g.HashBlockSize)
}

// TopLevel is the level of the top block, whose digest is the root hash:
// Levels-1 (DataLevel when the tree is one data block and no hash block).
func (g *Geometry) TopLevel() Level { return Level(g.Levels - 1) }

// BlockOffset returns the byte offset in the hash device of hash block index
// of level, a tree level.
func (g *Geometry) BlockOffset(level Level, index uint64) uint64 {
	return (g.LevelStart[level] + index) * uint64(g.HashBlockSize)
}

// Parent returns where the digest of a block is stored: for DataLevel or a
// tree level below the top, the index of the hash block at
// level+1 that holds it and the byte offset of the digest in that block.
func (g *Geometry) Parent(level Level, index uint64) (parentIndex uint64, offsetInBlock int) {
	return index >> g.hpbShift, int(index&uint64(g.HashesPerBlock-1)) * g.DigestSlot
}

// DigestOffset returns the byte offset in the hash device of the digest of
// block index at level (DataLevel for data blocks). The top block's digest
// is the root hash and is stored nowhere: level must be below Levels-1.
func (g *Geometry) DigestOffset(level Level, index uint64) uint64 {
	p, off := g.Parent(level, index)
	return g.BlockOffset(level+1, p) + uint64(off)
}
