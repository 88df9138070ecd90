package fec

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecodeCodeword: for any message, roots, shortening and damage, a
// codeword damaged within the code's reach (2*errors + erasures <= roots)
// decodes to the original exactly; beyond it, the decoder either refuses
// with ErrTooManyErrors and leaves the codeword as it was, or returns a
// valid codeword (a miscorrection no decoder can detect). It never panics,
// whatever the erasure list says.
func FuzzDecodeCodeword(f *testing.F) {
	f.Add(uint8(8), uint8(0), []byte("message"), []byte{3, 0xff, 9, 1}, []byte{3})
	f.Add(uint8(2), uint8(200), []byte{1}, []byte{0, 1}, []byte{})
	f.Add(uint8(24), uint8(10), bytes.Repeat([]byte{7}, 300), []byte{0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6}, []byte{0, 1, 2, 3, 4, 5})
	f.Add(uint8(8), uint8(0), []byte{}, []byte{250, 5}, []byte{250, 254, 255})
	f.Fuzz(func(t *testing.T, rootsSel, short uint8, msg, damage, erasureSel []byte) {
		roots := MinRoots + int(rootsSel)%(MaxRoots-MinRoots+1)
		k := N - roots
		k -= int(short) % k // a shortened code: k bytes of message, at least 1
		m := make([]byte, k)
		copy(m, msg)
		cw := make([]byte, k+roots)
		copy(cw, m)
		if err := encodeCodeword(roots, m, cw[k:]); err != nil {
			t.Fatal(err)
		}
		orig := bytes.Clone(cw)
		// damage: pairs (position, xor); erasureSel: positions declared erased.
		errPos := map[int]bool{}
		for i := 0; i+1 < len(damage); i += 2 {
			pos := int(damage[i]) % len(cw)
			if damage[i+1] != 0 {
				cw[pos] ^= damage[i+1]
				errPos[pos] = cw[pos] != orig[pos]
			}
		}
		var erasures []int
		erased := map[int]bool{}
		for _, e := range erasureSel {
			erasures = append(erasures, int(e)) // may lie outside a shortened codeword
			erased[int(e)] = true
		}
		outside := false
		for _, e := range erasures {
			outside = outside || e >= len(cw)
		}
		var unknown int
		for pos, wrong := range errPos {
			if wrong && !erased[pos] {
				unknown++
			}
		}
		damaged := bytes.Clone(cw)
		_, err := decodeCodeword(roots, cw, erasures)
		switch {
		case outside:
			if err == nil {
				t.Fatalf("erasure outside a %d-byte codeword accepted", len(cw))
			}
			if !bytes.Equal(cw, damaged) {
				t.Fatal("codeword changed by a refused call")
			}
		case 2*unknown+len(erased) <= roots:
			if err != nil || !bytes.Equal(cw, orig) {
				t.Fatalf("%d errors and %d erasures with %d roots: err %v, restored %v", unknown, len(erased), roots, err, bytes.Equal(cw, orig))
			}
		case err != nil:
			if !errors.Is(err, ErrTooManyErrors) {
				t.Fatalf("error does not wrap ErrTooManyErrors: %v", err)
			}
			if !bytes.Equal(cw, damaged) {
				t.Fatal("codeword changed by a failed decode")
			}
		default:
			parity := make([]byte, roots)
			if err := encodeCodeword(roots, cw[:k], parity); err != nil || !bytes.Equal(parity, cw[k:]) {
				t.Fatal("decode succeeded with something that is not a codeword")
			}
		}
	})
}

// FuzzParams: parameters that Validate accepts have sizes that fit in an
// int64, and every block's round and position are in range and give the
// block back.
func FuzzParams(f *testing.F) {
	f.Add(8, 4096, uint64(2066), uint64(0), uint64(17))
	f.Add(2, 512, uint64(1), uint64(0), uint64(0))
	f.Add(24, 1<<19, uint64(1)<<40, uint64(1)<<20, uint64(1)<<45)
	f.Add(0, 0, uint64(0), uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, roots, bs int, dataBlocks, hashStart, hashEnd uint64) {
		p := Params{Roots: roots, BlockSize: bs, Blocks: dataBlocks}
		if err := p.Validate(); err != nil {
			if !errors.Is(err, ErrInvalidParams) {
				t.Fatalf("error does not wrap ErrInvalidParams: %v", err)
			}
			return
		}
		if p.ParitySize() > 1<<63-1 || p.messageSize() > 1<<63-1 || p.messageSize()/uint64(bs) != p.Blocks {
			t.Fatalf("%+v: parity %d, message %d bytes", p, p.ParitySize(), p.messageSize())
		}
		if p.Rounds()*uint64(p.K()) < p.Blocks {
			t.Fatalf("%d rounds of %d do not cover %d blocks", p.Rounds(), p.K(), p.Blocks)
		}
		for _, b := range []uint64{0, p.Blocks - 1, p.Blocks / 2, hashStart % p.Blocks} {
			r, j := p.Round(b)
			if r >= p.Rounds() || j < 0 || j >= p.K() || uint64(j)*p.Rounds()+r != b {
				t.Fatalf("block %d: round %d position %d of %d rounds", b, r, j, p.Rounds())
			}
		}
		// The callers' geometry keeps every size below 2^63.
		if hashEnd >= 1<<63 {
			return
		}
		if mb := MessageBlocks(dataBlocks, hashStart, hashEnd, bs); mb < dataBlocks {
			t.Fatalf("MessageBlocks(%d, %d, %d, %d) = %d, fewer than the data blocks", dataBlocks, hashStart, hashEnd, bs, mb)
		}
	})
}
