package main

import (
	"github.com/veritytree/veritytree/hashes/internal/consts"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genBLAKE2bAVX2 generates blake2bAVX2x4: blake2bAVX512x8's contract on 4
// lanes of ymm registers, for CPUs without AVX-512. The 16 work vectors take
// all 16 registers, so the message words are memory operands, the rotations
// by 32, 24 and 16 are shuffles and the one by 63 (x+x | x>>63), which needs
// a temporary, borrows a register whose value is stored meanwhile.
func genBLAKE2bAVX2(iv Mem) {
	rot := GLOBL("blake2bRot", RODATA|NOPTR)
	// VPSHUFB controls rotating each qword right by 24 and by 16 bits.
	for i, v := range []uint64{0x0201000706050403, 0x0a09080f0e0d0c0b, 0x0201000706050403, 0x0a09080f0e0d0c0b,
		0x0100070605040302, 0x09080f0e0d0c0b0a, 0x0100070605040302, 0x09080f0e0d0c0b0a} {
		DATA(8*i, U64(v))
	}
	ror24, ror16 := rot, rot.Offset(32)

	const name = "blake2bAVX2x4"
	TEXT(name, NOSPLIT, "func(st *[112]uint64, ptrs *[4]*byte, chunks int, counter, flag uint64, half bool)")
	Doc(name+" is blake2bAVX512x8 on 4 lanes (AVX2): st is the 4-lane",
		"group, 28 rows of 4 words: h, then the 20 message rows.")
	Pragma("noescape")
	stp := Load(Param("st"), GP64())
	ptrs := Load(Param("ptrs"), GP64())
	cnt := Load(Param("chunks"), GP64())
	ctr := Load(Param("counter"), GP64())
	flag := Load(Param("flag"), GP64())
	half := Load(Param("half"), GP8())
	v14 := GP64()
	MOVQ(U64(consts.BLAKE2bIV[6]), v14)
	XORQ(flag, v14)
	off := GP64()
	XORQ(off, off)
	p := GP64()
	tmp := GP64()
	y := []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
	row := func(i int) Mem { return Mem{Base: stp, Disp: 32 * i} }
	spill := AllocLocal(32)

	TESTQ(cnt, cnt)
	JZ(LabelRef(name + "_done"))
	loopLabel(name + "_loop")
	ADDQ(Imm(128), ctr)

	Comment("Load and transpose the message words, 4 at a time.")
	TESTB(half, half)
	JNZ(LabelRef(name + "_half"))
	loadWords(ptrs, p, off, y, func(i int) Mem { return row(8 + i) })
	JMP(LabelRef(name + "_loaded"))
	Label(name + "_half")
	loadWords(ptrs, p, off, y, func(i int) Mem { return row(12 + i) })
	Label(name + "_loaded")

	Comment("Initialise the work vectors.")
	v := y
	for i := range 8 {
		VMOVDQU(row(i), v[i])
	}
	for i := range 4 {
		VPBROADCASTQ(iv.Offset(8*i), v[8+i])
	}
	MOVQ(U64(consts.BLAKE2bIV[4]), tmp)
	XORQ(ctr, tmp)
	MOVQ(tmp, X12)
	VPBROADCASTQ(X12, v[12])
	VPBROADCASTQ(iv.Offset(8*5), v[13])
	MOVQ(v14, X14)
	VPBROADCASTQ(X14, v[14])
	VPBROADCASTQ(iv.Offset(8*7), v[15])

	m := func(i int) Mem { return row(8 + i) }
	for r := range 12 {
		Commentf("Round %d.", r)
		s := blake2bSigma(r)
		for _, diag := range []bool{false, true} {
			var a, b, c, d [4]VecPhysical
			var x, xy [4]Mem
			for i := range 4 {
				a[i], b[i], c[i], d[i] = v[i], v[4+i], v[8+i], v[12+i]
				x[i], xy[i] = m(s[2*i]), m(s[2*i+1])
				if diag {
					b[i], c[i], d[i] = v[4+(i+1)%4], v[8+(i+2)%4], v[12+(i+3)%4]
					x[i], xy[i] = m(s[8+2*i]), m(s[8+2*i+1])
				}
			}
			for i := range 4 {
				VPADDQ(b[i], a[i], a[i])
				VPADDQ(x[i], a[i], a[i])
			}
			for i := range 4 {
				VPXOR(a[i], d[i], d[i])
				VPSHUFD(U8(0xb1), d[i], d[i])
			}
			for i := range 4 {
				VPADDQ(d[i], c[i], c[i])
			}
			for i := range 4 {
				VPXOR(c[i], b[i], b[i])
				VPSHUFB(ror24, b[i], b[i])
			}
			for i := range 4 {
				VPADDQ(b[i], a[i], a[i])
				VPADDQ(xy[i], a[i], a[i])
			}
			for i := range 4 {
				VPXOR(a[i], d[i], d[i])
				VPSHUFB(ror16, d[i], d[i])
			}
			for i := range 4 {
				VPADDQ(d[i], c[i], c[i])
			}
			for i := range 4 {
				VPXOR(c[i], b[i], b[i])
			}
			// Rotate right by 63 with a[0] as the temporary.
			t := a[0]
			VMOVDQU(t, spill)
			for i := range 4 {
				VPADDQ(b[i], b[i], t)
				VPSRLQ(U8(63), b[i], b[i])
				VPOR(t, b[i], b[i])
			}
			VMOVDQU(spill, t)
		}
	}

	Comment("h ^= v[0:8] ^ v[8:16].")
	for i := range 8 {
		VPXOR(v[8+i], v[i], v[i])
		VPXOR(row(i), v[i], v[i])
		VMOVDQU(v[i], row(i))
	}
	TESTB(half, half)
	JZ(LabelRef(name + "_next"))
	Comment("Half mode: the last 32 bytes of this line begin the next chunk.")
	for i := range 4 {
		VMOVDQU(row(8+16+i), y[i])
		VMOVDQU(y[i], row(8+i))
	}
	Label(name + "_next")
	ADDQ(Imm(128), off)
	DECQ(cnt)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// loadWords transposes the 4 lanes' 128 bytes at ptrs[l]+off into 16 rows
// of 4 qwords, stored at out(0..15).
func loadWords(ptrs, p, off Register, y []VecPhysical, out func(int) Mem) {
	r, t := y[0:4], y[4:8]
	for k := range 4 {
		for l := range 4 {
			MOVQ(Mem{Base: ptrs, Disp: 8 * l}, p)
			VMOVDQU(Mem{Base: p, Index: off, Scale: 1, Disp: 32 * k}, r[l])
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
