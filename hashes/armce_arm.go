//go:build !purego

package hashes

import (
	"golang.org/x/sys/cpu"

	"github.com/veritytree/veritytree/hashes/internal/consts"
)

// The ARMv8 SHA-1 and SHA-256 instructions in AArch32 state (asm_arm
// generates the kernels, WORD-encoded). Only q0..q15 exist: the kernels
// interleave two streams, lanes 0, 1 then 2, 3, each lane's state in a row
// of the scratch s.

// sha1CE4 compresses chunks 64-byte chunks of four streams with the SHA-1
// instructions; s is its scratch.
//
//go:noescape
func sha1CE4(st *[8][4]uint32, p *[4]*byte, chunks int, s *[32]uint32)

// sha256CE4 compresses chunks 64-byte chunks of four streams with the
// SHA-256 instructions; s is its scratch.
//
//go:noescape
func sha256CE4(st *[8][4]uint32, p *[4]*byte, chunks int, s *[32]uint32)

func newSHA1CE4Kernel() kernel32x4 {
	s := new([32]uint32)
	return func(st *[8][4]uint32, p *[4]*byte, chunks int) { sha1CE4(st, p, chunks, s) }
}

func newSHA256CE4Kernel() kernel32x4 {
	s := new([32]uint32)
	return func(st *[8][4]uint32, p *[4]*byte, chunks int) { sha256CE4(st, p, chunks, s) }
}

// sha1CE hashes four blocks at a time with the SHA-1 instructions.
var sha1CE = &implementation{
	name:      "ce",
	available: func() bool { return cpu.ARM.HasSHA1 },
	new: func(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
		return newMB32x4(newSHA1CE4Kernel(), consts.SHA1IV[:], 64, blockSize, salt, pos)
	},
}

// sha256CE hashes four blocks at a time with the SHA-256 instructions.
var sha256CE = &implementation{
	name:      "ce",
	available: func() bool { return cpu.ARM.HasSHA2 },
	new: func(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
		return newMB32x4(newSHA256CE4Kernel(), consts.SHA256IV[:], 64, blockSize, salt, pos)
	},
}
