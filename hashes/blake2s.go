package hashes

import (
	"encoding/binary"
	"hash"
	"math/bits"
)

// BLAKE2s (RFC 7693), for the kernel's and OpenSSL's "blake2s-256": written
// here because the standard library has none and golang.org/x/crypto is for
// tests only. Generic code, kept plain: the digest length and key are
// parameters so that RFC 7693's self-test (every length, keyed and not)
// checks it.

const (
	blake2sBlockSize = 64
	blake2sMaxSize   = 32
	blake2sMaxKey    = 32
)

// The BLAKE2s IV (SHA-256's).
var blake2sIV = [8]uint32{
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
}

// blake2sSigma is the message schedule of the 10 rounds.
var blake2sSigma = [10][16]uint8{
	{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
	{14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
	{11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
	{7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
	{9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
	{2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
	{12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
	{13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
	{6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
	{10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
}

// blake2sDigest is a streaming BLAKE2s with an n-byte digest length in its
// parameter block, optionally keyed.
type blake2sDigest struct {
	h    [8]uint32
	t    uint64 // bytes compressed so far
	buf  [blake2sBlockSize]byte
	n    int // bytes in buf; 1..64 once any input arrived: the last block stays buffered
	size int

	key    [blake2sMaxKey]byte
	keyLen int
}

func newBLAKE2s256() hash.Hash { return newBLAKE2sKeyed(32, nil) }

// newBLAKE2sKeyed returns a BLAKE2s of digest length size (1..32) keyed with
// key (0..32 bytes). It panics on out-of-range arguments.
func newBLAKE2sKeyed(size int, key []byte) *blake2sDigest {
	if size < 1 || size > blake2sMaxSize || len(key) > blake2sMaxKey {
		panic("hashes: invalid BLAKE2s digest size or key")
	}
	d := &blake2sDigest{size: size, keyLen: len(key)}
	copy(d.key[:], key)
	d.Reset()
	return d
}

func (d *blake2sDigest) Size() int      { return d.size }
func (d *blake2sDigest) BlockSize() int { return blake2sBlockSize }

func (d *blake2sDigest) Reset() {
	d.h = blake2sIV
	// Parameter block word 0: digest length, key length, fanout 1, depth 1.
	d.h[0] ^= uint32(d.size) | uint32(d.keyLen)<<8 | 1<<16 | 1<<24
	d.t = 0
	d.buf = [blake2sBlockSize]byte{}
	d.n = 0
	if d.keyLen > 0 {
		// The zero-padded key is the first block; the final one if no data follows.
		copy(d.buf[:], d.key[:d.keyLen])
		d.n = blake2sBlockSize
	}
}

func (d *blake2sDigest) Write(p []byte) (int, error) {
	nn := len(p)
	for len(p) > 0 {
		if d.n == blake2sBlockSize {
			// More data follows the buffered block, so it is not the last one.
			d.t += blake2sBlockSize
			blake2sCompress(&d.h, &d.buf, d.t, false)
			d.n = 0
		}
		k := copy(d.buf[d.n:], p)
		d.n += k
		p = p[k:]
	}
	return nn, nil
}

func (d *blake2sDigest) Sum(b []byte) []byte {
	h := d.h
	var last [blake2sBlockSize]byte
	copy(last[:], d.buf[:d.n])
	blake2sCompress(&h, &last, d.t+uint64(d.n), true)
	var out [blake2sMaxSize]byte
	for i, v := range h {
		binary.LittleEndian.PutUint32(out[4*i:], v)
	}
	return append(b, out[:d.size]...)
}

// blake2sCompress is RFC 7693's F: t is the byte counter including this
// block, final the last block's flag.
func blake2sCompress(h *[8]uint32, block *[blake2sBlockSize]byte, t uint64, final bool) {
	var m [16]uint32
	for i := range m {
		m[i] = binary.LittleEndian.Uint32(block[4*i:])
	}
	var v [16]uint32
	copy(v[:8], h[:])
	copy(v[8:], blake2sIV[:])
	v[12] ^= uint32(t)
	v[13] ^= uint32(t >> 32)
	if final {
		v[14] = ^v[14]
	}
	g := func(a, b, c, d int, x, y uint32) {
		v[a] += v[b] + x
		v[d] = bits.RotateLeft32(v[d]^v[a], -16)
		v[c] += v[d]
		v[b] = bits.RotateLeft32(v[b]^v[c], -12)
		v[a] += v[b] + y
		v[d] = bits.RotateLeft32(v[d]^v[a], -8)
		v[c] += v[d]
		v[b] = bits.RotateLeft32(v[b]^v[c], -7)
	}
	for r := range blake2sSigma {
		s := &blake2sSigma[r]
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
