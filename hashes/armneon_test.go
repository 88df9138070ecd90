//go:build (arm || arm64) && !purego

package hashes

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/veritytree/veritytree/hashes/internal/consts"
)

// TestBLAKE2bBlocksNEONMatchesGeneric compares the NEON compression function
// with the pure Go one directly (the seam hides the pure Go one on NEON
// machines): random states, counters near the carries, both flags, 0..9
// blocks at every alignment.
func TestBLAKE2bBlocksNEONMatchesGeneric(t *testing.T) {
	if !haveNEON {
		t.Skip("no NEON")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	buf := randBytes(rng, 9*128+16)
	counters := [][2]uint64{
		{0, 0},
		{^uint64(0) - 127, 0},
		{^uint64(0) - 255, 7},
		{^uint64(0) - 127, ^uint64(0)},
		{0xffffffff - 127, 0},             // carry between the 32-bit halves
		{0xffffffff_ffffff00, 0xffffffff}, // carry into the high word's high half
	}
	for i := range 20 {
		counters = append(counters, [2]uint64{rng.Uint64(), uint64(i % 3)})
	}
	for _, c0 := range counters {
		for _, flag := range []uint64{0, ^uint64(0), rng.Uint64()} {
			for n := 0; n <= 9; n++ {
				off := rng.IntN(16)
				blocks := buf[off : off+128*n]
				var h [8]uint64
				for i := range h {
					h[i] = rng.Uint64()
				}
				h2, c, c2 := h, c0, c0
				blake2bBlocksGeneric(&h, &c, flag, blocks)
				blake2bBlocksNEON(&h2, &c2, flag, blocks)
				if h != h2 || c != c2 {
					t.Fatalf("counter %x flag %x %d blocks at +%d: NEON h=%x c=%x, generic h=%x c=%x",
						c0, flag, n, off, h2, c2, h, c)
				}
			}
		}
	}
}

// TestBLAKE2bSeamIsNEON checks the dispatch: the seam and the bulk "neon"
// implementation are used exactly when the CPU has NEON.
func TestBLAKE2bSeamIsNEON(t *testing.T) {
	impls := BLAKE2b256.Implementations()
	if haveNEON != slices.Contains(impls, "neon") {
		t.Errorf("NEON %v, implementations %v", haveNEON, impls)
	}
	var h, h2 [8]uint64
	var c, c2 [2]uint64
	blake2bBlocks(&h, &c, 0, make([]byte, 128))
	blake2bBlocksGeneric(&h2, &c2, 0, make([]byte, 128))
	if h != h2 {
		t.Fatal("the seam gives a different result")
	}
}

// sha256BlockRef is FIPS 180-4's compression function, for the kernels.
func sha256BlockRef(h *[8]uint32, p []byte) {
	k := &consts.SHA256K
	for len(p) >= 64 {
		var w [64]uint32
		for i := range 16 {
			w[i] = binary.BigEndian.Uint32(p[4*i:])
		}
		for i := 16; i < 64; i++ {
			s0 := bits.RotateLeft32(w[i-15], -7) ^ bits.RotateLeft32(w[i-15], -18) ^ w[i-15]>>3
			s1 := bits.RotateLeft32(w[i-2], -17) ^ bits.RotateLeft32(w[i-2], -19) ^ w[i-2]>>10
			w[i] = w[i-16] + s0 + w[i-7] + s1
		}
		a, b, c, d, e, f, g, hh := h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]
		for i := range 64 {
			t1 := hh + (bits.RotateLeft32(e, -6) ^ bits.RotateLeft32(e, -11) ^ bits.RotateLeft32(e, -25)) + (e&f ^ ^e&g) + k[i] + w[i]
			t2 := (bits.RotateLeft32(a, -2) ^ bits.RotateLeft32(a, -13) ^ bits.RotateLeft32(a, -22)) + (a&b ^ a&c ^ b&c)
			hh, g, f, e, d, c, b, a = g, f, e, d+t1, c, b, a, t1+t2
		}
		h[0] += a
		h[1] += b
		h[2] += c
		h[3] += d
		h[4] += e
		h[5] += f
		h[6] += g
		h[7] += hh
		p = p[64:]
	}
}

// TestSHA256NEON4Kernel runs the four-lane kernel on random states and
// 0..5 chunks per lane and compares each lane with the reference.
func TestSHA256NEON4Kernel(t *testing.T) {
	if !haveNEON {
		t.Skip("no NEON")
	}
	testKernel32x4(t, newSHA256NEON4Kernel(), sha256BlockRef)
}

