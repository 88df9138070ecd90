package asmarm

import (
	"bytes"
	"fmt"

	"github.com/veritytree/veritytree/hashes/internal/consts"
)

// SHA-256 on four independent streams at once, one per 32-bit lane of the
// 128-bit registers ("neon4x"): each register holds the same state or
// message word of the four blocks, so the rounds are the scalar algorithm
// with every instruction four lanes wide, and no shuffles except the one 4x4
// transpose of the message words per chunk. Rotations are a shift right
// and a shift-left-insert; Ch and Maj are one bit select each (plus a copy
// or an xor); the state registers are renamed, not moved, between rounds.

// vec emits lane-wise vector operations on register numbers (V on arm64,
// Q on arm), on lanes of width() bits: 32 (four lanes) or 64 (two).
type vec interface {
	width() int
	add(d, n, m int)
	eor(d, n, m int)
	ushr(d, n, s int)
	sli(d, n, s int)
	mov(d, n int)
	bsl(d, n, m int) // d = (d & n) | (^d & m)
	comment(format string, args ...any)
}

// pool hands out scratch registers round robin.
type pool struct{ free []int }

func (p *pool) get() int {
	if len(p.free) == 0 {
		panic("out of scratch registers")
	}
	r := p.free[0]
	p.free = p.free[1:]
	return r
}

func (p *pool) put(rs ...int) { p.free = append(p.free, rs...) }

// op is one deferred instruction, so that independent chains can be
// interleaved.
type op func()

// interleave runs two instruction chains alternately.
func interleave(a, b []op) {
	for len(a) > 0 || len(b) > 0 {
		if len(a) > 0 {
			a[0]()
			a = a[1:]
		}
		if len(b) > 0 {
			b[0]()
			b = b[1:]
		}
	}
}

// rotr returns ops computing dst = x >>> s (dst != x).
func rotr(v vec, dst, x, s int) []op {
	return []op{func() { v.ushr(dst, x, s) }, func() { v.sli(dst, x, v.width()-s) }}
}

// bigSigma returns ops computing dst = x>>>r0 ^ x>>>r1 ^ x>>>r2, with tmp.
func bigSigma(v vec, dst, tmp, x int, r [3]int) []op {
	ops := rotr(v, dst, x, r[0])
	ops = append(ops, rotr(v, tmp, x, r[1])...)
	ops = append(ops, func() { v.eor(dst, dst, tmp) })
	ops = append(ops, rotr(v, tmp, x, r[2])...)
	return append(ops, func() { v.eor(dst, dst, tmp) })
}

// smallSigma returns ops computing dst = x>>>r0 ^ x>>>r1 ^ x>>s.
func smallSigma(v vec, dst, tmp, x int, r0, r1, s int) []op {
	ops := rotr(v, dst, x, r0)
	ops = append(ops, rotr(v, tmp, x, r1)...)
	ops = append(ops, func() { v.eor(dst, dst, tmp) })
	ops = append(ops, func() { v.ushr(tmp, x, s) })
	return append(ops, func() { v.eor(dst, dst, tmp) })
}

// shaSigmas are the rotations (and shifts) of SHA-256 or SHA-512.
type shaSigmas struct {
	S0, S1 [3]int // Σ0, Σ1: three rotations
	s0, s1 [3]int // σ0, σ1: two rotations and a shift
}

var (
	sha256Sigmas = shaSigmas{[3]int{2, 13, 22}, [3]int{6, 11, 25}, [3]int{7, 18, 3}, [3]int{17, 19, 10}}
	sha512Sigmas = shaSigmas{[3]int{28, 34, 39}, [3]int{14, 18, 41}, [3]int{1, 8, 7}, [3]int{19, 61, 6}}
)

// sha256Schedule emits w16 += σ0(w15) + w7 + σ1(w2): W[t] into the
// register that held W[t-16].
func sha256Schedule(v vec, p *pool, w16, w15, w7, w2 int) {
	shaSchedule(v, p, &sha256Sigmas, w16, w15, w7, w2)
}

