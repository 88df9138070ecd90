package fec

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

func newRand(t testing.TB, seed uint64) *rand.Rand {
	t.Helper()
	return rand.New(rand.NewPCG(seed, 0x5eed))
}

func fillRand(rng *rand.Rand, b []byte) {
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, rng.Uint64())
		b = b[8:]
	}
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}

// isCodeword evaluates c(2^j), j < roots, straight from the definition
// (not through the encoder tables that syndromes uses).
func isCodeword(cw []byte, roots int) bool {
	for j := range roots {
		x := gfExp[j]
		acc := byte(0)
		for _, c := range cw {
			acc = gfMul(acc, x) ^ c
		}
		if acc != 0 {
			return false
		}
	}
	return true
}
