package hashes

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math/bits"
	"math/rand/v2"
	"testing"

	"golang.org/x/crypto/blake2b"

	"github.com/veritytree/veritytree/hashes/internal/consts"
)

// RFC 7693 Appendix A.
func TestBLAKE2b512ABC(t *testing.T) {
	const want = "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1" +
		"7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923"
	d := newBLAKE2b(64)
	d.Write([]byte("abc"))
	if got := hex.EncodeToString(d.Sum(nil)); got != want {
		t.Fatalf("BLAKE2b-512(abc) = %s, want %s", got, want)
	}
}

// rfc7693Seq is selftest_seq from RFC 7693 Appendix E (Fibonacci generator).
func rfc7693Seq(n int, seed uint32) []byte {
	out := make([]byte, n)
	a, b := 0xDEAD4BAD*seed, uint32(1)
	for i := range out {
		t := a + b
		a, b = b, t
		out[i] = byte(t >> 24)
	}
	return out
}

// rfc7693SelfTest runs blake2b_selftest from RFC 7693 Appendix E with the
// given keyed hash constructor and returns the 32-byte grand hash.
func rfc7693SelfTest(newHash func(size int, key []byte) interface {
	Write([]byte) (int, error)
	Sum([]byte) []byte
}) []byte {
	grand := newHash(32, nil)
	for _, outlen := range []int{20, 32, 48, 64} {
		for _, inlen := range []int{0, 3, 128, 129, 255, 1024} {
			in := rfc7693Seq(inlen, uint32(inlen))
			h := newHash(outlen, nil)
			h.Write(in)
			grand.Write(h.Sum(nil))
			key := rfc7693Seq(outlen, uint32(outlen))
			h = newHash(outlen, key)
			h.Write(in)
			grand.Write(h.Sum(nil))
		}
	}
	return grand.Sum(nil)
}

func TestBLAKE2bRFC7693SelfTest(t *testing.T) {
	// blake2b_res from RFC 7693 Appendix E.
	want := []byte{
		0xc2, 0x3a, 0x78, 0x00, 0xd9, 0x81, 0x23, 0xbd,
		0x10, 0xf5, 0x06, 0xc6, 0x1e, 0x29, 0xda, 0x56,
		0x03, 0xd7, 0x63, 0xb8, 0xbb, 0xad, 0x2e, 0x73,
		0x7f, 0x5e, 0x76, 0x5a, 0x7b, 0xcc, 0xd4, 0x75,
	}
	type writeSummer = interface {
		Write([]byte) (int, error)
		Sum([]byte) []byte
	}
	// Check the hard-coded vector against x/crypto so a typo can't mask a bug.
	ref := rfc7693SelfTest(func(size int, key []byte) writeSummer {
		h, err := blake2b.New(size, key)
		if err != nil {
			t.Fatal(err)
		}
		return h
	})
	if !bytes.Equal(ref, want) {
		t.Fatalf("x/crypto self-test = %x, want %x", ref, want)
	}
	got := rfc7693SelfTest(func(size int, key []byte) writeSummer {
		return newBLAKE2bKeyed(size, key)
	})
	if !bytes.Equal(got, want) {
		t.Fatalf("self-test = %x, want %x", got, want)
	}
}

// writeRandomPieces writes p to h in random-sized pieces, including empty ones.
func writeRandomPieces(h interface{ Write([]byte) (int, error) }, p []byte, rng *rand.Rand) {
	for len(p) > 0 {
		n := rng.IntN(min(len(p), 300) + 1)
		h.Write(p[:n])
		p = p[n:]
	}
}

