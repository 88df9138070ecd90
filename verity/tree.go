package verity

import (
	"crypto/rand"
	"fmt"
	"strings"

	"github.com/veritytree/veritytree/hashes"
	"github.com/veritytree/veritytree/merkle"
)

// TreeOptions are the parameters that define a tree: veritysetup's
// --hash, --salt, --uuid, --format, --data-block-size, --hash-block-size,
// --data-blocks, --hash-offset and --no-superblock. The zero value is
// veritysetup's default: sha256, format 1, 4096-byte blocks, a random salt
// and UUID, a superblock at offset 0, every whole block of the data.
type TreeOptions struct {
	// Hash is the algorithm's name (see hashes.Names), or another name
	// veritysetup takes for it (hashes.Lookup); "" means sha256,
	// veritysetup's default (in package avb, HashtreeFooterOptions'
	// HashAlgorithm "" means sha1, avbtool's). The superblock stores it as
	// given, in lower case, as veritysetup does; the kernel table names
	// the algorithm by its kernel name.
	Hash string
	// LegacyFormat selects format (hash type) 0, the original Chrome OS
	// layout: the salt after each block, digests packed. The default is
	// format 1.
	LegacyFormat bool
	// Salt: nil means 32 random bytes; an empty non-nil slice means none
	// (veritysetup's --salt=-). At most merkle.MaxSaltSize bytes.
	Salt []byte
	// UUID is stored in the superblock; nil means a random one.
	UUID *[16]byte
	// DataBlockSize and HashBlockSize are in bytes, powers of two from 512
	// to 512 KiB; 0 means 4096.
	DataBlockSize, HashBlockSize int
	// DataBlocks is how many data blocks the tree covers; 0 means every
	// whole block of the data (for Format with the tree inside the data,
	// those before the tree, if nothing from it on is the user's: see
	// Format).
	DataBlocks uint64
	// HashOffset is the byte offset in the hash device where the
	// superblock (or, with NoSuperblock, the tree) starts: a multiple of
	// 512, and of the hash block size without a superblock.
	HashOffset uint64
	// NoSuperblock writes (or expects) the tree alone; its parameters are
	// then recorded nowhere but by the caller.
	NoSuperblock bool
}

// maxFileOffset is the largest byte offset of a file: files end before
// 2^63 (offsets are int64).
const maxFileOffset = 1<<63 - 1

// Params checks the options that need no file and returns the tree
// parameters they give, defaults filled in: the one conversion from
// TreeOptions to merkle.Params. DataBlocks stays 0 when not given (the
// data decides it); Salt stays nil and UUID zero when not given (Format
// draws them at random).
func (t *TreeOptions) Params() (merkle.Params, error) {
	var p merkle.Params
	name := t.Hash
	if name == "" {
		name = "sha256"
	}
	alg, err := hashes.Lookup(name)
	if err != nil {
		return p, &Error{Kind: KindParam, Field: "Hash", Err: err, Hint: "choose one with TreeOptions.Hash, e.g. TreeOptions.Hash=sha256"}
	}
	p.Hash = alg
	if n := strings.ToLower(name); n != alg.Name() {
		p.HashName = n // another of veritysetup's spellings, which the superblock keeps
	}
	p.LegacyFormat = t.LegacyFormat
	if len(t.Salt) > merkle.MaxSaltSize {
		return p, paramErrorf("Salt", "", "salt is %d bytes; at most %d are allowed", len(t.Salt), merkle.MaxSaltSize)
	}
	p.Salt = t.Salt
	if t.UUID != nil {
		p.UUID = *t.UUID
	}
	p.DataBlockSize, p.HashBlockSize = orDefault(t.DataBlockSize, 4096), orDefault(t.HashBlockSize, 4096)
	for _, bs := range []struct {
		field, flag string
		v           int
	}{{"DataBlockSize", "data-block-size", p.DataBlockSize}, {"HashBlockSize", "hash-block-size", p.HashBlockSize}} {
		if err := merkle.CheckBlockSize(bs.v); err != nil {
			return p, paramErrorf(bs.field, fmt.Sprintf("e.g. --%s=4096", bs.flag), "--%s: %v", bs.flag, err)
		}
	}
	p.DataBlocks = t.DataBlocks
	p.HashOffset = t.HashOffset
	p.Superblock = !t.NoSuperblock
	if err := checkHashOffset(p.HashOffset, p.HashBlockSize); err != nil {
		return p, err
	}
	if !p.Superblock && p.HashOffset%uint64(p.HashBlockSize) != 0 {
		return p, paramErrorf("HashOffset", fmt.Sprintf("round it up: TreeOptions.HashOffset=%d", roundUp(p.HashOffset, uint64(p.HashBlockSize))),
			"TreeOptions.HashOffset %d is not a multiple of the hash block size %d, which a tree without superblock needs", p.HashOffset, p.HashBlockSize)
	}
	return p, nil
}

// fillRandom gives p a random 32-byte salt when it has none (nil), and a
// random UUID when it has a superblock and t gave none.
func (t *TreeOptions) fillRandom(p *merkle.Params) error {
	if p.Salt == nil {
		p.Salt = make([]byte, 32)
		if _, err := rand.Read(p.Salt); err != nil {
			return err
		}
	}
	if p.Superblock && t.UUID == nil {
		u, err := randomUUID()
		if err != nil {
			return err
		}
		p.UUID = u
	}
	return nil
}

// randomUUID returns a random (version 4) UUID.
func randomUUID() ([16]byte, error) {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		return u, err
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u, nil
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// checkHashOffset checks a hash offset for hash blocks of hbs bytes: a
// multiple of 512, and room for a superblock and a hash block before 2^63,
// where files end and past which offset arithmetic would wrap. With the
// parameters in a superblock yet unread, hbs is merkle.MinBlockSize.
func checkHashOffset(offset uint64, hbs int) error {
	if maxOffset := uint64(1<<63) - uint64(hbs) - merkle.SuperblockSize; offset > maxOffset {
		return paramErrorf("HashOffset", "", "TreeOptions.HashOffset %d is too large: at most %d", offset, maxOffset)
	}
	if offset%merkle.SuperblockSize != 0 {
		return paramErrorf("HashOffset", fmt.Sprintf("round it up: TreeOptions.HashOffset=%d", roundUp(offset, merkle.SuperblockSize)),
			"TreeOptions.HashOffset %d is not a multiple of 512", offset)
	}
	return nil
}

// fecOffsetTooLarge is the error for an FEC offset past which the parity
// would not fit in a file; opts names the options' struct.
func fecOffsetTooLarge(opts string, offset uint64) error {
	return paramErrorf("FECOffset", "give the byte offset of the parity in the FEC device",
		"%s.FECOffset %d is too large: the parity would end past byte %d, the end of the largest possible file", opts, offset, uint64(maxFileOffset))
}

func roundUp(n, m uint64) uint64 { return (n + m - 1) / m * m }
