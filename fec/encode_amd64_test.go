//go:build !purego

package fec

import (
	"math/bits"
	"testing"
)

// affineByte is VGF2P8AFFINEQB on one byte with imm8 = 0, as the Intel SDM
// defines it: bit i of the result is the parity of x AND byte 7-i of m.
func affineByte(m uint64, x byte) byte {
	var r byte
	for i := range 8 {
		r |= byte(bits.OnesCount8(byte(m>>(8*(7-i)))&x)&1) << i
	}
	return r
}

// TestGFAffineIsMultiplication checks the matrices the GFNI kernels use
// (and the nibble tables of the avx2 ones) against gfMul for every pair.
func TestGFAffineIsMultiplication(t *testing.T) {
	for c := range 256 {
		m := gfAffine(byte(c))
		for x := range 256 {
			if got, want := affineByte(m, byte(x)), gfMul(byte(c), byte(x)); got != want {
				t.Fatalf("affine(%#x) of %#x = %#x, want %#x", c, x, got, want)
			}
		}
	}
	for _, pshufb := range []bool{false, true} {
		tab := multTable(MaxRoots, pshufb)
		gen := generator(MaxRoots)
		for i := range MaxRoots {
			c := gen[MaxRoots-1-i]
			for x := range 256 {
				var got byte
				if pshufb {
					b := func(n int) byte { return byte(tab[i][n/8] >> (8 * (n % 8))) }
					got = b(x&15) ^ b(32+x>>4)
					if b(16+x&15) != b(x&15) || b(48+x>>4) != b(32+x>>4) {
						t.Fatalf("register %d: the two 16-byte halves differ", i)
					}
				} else {
					got = affineByte(tab[i][0], byte(x))
					if tab[i][1] != tab[i][0] || tab[i][2] != tab[i][0] || tab[i][3] != tab[i][0] {
						t.Fatalf("register %d: the 4 copies of the matrix differ", i)
					}
				}
				if want := gfMul(c, byte(x)); got != want {
					t.Fatalf("pshufb %v register %d: %#x*%#x = %#x, want %#x", pshufb, i, c, x, got, want)
				}
			}
		}
	}
}