func TestBLAKE2b256AllLengths(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 256+1024)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	h := newBLAKE2b256()
	if h.Size() != 32 || h.BlockSize() != 128 {
		t.Fatalf("Size, BlockSize = %d, %d; want 32, 128", h.Size(), h.BlockSize())
	}
	for _, saltLen := range []int{0, 1, 32, 127, 128, 129, 256} {
		for n := 0; n <= 1024; n++ {
			salt, block := data[:saltLen], data[saltLen:saltLen+n]
			want := blake2b.Sum256(data[:saltLen+n])

			h.Reset()
			h.Write(salt)
			h.Write(block)
			if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
				t.Fatalf("salt %d, len %d: got %x, want %x", saltLen, n, got, want)
			}

			h.Reset()
			writeRandomPieces(h, salt, rng)
			writeRandomPieces(h, block, rng)
			if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
				t.Fatalf("salt %d, len %d, pieces: got %x, want %x", saltLen, n, got, want)
			}
		}
	}
}

func TestBLAKE2b512Lengths(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 3, 127, 128, 129, 255, 256, 257, 1000, 4096, 4097} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		want := blake2b.Sum512(data)
		d := newBLAKE2b(64)
		writeRandomPieces(d, data, rng)
		if got := d.Sum(nil); !bytes.Equal(got, want[:]) {
			t.Fatalf("len %d: got %x, want %x", n, got, want)
		}
	}
}

// blake2bRefCompress is the RFC 7693 section 3.2 function F, written plainly
// with the sigma table, as an independent check of the unrolled code.
func blake2bRefCompress(h *[8]uint64, m *[16]uint64, t [2]uint64, final bool) {
	sigma := &consts.BLAKE2bSigma
	iv := consts.BLAKE2bIV
	var v [16]uint64
	copy(v[:8], h[:])
	copy(v[8:], iv[:])
	v[12] ^= t[0]
	v[13] ^= t[1]
	if final {
		v[14] = ^v[14]
	}
	g := func(a, b, c, d int, x, y uint64) {
		v[a] = v[a] + v[b] + x
		v[d] = bits.RotateLeft64(v[d]^v[a], -32)
		v[c] = v[c] + v[d]
		v[b] = bits.RotateLeft64(v[b]^v[c], -24)
		v[a] = v[a] + v[b] + y
		v[d] = bits.RotateLeft64(v[d]^v[a], -16)
		v[c] = v[c] + v[d]
		v[b] = bits.RotateLeft64(v[b]^v[c], -63)
	}
	for i := range 12 {
		s := &sigma[i%10]
		g(0, 4, 8, 12, m[s[0]], m[s[1]])
		g(1, 5, 9, 13, m[s[2]], m[s[3]])
		g(2, 6, 10, 14, m[s[4]], m[s[5]])
		g(3, 7, 11, 15, m[s[6]], m[s[7]])
		g(0, 5, 10, 15, m[s[8]], m[s[9]])
		g(1, 6, 11, 12, m[s[10]], m[s[11]])
		g(2, 7, 8, 13, m[s[12]], m[s[13]])
		g(3, 4, 9, 14, m[s[14]], m[s[15]])
	}
	for i := range h {
		h[i] ^= v[i] ^ v[i+8]
	}
}

// Digests never get near 2^64 bytes, so the high counter word and its carry
// are only reachable by calling the block function directly.
func TestBLAKE2bBlocksCounter(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	blocks := make([]byte, 3*128)
	for i := range blocks {
		blocks[i] = byte(rng.Uint32())
	}
	starts := [][2]uint64{
		{0, 0},
		{^uint64(0) - 127, 0},          // carry on the 2nd block
		{^uint64(0) - 255, 7},          // carry on the 3rd block
		{^uint64(0) - 127, ^uint64(0)}, // 128-bit wrap-around
		{rng.Uint64(), rng.Uint64()},
	}
	for _, start := range starts {
		for _, flag := range []uint64{0, ^uint64(0)} {
			var h [8]uint64
			for i := range h {
				h[i] = rng.Uint64()
			}
			want, wantC := h, start
			for i := 0; i < len(blocks); i += 128 {
				var m [16]uint64
				for j := range m {
					m[j] = binary.LittleEndian.Uint64(blocks[i+8*j:])
				}
				wantC[0] += 128
				if wantC[0] < 128 {
					wantC[1]++
				}
				blake2bRefCompress(&want, &m, wantC, flag != 0)
			}
			c := start
			blake2bBlocks(&h, &c, flag, blocks)
			if h != want || c != wantC {
				t.Errorf("start %x flag %x: got h=%x c=%x, want h=%x c=%x", start, flag, h, c, want, wantC)
			}
		}
	}
}