func shaSchedule(v vec, p *pool, sg *shaSigmas, w16, w15, w7, w2 int) {
	s0, t0, s1, t1 := p.get(), p.get(), p.get(), p.get()
	a := smallSigma(v, s0, t0, w15, sg.s0[0], sg.s0[1], sg.s0[2])
	a = append(a, func() { v.add(w16, w16, s0) })
	b := smallSigma(v, s1, t1, w2, sg.s1[0], sg.s1[1], sg.s1[2])
	b = append(b, func() { v.add(w16, w16, w7) })
	interleave(a, b)
	v.add(w16, w16, s1)
	p.put(s0, t0, s1, t1)
}

// sha256Round emits round t on the state registers st (a..h) with W[t] in
// w and K[t] loaded into a register by loadK, and renames st.
func sha256Round(v vec, p *pool, st *[8]int, w int, loadK func(r int)) {
	shaRound(v, p, &sha256Sigmas, st, w, loadK)
}

func shaRound(v vec, p *pool, sg *shaSigmas, st *[8]int, w int, loadK func(r int)) {
	a, b, c, d, e, f, g, h := st[0], st[1], st[2], st[3], st[4], st[5], st[6], st[7]
	k := p.get()
	loadK(k)
	v.add(k, k, w)
	v.add(h, h, k)
	p.put(k)
	s1, t1, ch, s0, t0, mj := p.get(), p.get(), p.get(), p.get(), p.get(), p.get()
	// T1 = h + Σ1(e) + Ch(e, f, g) + K + W, accumulated in h.
	c1 := bigSigma(v, s1, t1, e, sg.S1)
	c1 = append(c1,
		func() { v.mov(ch, e) },
		func() { v.bsl(ch, f, g) },
		func() { v.add(h, h, s1) },
		func() { v.add(h, h, ch) },
		func() { v.add(d, d, h) }) // e' = d + T1
	// T2 = Σ0(a) + Maj(a, b, c); Maj = (a^b) ? c : b.
	c2 := bigSigma(v, s0, t0, a, sg.S0)
	c2 = append(c2,
		func() { v.eor(mj, a, b) },
		func() { v.bsl(mj, c, b) },
		func() { v.add(s0, s0, mj) })
	interleave(c1, c2)
	v.add(h, h, s0) // a' = T1 + T2
	p.put(s1, t1, ch, s0, t0, mj)
	*st = [8]int{h, a, b, c, d, e, f, g}
}

// ---- arm64 ----

type a64vec struct {
	b   *bytes.Buffer
	w64 bool // 64-bit lanes
}

func (v a64vec) width() int {
	if v.w64 {
		return 64
	}
	return 32
}

// arr is the lane arrangement.
func (v a64vec) arr() string {
	if v.w64 {
		return "D2"
	}
	return "S4"
}

func (v a64vec) ins(format string, args ...any) { fmt.Fprintf(v.b, "\t"+format+"\n", args...) }
func (v a64vec) add(d, n, m int) {
	v.ins("VADD\tV%d.%s, V%d.%[2]s, V%d.%[2]s", m, v.arr(), n, d)
}
func (v a64vec) eor(d, n, m int) { v.ins("VEOR\tV%d.B16, V%d.B16, V%d.B16", m, n, d) }
func (v a64vec) ushr(d, n, s int) {
	v.ins("VUSHR\t$%d, V%d.%s, V%d.%[3]s", s, n, v.arr(), d)
}
func (v a64vec) sli(d, n, s int) { v.ins("VSLI\t$%d, V%d.%s, V%d.%[3]s", s, n, v.arr(), d) }
func (v a64vec) mov(d, n int)    { v.ins("VMOV\tV%d.B16, V%d.B16", n, d) }
func (v a64vec) bsl(d, n, m int) { v.ins("VBSL\tV%d.B16, V%d.B16, V%d.B16", m, n, d) }
func (v a64vec) comment(format string, args ...any) {
	fmt.Fprintf(v.b, "\t// "+format+"\n", args...)
}

