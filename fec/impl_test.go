package fec

import (
	"bytes"
	"context"
	"fmt"
	"testing"
)

// TestImplementationsMatchGeneric runs every encoder this machine has
// against the Go LFSR ("generic"), for every roots value, on messages that
// end inside a round and inside a unit (zero padding), in small blocks
// (several rounds a unit) and big ones (column slices of a round).
func TestImplementationsMatchGeneric(t *testing.T) {
	impls := Implementations()
	if impls[len(impls)-1] != "generic" {
		t.Fatalf("Implementations() = %v: generic is not last", impls)
	}
	t.Logf("implementations: %v", impls)
	type shape struct {
		bs     int
		blocks func(k int) uint64
	}
	shapes := []shape{
		// A bit more than one unit: the second unit ends in a partial round.
		{512, func(k int) uint64 {
			return uint64(newPlan(Params{Roots: 255 - k, BlockSize: 512, Blocks: 1}).roundsPer)*uint64(k) + uint64(k/2) + 3
		}},
		{1024, func(k int) uint64 { return uint64(3*k + 1) }},
		{4096, func(k int) uint64 { return uint64(2*k + 17) }},
		{4096, func(int) uint64 { return 5 }},  // one short round, mostly padding
		{16384, func(int) uint64 { return 7 }}, // column slices, mostly padding
	}
	for roots := MinRoots; roots <= MaxRoots; roots++ {
		if testing.Short() && roots%8 > 1 { // 2, 8, 9, 16, 17, 24: the word boundaries
			continue
		}
		shapes := shapes
		if roots%11 == 2 { // 2, 13, 24: full column slices of two rounds too
			shapes = append(shapes, shape{32768, func(k int) uint64 { return uint64(k + 2) }})
		}
		for _, sh := range shapes {
			p := Params{Roots: roots, BlockSize: sh.bs}
			p.Blocks = sh.blocks(p.K())
			t.Run(fmt.Sprintf("roots%d-bs%d-blocks%d", roots, sh.bs, p.Blocks), func(t *testing.T) {
				t.Parallel()
				msg := make([]byte, p.messageSize())
				fillRand(newRand(t, uint64(roots*100000+sh.bs)+p.Blocks), msg)
				want := encodeImpl(t, p, msg, "generic")
				for _, name := range impls[:len(impls)-1] {
					if got := encodeImpl(t, p, msg, name); !bytes.Equal(got, want) {
						t.Errorf("%s: parity differs from generic at byte %d", name, firstDiff(got, want))
					}
				}
			})
		}
	}
}

func encodeImpl(t *testing.T, p Params, msg []byte, impl string) []byte {
	t.Helper()
	out := &memFile{}
	if err := encode(context.Background(), p, bytes.NewReader(msg), out, 0, 2, impl); err != nil {
		t.Fatal(err)
	}
	if uint64(len(out.b)) != p.ParitySize() {
		t.Fatalf("%s: wrote %d bytes, want %d", impl, len(out.b), p.ParitySize())
	}
	return out.b
}

// TestTileEncoderPartialTiles drives each kernel's tile encoder directly on
// tiles of any length (Encode's tiles are whole, 512 codewords): it must
// encode a whole number of its groups, correctly, and leave the rest.
// -short takes the roots at the word boundaries, as
// TestImplementationsMatchGeneric does.
func TestTileEncoderPartialTiles(t *testing.T) {
	rng := newRand(t, 7)
	for _, name := range Implementations() {
		if name == "generic" {
			continue
		}
		for roots := MinRoots; roots <= MaxRoots; roots++ {
			if testing.Short() && roots%8 > 1 { // 2, 8, 9, 16, 17, 24
				continue
			}
			k := 255 - roots
			e := encoderFor(roots)
			for _, tl := range []int{1, 31, 63, 64, 65, 129, 200, 256, 300, 384, 511, 512} {
				stride := tl + 37 // rows apart by more than a tile
				src := make([]byte, k*stride)
				fillRand(rng, src)
				vec := newTileEncoder(roots, name)
				out := make([]byte, tl*roots)
				fillRand(rng, out)
				before := bytes.Clone(out)
				n := vec(src, stride, k, tl, out)
				if n < 0 || n > tl || (tl >= 512 && n != 512) {
					t.Fatalf("%s roots %d: encoded %d of %d codewords", name, roots, n, tl)
				}
				col := make([]byte, k)
				par := make([]byte, roots)
				for b := range n {
					for j := range k {
						col[j] = src[j*stride+b]
					}
					e.codeword(col, par)
					if !bytes.Equal(out[b*roots:(b+1)*roots], par) {
						t.Fatalf("%s roots %d tile %d: codeword %d: got %x, want %x", name, roots, tl, b, out[b*roots:(b+1)*roots], par)
					}
				}
				if !bytes.Equal(out[n*roots:], before[n*roots:]) {
					t.Fatalf("%s roots %d tile %d: wrote past the %d codewords encoded", name, roots, tl, n)
				}
			}
		}
	}
}

// BenchmarkEncodeUnit measures one worker encoding one unit already in
// memory (2 MiB of 4 KiB blocks, about half of it in the L2 cache of a
// Zen 4): the kernel and the transpose, without Encode's reads and writes,
// in MB/s of message.
func BenchmarkEncodeUnit(b *testing.B) {
	for _, impl := range Implementations() {
		for _, roots := range []int{2, 8, 24} {
			b.Run(fmt.Sprintf("%s-roots%d", impl, roots), func(b *testing.B) {
				p := Params{Roots: roots, BlockSize: 4096, Blocks: 1 << 20}
				pl := newPlan(p)
				pl.impl = impl
				w := newWorker(pl)
				fillRand(newRand(b, 5), w.buf)
				un := pl.unit(0)
				b.SetBytes(int64(len(w.buf)))
				for b.Loop() {
					w.encodeUnit(un)
				}
			})
		}
	}
}
