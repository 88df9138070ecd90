package asmarm

import (
	"bytes"
	"fmt"

	"github.com/veritytree/veritytree/hashes/internal/consts"
)

// SHA-512 on two streams at once, one per 64-bit lane ("neon2x"), like
// sha256.go; and, for arm64, with the SHA-512 instructions on two streams
// interleaved ("ce").

// k64Table emits the SHA-512 constants, each repeated in lanes lanes.
func k64Table(out *bytes.Buffer, sym string, lanes int, words int) {
	for i, k := range consts.SHA512K {
		for l := range lanes {
			off := 8 * (lanes*i + l)
			if words == 2 {
				fmt.Fprintf(out, "DATA\t%s+%d(SB)/4, $0x%08x\n", sym, off, uint32(k))
				fmt.Fprintf(out, "DATA\t%s+%d(SB)/4, $0x%08x\n", sym, off+4, uint32(k>>32))
			} else {
				fmt.Fprintf(out, "DATA\t%s+%d(SB)/8, $0x%016x\n", sym, off, k)
			}
		}
	}
	fmt.Fprintf(out, "GLOBL\t%s(SB), RODATA|NOPTR, $%d\n", sym, 8*lanes*len(consts.SHA512K))
}

func genSHA512ARM64() []byte {
	var out bytes.Buffer
	out.WriteString(header)
	out.WriteString("\n// SHA-512 round constants, each in two lanes.\n")
	k64Table(&out, "·sha512KNEON", 2, 1)
	out.WriteString(`
// func sha512NEON2(st *[8][2]uint64, p *[2]*byte, chunks int)
//
// Two streams, one per lane: R3, R4 the lanes' data, R7 the constants.
// V0..V7 the state a..h (renamed every round, back in place after 80),
// V16..V31 the message schedule W[t mod 16], V8..V15 scratch.
TEXT ·sha512NEON2(SB), NOSPLIT, $0-24
	MOVD	st+0(FP), R0
	MOVD	p+8(FP), R1
	MOVD	chunks+16(FP), R2
	CBZ	R2, done
	LDP	(R1), (R3, R4)
	ADD	$64, R0, R9

loop:
	MOVD	$·sha512KNEON(SB), R7
	VLD1.P	64(R3), [V0.D2, V1.D2, V2.D2, V3.D2]
	VLD1.P	64(R3), [V4.D2, V5.D2, V6.D2, V7.D2]
	VLD1.P	64(R4), [V8.D2, V9.D2, V10.D2, V11.D2]
	VLD1.P	64(R4), [V12.D2, V13.D2, V14.D2, V15.D2]
	// transpose: W[2k] = {lane 0, lane 1} word 2k, W[2k+1] likewise
`)
	v := a64vec{b: &out, w64: true}
	for k := range 8 {
		v.ins("VTRN1\tV%d.D2, V%d.D2, V%d.D2", 8+k, k, 16+2*k)
		v.ins("VTRN2\tV%d.D2, V%d.D2, V%d.D2", 8+k, k, 17+2*k)
	}
	for k := range 16 {
		v.ins("VREV64\tV%d.B16, V%d.B16", 16+k, 16+k)
	}
	out.WriteString(`
	VLD1	(R0), [V0.D2, V1.D2, V2.D2, V3.D2]
	VLD1	(R9), [V4.D2, V5.D2, V6.D2, V7.D2]
`)
	p := &pool{free: []int{8, 9, 10, 11, 12, 13, 14, 15}}
	st := [8]int{0, 1, 2, 3, 4, 5, 6, 7}
	loadK := func(r int) { v.ins("VLD1.P\t16(R7), [V%d.D2]", r) }
	W := func(t int) int { return 16 + t%16 }
	for t := range 80 {
		v.comment("round %d", t)
		if t >= 16 {
			shaSchedule(v, p, &sha512Sigmas, W(t), W(t-15), W(t-7), W(t-2))
		}
		shaRound(v, p, &sha512Sigmas, &st, W(t), loadK)
	}
	if st != [8]int{0, 1, 2, 3, 4, 5, 6, 7} {
		panic("state registers not back in place")
	}
	out.WriteString(`
	VLD1	(R0), [V8.D2, V9.D2, V10.D2, V11.D2]
	VLD1	(R9), [V12.D2, V13.D2, V14.D2, V15.D2]
	VADD	V8.D2, V0.D2, V0.D2
	VADD	V9.D2, V1.D2, V1.D2
	VADD	V10.D2, V2.D2, V2.D2
	VADD	V11.D2, V3.D2, V3.D2
	VADD	V12.D2, V4.D2, V4.D2
	VADD	V13.D2, V5.D2, V5.D2
	VADD	V14.D2, V6.D2, V6.D2
	VADD	V15.D2, V7.D2, V7.D2
	VST1	[V0.D2, V1.D2, V2.D2, V3.D2], (R0)
	VST1	[V4.D2, V5.D2, V6.D2, V7.D2], (R9)
	SUBS	$1, R2, R2
	BNE	loop

done:
	RET
`)
	genSHA512CE2(&out)
	return out.Bytes()
}

