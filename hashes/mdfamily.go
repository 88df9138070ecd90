package hashes

import (
	"encoding/binary"
	"hash"
)

// mdDigest is the streaming part that MD4 and RIPEMD-160 share: 64-byte
// blocks of little-endian words, MD4's padding (0x80, zeros, the length in
// bits, little-endian) and a state of 4 or 5 words that is the digest.
type mdDigest struct {
	h   [5]uint32
	buf [mdBlockSize]byte
	n   int    // bytes in buf
	len uint64 // bytes written
	// rmd160 selects RIPEMD-160 (5 words) rather than MD4 (4). A flag, not
	// a func field: the compression's arguments would escape through one,
	// and Sum would allocate.
	rmd160 bool
}

const mdBlockSize = 64

func newMD4() hash.Hash    { d := &mdDigest{}; d.Reset(); return d }
func newRMD160() hash.Hash { d := &mdDigest{rmd160: true}; d.Reset(); return d }

func (d *mdDigest) words() int {
	if d.rmd160 {
		return 5
	}
	return 4
}

func (d *mdDigest) compress(h *[5]uint32, p []byte) {
	if d.rmd160 {
		rmd160Blocks(h, p)
	} else {
		md4Blocks(h, p)
	}
}

func (d *mdDigest) Size() int      { return 4 * d.words() }
func (d *mdDigest) BlockSize() int { return mdBlockSize }

func (d *mdDigest) Reset() {
	// MD4's IV, and RIPEMD-160's fifth word.
	d.h = [5]uint32{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0}
	d.n, d.len = 0, 0
}

func (d *mdDigest) Write(p []byte) (int, error) {
	nn := len(p)
	d.len += uint64(nn)
	if d.n > 0 {
		k := copy(d.buf[d.n:], p)
		d.n += k
		p = p[k:]
		if d.n < mdBlockSize {
			return nn, nil
		}
		d.compress(&d.h, d.buf[:])
		d.n = 0
	}
	if whole := len(p) &^ (mdBlockSize - 1); whole > 0 {
		d.compress(&d.h, p[:whole])
		p = p[whole:]
	}
	d.n = copy(d.buf[:], p)
	return nn, nil
}

// Sum pads a copy of the state, so that d keeps accepting writes.
func (d *mdDigest) Sum(b []byte) []byte {
	h := d.h
	var tail [2 * mdBlockSize]byte
	copy(tail[:], d.buf[:d.n])
	tail[d.n] = 0x80
	end := mdBlockSize
	if d.n >= mdBlockSize-8 {
		end = 2 * mdBlockSize
	}
	binary.LittleEndian.PutUint64(tail[end-8:], d.len<<3)
	d.compress(&h, tail[:end])
	var out [20]byte
	for i, v := range h[:d.words()] {
		binary.LittleEndian.PutUint32(out[4*i:], v)
	}
	return append(b, out[:4*d.words()]...)
}
