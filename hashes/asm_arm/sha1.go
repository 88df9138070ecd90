package asmarm

import (
	"bytes"
	"fmt"

	"github.com/veritytree/veritytree/hashes/internal/consts"
)

// SHA-1 on four streams at once, one per 32-bit lane ("neon4x"), like
// sha256.go; and, for arm64, with the SHA-1 instructions on two streams
// interleaved ("ce").

// sha1Schedule emits W[t] = (W[t-16] ^ W[t-14] ^ W[t-8] ^ W[t-3]) <<< 1 into
// the register w16 that held W[t-16].
func sha1Schedule(v vec, p *pool, w16, w14, w8, w3 int) {
	x := p.get()
	v.eor(x, w16, w14)
	v.eor(x, x, w8)
	v.eor(x, x, w3)
	v.ushr(w16, x, 31)
	v.sli(w16, x, 1)
	p.put(x)
}

// sha1Round emits round t on st (a..e, renamed) with W[t] in w and K in k.
func sha1Round(v vec, p *pool, st *[5]int, t, w, k int) {
	a, b, c, d, e := st[0], st[1], st[2], st[3], st[4]
	f, r5, nb := p.get(), p.get(), p.get()
	var fops []op
	switch {
	case t < 20: // Ch: b ? c : d
		fops = []op{func() { v.mov(f, b) }, func() { v.bsl(f, c, d) }}
	case t >= 40 && t < 60: // Maj: (b ^ c) ? d : c
		fops = []op{func() { v.eor(f, b, c) }, func() { v.bsl(f, d, c) }}
	default: // parity
		fops = []op{func() { v.eor(f, b, c) }, func() { v.eor(f, f, d) }}
	}
	c1 := []op{func() { v.add(e, e, k) }, func() { v.add(e, e, w) }}
	c1 = append(c1, fops...)
	c1 = append(c1, func() { v.add(e, e, f) })
	c2 := []op{
		func() { v.ushr(r5, a, 27) }, func() { v.sli(r5, a, 5) },
		func() { v.ushr(nb, b, 2) }, func() { v.sli(nb, b, 30) },
	}
	interleave(c1, c2)
	v.add(e, e, r5)
	p.put(f, r5, b)
	*st = [5]int{e, a, nb, c, d}
}

// freeRun returns the first of n consecutive registers in [lo, hi) that are
// not in used.
func freeRun(used []int, n, lo, hi int) int {
	for x := lo; x+n <= hi; x++ {
		ok := true
		for _, u := range used {
			if u >= x && u < x+n {
				ok = false
			}
		}
		if ok {
			return x
		}
	}
	panic("no free run of registers")
}

