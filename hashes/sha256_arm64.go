//go:build !purego

package hashes

import (
	"golang.org/x/sys/cpu"

	"github.com/veritytree/veritytree/hashes/internal/consts"
)

// sha256NEON4 compresses chunks 64-byte chunks of four streams, one per
// vector lane (asm_arm generates it).
//
//go:noescape
func sha256NEON4(st *[8][4]uint32, p *[4]*byte, chunks int)

// sha256NEON4x hashes four blocks at a time, one per 32-bit NEON lane.
var sha256NEON4x = &implementation{
	name:      "neon4x",
	available: func() bool { return cpu.ARM64.HasASIMD },
	new: func(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
		return newMB32x4(newSHA256NEON4Kernel(), consts.SHA256IV[:], 64, blockSize, salt, pos)
	},
}

func newSHA256NEON4Kernel() kernel32x4 { return sha256NEON4 }

// sha256CE4 compresses chunks 64-byte chunks of four streams with the SHA-256
// instructions, two streams interleaved at a time; s is its scratch.
//
//go:noescape
func sha256CE4(st *[8][4]uint32, p *[4]*byte, chunks int, s *[48]uint32)

func newSHA256CE4Kernel() kernel32x4 {
	s := new([48]uint32)
	return func(st *[8][4]uint32, p *[4]*byte, chunks int) { sha256CE4(st, p, chunks, s) }
}

// sha256CE hashes four blocks at a time with the SHA-256 instructions.
var sha256CE = &implementation{
	name:      "ce",
	available: func() bool { return cpu.ARM64.HasSHA2 },
	new: func(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
		return newMB32x4(newSHA256CE4Kernel(), consts.SHA256IV[:], 64, blockSize, salt, pos)
	},
}

func init() {
	SHA256.impls = append([]*implementation{sha256CE, sha256NEON4x}, SHA256.impls...)
}
