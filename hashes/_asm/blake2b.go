package main

import (
	"fmt"

	"github.com/veritytree/veritytree/hashes/internal/consts"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// blake2bSigma is round r's message schedule, as ints for the generators.
func blake2bSigma(r int) [16]int {
	var s [16]int
	for i, v := range consts.BLAKE2bSigma[r%10] {
		s[i] = int(v)
	}
	return s
}

// zmm returns Z0..Z31.
func zmm() []VecPhysical {
	return []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
		Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}
}

// transpose8x8q transposes 8 rows of 8 qwords (r[j] = the qwords of lane
// j) into t[w] = qword w of every lane. r is clobbered.
func transpose8x8q(r, t []VecPhysical) {
	for i := range 4 {
		VPUNPCKLQDQ(r[2*i+1], r[2*i], t[2*i])
		VPUNPCKHQDQ(r[2*i+1], r[2*i], t[2*i+1])
	}
	// t[2i] holds words 0,2,4,6 of lanes 2i and 2i+1 (one 128-bit lane
	// per word), t[2i+1] words 1,3,5,7. Gather 128-bit lanes across rows.
	for m := range 2 {
		a, b, c, d := t[m], t[2+m], t[4+m], t[6+m]
		x0, x1, y0, y1 := r[4*m], r[4*m+1], r[4*m+2], r[4*m+3]
		VSHUFI64X2(U8(0x44), b, a, x0)
		VSHUFI64X2(U8(0xee), b, a, x1)
		VSHUFI64X2(U8(0x44), d, c, y0)
		VSHUFI64X2(U8(0xee), d, c, y1)
	}
	for m := range 2 {
		x0, x1, y0, y1 := r[4*m], r[4*m+1], r[4*m+2], r[4*m+3]
		VSHUFI64X2(U8(0x88), y0, x0, t[m+0])
		VSHUFI64X2(U8(0xdd), y0, x0, t[m+2])
		VSHUFI64X2(U8(0x88), y1, x1, t[m+4])
		VSHUFI64X2(U8(0xdd), y1, x1, t[m+6])
	}
}

// genBLAKE2b generates the AVX-512 multi-buffer BLAKE2b compression: one
// message per 64-bit lane, 8 lanes per group, 1 or 2 groups interleaved.
func genBLAKE2b() {
	iv := GLOBL("blake2bIV", RODATA|NOPTR)
	for i, v := range consts.BLAKE2bIV {
		DATA(8*i, U64(v))
	}
	blake2bAVX512(1, iv)
	blake2bAVX512(2, iv)
	genBLAKE2bAVX2(iv)
}

// Layout of one group's state (blake2bGroup in Go): h [8][8]uint64 (word,
// lane) then m [20][8]uint64, the transposed message words: m[0:16] is the
// chunk being compressed. In half mode each loaded 128-byte line goes to
// m[4:20] and m[16:20] moves to m[0:4] afterwards, so the chunk is the last
// 32 bytes of the previous line and the first 96 of this one.
const (
	groupH    = 0
	groupM    = 8 * 64
	groupSize = 28 * 64
)