// genSHA512CE2 writes sha512CE2: the SHA-512 instructions on two streams,
// interleaved round pair by round pair (the scheme of Go's and Linux's
// single-stream code). Stream s uses V(16s+0..4) for the state (ab, cd,
// ef, gh and a fifth register, rotating), V(16s+5..7) scratch and
// V(16s+8..15) the message schedule. The state at a chunk's start is kept
// in the scratch s (R8, R10).
func genSHA512CE2(out *bytes.Buffer) {
	ins := func(format string, args ...any) { fmt.Fprintf(out, "\t"+format+"\n", args...) }
	out.WriteString("\n// SHA-512 round constants, in order.\n")
	k64Table(out, "·sha512KCE", 1, 1)
	out.WriteString(`
// func sha512CE2(st *[8][2]uint64, p *[2]*byte, chunks int, s *[16]uint64)
TEXT ·sha512CE2(SB), NOSPLIT, $0-32
	MOVD	st+0(FP), R0
	MOVD	p+8(FP), R1
	MOVD	chunks+16(FP), R2
	MOVD	s+24(FP), R8
	CBZ	R2, done
	LDP	(R1), (R3, R4)
	ADD	$64, R8, R10
	// Lane-interleaved state to each stream's {h0, h1}, {h2, h3}, ...
	MOVD	R0, R9
	VLD2.P	32(R9), [V0.D2, V1.D2]
	VLD2.P	32(R9), [V2.D2, V3.D2]
	VLD2.P	32(R9), [V4.D2, V5.D2]
	VLD2	(R9), [V6.D2, V7.D2]
	VMOV	V1.B16, V16.B16
	VMOV	V3.B16, V17.B16
	VMOV	V5.B16, V18.B16
	VMOV	V7.B16, V19.B16
	VMOV	V2.B16, V1.B16
	VMOV	V4.B16, V2.B16
	VMOV	V6.B16, V3.B16

loop:
	MOVD	$·sha512KCE(SB), R7
	VST1	[V0.D2, V1.D2, V2.D2, V3.D2], (R8)
	VST1	[V16.D2, V17.D2, V18.D2, V19.D2], (R10)
	VLD1.P	64(R3), [V8.B16, V9.B16, V10.B16, V11.B16]
	VLD1.P	64(R3), [V12.B16, V13.B16, V14.B16, V15.B16]
	VLD1.P	64(R4), [V24.B16, V25.B16, V26.B16, V27.B16]
	VLD1.P	64(R4), [V28.B16, V29.B16, V30.B16, V31.B16]
`)
	for s := range 2 {
		for i := range 8 {
			ins("VREV64\tV%d.B16, V%d.B16", 16*s+8+i, 16*s+8+i)
		}
	}
	// The state rotation of the single-stream code: round pair r uses
	// (i0, i1, i2, i3, i4) = rot[r%5] of registers 0..4.
	rot := [5][5]int{{0, 1, 2, 3, 4}, {3, 0, 4, 2, 1}, {2, 3, 1, 4, 0}, {4, 2, 0, 1, 3}, {1, 4, 3, 0, 2}}
	for r := range 40 {
		fmt.Fprintf(out, "\t// rounds %d, %d\n", 2*r, 2*r+1)
		R := func(s, i int) int { return 16*s + rot[r%5][i] }
		T := func(s, i int) int { return 16*s + 5 + i } // V5, V6, V7
		M := func(s, i int) int { return 16*s + 8 + (r+i)%8 }
		// W+K: the constants go straight into stream 0's scratch.
		ins("VLD1.P\t16(R7), [V%d.D2]", T(0, 0))
		ins("VADD\tV%d.D2, V%d.D2, V%d.D2", M(1, 0), T(0, 0), T(1, 0))
		ins("VADD\tV%d.D2, V%d.D2, V%d.D2", M(0, 0), T(0, 0), T(0, 0))
		for s := range 2 {
			ins("VEXT\t$8, V%d.B16, V%d.B16, V%d.B16", R(s, 3), R(s, 2), T(s, 1))
		}
		for s := range 2 {
			ins("VEXT\t$8, V%d.B16, V%d.B16, V%d.B16", T(s, 0), T(s, 0), T(s, 0))
		}
		for s := range 2 {
			ins("VEXT\t$8, V%d.B16, V%d.B16, V%d.B16", R(s, 2), R(s, 1), T(s, 2))
		}
		for s := range 2 {
			ins("VADD\tV%d.D2, V%d.D2, V%d.D2", T(s, 0), R(s, 3), R(s, 3))
		}
		update := r < 32
		if update {
			// {W[t+9], W[t+10]}: the middle of M(4) and M(5).
			for s := range 2 {
				ins("VEXT\t$8, V%d.B16, V%d.B16, V%d.B16", M(s, 5), M(s, 4), T(s, 0))
			}
			for s := range 2 {
				ins("SHA512SU0\tV%d.D2, V%d.D2", M(s, 1), M(s, 0))
			}
		}
		for s := range 2 {
			ins("SHA512H\tV%d.D2, V%d, V%d", T(s, 2), T(s, 1), R(s, 3))
		}
		if update {
			for s := range 2 {
				ins("SHA512SU1\tV%d.D2, V%d.D2, V%d.D2", T(s, 0), M(s, 7), M(s, 0))
			}
		}
		for s := range 2 {
			ins("VADD\tV%d.D2, V%d.D2, V%d.D2", R(s, 3), R(s, 1), R(s, 4))
		}
		for s := range 2 {
			ins("SHA512H2\tV%d.D2, V%d, V%d", R(s, 0), R(s, 1), R(s, 3))
		}
	}
	out.WriteString(`
	VLD1	(R8), [V8.D2, V9.D2, V10.D2, V11.D2]
	VLD1	(R10), [V24.D2, V25.D2, V26.D2, V27.D2]
	VADD	V8.D2, V0.D2, V0.D2
	VADD	V9.D2, V1.D2, V1.D2
	VADD	V10.D2, V2.D2, V2.D2
	VADD	V11.D2, V3.D2, V3.D2
	VADD	V24.D2, V16.D2, V16.D2
	VADD	V25.D2, V17.D2, V17.D2
	VADD	V26.D2, V18.D2, V18.D2
	VADD	V27.D2, V19.D2, V19.D2
	SUBS	$1, R2, R2
	BNE	loop

	// Back to lanes: V0..V3 stream 0, V16..V19 stream 1.
	VMOV	V3.B16, V6.B16
	VMOV	V2.B16, V4.B16
	VMOV	V1.B16, V2.B16
	VMOV	V16.B16, V1.B16
	VMOV	V17.B16, V3.B16
	VMOV	V18.B16, V5.B16
	VMOV	V19.B16, V7.B16
	MOVD	R0, R9
	VST2.P	[V0.D2, V1.D2], 32(R9)
	VST2.P	[V2.D2, V3.D2], 32(R9)
	VST2.P	[V4.D2, V5.D2], 32(R9)
	VST2	[V6.D2, V7.D2], (R9)

done:
	RET
`)
}