// kTable emits 32-bit round constants, each repeated in lanes lanes.
func kTable(out *bytes.Buffer, sym string, ks []uint32, lanes int) {
	for i, k := range ks {
		for l := range lanes {
			fmt.Fprintf(out, "DATA\t%s+%d(SB)/4, $0x%08x\n", sym, 4*(lanes*i+l), k)
		}
	}
	fmt.Fprintf(out, "GLOBL\t%s(SB), RODATA|NOPTR, $%d\n", sym, 4*lanes*len(ks))
}

func genSHA256ARM64() []byte {
	var out bytes.Buffer
	out.WriteString(header)
	out.WriteString("\n// SHA-256 round constants, each in four lanes.\n")
	kTable(&out, "·sha256KNEON", consts.SHA256K[:], 4)
	out.WriteString(`
// func sha256NEON4(st *[8][4]uint32, p *[4]*byte, chunks int)
//
// Four streams, one per lane: R3..R6 the lanes' data, R7 the constants.
// V0..V7 the state a..h (renamed every round, back in place after 64),
// V16..V31 the message schedule W[t mod 16], V8..V15 scratch.
TEXT ·sha256NEON4(SB), NOSPLIT, $0-24
	MOVD	st+0(FP), R0
	MOVD	p+8(FP), R1
	MOVD	chunks+16(FP), R2
	CBZ	R2, done
	LDP	(R1), (R3, R4)
	LDP	16(R1), (R5, R6)
	ADD	$64, R0, R9

loop:
	MOVD	$·sha256KNEON(SB), R7
	VLD1.P	64(R3), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P	64(R4), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1.P	64(R5), [V8.S4, V9.S4, V10.S4, V11.S4]
	VLD1.P	64(R6), [V12.S4, V13.S4, V14.S4, V15.S4]
`)
	v := a64vec{b: &out}
	for g := range 4 {
		v.comment("transpose words %d..%d: lanes in rows, then byte swap", 4*g, 4*g+3)
		r := [4]int{g, 4 + g, 8 + g, 12 + g}
		t := [4]int{16 + 4*g, 17 + 4*g, 18 + 4*g, 19 + 4*g}
		v.ins("VTRN1\tV%d.S4, V%d.S4, V%d.S4", r[1], r[0], t[0])
		v.ins("VTRN2\tV%d.S4, V%d.S4, V%d.S4", r[1], r[0], t[1])
		v.ins("VTRN1\tV%d.S4, V%d.S4, V%d.S4", r[3], r[2], t[2])
		v.ins("VTRN2\tV%d.S4, V%d.S4, V%d.S4", r[3], r[2], t[3])
		v.ins("VTRN1\tV%d.D2, V%d.D2, V%d.D2", t[2], t[0], r[0]) // word 0
		v.ins("VTRN1\tV%d.D2, V%d.D2, V%d.D2", t[3], t[1], r[1]) // word 1
		v.ins("VTRN2\tV%d.D2, V%d.D2, V%d.D2", t[2], t[0], r[2]) // word 2
		v.ins("VTRN2\tV%d.D2, V%d.D2, V%d.D2", t[3], t[1], r[3]) // word 3
		for j := range 4 {
			v.ins("VREV32\tV%d.B16, V%d.B16", r[j], t[j])
		}
	}
	out.WriteString(`
	VLD1	(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1	(R9), [V4.S4, V5.S4, V6.S4, V7.S4]
`)
	p := &pool{free: []int{8, 9, 10, 11, 12, 13, 14, 15}}
	st := [8]int{0, 1, 2, 3, 4, 5, 6, 7}
	loadK := func(r int) { v.ins("VLD1.P\t16(R7), [V%d.S4]", r) }
	W := func(t int) int { return 16 + t%16 }
	for t := range 64 {
		v.comment("round %d", t)
		if t >= 16 {
			sha256Schedule(v, p, W(t), W(t-15), W(t-7), W(t-2))
		}
		sha256Round(v, p, &st, W(t), loadK)
	}
	if st != [8]int{0, 1, 2, 3, 4, 5, 6, 7} {
		panic("state registers not back in place")
	}
	out.WriteString(`
	VLD1	(R0), [V8.S4, V9.S4, V10.S4, V11.S4]
	VLD1	(R9), [V12.S4, V13.S4, V14.S4, V15.S4]
	VADD	V8.S4, V0.S4, V0.S4
	VADD	V9.S4, V1.S4, V1.S4
	VADD	V10.S4, V2.S4, V2.S4
	VADD	V11.S4, V3.S4, V3.S4
	VADD	V12.S4, V4.S4, V4.S4
	VADD	V13.S4, V5.S4, V5.S4
	VADD	V14.S4, V6.S4, V6.S4
	VADD	V15.S4, V7.S4, V7.S4
	VST1	[V0.S4, V1.S4, V2.S4, V3.S4], (R0)
	VST1	[V4.S4, V5.S4, V6.S4, V7.S4], (R9)
	SUBS	$1, R2, R2
	BNE	loop

done:
	RET
`)
	genSHA256CE4(&out)
	return out.Bytes()
}