func genSHA1ARM64() []byte {
	var out bytes.Buffer
	out.WriteString(header)
	out.WriteString("\n// SHA-1 round constants, each in four lanes.\n")
	kTable(&out, "·sha1KNEON", consts.SHA1K[:], 4)
	out.WriteString(`
// func sha1NEON4(st *[8][4]uint32, p *[4]*byte, chunks int)
//
// Four streams, one per lane: R3..R6 the lanes' data. V8..V11 K, V16..V31
// the message schedule W[t mod 16]; the state a..e and the scratch share
// V0..V7 and V12..V15, renamed as the rounds go.
TEXT ·sha1NEON4(SB), NOSPLIT, $0-24
	MOVD	st+0(FP), R0
	MOVD	p+8(FP), R1
	MOVD	chunks+16(FP), R2
	CBZ	R2, done
	LDP	(R1), (R3, R4)
	LDP	16(R1), (R5, R6)
	MOVD	$·sha1KNEON(SB), R7
	VLD1	(R7), [V8.S4, V9.S4, V10.S4, V11.S4]
	ADD	$64, R0, R9

loop:
	VLD1.P	64(R3), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P	64(R4), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1.P	64(R5), [V12.S4, V13.S4, V14.S4, V15.S4]
	VLD1.P	64(R6), [V24.S4, V25.S4, V26.S4, V27.S4]
`)
	v := a64vec{b: &out}
	// Lane l's words 4g..4g+3 are in lanes[l][g]; W[k] goes to V(16+k).
	// Group 2's output overlaps lane 3's rows, so it goes last, and each
	// group writes its third scratch register after reading the fourth row.
	lanes := [4][4]int{{0, 1, 2, 3}, {4, 5, 6, 7}, {12, 13, 14, 15}, {24, 25, 26, 27}}
	for _, g := range []int{0, 1, 3, 2} {
		v.comment("transpose words %d..%d", 4*g, 4*g+3)
		r := [4]int{lanes[0][g], lanes[1][g], lanes[2][g], lanes[3][g]}
		t := [4]int{16 + 4*g, 17 + 4*g, 18 + 4*g, 19 + 4*g}
		v.ins("VTRN1\tV%d.S4, V%d.S4, V%d.S4", r[1], r[0], t[0])
		v.ins("VTRN2\tV%d.S4, V%d.S4, V%d.S4", r[1], r[0], t[1])
		v.ins("VTRN2\tV%d.S4, V%d.S4, V%d.S4", r[3], r[2], t[3])
		v.ins("VTRN1\tV%d.S4, V%d.S4, V%d.S4", r[3], r[2], t[2])
		v.ins("VTRN1\tV%d.D2, V%d.D2, V%d.D2", t[2], t[0], r[0])
		v.ins("VTRN1\tV%d.D2, V%d.D2, V%d.D2", t[3], t[1], r[1])
		v.ins("VTRN2\tV%d.D2, V%d.D2, V%d.D2", t[2], t[0], r[2])
		v.ins("VTRN2\tV%d.D2, V%d.D2, V%d.D2", t[3], t[1], r[3])
		for _, j := range []int{3, 0, 1, 2} {
			v.ins("VREV32\tV%d.B16, V%d.B16", r[j], t[j])
		}
	}
	out.WriteString(`
	VLD1	(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1	(R9), [V4.S4]
`)
	p := &pool{free: []int{5, 6, 7, 12, 13, 14, 15}}
	st := [5]int{0, 1, 2, 3, 4}
	W := func(t int) int { return 16 + t%16 }
	for t := range 80 {
		v.comment("round %d", t)
		if t >= 16 {
			sha1Schedule(v, p, W(t), W(t-14), W(t-8), W(t-3))
		}
		sha1Round(v, p, &st, t, W(t), 8+t/20)
	}
	// st += the state at the start, into five consecutive free registers.
	x := freeRun(append(st[:], 8, 9, 10, 11), 5, 0, 32)
	fmt.Fprintf(&out, "\n\tVLD1\t(R0), [V%d.S4, V%d.S4, V%d.S4, V%d.S4]\n", x, x+1, x+2, x+3)
	fmt.Fprintf(&out, "\tVLD1\t(R9), [V%d.S4]\n", x+4)
	for i := range 5 {
		v.add(x+i, x+i, st[i])
	}
	fmt.Fprintf(&out, "\tVST1\t[V%d.S4, V%d.S4, V%d.S4, V%d.S4], (R0)\n", x, x+1, x+2, x+3)
	fmt.Fprintf(&out, "\tVST1\t[V%d.S4], (R9)\n", x+4)
	out.WriteString(`	SUBS	$1, R2, R2
	BNE	loop

done:
	RET
`)
	genSHA1CE4(&out)
	return out.Bytes()
}

