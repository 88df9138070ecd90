//go:build !purego

package hashes

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestBLAKE2bNEON2Kernel compares each lane of the two-lane kernel with the
// pure Go compression function: random states, counters and data, 0..5
// chunks, both flags.
func TestBLAKE2bNEON2Kernel(t *testing.T) {
	if !haveNEON {
		t.Skip("no NEON")
	}
	rng := rand.New(rand.NewPCG(17, 18))
	var s [6]uint64
	for n := 0; n <= 5; n++ {
		for _, flag := range []uint64{0, ^uint64(0)} {
			c0 := rng.Uint64() >> 1
			var st [8][2]uint64
			var want [2][8]uint64
			var p [2]*byte
			for l := range 2 {
				for w := range 8 {
					st[w][l] = rng.Uint64()
					want[l][w] = st[w][l]
				}
				data := randBytes(rng, 128*n+1)[1:]
				p[l] = unsafe.SliceData(append(data, 0))
				c := [2]uint64{c0, 0}
				blake2bBlocksGeneric(&want[l], &c, flag, data)
			}
			blake2bNEON2(&st, &p, n, c0, flag, &s)
			for l := range 2 {
				for w := range 8 {
					if st[w][l] != want[l][w] {
						t.Fatalf("%d chunks, flag %x, lane %d: h[%d] = %#x, want %#x", n, flag, l, w, st[w][l], want[l][w])
					}
				}
			}
		}
	}
}
