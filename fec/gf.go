package fec

import "sync"

// The field is GF(2^8) built on the polynomial x^8 + x^4 + x^3 + x^2 + 1
// (0x11d), with 2 (the polynomial x) as primitive element: the field of
// dm-verity, libfec and Android's fec tool.
const fieldPoly = 0x11d

var (
	// gfExp[i] = 2^i. It is doubled (510 entries and a spare) so that
	// gfExp[log a + log b] needs no reduction modulo 255.
	gfExp [512]byte
	// gfLog[a] = i with 2^i = a, for a != 0; gfLog[0] is unused.
	gfLog [256]int
)

func init() {
	x := 1
	for i := range 255 {
		gfExp[i] = byte(x)
		gfLog[x] = i
		x <<= 1
		if x&0x100 != 0 {
			x ^= fieldPoly
		}
	}
	for i := 255; i < len(gfExp); i++ {
		gfExp[i] = gfExp[i-255]
	}
}

// gfMul returns a*b in the field.
func gfMul(a, b byte) byte {
	if a == 0 || b == 0 {
		return 0
	}
	return gfExp[gfLog[a]+gfLog[b]]
}

// gfDiv returns a/b; b must not be zero.
func gfDiv(a, b byte) byte {
	if a == 0 {
		return 0
	}
	return gfExp[gfLog[a]+255-gfLog[b]]
}

// gfInv returns 1/a; a must not be zero.
func gfInv(a byte) byte { return gfExp[255-gfLog[a]] }

// gfPow2 returns 2^e for any integer e (negative too).
func gfPow2(e int) byte {
	e %= 255
	if e < 0 {
		e += 255
	}
	return gfExp[e]
}

// generator returns the coefficients of the code's generator polynomial
// g(x) = (x - 2^0)(x - 2^1)...(x - 2^(roots-1)), lowest degree first: roots+1
// coefficients, the last (x^roots) being 1.
func generator(roots int) []byte {
	g := []byte{1}
	for i := range roots {
		root := gfExp[i]
		// g = g * (x + root): in characteristic 2, minus is plus.
		next := make([]byte, len(g)+1)
		for d, c := range g {
			next[d+1] ^= c
			next[d] ^= gfMul(c, root)
		}
		g = next
	}
	return g
}

// maxWords is the number of 64-bit words that hold the parity bytes of one
// codeword for the largest roots (24).
const maxWords = (MaxRoots + 7) / 8

// encoder holds the tables of one roots value.
//
// The encoder is the usual division register: the remainder r[0..roots-1]
// of m(x)*x^roots by g(x), r[0] of highest degree. For each message byte m,
// highest degree first:
//
//	f = m ^ r[0]; r = r shifted by one byte toward r[0]; r[i] ^= f * g[roots-1-i]
//
// The register is kept in `words` little-endian 64-bit words: r[i] is byte
// i%8 of word i/8, so r[0] is the low byte of the first word, the shift is a
// right shift across the words, and the bytes past r[roots-1] (in the last
// word) stay zero. The products f*g[roots-1-i] for all i are precomputed,
// packed the same way: tab[w][f] is word w of that row.
type encoder struct {
	roots int
	words int // 64-bit words in the register: 1, 2 or 3
	gen   []byte
	tab   [maxWords][256]uint64
}

var (
	encoders    [MaxRoots + 1]*encoder
	encoderOnce [MaxRoots + 1]sync.Once
)

// encoderFor returns the (shared, read-only) tables for roots, building
// them on first use. roots must be valid.
func encoderFor(roots int) *encoder {
	encoderOnce[roots].Do(func() {
		e := &encoder{roots: roots, words: (roots + 7) / 8, gen: generator(roots)}
		for f := range 256 {
			for i := range roots {
				p := gfMul(byte(f), e.gen[roots-1-i])
				e.tab[i/8][f] |= uint64(p) << (8 * (i % 8))
			}
		}
		encoders[roots] = e
	})
	return encoders[roots]
}

// codeword computes the parity of one message of at most k bytes (a
// shorter one is a shortened codeword: leading zero bytes omitted) into
// parity (roots bytes): the one-codeword form of what Encode computes
// for many codewords side by side.
func (e *encoder) codeword(msg, parity []byte) {
	var reg [maxWords]uint64
	for _, m := range msg {
		f := byte(reg[0]) ^ m
		for w := 0; w < e.words; w++ {
			next := uint64(0)
			if w+1 < e.words {
				next = reg[w+1] << 56
			}
			reg[w] = (reg[w]>>8 | next) ^ e.tab[w][f]
		}
	}
	for i := range e.roots {
		parity[i] = byte(reg[i/8] >> (8 * (i % 8)))
	}
}