// ---- 32-bit arm ----

func genSHA512ARM() []byte {
	var out bytes.Buffer
	out.WriteString(header)
	out.WriteString(`
// NEON instructions are WORD-encoded (Go's arm assembler has none); each
// carries its GNU mnemonic. Generated by hashes/asm_arm, checked against
// GNU as by its tests.

// SHA-512 round constants, each in two lanes.
`)
	k64Table(&out, "·sha512KNEON", 2, 2)
	out.WriteString(`
// func sha512NEON2(st *[8][2]uint64, p *[2]*byte, chunks int, w *sha512NEONScratch)
//
// Two streams, one per 64-bit lane. q0..q7 the state a..h (renamed every
// round, back in place after 80), q8 W[t], q9..q15 scratch. The message
// schedule lives in w.w (80 entries, in order; R9 its start): R4 reads
// W[t-16] and W[t-15] (advancing by R8 = 16), R5 W[t-7], R6 W[t-2], R7
// reads then writes W[t]. The lanes' data pointers are kept in w.p, as
// integers, and loaded into R4, R5 for the message loads. R3 the constants.
// R10 (g) and R11 (the assembler's temporary) are not touched.
TEXT ·sha512NEON2(SB), NOSPLIT, $0-16
	MOVW	st+0(FP), R0
	MOVW	p+4(FP), R1
	MOVW	chunks+8(FP), R2
	MOVW	w+12(FP), R9
	CMP	$0, R2
	BEQ	done
	MOVW	0(R1), R4
	MOVW	4(R1), R5
	MOVW	R4, 1280(R9)
	MOVW	R5, 1284(R9)
	MOVW	$16, R8

loop:
	MOVW	1280(R9), R4
	MOVW	1284(R9), R5
`)
	v := a32vec{b: &out, w64: true}
	// Lane l's words 2k, 2k+1 into q(2k+l), then swap the middle
	// doublewords: q(2k) = W[2k], q(2k+1) = W[2k+1].
	for l := range 2 {
		for k := range 8 {
			v.emit(VLD1(8, Q(2*k+l).Lo(), 2, 4+l, true))
		}
	}
	for k := range 8 {
		v.emit(VSWP(Q(2*k).Hi(), Q(2*k+1).Lo()))
	}
	for j := range 16 {
		v.emit(VREV648(Q(j), Q(j)))
	}
	out.WriteString(`	MOVW	R4, 1280(R9)
	MOVW	R5, 1284(R9)
	MOVW	R9, R7
`)
	v.emit(VSTMIAW(7, D(0), 16))
	v.emit(VSTMIAW(7, D(16), 16))
	v.emit(VLDMIA(0, D(0), 16))
	out.WriteString(`	MOVW	$·sha512KNEON(SB), R3
	MOVW	R9, R4
	ADD	$144, R9, R5
	ADD	$224, R9, R6
	MOVW	R9, R7
`)
	p := &pool{free: []int{9, 10, 11, 12, 13, 14, 15}}
	st := [8]int{0, 1, 2, 3, 4, 5, 6, 7}
	loadK := func(r int) { v.emit(VLD1(64, Q(r).Lo(), 2, 3, true)) }
	const w = 8
	for t := range 80 {
		v.comment("round %d", t)
		if t < 16 {
			v.emit(VLD1(64, Q(w).Lo(), 2, 7, true))
		} else {
			p2 := &pool{free: []int{12, 13, 14, 15}}
			v.emit(VLD1Post(64, Q(w).Lo(), 4, 4, 8))
			v.emit(VLD1(64, Q(10).Lo(), 2, 5, true))
			v.emit(VLD1(64, Q(11).Lo(), 2, 6, true))
			shaSchedule(v, p2, &sha512Sigmas, w, 9, 10, 11)
			v.emit(VST1(64, Q(w).Lo(), 2, 7, true))
		}
		shaRound(v, p, &sha512Sigmas, &st, w, loadK)
	}
	if st != [8]int{0, 1, 2, 3, 4, 5, 6, 7} {
		panic("state registers not back in place")
	}
	out.WriteString("\n")
	v.emit(VLDMIA(0, D(16), 16))
	for j := range 8 {
		v.emit(VADDI64(Q(j), Q(j), Q(8+j)))
	}
	v.emit(VSTMIA(0, D(0), 16))
	out.WriteString(`	SUB.S	$1, R2
	BNE	loop

done:
	RET
`)
	return out.Bytes()
}