func blake2bAVX512(groups int, iv Mem) {
	lanes := 8 * groups
	name := fmt.Sprintf("blake2bAVX512x%d", lanes)
	TEXT(name, NOSPLIT, fmt.Sprintf("func(st *[%d][28][8]uint64, ptrs *[%d]*byte, chunks int, counter, flag uint64, half bool)", groups, lanes))
	Doc(fmt.Sprintf("%s compresses chunks 128-byte chunks of each of %d messages, one per", name, lanes),
		"64-bit lane, lane l of group l/8 reading ptrs[l][128*j:]. Chunk j is",
		"counted as counter+128*(j+1) bytes and flag is the final-block flag f0.",
		"With half set, chunk j is bytes [128j-32, 128j+96) of ptrs[l]: the first",
		"32 bytes come from the group's m[0:4], as left by the previous call.")
	Pragma("noescape")

	gp := Load(Param("st"), GP64())
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
	z := zmm()

	TESTQ(cnt, cnt)
	JZ(LabelRef(name + "_done"))
	loopLabel(name + "_loop")
	ADDQ(Imm(128), ctr)

	Comment("Load and transpose the message words.")
	for g := range groups {
		base := Mem{Base: gp, Disp: g*groupSize + groupM}
		rows := z[:16]
		for l := range 8 {
			MOVQ(Mem{Base: ptrs, Disp: 8 * (8*g + l)}, p)
			VMOVDQU64(Mem{Base: p, Index: off, Scale: 1}, rows[l])
			VMOVDQU64(Mem{Base: p, Index: off, Scale: 1, Disp: 64}, rows[8+l])
		}
		transpose8x8q(rows[:8], z[16:24])
		transpose8x8q(rows[8:], z[24:32])
		words := z[16:32]
		TESTB(half, half)
		JNZ(LabelRef(fmt.Sprintf("%s_half%d", name, g)))
		for w := range 16 {
			VMOVDQU64(words[w], base.Offset(64*w))
		}
		JMP(LabelRef(fmt.Sprintf("%s_loaded%d", name, g)))
		Label(fmt.Sprintf("%s_half%d", name, g))
		for w := range 16 {
			VMOVDQU64(words[w], base.Offset(64*(w+4)))
		}
		Label(fmt.Sprintf("%s_loaded%d", name, g))
	}

	Comment("Initialise the work vectors.")
	for g := range groups {
		v := z[16*g : 16*g+16]
		h := Mem{Base: gp, Disp: g*groupSize + groupH}
		for i := range 8 {
			VMOVDQU64(h.Offset(64*i), v[i])
		}
		for i := range 4 {
			VPBROADCASTQ(iv.Offset(8*i), v[8+i])
		}
		MOVQ(U64(consts.BLAKE2bIV[4]), tmp)
		XORQ(ctr, tmp)
		VPBROADCASTQ(tmp, v[12])
		VPBROADCASTQ(iv.Offset(8*5), v[13])
		VPBROADCASTQ(v14, v[14])
		VPBROADCASTQ(iv.Offset(8*7), v[15])
	}

	for r := range 12 {
		Commentf("Round %d.", r)
		s := blake2bSigma(r)
		for _, diag := range []bool{false, true} {
			// The 4 G functions of both groups, step by step.
			var a, b, c, d [][4]VecPhysical
			var x, y [][4]Mem
			for g := range groups {
				v := z[16*g : 16*g+16]
				m := func(i int) Mem { return Mem{Base: gp, Disp: g*groupSize + groupM + 64*i} }
				var ga, gb, gc, gd [4]VecPhysical
				var gx, gy [4]Mem
				for i := range 4 {
					ga[i], gc[i] = v[i], v[8+i]
					if !diag {
						gb[i], gd[i] = v[4+i], v[12+i]
						gx[i], gy[i] = m(s[2*i]), m(s[2*i+1])
					} else {
						gb[i], gd[i] = v[4+(i+1)%4], v[12+(i+3)%4]
						gc[i] = v[8+(i+2)%4]
						gx[i], gy[i] = m(s[8+2*i]), m(s[8+2*i+1])
					}
				}
				a, b, c, d = append(a, ga), append(b, gb), append(c, gc), append(d, gd)
				x, y = append(x, gx), append(y, gy)
			}
			each := func(f func(g, i int)) {
				for g := range groups {
					for i := range 4 {
						f(g, i)
					}
				}
			}
			for _, half := range []struct {
				m      [][4]Mem
				rd, rb uint8
			}{{x, 32, 24}, {y, 16, 63}} {
				each(func(g, i int) {
					VPADDQ(b[g][i], a[g][i], a[g][i])
					VPADDQ(half.m[g][i], a[g][i], a[g][i])
				})
				each(func(g, i int) {
					VPXORQ(a[g][i], d[g][i], d[g][i])
					VPRORQ(U8(half.rd), d[g][i], d[g][i])
				})
				each(func(g, i int) { VPADDQ(d[g][i], c[g][i], c[g][i]) })
				each(func(g, i int) {
					VPXORQ(c[g][i], b[g][i], b[g][i])
					VPRORQ(U8(half.rb), b[g][i], b[g][i])
				})
			}
		}
	}

	Comment("h ^= v[0:8] ^ v[8:16].")
	for g := range groups {
		v := z[16*g : 16*g+16]
		h := Mem{Base: gp, Disp: g*groupSize + groupH}
		for i := range 8 {
			VPTERNLOGQ(U8(0x96), h.Offset(64*i), v[8+i], v[i])
			VMOVDQU64(v[i], h.Offset(64*i))
		}
	}
	TESTB(half, half)
	JZ(LabelRef(name + "_next"))
	Comment("Half mode: the last 32 bytes of this line begin the next chunk.")
	for g := range groups {
		base := Mem{Base: gp, Disp: g*groupSize + groupM}
		for w := range 4 {
			VMOVDQU64(base.Offset(64*(16+w)), z[w])
			VMOVDQU64(z[w], base.Offset(64*w))
		}
	}
	Label(name + "_next")
	ADDQ(Imm(128), off)
	DECQ(cnt)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_done")
	VZEROUPPER()
	RET()
}