// ---- 32-bit arm ----

type a32vec struct {
	b   *bytes.Buffer
	n   *int
	w64 bool // 64-bit lanes
}

func (v a32vec) width() int {
	if v.w64 {
		return 64
	}
	return 32
}

func (v a32vec) emit(i Inst) {
	fmt.Fprintf(v.b, "\t%v\n", i)
	if v.n != nil {
		*v.n++
	}
}
func (v a32vec) add(d, n, m int) {
	if v.w64 {
		v.emit(VADDI64(Q(d), Q(n), Q(m)))
	} else {
		v.emit(VADDI32(Q(d), Q(n), Q(m)))
	}
}
func (v a32vec) eor(d, n, m int) { v.emit(VEOR(Q(d), Q(n), Q(m))) }
func (v a32vec) ushr(d, n, s int) {
	if v.w64 {
		v.emit(VSHRU64(Q(d), Q(n), s))
	} else {
		v.emit(VSHRU32(Q(d), Q(n), s))
	}
}
func (v a32vec) sli(d, n, s int) {
	if v.w64 {
		v.emit(VSLI64(Q(d), Q(n), s))
	} else {
		v.emit(VSLI32(Q(d), Q(n), s))
	}
}
func (v a32vec) mov(d, n int)    { v.emit(VORR(Q(d), Q(n), Q(n))) }
func (v a32vec) bsl(d, n, m int) { v.emit(VBSL(Q(d), Q(n), Q(m))) }
func (v a32vec) comment(format string, args ...any) {
	fmt.Fprintf(v.b, "\t// "+format+"\n", args...)
}

// loadTranspose32 emits the message load of one 64-byte chunk of each of
// four lanes (pointers R4..R7, advanced) and its transpose, leaving word j
// of the four lanes in qj, byte-swapped.
func loadTranspose32(v a32vec) {
	for l := range 4 {
		for g := range 4 {
			v.emit(VLD1(8, Q(4*g+l).Lo(), 2, 4+l, true))
		}
	}
	for g := range 4 {
		r := [4]Reg{Q(4 * g), Q(4*g + 1), Q(4*g + 2), Q(4*g + 3)}
		v.comment("transpose words %d..%d", 4*g, 4*g+3)
		v.emit(VTRN32(r[0], r[1]))
		v.emit(VTRN32(r[2], r[3]))
		v.emit(VSWP(r[0].Hi(), r[2].Lo()))
		v.emit(VSWP(r[1].Hi(), r[3].Lo()))
	}
	for j := range 16 {
		v.emit(VREV328(Q(j), Q(j)))
	}
}

