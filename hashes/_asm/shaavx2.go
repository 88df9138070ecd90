package main

import (
	"fmt"

	"github.com/veritytree/veritytree/hashes/internal/consts"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The AVX2 multi-buffer SHA kernels: genMDVec's contract (vecMD drives
// them) on 8 32-bit or 4 64-bit lanes of ymm registers, for CPUs without
// AVX-512. There are only 16 registers and no rotate or three-way logic
// instruction, so: the state stays in registers, the message schedule
// lives in st's message rows (as a ring of 16 rows, read as memory
// operands), rotates are two shifts (a shuffle for SHA-512's by 8) and the
// three-way functions take two or three instructions.

func ymm() []VecPhysical {
	return []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
}

// avx2Word are the AVX2 instructions for one word size.
type avx2Word struct {
	bits          int
	add, shr, shl func(...Op)
	rot8          Mem // VPSHUFB control rotating every word right by 8 (64-bit only)
}

// term emits one shifted or shuffled copy of x into dst.
type term func(x, dst VecPhysical)

func (o avx2Word) ror(n int) []term {
	if o.bits == 64 && n == 8 {
		return []term{func(x, d VecPhysical) { VPSHUFB(o.rot8, x, d) }}
	}
	return []term{o.shrT(n), func(x, d VecPhysical) { o.shl(U8(o.bits-n), x, d) }}
}

func (o avx2Word) shrT(n int) term { return func(x, d VecPhysical) { o.shr(U8(n), x, d) } }

// sigma lists the terms of ror(s0) ^ ror(s1) ^ ror(s2), or ^ shr(s2) for the
// message schedule's small sigmas.
func (o avx2Word) sigma(s [3]int, small bool) []term {
	t := append(o.ror(s[0]), o.ror(s[1])...)
	if small {
		return append(t, o.shrT(s[2]))
	}
	return append(t, o.ror(s[2])...)
}

// xorTerms sets dst to the xor of the terms of x, pairwise so that the
// xors form a shallow tree (t1, t2: scratch).
func xorTerms(x, dst, t1, t2 VecPhysical, terms []term) {
	terms[0](x, dst)
	i := 1
	if len(terms) > 1 {
		terms[1](x, t1)
		VPXOR(t1, dst, dst)
		i = 2
	}
	for ; i < len(terms); i += 2 {
		terms[i](x, t1)
		if i+1 < len(terms) {
			terms[i+1](x, t2)
			VPXOR(t2, t1, t1)
		}
		VPXOR(t1, dst, dst)
	}
}

// avx2MD describes one kernel: rounds compresses one chunk, the state in
// s, with the registers free as scratch and message word i (i < 16 as
// loaded; ring slot i%16 for the schedule) at w(i).
type avx2MD struct {
	name, like string // like: the AVX-512 kernel with the same contract
	o          avx2Word
	nState     int
	rounds     func(s, free []VecPhysical, w func(i int) Mem)
}

// genAVX2MD generates a kernel with genMDVec's contract and st layout (the
// state rows, 16 message rows, the half-mode carry rows) on ymm lanes. The
// rounds overwrite the 16 message rows with the schedule; the carry rows
// past them survive for the next chunk of the half mode.
func genAVX2MD(d avx2MD, flip Mem) {
	o := d.o
	lanes := 256 / o.bits
	chunk := 16 * o.bits / 8
	carryN := 32 * 8 / o.bits
	stWords := d.nState + 16 + carryN
	elem := fmt.Sprintf("uint%d", o.bits)
	TEXT(d.name, NOSPLIT, fmt.Sprintf("func(st *[%d]%s, ptrs *[%d]*byte, chunks int, half bool)", stWords*lanes, elem, lanes))
	Doc(fmt.Sprintf("%s is %s's contract on %d lanes of ymm registers", d.name, d.like, lanes),
		fmt.Sprintf("(AVX2): st holds %d rows of %d words, the state h0..h%d, then the %d", stWords, lanes, d.nState-1, 16+carryN),
		"transposed message words; the rounds leave the message schedule's last",
		"16 words in the first 16 message rows.")
	Pragma("noescape")

	stp := Load(Param("st"), GP64())
	ptrs := Load(Param("ptrs"), GP64())
	cnt := Load(Param("chunks"), GP64())
	half := Load(Param("half"), GP8())
	off := GP64()
	XORQ(off, off)
	p := GP64()
	y := ymm()
	row := func(i int) Mem { return Mem{Base: stp, Disp: 32 * i} }
	msg := func(i int) Mem { return row(d.nState + i) }

	TESTQ(cnt, cnt)
	JZ(LabelRef(d.name + "_done"))
	loopLabel(d.name + "_loop")
	Comment("Load, byte-swap and transpose the message words.")
	TESTB(half, half)
	JNZ(LabelRef(d.name + "_half"))
	avx2LoadChunk(o.bits, ptrs, p, off, flip, func(i int) Mem { return msg(i) })
	JMP(LabelRef(d.name + "_loaded"))
	Label(d.name + "_half")
	avx2LoadChunk(o.bits, ptrs, p, off, flip, func(i int) Mem { return msg(carryN + i) })
	Label(d.name + "_loaded")

	s := y[:d.nState]
	for i, r := range s {
		VMOVDQU(row(i), r)
	}
	d.rounds(s, y[d.nState:], func(i int) Mem { return msg(i % 16) })
	for i, r := range s {
		o.add(row(i), r, r)
		VMOVDQU(r, row(i))
	}

	TESTB(half, half)
	JZ(LabelRef(d.name + "_next"))
	Comment("Half mode: the last 32 bytes of this line begin the next chunk.")
	for i := range carryN {
		VMOVDQU(msg(16+i), y[i])
		VMOVDQU(y[i], msg(i))
	}
	Label(d.name + "_next")
	ADDQ(Imm(uint64(chunk)), off)
	DECQ(cnt)
	JNZ(LabelRef(d.name + "_loop"))
	Label(d.name + "_done")
	VZEROUPPER()
	RET()
}

// avx2LoadChunk loads one chunk of every lane (ptrs[l]+off), byte-swaps its
// words and stores word i of every lane at out(i): 8 lanes of 64 bytes
// (two 8x8 dword transpositions) or 4 lanes of 128 (four 4x4 qword ones).
// Transposing whole rows in registers costs about 3 shuffles per 32 bytes,
// much less than gathering each word.
func avx2LoadChunk(bits int, ptrs, p, off Register, flip Mem, out func(i int) Mem) {
	y := ymm()
	load := func(l, disp int, dst VecPhysical) {
		MOVQ(Mem{Base: ptrs, Disp: 8 * l}, p)
		VMOVDQU(Mem{Base: p, Index: off, Scale: 1, Disp: disp}, dst)
	}
	if bits == 32 {
		for h := range 2 {
			r, t := y[:8], y[8:]
			for l := range 8 {
				load(l, 32*h, r[l])
			}
			for i := range 4 {
				VPUNPCKLDQ(r[2*i+1], r[2*i], t[2*i])
				VPUNPCKHDQ(r[2*i+1], r[2*i], t[2*i+1])
			}
			// t[2i]: words 0,1 (4,5 in the high half) of lanes 2i, 2i+1
			// interleaved; t[2i+1] words 2,3 (6,7).
			for i := range 2 {
				VPUNPCKLQDQ(t[4*i+2], t[4*i], r[4*i])
				VPUNPCKHQDQ(t[4*i+2], t[4*i], r[4*i+1])
				VPUNPCKLQDQ(t[4*i+3], t[4*i+1], r[4*i+2])
				VPUNPCKHQDQ(t[4*i+3], t[4*i+1], r[4*i+3])
			}
			// r[4i+m]: word m (low half) and 4+m (high) of lanes 4i..4i+3.
			for m := range 4 {
				VPERM2I128(U8(0x20), r[4+m], r[m], t[m])
				VPERM2I128(U8(0x31), r[4+m], r[m], t[4+m])
			}
			for j := range 8 {
				VPSHUFB(flip, t[j], t[j])
				VMOVDQU(t[j], out(8*h+j))
			}
		}
		return
	}
	for k := range 4 {
		r, t := y[8*(k%2):8*(k%2)+4], y[8*(k%2)+4:8*(k%2)+8]
		for l := range 4 {
			load(l, 32*k, r[l])
			VPSHUFB(flip, r[l], r[l])
		}
		VPUNPCKLQDQ(r[1], r[0], t[0])
		VPUNPCKHQDQ(r[1], r[0], t[1])
		VPUNPCKLQDQ(r[3], r[2], t[2])
		VPUNPCKHQDQ(r[3], r[2], t[3])
		VPERM2I128(U8(0x20), t[2], t[0], r[0])
		VPERM2I128(U8(0x20), t[3], t[1], r[1])
		VPERM2I128(U8(0x31), t[2], t[0], r[2])
		VPERM2I128(U8(0x31), t[3], t[1], r[3])
		for i := range 4 {
			VMOVDQU(r[i], out(4*k+i))
		}
	}
}

// sha2AVX2Rounds emits n SHA-256 or SHA-512 rounds: 8 state registers, one
// holding b^c for Maj and 7 scratch.
func sha2AVX2Rounds(o avx2Word, n int, sig [4][3]int, k Mem) func(s, free []VecPhysical, w func(int) Mem) {
	return func(s, free []VecPhysical, w func(int) Mem) {
		a, b, c, d, e, f, g, h := s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
		bc, t := free[0], append([]VecPhysical(nil), free[1:8]...)
		// Maj(a, b, c) = b ^ ((a^b) & (b^c)): this round's a^b is the
		// next one's b^c, so Maj costs three instructions.
		VPXOR(c, b, bc)
		for r := range n {
			Commentf("Round %d.", r)
			var wr Op = w(r)
			if r >= 16 {
				// W[r] = σ1(W[r-2]) + W[r-7] + σ0(W[r-15]) + W[r-16],
				// kept for the rounds to come in ring slot r%16.
				x, acc := t[0], t[1]
				VMOVDQU(w(r-15), x)
				xorTerms(x, acc, t[2], t[3], o.sigma(sig[2], true))
				o.add(w(r-16), acc, acc)
				o.add(w(r-7), acc, acc)
				VMOVDQU(w(r-2), x)
				xorTerms(x, t[4], t[2], t[3], o.sigma(sig[3], true))
				o.add(t[4], acc, acc)
				VMOVDQU(acc, w(r))
				wr = acc
			}
			// T1 = h + W + K + Ch(e, f, g) + Σ1(e), Σ1 last: e, the
			// previous round's result, reaches d (the next e) through
			// Σ1 and two adds.
			o.add(wr, h, h)
			o.add(k.Offset(32*r), h, h)
			// Ch(e, f, g) = (e & f) + (^e & g): the two are disjoint.
			VPAND(f, e, t[5])
			o.add(t[5], h, h)
			VPANDN(g, e, t[6])
			o.add(t[6], h, h)
			xorTerms(e, t[2], t[3], t[4], o.sigma(sig[1], false))
			o.add(t[2], h, h) // h = T1
			o.add(h, d, d)
			// T2 = Σ0(a) + Maj(a, b, c), summed before it joins T1.
			xorTerms(a, t[2], t[3], t[4], o.sigma(sig[0], false))
			VPXOR(b, a, t[5])
			VPAND(t[5], bc, bc)
			VPXOR(b, bc, bc)
			o.add(bc, t[2], t[2])
			o.add(t[2], h, h) // h = T1 + T2: the new a
			bc, t[5] = t[5], bc
			a, b, c, d, e, f, g, h = h, a, b, c, d, e, f, g
		}
		// After a multiple of 8 rounds the names are back in place.
	}
}

// sha1AVX2Rounds emits the 80 SHA-1 rounds: 5 state registers, 11 scratch.
func sha1AVX2Rounds(k Mem) func(s, free []VecPhysical, w func(int) Mem) {
	return func(s, t []VecPhysical, w func(int) Mem) {
		a, b, c, d, e := s[0], s[1], s[2], s[3], s[4]
		for r := range 80 {
			Commentf("Round %d.", r)
			var wr Op = w(r)
			if r >= 16 {
				x := t[0]
				VMOVDQU(w(r-3), x)
				VPXOR(w(r-8), x, x)
				VPXOR(w(r-14), x, x)
				VPXOR(w(r-16), x, x)
				VPSRLD(U8(31), x, t[1])
				VPADDD(x, x, x)
				VPOR(t[1], x, x)
				VMOVDQU(x, w(r))
				wr = x
			}
			// e += W + K + F(b, c, d) + rol5(a): a, the previous
			// round's result, comes last to keep the chain between
			// rounds short. Sums of disjoint bit sets stand for ors.
			VPADDD(wr, e, e)
			VPADDD(k.Offset(32*(r/20)), e, e)
			switch r / 20 {
			case 0: // Ch = (b & c) | (^b & d)
				VPAND(c, b, t[2])
				VPADDD(t[2], e, e)
				VPANDN(d, b, t[3])
				VPADDD(t[3], e, e)
			case 2: // Maj = (b & c) + (d & (b ^ c))
				VPAND(c, b, t[2])
				VPADDD(t[2], e, e)
				VPXOR(c, b, t[3])
				VPAND(d, t[3], t[3])
				VPADDD(t[3], e, e)
			default: // Parity
				VPXOR(c, b, t[2])
				VPXOR(d, t[2], t[2])
				VPADDD(t[2], e, e)
			}
			VPSLLD(U8(5), a, t[4])
			VPSRLD(U8(27), a, t[5])
			VPADDD(t[4], e, e)
			VPADDD(t[5], e, e)
			VPSRLD(U8(2), b, t[6])
			VPSLLD(U8(30), b, b)
			VPOR(t[6], b, b)
			a, b, c, d, e = e, a, b, c, d
		}
	}
}

// bcastTable is a table of vals, each repeated to fill 32 bytes, so that
// the rounds add a constant with one memory operand.
// widen returns 32-bit table entries as the 64-bit values bcastTable takes.
func widen(vals []uint32) []uint64 {
	w := make([]uint64, len(vals))
	for i, v := range vals {
		w[i] = uint64(v)
	}
	return w
}

func bcastTable(name string, bits int, vals []uint64) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i, v := range vals {
		for l := range 256 / bits {
			if bits == 32 {
				DATA(32*i+4*l, U32(uint32(v)))
			} else {
				DATA(32*i+8*l, U64(v))
			}
		}
	}
	return m
}

