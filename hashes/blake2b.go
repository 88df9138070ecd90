package hashes

//go:generate go run ./internal/blake2bgen/_gen -out blake2b_generic.go

import (
	"encoding/binary"
	"hash"
)

const (
	blake2bBlockSize = 128
	blake2bMaxSize   = 64
	blake2bMaxKey    = 64
)

// blake2bDigest is a streaming BLAKE2b (RFC 7693) with an n-byte digest
// length encoded in the parameter block, optionally keyed.
type blake2bDigest struct {
	h    [8]uint64
	c    [2]uint64 // bytes compressed so far (128-bit)
	buf  [blake2bBlockSize]byte
	n    int // bytes in buf; 1..128 once any input arrived, since the last block must stay buffered
	size int

	key    [blake2bMaxKey]byte
	keyLen int

	// Scratch for Sum. Arguments to the blake2bBlocks func variable escape,
	// so locals would be heap-allocated; keeping the copy here makes Sum
	// allocation-free. As a consequence Sum must not run concurrently with
	// itself on the same digest (no hash.Hash in this package promises that).
	fin struct {
		h   [8]uint64
		c   [2]uint64
		blk [blake2bBlockSize]byte
	}
}

// newBLAKE2b256 returns an unkeyed BLAKE2b-256 hash (digest length 32 in the
// parameter block, not a truncated BLAKE2b-512).
func newBLAKE2b256() hash.Hash { return newBLAKE2b(32) }

func newBLAKE2b(size int) *blake2bDigest { return newBLAKE2bKeyed(size, nil) }

// newBLAKE2bKeyed returns a BLAKE2b of digest length size (1..64) keyed with
// key (0..64 bytes). It panics on out-of-range arguments.
func newBLAKE2bKeyed(size int, key []byte) *blake2bDigest {
	if size < 1 || size > blake2bMaxSize {
		panic("hashes: invalid BLAKE2b digest size")
	}
	if len(key) > blake2bMaxKey {
		panic("hashes: BLAKE2b key too long")
	}
	d := &blake2bDigest{size: size, keyLen: len(key)}
	copy(d.key[:], key)
	d.Reset()
	return d
}

func (d *blake2bDigest) Size() int      { return d.size }
func (d *blake2bDigest) BlockSize() int { return blake2bBlockSize }

func (d *blake2bDigest) Reset() {
	d.h = [8]uint64{
		blake2bIV0, blake2bIV1, blake2bIV2, blake2bIV3,
		blake2bIV4, blake2bIV5, blake2bIV6, blake2bIV7,
	}
	// Parameter block word 0: digest length, key length, fanout 1, depth 1.
	d.h[0] ^= uint64(d.size) | uint64(d.keyLen)<<8 | 1<<16 | 1<<24
	d.c = [2]uint64{}
	d.buf = [blake2bBlockSize]byte{}
	d.n = 0
	if d.keyLen > 0 {
		// The zero-padded key is the first block; it is the final one if no data follows.
		copy(d.buf[:], d.key[:d.keyLen])
		d.n = blake2bBlockSize
	}
}

func (d *blake2bDigest) Write(p []byte) (int, error) {
	nn := len(p)
	if d.n > 0 {
		if len(p) <= blake2bBlockSize-d.n {
			d.n += copy(d.buf[d.n:], p)
			return nn, nil
		}
		// More data follows the buffered block, so it is not the last one.
		k := copy(d.buf[d.n:], p)
		p = p[k:]
		blake2bBlocks(&d.h, &d.c, 0, d.buf[:])
		d.n = 0
	}
	if len(p) > blake2bBlockSize {
		// Compress straight from p but keep 1..128 bytes back: the last
		// block needs the final flag and we can't know yet which it is.
		k := (len(p) - 1) &^ (blake2bBlockSize - 1)
		blake2bBlocks(&d.h, &d.c, 0, p[:k])
		p = p[k:]
	}
	d.n += copy(d.buf[d.n:], p)
	return nn, nil
}

func (d *blake2bDigest) Sum(b []byte) []byte {
	f := &d.fin
	f.h = d.h
	// blake2bBlocks adds 128 to the counter, but the final block counts only
	// d.n bytes: pre-bias by d.n-128 (mod 2^128).
	lo := d.c[0] + uint64(d.n) - blake2bBlockSize
	hi := d.c[1]
	if lo > d.c[0] { // borrow (d.n-128 is never positive)
		hi--
	}
	f.c = [2]uint64{lo, hi}
	f.blk = [blake2bBlockSize]byte{}
	copy(f.blk[:], d.buf[:d.n])
	blake2bBlocks(&f.h, &f.c, ^uint64(0), f.blk[:])

	var out [blake2bMaxSize]byte
	for i, v := range f.h {
		binary.LittleEndian.PutUint64(out[8*i:], v)
	}
	return append(b, out[:d.size]...)
}

// Clone returns an independent copy of the hash state.
func (d *blake2bDigest) Clone() (hash.Cloner, error) {
	d2 := *d
	return &d2, nil
}
