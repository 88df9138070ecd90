package hashes

import (
	"encoding/binary"
	"math/bits"
)

// MD4 (RFC 1320), the kernel's "md4": written here because the standard
// library has none and golang.org/x/crypto is for tests only. Broken as a
// hash; dm-verity and veritysetup still take it, so a tree made with it can
// be built and checked.

// md4Order is the message word of each step of rounds 2 and 3 (round 1
// takes them in order).
var md4Order = [2][16]uint8{
	{0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15},
	{0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15},
}

// md4Shift is the rotation of the four steps of a cycle, for each round.
var md4Shift = [3][4]int{{3, 7, 11, 19}, {3, 5, 9, 13}, {3, 9, 11, 15}}

// md4Blocks compresses len(p)/64 whole blocks into h.
func md4Blocks(h *[5]uint32, p []byte) {
	var x [16]uint32
	for ; len(p) >= mdBlockSize; p = p[mdBlockSize:] {
		for i := range x {
			x[i] = binary.LittleEndian.Uint32(p[4*i:])
		}
		a, b, c, d := h[0], h[1], h[2], h[3]
		for i := range 16 {
			f := b&c | ^b&d
			a = bits.RotateLeft32(a+f+x[i], md4Shift[0][i%4])
			a, b, c, d = d, a, b, c
		}
		for i := range 16 {
			g := b&c | b&d | c&d
			a = bits.RotateLeft32(a+g+x[md4Order[0][i]]+0x5a827999, md4Shift[1][i%4])
			a, b, c, d = d, a, b, c
		}
		for i := range 16 {
			a = bits.RotateLeft32(a+(b^c^d)+x[md4Order[1][i]]+0x6ed9eba1, md4Shift[2][i%4])
			a, b, c, d = d, a, b, c
		}
		h[0] += a
		h[1] += b
		h[2] += c
		h[3] += d
	}
}