func testKernel32x4(t *testing.T, kernel kernel32x4, ref func(*[8]uint32, []byte)) {
	rng := rand.New(rand.NewPCG(13, 14))
	for n := 0; n <= 5; n++ {
		var st [8][4]uint32
		var want [4][8]uint32
		var p [4]*byte
		data := [4][]byte{}
		for l := range 4 {
			for w := range 8 {
				st[w][l] = rng.Uint32()
				want[l][w] = st[w][l]
			}
			data[l] = randBytes(rng, 64*n+1)[1:]
			p[l] = unsafe.SliceData(append(data[l], 0))
			ref(&want[l], data[l])
		}
		kernel(&st, &p, n)
		for l := range 4 {
			for w := range 8 {
				if st[w][l] != want[l][w] {
					t.Fatalf("%d chunks, lane %d: state word %d = %#x, want %#x", n, l, w, st[w][l], want[l][w])
				}
			}
		}
	}
}

// sha1BlockRef is FIPS 180-4's SHA-1 compression function (state in the
// first five words).
func sha1BlockRef(h *[8]uint32, p []byte) {
	for len(p) >= 64 {
		var w [80]uint32
		for i := range 16 {
			w[i] = binary.BigEndian.Uint32(p[4*i:])
		}
		for i := 16; i < 80; i++ {
			w[i] = bits.RotateLeft32(w[i-3]^w[i-8]^w[i-14]^w[i-16], 1)
		}
		a, b, c, d, e := h[0], h[1], h[2], h[3], h[4]
		for i := range 80 {
			var f, k uint32
			switch {
			case i < 20:
				f, k = b&c|^b&d, consts.SHA1K[0]
			case i < 40:
				f, k = b^c^d, consts.SHA1K[1]
			case i < 60:
				f, k = b&c|b&d|c&d, consts.SHA1K[2]
			default:
				f, k = b^c^d, consts.SHA1K[3]
			}
			t := bits.RotateLeft32(a, 5) + f + e + k + w[i]
			a, b, c, d, e = t, a, bits.RotateLeft32(b, 30), c, d
		}
		h[0] += a
		h[1] += b
		h[2] += c
		h[3] += d
		h[4] += e
		p = p[64:]
	}
}

func TestSHA1NEON4Kernel(t *testing.T) {
	if !haveNEON {
		t.Skip("no NEON")
	}
	testKernel32x4(t, newSHA1NEON4Kernel(), sha1BlockRef)
}

// sha512BlockRef is FIPS 180-4's SHA-512 compression function.
func sha512BlockRef(h *[8]uint64, p []byte) {
	k := &consts.SHA512K
	r := bits.RotateLeft64
	for len(p) >= 128 {
		var w [80]uint64
		for i := range 16 {
			w[i] = binary.BigEndian.Uint64(p[8*i:])
		}
		for i := 16; i < 80; i++ {
			s0 := r(w[i-15], -1) ^ r(w[i-15], -8) ^ w[i-15]>>7
			s1 := r(w[i-2], -19) ^ r(w[i-2], -61) ^ w[i-2]>>6
			w[i] = w[i-16] + s0 + w[i-7] + s1
		}
		a, b, c, d, e, f, g, hh := h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]
		for i := range 80 {
			t1 := hh + (r(e, -14) ^ r(e, -18) ^ r(e, -41)) + (e&f ^ ^e&g) + k[i] + w[i]
			t2 := (r(a, -28) ^ r(a, -34) ^ r(a, -39)) + (a&b ^ a&c ^ b&c)
			hh, g, f, e, d, c, b, a = g, f, e, d+t1, c, b, a, t1+t2
		}
		for i, v := range [8]uint64{a, b, c, d, e, f, g, hh} {
			h[i] += v
		}
		p = p[128:]
	}
}

func testKernel64x2(t *testing.T, kernel kernel64x2) {
	rng := rand.New(rand.NewPCG(15, 16))
	for n := 0; n <= 4; n++ {
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
			sha512BlockRef(&want[l], data)
		}
		kernel(&st, &p, n)
		for l := range 2 {
			for w := range 8 {
				if st[w][l] != want[l][w] {
					t.Fatalf("%d chunks, lane %d: state word %d = %#x, want %#x", n, l, w, st[w][l], want[l][w])
				}
			}
		}
	}
}

func TestSHA512NEON2Kernel(t *testing.T) {
	if !haveNEON {
		t.Skip("no NEON")
	}
	testKernel64x2(t, newSHA512NEON2Kernel())
}

// BenchmarkMBOverhead measures the multi-buffer layer alone (a kernel that
// does nothing), in the shape of BenchmarkHashBlocks: what the Go side adds
// to every 32-bit-word implementation's instructions per byte.
func BenchmarkMBOverhead(b *testing.B) {
	const bs, count = 4096, 256
	salt := make([]byte, 32)
	blocks := make([]byte, bs*count)
	dst := make([]byte, count*64)
	h := newMB32x4(func(st *[8][4]uint32, p *[4]*byte, chunks int) {}, consts.SHA256IV[:], 64, bs, salt, SaltBefore)
	b.SetBytes(bs * count)
	for b.Loop() {
		h.hashBlocks(dst, 64, blocks)
	}
}