func TestBLAKE2bSumKeepsState(t *testing.T) {
	d := newBLAKE2b(32)
	d.Write(bytes.Repeat([]byte{'a'}, 200))
	s1 := d.Sum(nil)
	s2 := d.Sum([]byte("prefix"))
	if !bytes.Equal(s1, s2[len("prefix"):]) || string(s2[:len("prefix")]) != "prefix" {
		t.Fatalf("second Sum differs: %x vs %x", s1, s2)
	}
	d.Write(bytes.Repeat([]byte{'b'}, 100))
	want := blake2b.Sum256(append(bytes.Repeat([]byte{'a'}, 200), bytes.Repeat([]byte{'b'}, 100)...))
	if got := d.Sum(nil); !bytes.Equal(got, want[:]) {
		t.Fatalf("after Sum+Write: got %x, want %x", got, want)
	}

	c, err := d.Clone()
	if err != nil {
		t.Fatal(err)
	}
	d.Write([]byte("x"))
	if got := c.(*blake2bDigest).Sum(nil); !bytes.Equal(got, want[:]) {
		t.Fatalf("clone changed by writes to original: got %x, want %x", got, want)
	}

	d.Reset()
	empty := blake2b.Sum256(nil)
	if got := d.Sum(nil); !bytes.Equal(got, empty[:]) {
		t.Fatalf("after Reset: got %x, want %x", got, empty)
	}
	d.Write([]byte("abc"))
	abc := blake2b.Sum256([]byte("abc"))
	if got := d.Sum(nil); !bytes.Equal(got, abc[:]) {
		t.Fatalf("after Reset+Write: got %x, want %x", got, abc)
	}
}

func TestBLAKE2bKeyedReset(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	ref, _ := blake2b.New256(key)
	ref.Write([]byte("hello"))
	want := ref.Sum(nil)
	d := newBLAKE2bKeyed(32, key)
	d.Write([]byte("junk"))
	d.Reset()
	d.Write([]byte("hello"))
	if got := d.Sum(nil); !bytes.Equal(got, want) {
		t.Fatalf("keyed after Reset: got %x, want %x", got, want)
	}
}

func TestBLAKE2bAllocs(t *testing.T) {
	d := newBLAKE2b(32)
	salt := make([]byte, 32)
	block := make([]byte, 4096)
	out := make([]byte, 0, 32)
	allocs := testing.AllocsPerRun(100, func() {
		d.Reset()
		d.Write(salt)
		d.Write(block)
		out = d.Sum(out[:0])
	})
	if allocs != 0 {
		t.Fatalf("Write+Sum allocated %v times per run, want 0", allocs)
	}
}

func BenchmarkBLAKE2b256_4KiB(b *testing.B) {
	salt := make([]byte, 32)
	block := make([]byte, 4096)
	for i := range block {
		block[i] = byte(i * 7)
	}
	out := make([]byte, 0, 32)
	b.Run("veritytree", func(b *testing.B) {
		h := newBLAKE2b256()
		b.SetBytes(int64(len(block)))
		b.ReportAllocs()
		for b.Loop() {
			h.Reset()
			h.Write(salt)
			h.Write(block)
			out = h.Sum(out[:0])
		}
	})
	b.Run("xcrypto", func(b *testing.B) {
		h, _ := blake2b.New256(nil)
		b.SetBytes(int64(len(block)))
		b.ReportAllocs()
		for b.Loop() {
			h.Reset()
			h.Write(salt)
			h.Write(block)
			out = h.Sum(out[:0])
		}
	})
}
