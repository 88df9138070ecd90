package main

import (
	"fmt"

	"github.com/veritytree/veritytree/hashes/internal/consts"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// vecOps are the AVX-512 instructions for one lane width.
type vecOps struct {
	bits  int // 32 or 64
	words int // words per 64-byte vector

	add, xor, addBcst, ror, rol, shr, ternlog, mov, bcast func(...Op)

	shufMaskLo, shufMaskHi uint64
}

var ops32 = vecOps{
	bits: 32, add: VPADDD, xor: VPXORD, addBcst: VPADDD_BCST,
	ror: VPRORD, rol: VPROLD, shr: VPSRLD, ternlog: VPTERNLOGD, mov: VMOVDQU32, words: 16,
	bcast: VPBROADCASTD, shufMaskLo: 0x0405060700010203, shufMaskHi: 0x0c0d0e0f08090a0b,
}

var ops64 = vecOps{
	bits: 64, add: VPADDQ, xor: VPXORQ, addBcst: VPADDQ_BCST,
	ror: VPRORQ, rol: VPROLQ, shr: VPSRLQ, ternlog: VPTERNLOGQ, mov: VMOVDQU64, words: 8,
	bcast: VPBROADCASTQ, shufMaskLo: 0x0001020304050607, shufMaskHi: 0x08090a0b0c0d0e0f,
}

// transpose16x16d transposes 16 rows of 16 dwords (r[j] = the dwords of
// lane j, clobbered) and stores dword w of every lane at out(w), using the
// 16 registers t as scratch.
func transpose16x16d(r, t []VecPhysical, out func(w int) Mem) {
	for i := range 8 {
		VPUNPCKLDQ(r[2*i+1], r[2*i], t[2*i])
		VPUNPCKHDQ(r[2*i+1], r[2*i], t[2*i+1])
	}
	u := r
	for i := range 4 {
		VPUNPCKLQDQ(t[4*i+2], t[4*i], u[4*i+0])
		VPUNPCKHQDQ(t[4*i+2], t[4*i], u[4*i+1])
		VPUNPCKLQDQ(t[4*i+3], t[4*i+1], u[4*i+2])
		VPUNPCKHQDQ(t[4*i+3], t[4*i+1], u[4*i+3])
	}
	// u[4i+j] holds, in its 128-bit lane k, word 4k+j of lanes 4i..4i+3.
	x0, x1, y0, y1, w := t[0], t[1], t[2], t[3], t[4]
	for m := range 4 {
		a, b, c, d := u[m], u[4+m], u[8+m], u[12+m]
		VSHUFI64X2(U8(0x44), b, a, x0)
		VSHUFI64X2(U8(0xee), b, a, x1)
		VSHUFI64X2(U8(0x44), d, c, y0)
		VSHUFI64X2(U8(0xee), d, c, y1)
		VSHUFI64X2(U8(0x88), y0, x0, w)
		VMOVDQU32(w, out(m))
		VSHUFI64X2(U8(0xdd), y0, x0, w)
		VMOVDQU32(w, out(m+4))
		VSHUFI64X2(U8(0x88), y1, x1, w)
		VMOVDQU32(w, out(m+8))
		VSHUFI64X2(U8(0xdd), y1, x1, w)
		VMOVDQU32(w, out(m+12))
	}
}

// mdVec describes one multi-lane Merkle–Damgård kernel.
type mdVec struct {
	name   string
	ops    vecOps
	nState int // state words
	carry  int // message words in the 32-byte half-mode carry
	rounds func(v []VecPhysical, w []VecPhysical, t []VecPhysical, k Mem)
	k      func() Mem
}

// genMDVec generates a kernel compressing one 64-byte vector group of lanes
// (16 for 32-bit words, 8 for 64-bit). Its state (st) is h[nState][lanes]
// then m[16+carry][lanes], the transposed big-endian message words, as
// blake2bAVX512x8 (see there for the half mode).
func genMDVec(d mdVec) {
	o := d.ops
	lanes := o.words
	chunk := 16 * o.bits / 8 // bytes per chunk
	rows := chunk / 64       // 64-byte rows per lane per chunk
	stWords := d.nState + 16 + d.carry
	elem := fmt.Sprintf("uint%d", o.bits)
	TEXT(d.name, NOSPLIT, fmt.Sprintf("func(st *[%d]%s, ptrs *[%d]*byte, chunks int, half bool)", stWords*lanes, elem, lanes))
	Doc(fmt.Sprintf("%s compresses chunks %d-byte chunks of each of %d messages, one per", d.name, chunk, lanes),
		fmt.Sprintf("%d-bit lane, lane l reading ptrs[l][%d*j:]. With half set, chunk j is", o.bits, chunk),
		fmt.Sprintf("bytes [%d*j-32, %d*j+%d) of ptrs[l]: the first 32 bytes come from", chunk, chunk, chunk-32),
		fmt.Sprintf("message rows [%d:%d), as left by the previous call. st holds %d rows", d.nState, d.nState+d.carry, stWords),
		fmt.Sprintf("of %d words: the state h0..h%d, then the %d transposed message", lanes, d.nState-1, 16+d.carry),
		"words (big-endian words, as loaded).")
	Pragma("noescape")
	mask := GLOBL(d.name+"Flip", RODATA|NOPTR)
	DATA(0, U64(o.shufMaskLo))
	DATA(8, U64(o.shufMaskHi))
	k := d.k()

	stp := Load(Param("st"), GP64())
	ptrs := Load(Param("ptrs"), GP64())
	cnt := Load(Param("chunks"), GP64())
	half := Load(Param("half"), GP8())
	off := GP64()
	XORQ(off, off)
	p := GP64()
	z := zmm()
	flip := z[31] // the 16x16 transposition clobbers it: reloaded per chunk
	mBase := Mem{Base: stp, Disp: 64 * d.nState}

	TESTQ(cnt, cnt)
	JZ(LabelRef(d.name + "_done"))
	loopLabel(d.name + "_loop")
	Comment("Load, byte-swap and transpose the message words.")
	VBROADCASTI32X4(mask, flip)
	for _, hm := range []bool{false, true} {
		lbl := fmt.Sprintf("%s_rows%v", d.name, hm)
		if !hm {
			TESTB(half, half)
			JNZ(LabelRef(fmt.Sprintf("%s_rows%v", d.name, true)))
		} else {
			Label(lbl)
		}
		base := 0
		if hm {
			base = d.carry
		}
		out := func(w int) Mem { return mBase.Offset(64 * (base + w)) }
		if o.bits == 32 {
			for l := range 16 {
				MOVQ(Mem{Base: ptrs, Disp: 8 * l}, p)
				VMOVDQU32(Mem{Base: p, Index: off, Scale: 1}, z[l])
				VPSHUFB(flip, z[l], z[l])
			}
			transpose16x16d(z[:16], z[16:32], out)
		} else {
			for l := range 8 {
				MOVQ(Mem{Base: ptrs, Disp: 8 * l}, p)
				for r := range rows {
					VMOVDQU64(Mem{Base: p, Index: off, Scale: 1, Disp: 64 * r}, z[8*r+l])
					VPSHUFB(flip, z[8*r+l], z[8*r+l])
				}
			}
			transpose8x8q(z[0:8], z[16:24])
			transpose8x8q(z[8:16], z[24:32])
			for w := range 16 {
				VMOVDQU64(z[16+w], out(w))
			}
		}
		if !hm {
			JMP(LabelRef(d.name + "_loaded"))
		}
	}
	Label(d.name + "_loaded")

	v := z[:8][:d.nState]
	w := z[8:24]
	t := z[24:31]
	for i := range d.nState {
		o.mov(Mem{Base: stp, Disp: 64 * i}, v[i])
	}
	for i := range 16 {
		o.mov(mBase.Offset(64*i), w[i])
	}
	d.rounds(v, w, t, k)
	for i := range d.nState {
		o.add(Mem{Base: stp, Disp: 64 * i}, v[i], v[i])
		o.mov(v[i], Mem{Base: stp, Disp: 64 * i})
	}

	TESTB(half, half)
	JZ(LabelRef(d.name + "_next"))
	Comment("Half mode: the last 32 bytes of this line begin the next chunk.")
	for i := range d.carry {
		o.mov(mBase.Offset(64*(16+i)), z[i])
		o.mov(z[i], mBase.Offset(64*i))
	}
	Label(d.name + "_next")
	ADDQ(Imm(uint64(chunk)), off)
	DECQ(cnt)
	JNZ(LabelRef(d.name + "_loop"))
	Label(d.name + "_done")
	VZEROUPPER()
	RET()
}

// sha2Rounds emits the SHA-256 (32-bit) or SHA-512 (64-bit) rounds.
func sha2Rounds(o vecOps, n int, sig [4][3]int) func(v, w, t []VecPhysical, k Mem) {
	return func(v, w, t []VecPhysical, k Mem) {
		a, b, c, d, e, f, g, h := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
		t0, t1, t2 := t[0], t[1], t[2]
		sigma := func(x VecPhysical, s [3]int, small bool) {
			o.ror(U8(s[0]), x, t0)
			o.ror(U8(s[1]), x, t1)
			if small {
				o.shr(U8(s[2]), x, t2)
			} else {
				o.ror(U8(s[2]), x, t2)
			}
			o.ternlog(U8(0x96), t2, t1, t0)
		}
		for r := range n {
			Commentf("Round %d.", r)
			wr := w[r%16]
			if r >= 16 {
				sigma(w[(r-15)%16], sig[2], true)
				o.add(t0, wr, wr)
				sigma(w[(r-2)%16], sig[3], true)
				o.add(t0, wr, wr)
				o.add(w[(r-7)%16], wr, wr)
			}
			o.add(wr, h, h)
			o.addBcst(k.Offset(r*o.bits/8), h, h)
			sigma(e, sig[1], false)
			o.add(t0, h, h)
			o.mov(e, t0)
			o.ternlog(U8(0xca), g, f, t0) // Ch(e, f, g)
			o.add(t0, h, h)               // h = T1
			o.add(h, d, d)
			sigma(a, sig[0], false)
			o.mov(a, t1)
			o.ternlog(U8(0xe8), c, b, t1) // Maj(a, b, c)
			o.add(t1, t0, t0)
			o.add(t0, h, h) // h = T1 + T2: the new a
			a, b, c, d, e, f, g, h = h, a, b, c, d, e, f, g
		}
		// After a multiple of 8 rounds the names are back in place.
	}
}

func genSHAVec() {
	genSHA1x16()
	genMDVec(mdVec{
		name: "sha256AVX512x16", ops: ops32, nState: 8, carry: 8,
		rounds: sha2Rounds(ops32, 64, [4][3]int{{2, 13, 22}, {6, 11, 25}, {7, 18, 3}, {17, 19, 10}}),
		k: func() Mem {
			k := GLOBL("sha256K", RODATA|NOPTR)
			for i, v := range consts.SHA256K {
				DATA(4*i, U32(v))
			}
			return k
		},
	})
	genMDRegs(mdRegs{
		name: "sha512AVX512x8", ops: ops64, nState: 8, temps: 3,
		rounds: sha2Rounds(ops64, 80, [4][3]int{{28, 34, 39}, {14, 18, 41}, {1, 8, 7}, {19, 61, 6}}),
		k: func() Mem {
			k := GLOBL("sha512K", RODATA|NOPTR)
			for i, v := range consts.SHA512K {
				DATA(8*i, U64(v))
			}
			return k
		},
	})
}
