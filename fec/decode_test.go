package fec

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// randomCodeword returns a random full codeword for roots.
func randomCodeword(rng *rand.Rand, roots int) []byte {
	k := N - roots
	cw := make([]byte, N)
	fillRand(rng, cw[:k])
	if err := encodeCodeword(roots, cw[:k], cw[k:]); err != nil {
		panic(err)
	}
	return cw
}

// corrupt changes the bytes at nerr+neras distinct random positions (each
// to a different value) and returns the erasure positions (the first neras
// of them). With allowSame, an erased byte may keep its value (an erasure
// is a suspicion, not always a change).
func corrupt(rng *rand.Rand, cw []byte, nerr, neras int, allowSame bool) []int {
	pos := rng.Perm(len(cw))[:nerr+neras]
	for i, p := range pos {
		if i < neras && allowSame && rng.IntN(4) == 0 {
			continue
		}
		cw[p] ^= byte(1 + rng.IntN(255))
	}
	return pos[:neras]
}

func TestDecodeWithinCapacity(t *testing.T) {
	rng := newRand(t, 4)
	for roots := MinRoots; roots <= MaxRoots; roots++ {
		t.Run(fmt.Sprint("roots", roots), func(t *testing.T) {
			check := func(what string, nerr, neras int) {
				t.Helper()
				orig := randomCodeword(rng, roots)
				cw := bytes.Clone(orig)
				eras := corrupt(rng, cw, nerr, neras, true)
				changed := 0
				for i := range cw {
					if cw[i] != orig[i] {
						changed++
					}
				}
				n, err := decodeCodeword(roots, cw, eras)
				if err != nil {
					t.Fatalf("%s: %d errors, %d erasures: %v", what, nerr, neras, err)
				}
				if !bytes.Equal(cw, orig) {
					t.Fatalf("%s: %d errors, %d erasures: wrong correction", what, nerr, neras)
				}
				if n != changed {
					t.Fatalf("%s: reported %d corrections, %d bytes were wrong", what, n, changed)
				}
			}
			for range 30 {
				check("errors", 1+rng.IntN(roots/2), 0)
				check("erasures", 0, 1+rng.IntN(roots))
				f := rng.IntN(roots + 1)
				check("mixed", rng.IntN((roots-f)/2+1), f)
			}
			// The limits exactly.
			for range 10 {
				check("max errors", roots/2, 0)
				check("max erasures", 0, roots)
				check("max mixed", (roots-roots/3)/2, roots/3)
			}
			// A clean codeword, with or without erasures, is left alone.
			orig := randomCodeword(rng, roots)
			cw := bytes.Clone(orig)
			if n, err := decodeCodeword(roots, cw, []int{0, 3, 3}); err != nil || n != 0 || !bytes.Equal(cw, orig) {
				t.Fatalf("clean codeword: %d, %v", n, err)
			}
		})
	}
}

func TestDecodeBeyondCapacity(t *testing.T) {
	rng := newRand(t, 5)
	miscorrected, refused := 0, 0
	for roots := MinRoots; roots <= MaxRoots; roots++ {
		for range 40 {
			// Erasures only, more than roots: always refused, untouched.
			orig := randomCodeword(rng, roots)
			cw := bytes.Clone(orig)
			eras := corrupt(rng, cw, 0, roots+1+rng.IntN(5), false)
			bad := bytes.Clone(cw)
			if _, err := decodeCodeword(roots, cw, eras); !errors.Is(err, ErrTooManyErrors) {
				t.Fatalf("roots %d: %d erasures: got %v, want ErrTooManyErrors", roots, len(eras), err)
			}
			if !bytes.Equal(cw, bad) {
				t.Fatalf("roots %d: codeword changed on failure", roots)
			}

			// Errors (and erasures) beyond 2e+f <= roots: refused, or a
			// miscorrection to another codeword, never a non-codeword.
			f := rng.IntN(roots)
			e := (roots-f)/2 + 1 + rng.IntN(3)
			if e+f > N {
				continue
			}
			cw = bytes.Clone(orig)
			eras = corrupt(rng, cw, e, f, false)
			bad = bytes.Clone(cw)
			_, err := decodeCodeword(roots, cw, eras)
			switch {
			case errors.Is(err, ErrTooManyErrors):
				refused++
				if !bytes.Equal(cw, bad) {
					t.Fatalf("roots %d: codeword changed on failure", roots)
				}
			case err != nil:
				t.Fatalf("roots %d: unexpected error %v", roots, err)
			default:
				if bytes.Equal(cw, orig) {
					t.Fatalf("roots %d: %d errors %d erasures decoded to the original: beyond capacity?", roots, e, f)
				}
				if !isCodeword(cw, roots) {
					t.Fatalf("roots %d: decoder returned a non-codeword", roots)
				}
				miscorrected++
			}
		}
	}
	t.Logf("beyond capacity: %d refused, %d miscorrected", refused, miscorrected)
	if refused == 0 {
		t.Fatal("the decoder never detected an uncorrectable codeword")
	}
}

func TestDecodeShortened(t *testing.T) {
	// A shortened codeword: the message is shorter than k (leading zeros).
	rng := newRand(t, 6)
	for _, roots := range []int{2, 8, 24} {
		for _, n := range []int{roots + 1, roots + 5, 100, 254} {
			msg := make([]byte, n-roots)
			fillRand(rng, msg)
			orig := append(bytes.Clone(msg), make([]byte, roots)...)
			if err := encodeCodeword(roots, msg, orig[n-roots:]); err != nil {
				t.Fatal(err)
			}
			cw := bytes.Clone(orig)
			eras := corrupt(rng, cw, roots/4, roots/2, false)
			if _, err := decodeCodeword(roots, cw, eras); err != nil || !bytes.Equal(cw, orig) {
				t.Fatalf("roots %d n %d: %v", roots, n, err)
			}
		}
	}
}

func TestDecodeArguments(t *testing.T) {
	cw := make([]byte, N)
	for _, tc := range []struct {
		roots int
		cw    []byte
		eras  []int
	}{
		{1, cw, nil},
		{25, cw, nil},
		{8, make([]byte, 256), nil},
		{8, make([]byte, 8), nil},
		{8, cw, []int{255}},
		{8, cw, []int{-1}},
	} {
		if _, err := decodeCodeword(tc.roots, tc.cw, tc.eras); err == nil || errors.Is(err, ErrTooManyErrors) {
			t.Errorf("roots %d len %d erasures %v: got %v, want an argument error", tc.roots, len(tc.cw), tc.eras, err)
		}
	}
}

func TestSyndromesMatchDefinition(t *testing.T) {
	rng := newRand(t, 10)
	for roots := MinRoots; roots <= MaxRoots; roots++ {
		for _, n := range []int{roots + 1, 100, N} {
			cw := make([]byte, n)
			fillRand(rng, cw)
			s := syndromes(cw, roots)
			for j := range roots {
				acc := byte(0)
				for _, c := range cw {
					acc = gfMul(acc, gfExp[j]) ^ c
				}
				if s[j] != acc {
					t.Fatalf("roots %d n %d: S_%d = %#x, want %#x", roots, n, j, s[j], acc)
				}
			}
		}
	}
}
