//go:build !purego

package hashes

import (
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/veritytree/veritytree/hashes/internal/consts"
)

// sha256NEONScratch is the message schedule of sha256NEON4 (64 words of
// four lanes) and the lanes' data pointers, kept as integers: the kernel
// advances them, and the blocks they point into are kept alive by the
// caller.
type sha256NEONScratch struct {
	w [64][4]uint32
	p [4]uintptr
}

// The assembly finds w at 0 and p at 1024.
var (
	_ [0 - unsafe.Offsetof(sha256NEONScratch{}.w)]struct{}
	_ [unsafe.Offsetof(sha256NEONScratch{}.p) - 1024]struct{}
	_ [1024 - unsafe.Offsetof(sha256NEONScratch{}.p)]struct{}
)

// sha256NEON4 compresses chunks 64-byte chunks of four streams, one per
// vector lane (asm_arm generates it, WORD-encoded).
//
//go:noescape
func sha256NEON4(st *[8][4]uint32, p *[4]*byte, chunks int, w *sha256NEONScratch)

// sha256NEON4x hashes four blocks at a time, one per 32-bit NEON lane.
var sha256NEON4x = &implementation{
	name:      "neon4x",
	available: func() bool { return cpu.ARM.HasNEON },
	new: func(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
		return newMB32x4(newSHA256NEON4Kernel(), consts.SHA256IV[:], 64, blockSize, salt, pos)
	},
}

// newSHA256NEON4Kernel returns the kernel with a scratch of its own.
func newSHA256NEON4Kernel() kernel32x4 {
	w := new(sha256NEONScratch)
	return func(st *[8][4]uint32, p *[4]*byte, chunks int) { sha256NEON4(st, p, chunks, w) }
}

func init() {
	SHA256.impls = append([]*implementation{sha256CE, sha256NEON4x}, SHA256.impls...)
}
