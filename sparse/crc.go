package sparse

// CRC32 (IEEE, as hash/crc32 and libsparse compute it) of long repeated
// runs without touching every byte, by arithmetic in GF(2)[x] modulo the
// CRC polynomial, as zlib's crc32_combine does: appending len2 bytes with
// CRC crc2 to data with CRC crc1 gives crc1*x^(8*len2) + crc2 (mod P),
// with polynomials in the reflected bit order of the CRC register.

const crcPoly = 0xedb88320 // reflected IEEE polynomial

// crcX2n[k] is x^(2^k) mod P; k up to 3+64 covers 8*len for any uint64 len.
var crcX2n = func() (t [68]uint32) {
	t[0] = 1 << 30 // x^1
	for k := 1; k < len(t); k++ {
		t[k] = crcMulMod(t[k-1], t[k-1])
	}
	return t
}()

// crcMulMod returns a*b mod P.
func crcMulMod(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		if b&1 != 0 {
			b = b>>1 ^ crcPoly
		} else {
			b >>= 1
		}
	}
	return p
}

// crcX8n returns x^(8n) mod P.
func crcX8n(n uint64) uint32 {
	p := uint32(1) << 31 // x^0
	for k := 3; n != 0; n, k = n>>1, k+1 {
		if n&1 != 0 {
			p = crcMulMod(crcX2n[k], p)
		}
	}
	return p
}

// crcCombine returns the CRC32 of A followed by B, given crc1 of A and
// crc2 of B, and B's length len2.
func crcCombine(crc1, crc2 uint32, len2 uint64) uint32 {
	return crcMulMod(crcX8n(len2), crc1) ^ crc2
}

// crcRepeat returns the CRC32 of n copies of a unit of unitLen bytes whose
// CRC32 is unit.
func crcRepeat(unit uint32, unitLen, n uint64) uint32 {
	var crc uint32 // of the empty string
	for n != 0 {
		if n&1 != 0 {
			// The copies are identical, so order does not matter.
			crc = crcCombine(crc, unit, unitLen)
		}
		n >>= 1
		if n != 0 {
			unit = crcCombine(unit, unit, unitLen)
			unitLen *= 2
		}
	}
	return crc
}
