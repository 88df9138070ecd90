package fec

import (
	"encoding/hex"
	"testing"
)

func TestFieldTables(t *testing.T) {
	// 2 is primitive for 0x11d: its powers 2^0..2^254 are the 255 nonzero
	// elements, each once, and 2^255 = 1.
	seen := map[byte]bool{}
	for i := range 255 {
		v := gfExp[i]
		if v == 0 || seen[v] {
			t.Fatalf("2^%d = %#x repeats or is zero: 2 is not primitive", i, v)
		}
		seen[v] = true
		if gfLog[v] != i {
			t.Fatalf("log(2^%d) = %d", i, gfLog[v])
		}
	}
	if gfExp[255] != 1 || gfPow2(255) != 1 || gfPow2(-1) != gfExp[254] {
		t.Fatal("exp table does not cycle with period 255")
	}
	// Multiplication against the shift-and-reduce definition, all pairs.
	slow := func(a, b byte) byte {
		var r uint16
		x, y := uint16(a), b
		for y != 0 {
			if y&1 != 0 {
				r ^= x
			}
			x <<= 1
			if x&0x100 != 0 {
				x ^= fieldPoly
			}
			y >>= 1
		}
		return byte(r)
	}
	for a := range 256 {
		for b := range 256 {
			if got, want := gfMul(byte(a), byte(b)), slow(byte(a), byte(b)); got != want {
				t.Fatalf("%#x * %#x = %#x, want %#x", a, b, got, want)
			}
			if b != 0 && gfMul(gfDiv(byte(a), byte(b)), byte(b)) != byte(a) {
				t.Fatalf("(%#x / %#x) * %#x != %#x", a, b, b, a)
			}
		}
	}
}

func TestGenerator(t *testing.T) {
	for roots := MinRoots; roots <= MaxRoots; roots++ {
		g := generator(roots)
		if len(g) != roots+1 || g[roots] != 1 {
			t.Fatalf("roots %d: generator %x is not monic of degree %d", roots, g, roots)
		}
		for i := range 255 {
			v := polyEval(g, gfExp[i])
			if (i < roots) != (v == 0) {
				t.Fatalf("roots %d: g(2^%d) = %#x", roots, i, v)
			}
		}
	}
}

// The known answers of FORMAT.md: one codeword whose message is 0..k-1.
func TestKnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		roots int
		want  string
	}{
		{2, "3ec2"},
		{8, "50345487a2c5ffd8"},
		{24, "1f92a06d1b5947e381996fb80befb8ff901049c4f8bc0c68"},
	} {
		k := N - tc.roots
		msg := make([]byte, k)
		for i := range msg {
			msg[i] = byte(i)
		}
		par := make([]byte, tc.roots)
		if err := encodeCodeword(tc.roots, msg, par); err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(par); got != tc.want {
			t.Errorf("roots %d: parity %s, want %s", tc.roots, got, tc.want)
		}
		// The full codeword is a multiple of g: all syndromes zero.
		if !isCodeword(append(msg, par...), tc.roots) {
			t.Errorf("roots %d: message+parity is not a codeword", tc.roots)
		}
	}
}

// slowParity is the textbook long division, independent of the packed
// table encoder.
func slowParity(roots int, msg []byte) []byte {
	g := generator(roots)
	r := make([]byte, roots) // r[0] highest degree
	for _, m := range msg {
		f := m ^ r[0]
		copy(r, r[1:])
		r[roots-1] = 0
		for i := range roots {
			r[i] ^= gfMul(f, g[roots-1-i])
		}
	}
	return r
}

func TestEncodeCodewordMatchesDivision(t *testing.T) {
	rng := newRand(t, 1)
	for roots := MinRoots; roots <= MaxRoots; roots++ {
		for range 20 {
			msg := make([]byte, rng.IntN(N-roots+1))
			fillRand(rng, msg)
			par := make([]byte, roots)
			if err := encodeCodeword(roots, msg, par); err != nil {
				t.Fatal(err)
			}
			if want := slowParity(roots, msg); string(par) != string(want) {
				t.Fatalf("roots %d: parity %x, want %x", roots, par, want)
			}
		}
	}
}