func genSHA256ARM() []byte {
	var out bytes.Buffer
	out.WriteString(header)
	out.WriteString(`
// NEON instructions are WORD-encoded (Go's arm assembler has none); each
// carries its GNU mnemonic. Generated by hashes/asm_arm, checked against
// GNU as by its tests.

// SHA-256 round constants (vld1.32 {dN[], dN+1[]} puts one in all lanes).
`)
	kTable(&out, "·sha256KNEON", consts.SHA256K[:], 1)
	out.WriteString(`
// func sha256NEON4(st *[8][4]uint32, p *[4]*byte, chunks int, w *sha256NEONScratch)
//
// Four streams, one per lane. q0..q7 the state a..h (renamed every round,
// back in place after 64), q8 W[t], q9..q15 scratch. The message schedule
// lives in w.w (64 entries, in order; R9 its start): R4 reads W[t-16] and
// W[t-15] (advancing by R8 = 16), R5 W[t-7], R6 W[t-2], R7 reads then
// writes W[t]. The lanes' data pointers are kept in w.p, as integers, and
// loaded into R4..R7 for the message loads. R3 the constants.
// R10 (g) and R11 (the assembler's temporary) are not touched.
TEXT ·sha256NEON4(SB), NOSPLIT, $0-16
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
	MOVW	R4, 1024(R9)
	MOVW	R5, 1028(R9)
	MOVW	R6, 1032(R9)
	MOVW	R7, 1036(R9)
	MOVW	$16, R8

loop:
	MOVW	1024(R9), R4
	MOVW	1028(R9), R5
	MOVW	1032(R9), R6
	MOVW	1036(R9), R7
`)
	var n int
	v := a32vec{b: &out, n: &n}
	loadTranspose32(v)
	out.WriteString(`	MOVW	R4, 1024(R9)
	MOVW	R5, 1028(R9)
	MOVW	R6, 1032(R9)
	MOVW	R7, 1036(R9)
	MOVW	R9, R7
`)
	v.emit(VSTMIAW(7, D(0), 16))
	v.emit(VSTMIAW(7, D(16), 16))
	v.emit(VLDMIA(0, D(0), 16))
	out.WriteString(`	MOVW	$·sha256KNEON(SB), R3
	MOVW	R9, R4
	ADD	$144, R9, R5
	ADD	$224, R9, R6
	MOVW	R9, R7
`)
	p := &pool{free: []int{9, 10, 11, 12, 13, 14, 15}}
	st := [8]int{0, 1, 2, 3, 4, 5, 6, 7}
	loadK := func(r int) { v.emit(VLD1Dup32(Q(r), 3)) }
	const w = 8
	for t := range 64 {
		v.comment("round %d", t)
		if t < 16 {
			v.emit(VLD1(32, Q(w).Lo(), 2, 7, true))
		} else {
			// W[t-16], W[t-15] into q8, q9; W[t-7] into q10, W[t-2] into q11.
			p2 := &pool{free: []int{12, 13, 14, 15}}
			v.emit(VLD1Post(32, Q(w).Lo(), 4, 4, 8))
			v.emit(VLD1(32, Q(10).Lo(), 2, 5, true))
			v.emit(VLD1(32, Q(11).Lo(), 2, 6, true))
			sha256Schedule(v, p2, w, 9, 10, 11)
			v.emit(VST1(32, Q(w).Lo(), 2, 7, true))
		}
		sha256Round(v, p, &st, w, loadK)
	}
	if st != [8]int{0, 1, 2, 3, 4, 5, 6, 7} {
		panic("state registers not back in place")
	}
	out.WriteString("\n")
	v.emit(VLDMIA(0, D(16), 16))
	for j := range 8 {
		v.emit(VADDI32(Q(j), Q(j), Q(8+j)))
	}
	v.emit(VSTMIA(0, D(0), 16))
	out.WriteString(`	SUB.S	$1, R2
	BNE	loop

done:
	RET
`)
	return out.Bytes()
}
