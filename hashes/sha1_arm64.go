//go:build !purego

package hashes

import (
	"golang.org/x/sys/cpu"

	"github.com/veritytree/veritytree/hashes/internal/consts"
)

// sha1NEON4 compresses chunks 64-byte chunks of four streams, one per
// vector lane; sha1CE4 does the same with the SHA-1 instructions, two
// streams interleaved at a time (asm_arm generates both).
//
//go:noescape
func sha1NEON4(st *[8][4]uint32, p *[4]*byte, chunks int)

//go:noescape
func sha1CE4(st *[8][4]uint32, p *[4]*byte, chunks int)

func newSHA1NEON4Kernel() kernel32x4 { return sha1NEON4 }
func newSHA1CE4Kernel() kernel32x4   { return sha1CE4 }

var (
	// sha1CE hashes four blocks at a time with the SHA-1 instructions.
	sha1CE = &implementation{
		name:      "ce",
		available: func() bool { return cpu.ARM64.HasSHA1 },
		new: func(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
			return newMB32x4(sha1CE4, consts.SHA1IV[:], 64, blockSize, salt, pos)
		},
	}
	// sha1NEON4x hashes four blocks at a time, one per 32-bit NEON lane.
	sha1NEON4x = &implementation{
		name:      "neon4x",
		available: func() bool { return cpu.ARM64.HasASIMD },
		new: func(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
			return newMB32x4(sha1NEON4, consts.SHA1IV[:], 64, blockSize, salt, pos)
		},
	}
)

func init() {
	SHA1.impls = append([]*implementation{sha1CE, sha1NEON4x}, SHA1.impls...)
}