func genSHAAVX2() {
	// Byte-swap controls for 32- and 64-bit words, and SHA-512's rotate by 8.
	table := func(name string, lo, hi uint64) Mem {
		m := GLOBL(name, RODATA|NOPTR)
		for i := range 2 {
			DATA(16*i, U64(lo))
			DATA(16*i+8, U64(hi))
		}
		return m
	}
	flip32 := table("shaAVX2Flip32", ops32.shufMaskLo, ops32.shufMaskHi)
	flip64 := table("shaAVX2Flip64", ops64.shufMaskLo, ops64.shufMaskHi)
	rot8 := table("shaAVX2Rot8", 0x0007060504030201, 0x080f0e0d0c0b0a09)
	w32 := avx2Word{bits: 32, add: VPADDD, shr: VPSRLD, shl: VPSLLD}
	w64 := avx2Word{bits: 64, add: VPADDQ, shr: VPSRLQ, shl: VPSLLQ, rot8: rot8}

	k1 := bcastTable("sha1AVX2K", 32, widen(consts.SHA1K[:]))
	genAVX2MD(avx2MD{name: "sha1AVX2x8", like: "sha1AVX512x16", o: w32, nState: 5, rounds: sha1AVX2Rounds(k1)}, flip32)

	k2 := bcastTable("sha256AVX2K", 32, widen(consts.SHA256K[:]))
	genAVX2MD(avx2MD{name: "sha256AVX2x8", like: "sha256AVX512x16", o: w32, nState: 8,
		rounds: sha2AVX2Rounds(w32, 64, [4][3]int{{2, 13, 22}, {6, 11, 25}, {7, 18, 3}, {17, 19, 10}}, k2)}, flip32)

	k5 := bcastTable("sha512AVX2K", 64, consts.SHA512K[:])
	genAVX2MD(avx2MD{name: "sha512AVX2x4", like: "sha512AVX512x8", o: w64, nState: 8,
		rounds: sha2AVX2Rounds(w64, 80, [4][3]int{{28, 34, 39}, {14, 18, 41}, {1, 8, 7}, {19, 61, 6}}, k5)}, flip64)
}
