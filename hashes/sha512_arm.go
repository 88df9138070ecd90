//go:build !purego

package hashes

import (
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/veritytree/veritytree/hashes/internal/consts"
)

// sha512NEONScratch is the message schedule of sha512NEON2 (80 words of two
// lanes) and the lanes' data pointers, kept as integers (see
// sha256NEONScratch).
type sha512NEONScratch struct {
	w [80][2]uint64
	p [2]uintptr
}

// The assembly finds w at 0 and p at 1280.
var (
	_ [0 - unsafe.Offsetof(sha512NEONScratch{}.w)]struct{}
	_ [unsafe.Offsetof(sha512NEONScratch{}.p) - 1280]struct{}
	_ [1280 - unsafe.Offsetof(sha512NEONScratch{}.p)]struct{}
)

// sha512NEON2 compresses chunks 128-byte chunks of two streams, one per
// 64-bit vector lane (asm_arm generates it, WORD-encoded).
//
//go:noescape
func sha512NEON2(st *[8][2]uint64, p *[2]*byte, chunks int, w *sha512NEONScratch)

// newSHA512NEON2Kernel returns the kernel with a scratch of its own.
func newSHA512NEON2Kernel() kernel64x2 {
	w := new(sha512NEONScratch)
	return func(st *[8][2]uint64, p *[2]*byte, chunks int) { sha512NEON2(st, p, chunks, w) }
}

// sha512NEON2x hashes two blocks at a time, one per 64-bit NEON lane.
var sha512NEON2x = &implementation{
	name:      "neon2x",
	available: func() bool { return cpu.ARM.HasNEON },
	new: func(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
		return newMB64x2(newSHA512NEON2Kernel(), consts.SHA512IV[:], blockSize, salt, pos)
	},
}

func init() {
	SHA512.impls = append([]*implementation{sha512NEON2x}, SHA512.impls...)
}
