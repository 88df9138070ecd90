//go:build !purego

package hashes

import (
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/veritytree/veritytree/hashes/internal/consts"
)

// sha1NEONScratch is the message schedule of sha1NEON4 (80 words of four
// lanes) and the lanes' data pointers, kept as integers (see
// sha256NEONScratch).
type sha1NEONScratch struct {
	w [80][4]uint32
	p [4]uintptr
}

// The assembly finds w at 0 and p at 1280.
var (
	_ [0 - unsafe.Offsetof(sha1NEONScratch{}.w)]struct{}
	_ [unsafe.Offsetof(sha1NEONScratch{}.p) - 1280]struct{}
	_ [1280 - unsafe.Offsetof(sha1NEONScratch{}.p)]struct{}
)

// sha1NEON4 compresses chunks 64-byte chunks of four streams, one per
// vector lane (asm_arm generates it, WORD-encoded).
//
//go:noescape
func sha1NEON4(st *[8][4]uint32, p *[4]*byte, chunks int, w *sha1NEONScratch)

// newSHA1NEON4Kernel returns the kernel with a scratch of its own.
func newSHA1NEON4Kernel() kernel32x4 {
	w := new(sha1NEONScratch)
	return func(st *[8][4]uint32, p *[4]*byte, chunks int) { sha1NEON4(st, p, chunks, w) }
}

// sha1NEON4x hashes four blocks at a time, one per 32-bit NEON lane.
var sha1NEON4x = &implementation{
	name:      "neon4x",
	available: func() bool { return cpu.ARM.HasNEON },
	new: func(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
		return newMB32x4(newSHA1NEON4Kernel(), consts.SHA1IV[:], 64, blockSize, salt, pos)
	},
}

func init() {
	SHA1.impls = append([]*implementation{sha1CE, sha1NEON4x}, SHA1.impls...)
}
