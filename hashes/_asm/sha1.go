package main

import (
	"fmt"

	"github.com/veritytree/veritytree/hashes/internal/consts"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// pool hands out free vector registers, so that a transposition can run
// in place: each step frees its inputs for the next one's outputs.
type pool struct{ free []VecPhysical }

func (p *pool) take() VecPhysical {
	r := p.free[0]
	p.free = p.free[1:]
	return r
}

func (p *pool) put(rs ...VecPhysical) { p.free = append(p.free, rs...) }

// transpose16x16dInPlace transposes 16 rows of 16 dwords (rows[j] = lane
// j) with only two spare registers (in p) and returns the registers holding
// dword w of every lane; p then holds two free registers again.
func transpose16x16dInPlace(rows []VecPhysical, p *pool) [16]VecPhysical {
	var t, u [16]VecPhysical
	for i := range 8 {
		a, b := rows[2*i], rows[2*i+1]
		t[2*i] = p.take()
		VPUNPCKLDQ(b, a, t[2*i])
		t[2*i+1] = p.take()
		VPUNPCKHDQ(b, a, t[2*i+1])
		p.put(a, b)
	}
	for i := range 4 {
		for j := range 2 {
			a, b := t[4*i+j], t[4*i+j+2]
			u[4*i+2*j] = p.take()
			VPUNPCKLQDQ(b, a, u[4*i+2*j])
			u[4*i+2*j+1] = p.take()
			VPUNPCKHQDQ(b, a, u[4*i+2*j+1])
			p.put(a, b)
		}
	}
	// u[4i+j] holds, in its 128-bit lane k, word 4k+j of lanes 4i..4i+3.
	var w [16]VecPhysical
	for m := range 4 {
		a, b, c, d := u[m], u[4+m], u[8+m], u[12+m]
		x0, x1 := p.take(), p.take()
		VSHUFI64X2(U8(0x44), b, a, x0)
		VSHUFI64X2(U8(0xee), b, a, x1)
		p.put(a, b)
		y0, y1 := p.take(), p.take()
		VSHUFI64X2(U8(0x44), d, c, y0)
		VSHUFI64X2(U8(0xee), d, c, y1)
		p.put(c, d)
		w[m], w[m+4] = p.take(), p.take()
		VSHUFI64X2(U8(0x88), y0, x0, w[m])
		VSHUFI64X2(U8(0xdd), y0, x0, w[m+4])
		p.put(x0, y0)
		w[m+8], w[m+12] = p.take(), p.take()
		VSHUFI64X2(U8(0x88), y1, x1, w[m+8])
		VSHUFI64X2(U8(0xdd), y1, x1, w[m+12])
		p.put(x1, y1)
	}
	return w
}

// transpose8x8qInPlace is transpose16x16dInPlace for 8 rows of 8 qwords.
func transpose8x8qInPlace(rows []VecPhysical, p *pool) [8]VecPhysical {
	var t, w [8]VecPhysical
	for i := range 4 {
		a, b := rows[2*i], rows[2*i+1]
		t[2*i] = p.take()
		VPUNPCKLQDQ(b, a, t[2*i])
		t[2*i+1] = p.take()
		VPUNPCKHQDQ(b, a, t[2*i+1])
		p.put(a, b)
	}
	// t[2i] holds words 0,2,4,6 of lanes 2i and 2i+1, t[2i+1] words 1,3,5,7.
	for m := range 2 {
		a, b, c, d := t[m], t[2+m], t[4+m], t[6+m]
		x0, x1 := p.take(), p.take()
		VSHUFI64X2(U8(0x44), b, a, x0)
		VSHUFI64X2(U8(0xee), b, a, x1)
		p.put(a, b)
		y0, y1 := p.take(), p.take()
		VSHUFI64X2(U8(0x44), d, c, y0)
		VSHUFI64X2(U8(0xee), d, c, y1)
		p.put(c, d)
		w[m], w[m+2] = p.take(), p.take()
		VSHUFI64X2(U8(0x88), y0, x0, w[m])
		VSHUFI64X2(U8(0xdd), y0, x0, w[m+2])
		p.put(x0, y0)
		w[m+4], w[m+6] = p.take(), p.take()
		VSHUFI64X2(U8(0x88), y1, x1, w[m+4])
		VSHUFI64X2(U8(0xdd), y1, x1, w[m+6])
		p.put(x1, y1)
	}
	return w
}

// mdRegs describes a multi-lane kernel that keeps everything in the 32
// registers: the state, the half-mode carry (32 bytes), the byte-swap
// mask, and 18 for the message: 16 words and 2 spares, the transposition
// running in place, plus what the rounds need beyond 2 temporaries.
type mdRegs struct {
	name   string
	ops    vecOps
	nState int
	k      func() Mem
	rounds func(v, w, t []VecPhysical, k Mem)
	temps  int // temporaries the rounds need (at least 2)
}

// genMDRegs generates a kernel with the contract and state layout of
// genMDVec's; the registers are: state, carry, mask, then the message's.
// SHA-1 and SHA-512 fit (SHA-256's 8 state words and 8-word carry don't):
// their rounds are cheap enough per message word that the memory round
// trips of the generic kernel would cost them a tenth.
func genMDRegs(d mdRegs) {
	o := d.ops
	lanes := o.words
	chunk := 16 * o.bits / 8
	carryN := 32 * 8 / o.bits
	stWords := d.nState + 16 + carryN
	elem := fmt.Sprintf("uint%d", o.bits)
	TEXT(d.name, NOSPLIT, fmt.Sprintf("func(st *[%d]%s, ptrs *[%d]*byte, chunks int, half bool)", stWords*lanes, elem, lanes))
	Doc(fmt.Sprintf("%s compresses chunks %d-byte chunks of each of %d messages, one per", d.name, chunk, lanes),
		fmt.Sprintf("%d-bit lane, lane l reading ptrs[l][%d*j:]. With half set, chunk j is", o.bits, chunk),
		fmt.Sprintf("bytes [%d*j-32, %d*j+%d) of ptrs[l]: the first 32 bytes come from", chunk, chunk, chunk-32),
		fmt.Sprintf("message rows [%d:%d), as left by the previous call. st holds %d rows", d.nState, d.nState+carryN, stWords),
		fmt.Sprintf("of %d words: the state h0..h%d, then the %d transposed message", lanes, d.nState-1, 16+carryN),
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
	state := z[:d.nState]
	carry := z[d.nState : d.nState+carryN]
	flip := z[d.nState+carryN]
	work := z[d.nState+carryN+1:]
	extra := work[18:] // temporaries past the transposition's two spares
	if len(extra) < d.temps-2 {
		panic(d.name + ": not enough registers")
	}
	row := func(i int) Mem { return Mem{Base: stp, Disp: 64 * i} }
	saved := func(i int) Mem { return row(d.nState + carryN + i) } // message rows: free here

	for i, r := range state {
		o.mov(row(i), r)
	}
	for i, r := range carry {
		o.mov(row(d.nState+i), r)
	}
	VBROADCASTI32X4(mask, flip)
	TESTQ(cnt, cnt)
	JZ(LabelRef(d.name + "_done"))
	TESTB(half, half)
	JNZ(LabelRef(d.name + "_half"))

	for _, hm := range []bool{false, true} {
		loop := d.name + "_rows"
		if hm {
			loop = d.name + "_half"
		}
		loopLabel(loop)
		Comment("Load, byte-swap and transpose the message words.")
		for l := range lanes {
			MOVQ(Mem{Base: ptrs, Disp: 8 * l}, p)
			for r := range chunk / 64 {
				dst := work[r*lanes+l]
				o.mov(Mem{Base: p, Index: off, Scale: 1, Disp: 64 * r}, dst)
				VPSHUFB(flip, dst, dst)
			}
		}
		for i, r := range state {
			o.mov(r, saved(i))
		}
		pl := &pool{free: append([]VecPhysical(nil), work[16:18]...)}
		var x [16]VecPhysical
		if o.bits == 32 {
			x = transpose16x16dInPlace(work[:16], pl)
		} else {
			lo := transpose8x8qInPlace(work[:8], pl)
			hi := transpose8x8qInPlace(work[8:16], pl)
			copy(x[:8], lo[:])
			copy(x[8:], hi[:])
		}
		var w [16]VecPhysical
		if hm {
			// The chunk is the carry (the previous line's last 32
			// bytes) and this line's first 16-carryN words; the rest
			// is the next carry, kept in x until the rounds are done.
			copy(w[:carryN], carry)
			copy(w[carryN:], x[:16-carryN])
		} else {
			w = x
		}
		t := append(append([]VecPhysical(nil), pl.free...), extra...)
		d.rounds(state, w[:], t[:d.temps], k)
		for i, r := range state {
			o.add(saved(i), r, r)
		}
		if hm {
			for i := range carryN {
				o.mov(x[16-carryN+i], carry[i])
			}
		}
		ADDQ(Imm(uint64(chunk)), off)
		DECQ(cnt)
		JNZ(LabelRef(loop))
		JMP(LabelRef(d.name + "_store"))
	}

	Label(d.name + "_store")
	for i, r := range state {
		o.mov(r, row(i))
	}
	for i, r := range carry {
		o.mov(r, row(d.nState+i))
	}
	Label(d.name + "_done")
	VZEROUPPER()
	RET()
}

func genSHA1x16() {
	genMDRegs(mdRegs{
		name: "sha1AVX512x16", ops: ops32, nState: 5, temps: 2,
		rounds: func(v, w, t []VecPhysical, k Mem) { sha1Rounds16(v, w, t[0], t[1], k) },
		k: func() Mem {
			k := GLOBL("sha1K", RODATA|NOPTR)
			for i, v := range consts.SHA1K {
				DATA(4*i, U32(v))
			}
			return k
		},
	})
}

// sha1Rounds16 emits the 80 rounds on 16 lanes, the state in v (renamed
// round by round and back in place after 80), the message schedule in w.
func sha1Rounds16(v, w []VecPhysical, t0, t1 VecPhysical, k Mem) {
	a, b, c, d, e := v[0], v[1], v[2], v[3], v[4]
	for r := range 80 {
		Commentf("Round %d.", r)
		wr := w[r%16]
		if r >= 16 {
			VPTERNLOGD(U8(0x96), w[(r-8)%16], w[(r-3)%16], wr)
			VPXORD(w[(r-14)%16], wr, wr)
			VPROLD(U8(1), wr, wr)
		}
		// e += W + K + F(b, c, d) + rol5(a): a, the previous round's
		// result, comes last so the chain between rounds is two
		// instructions long.
		VPADDD(wr, e, e)
		VPADDD_BCST(k.Offset(4*(r/20)), e, e)
		VMOVDQA32(b, t1)
		switch r / 20 {
		case 0:
			VPTERNLOGD(U8(0xca), d, c, t1) // Ch
		case 2:
			VPTERNLOGD(U8(0xe8), d, c, t1) // Maj
		default:
			VPTERNLOGD(U8(0x96), d, c, t1) // Parity
		}
		VPADDD(t1, e, e)
		VPROLD(U8(5), a, t0)
		VPADDD(t0, e, e)
		VPROLD(U8(30), b, b)
		a, b, c, d, e = e, a, b, c, d
	}
}