// genSHA1CE4 writes sha1CE4: the SHA-1 instructions on the four streams,
// two at a time with their instructions interleaved. Lanes' abcd are in
// V0..V3 and their e in the lanes of V4 between pairs. Per stream s of a
// pair: abcd in V(5+s) (a copy of it at the chunk start in V(7+s)), e at
// the chunk start in V(9+s) and the running e alternating between V(11+s)
// and V(13+s), W+K in V(15+s); message schedules V20..V23 and V24..V27;
// K in V16..V19.
func genSHA1CE4(out *bytes.Buffer) {
	ins := func(format string, args ...any) { fmt.Fprintf(out, "\t"+format+"\n", args...) }
	out.WriteString(`
// func sha1CE4(st *[8][4]uint32, p *[4]*byte, chunks int)
TEXT ·sha1CE4(SB), NOSPLIT, $0-24
	MOVD	st+0(FP), R0
	MOVD	p+8(FP), R1
	MOVD	chunks+16(FP), R2
	CBZ	R2, done
	MOVD	$·sha1KNEON(SB), R7
	VLD1	(R7), [V16.S4, V17.S4, V18.S4, V19.S4]
	ADD	$64, R0, R9
	VLD4	(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1	(R9), [V4.S4]
`)
	// Registers of stream s. The K vectors are V16..V19 but the W+K
	// scratch must not clash: use V28, V29 for W+K instead.
	abcd := func(s int) int { return 5 + s }
	save := func(s int) int { return 7 + s }
	e0 := func(s int) int { return 9 + s }
	eA := func(s int) int { return 11 + s }
	eB := func(s int) int { return 13 + s }
	wk := func(s int) int { return 28 + s }
	M := func(s, q int) int { return 20 + 4*s + q%4 }
	for pair := range 2 {
		fmt.Fprintf(out, "\n\t// lanes %d and %d\n", 2*pair, 2*pair+1)
		fmt.Fprintf(out, "\tLDP\t%d(R1), (R3, R4)\n", 16*pair)
		out.WriteString("\tMOVD\tR2, R5\n")
		for s := range 2 {
			ins("VMOV\tV%d.B16, V%d.B16", 2*pair+s, save(s))
			ins("VMOV\tV4.S[%d], V%d.S[0]", 2*pair+s, e0(s))
		}
		fmt.Fprintf(out, "loop%d:\n", pair)
		ins("VLD1.P\t64(R3), [V20.B16, V21.B16, V22.B16, V23.B16]")
		ins("VLD1.P\t64(R4), [V24.B16, V25.B16, V26.B16, V27.B16]")
		for s := range 2 {
			ins("VMOV\tV%d.B16, V%d.B16", save(s), abcd(s))
		}
		for i := range 8 {
			ins("VREV32\tV%d.B16, V%d.B16", 20+i, 20+i)
		}
		// e of quad q: e0 for q = 0, then eA, eB alternately.
		eReg := func(s, q int) int {
			switch {
			case q == 0:
				return e0(s)
			case q%2 == 1:
				return eA(s)
			}
			return eB(s)
		}
		for q := range 20 {
			fmt.Fprintf(out, "\t// rounds %d..%d\n", 4*q, 4*q+3)
			for s := range 2 {
				ins("VADD\tV%d.S4, V%d.S4, V%d.S4", 16+q/5, M(s, q), wk(s))
			}
			if q < 16 {
				for s := range 2 {
					ins("SHA1SU0\tV%d.S4, V%d.S4, V%d.S4", M(s, q+2), M(s, q+1), M(s, q))
				}
			}
			for s := range 2 {
				ins("SHA1H\tV%d, V%d", abcd(s), eReg(s, q+1))
			}
			f := "SHA1C"
			switch q / 5 {
			case 1, 3:
				f = "SHA1P"
			case 2:
				f = "SHA1M"
			}
			for s := range 2 {
				ins("%s\tV%d.S4, V%d, V%d", f, wk(s), eReg(s, q), abcd(s))
			}
			if q < 16 {
				for s := range 2 {
					ins("SHA1SU1\tV%d.S4, V%d.S4", M(s, q+3), M(s, q))
				}
			}
		}
		for s := range 2 {
			ins("VADD\tV%d.S4, V%d.S4, V%d.S4", abcd(s), save(s), save(s))
			ins("VADD\tV%d.S4, V%d.S4, V%d.S4", eReg(s, 20), e0(s), e0(s))
		}
		ins("SUBS\t$1, R5, R5")
		ins("BNE\tloop%d", pair)
		for s := range 2 {
			ins("VMOV\tV%d.B16, V%d.B16", save(s), 2*pair+s)
			ins("VMOV\tV%d.S[0], V4.S[%d]", e0(s), 2*pair+s)
		}
	}
	out.WriteString(`
	VST4	[V0.S4, V1.S4, V2.S4, V3.S4], (R0)
	VST1	[V4.S4], (R9)

done:
	RET
`)
}

// ---- 32-bit arm ----

