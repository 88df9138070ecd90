//go:build !purego

package hashes

import (
	"golang.org/x/sys/cpu"

	"github.com/veritytree/veritytree/hashes/internal/consts"
)

// sha512NEON2 compresses chunks 128-byte chunks of two streams, one per
// 64-bit vector lane (asm_arm generates it).
//
//go:noescape
func sha512NEON2(st *[8][2]uint64, p *[2]*byte, chunks int)

// sha512CE2 does the same with the SHA-512 instructions, the two streams
// interleaved; s is its scratch.
//
//go:noescape
func sha512CE2(st *[8][2]uint64, p *[2]*byte, chunks int, s *[16]uint64)

func newSHA512NEON2Kernel() kernel64x2 { return sha512NEON2 }

func newSHA512CE2Kernel() kernel64x2 {
	s := new([16]uint64)
	return func(st *[8][2]uint64, p *[2]*byte, chunks int) { sha512CE2(st, p, chunks, s) }
}

var (
	// sha512CE hashes two blocks at a time with the SHA-512 instructions.
	sha512CE = &implementation{
		name:      "ce",
		available: func() bool { return cpu.ARM64.HasSHA512 },
		new: func(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
			return newMB64x2(newSHA512CE2Kernel(), consts.SHA512IV[:], blockSize, salt, pos)
		},
	}
	// sha512NEON2x hashes two blocks at a time, one per 64-bit NEON lane.
	sha512NEON2x = &implementation{
		name:      "neon2x",
		available: func() bool { return cpu.ARM64.HasASIMD },
		new: func(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
			return newMB64x2(sha512NEON2, consts.SHA512IV[:], blockSize, salt, pos)
		},
	}
)

func init() {
	SHA512.impls = append([]*implementation{sha512CE, sha512NEON2x}, SHA512.impls...)
}