func genSHA1ARM() []byte {
	var out bytes.Buffer
	out.WriteString(header)
	out.WriteString(`
// NEON instructions are WORD-encoded (Go's arm assembler has none); each
// carries its GNU mnemonic. Generated by hashes/asm_arm, checked against
// GNU as by its tests.

// SHA-1 round constants (vld1.32 {dN[], dN+1[]} puts one in all lanes).
`)
	kTable(&out, "·sha1KNEON", consts.SHA1K[:], 1)
	out.WriteString(`
// func sha1NEON4(st *[8][4]uint32, p *[4]*byte, chunks int, w *sha1NEONScratch)
//
// Four streams, one per lane. The message schedule lives in w.w (80
// entries, in order; R9 its start): R4, R5, R6, R7 read W[t-16], W[t-14],
// W[t-8], W[t-3], R8 reads then writes W[t]. The lanes' data pointers are
// kept in w.p, as integers, and loaded into R4..R7 for the message loads.
// R3 the constants. q15 K, q14 W[t]; the state a..e and the scratch share
// q0..q13, renamed as the rounds go.
// R10 (g) and R11 (the assembler's temporary) are not touched.
TEXT ·sha1NEON4(SB), NOSPLIT, $0-16
	MOVW	st+0(FP), R0
	MOVW	p+4(FP), R1
	MOVW	chunks+8(FP), R2
	MOVW	w+12(FP), R9
	CMP	$0, R2
	BEQ	done
	MOVW	0(R1), R4
	MOVW	4(R1), R5
	MOVW	8(R1), R6
	MOVW	12(R1), R7
	MOVW	R4, 1280(R9)
	MOVW	R5, 1284(R9)
	MOVW	R6, 1288(R9)
	MOVW	R7, 1292(R9)

loop:
	MOVW	1280(R9), R4
	MOVW	1284(R9), R5
	MOVW	1288(R9), R6
	MOVW	1292(R9), R7
`)
	v := a32vec{b: &out}
	loadTranspose32(v)
	out.WriteString(`	MOVW	R4, 1280(R9)
	MOVW	R5, 1284(R9)
	MOVW	R6, 1288(R9)
	MOVW	R7, 1292(R9)
	MOVW	R9, R8
`)
	v.emit(VSTMIAW(8, D(0), 16))
	v.emit(VSTMIAW(8, D(16), 16))
	v.emit(VLDMIA(0, D(0), 10))
	out.WriteString(`	MOVW	$·sha1KNEON(SB), R3
	MOVW	R9, R4
	ADD	$32, R9, R5
	ADD	$128, R9, R6
	ADD	$208, R9, R7
	MOVW	R9, R8
`)
	const k, w = 15, 14
	p := &pool{free: []int{5, 6, 7, 8, 9, 10, 11, 12, 13}}
	st := [5]int{0, 1, 2, 3, 4}
	for t := range 80 {
		v.comment("round %d", t)
		if t%20 == 0 {
			v.emit(VLD1Dup32(Q(k), 3))
		}
		if t < 16 {
			v.emit(VLD1(32, Q(w).Lo(), 2, 8, true))
		} else {
			l16, l14, l8, l3 := p.get(), p.get(), p.get(), p.get()
			v.emit(VLD1(32, Q(l16).Lo(), 2, 4, true))
			v.emit(VLD1(32, Q(l14).Lo(), 2, 5, true))
			v.emit(VLD1(32, Q(l8).Lo(), 2, 6, true))
			v.emit(VLD1(32, Q(l3).Lo(), 2, 7, true))
			v.eor(l16, l16, l14)
			v.eor(l8, l8, l3)
			v.eor(l16, l16, l8)
			v.ushr(w, l16, 31)
			v.sli(w, l16, 1)
			v.emit(VST1(32, Q(w).Lo(), 2, 8, true))
			p.put(l16, l14, l8, l3)
		}
		sha1Round(v, p, &st, t, w, k)
	}
	x := freeRun(append(st[:], k, w), 5, 0, 16)
	out.WriteString("\n")
	v.emit(VLDMIA(0, Q(x).Lo(), 10))
	for i := range 5 {
		v.add(x+i, x+i, st[i])
	}
	v.emit(VSTMIA(0, Q(x).Lo(), 10))
	out.WriteString(`	SUB.S	$1, R2
	BNE	loop

done:
	RET
`)
	return out.Bytes()
}
