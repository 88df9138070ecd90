package asmarm

import (
	"bytes"
	"fmt"

	"github.com/veritytree/veritytree/hashes/internal/consts"
)

// blake2b2x generates blake2bNEON2 for arm64: BLAKE2b on two blocks at once,
// one per 64-bit lane ("neon2x"). Each of the 16 working words is one
// register holding it for both blocks, so G is the scalar G two lanes wide:
// no diagonalization and no message permutes, 15 instructions per G against
// the one-block code's 19. The registers: v0..v15 16, the rotate tables 2,
// one scratch, which leaves 13 for the 16 message words: the three used
// least by one G step together are kept in memory (R10, R12, R13) and
// loaded into the scratch when added.

type blake2b2x struct {
	b     bytes.Buffer
	v     [16]int // register of working word i
	free  int     // the scratch register
	msg   [16]int // register of message word i, or -1 (in memory)
	spill [3]int  // the words kept in memory
	n     int
}

func (g *blake2b2x) ins(format string, args ...any) {
	fmt.Fprintf(&g.b, "\t"+format+"\n", args...)
	g.n++
}

// addMsg emits v[a] += m[x].
func (g *blake2b2x) addMsg(a, x int) {
	r := g.msg[x]
	if r < 0 {
		for i, s := range g.spill {
			if s == x {
				g.ins("VLD1\t(%s), [V%d.D2]", []string{"R10", "R12", "R13"}[i], g.free)
			}
		}
		r = g.free
	}
	g.ins("VADD\tV%d.D2, V%d.D2, V%d.D2", r, g.v[a], g.v[a])
}

// gs emits G on the four (a, b, c, d, x, y) quadruples at once, step by
// step.
func (g *blake2b2x) gs(q [4][6]int) {
	each := func(f func(a, b, c, d int)) {
		for _, e := range q {
			f(e[0], e[1], e[2], e[3])
		}
	}
	V := func(i int) int { return g.v[i] }
	for _, e := range q {
		g.addMsg(e[0], e[4])
	}
	each(func(a, b, c, d int) { g.ins("VADD\tV%d.D2, V%d.D2, V%d.D2", V(b), V(a), V(a)) })
	each(func(a, b, c, d int) { g.ins("VEOR\tV%d.B16, V%d.B16, V%d.B16", V(a), V(d), V(d)) })
	each(func(a, b, c, d int) { g.ins("VREV64\tV%d.S4, V%d.S4", V(d), V(d)) })
	each(func(a, b, c, d int) { g.ins("VADD\tV%d.D2, V%d.D2, V%d.D2", V(d), V(c), V(c)) })
	each(func(a, b, c, d int) { g.ins("VEOR\tV%d.B16, V%d.B16, V%d.B16", V(c), V(b), V(b)) })
	each(func(a, b, c, d int) { g.ins("VTBL\tV30.B16, [V%d.B16], V%d.B16", V(b), V(b)) })
	for _, e := range q {
		g.addMsg(e[0], e[5])
	}
	each(func(a, b, c, d int) { g.ins("VADD\tV%d.D2, V%d.D2, V%d.D2", V(b), V(a), V(a)) })
	each(func(a, b, c, d int) { g.ins("VEOR\tV%d.B16, V%d.B16, V%d.B16", V(a), V(d), V(d)) })
	each(func(a, b, c, d int) { g.ins("VTBL\tV31.B16, [V%d.B16], V%d.B16", V(d), V(d)) })
	each(func(a, b, c, d int) { g.ins("VADD\tV%d.D2, V%d.D2, V%d.D2", V(d), V(c), V(c)) })
	each(func(a, b, c, d int) { g.ins("VEOR\tV%d.B16, V%d.B16, V%d.B16", V(c), V(b), V(b)) })
	// b >>>= 63 through the scratch, which takes b's place.
	each(func(a, b, c, d int) {
		t := g.free
		g.ins("VSHL\t$1, V%d.D2, V%d.D2", V(b), t)
		g.ins("VSRI\t$63, V%d.D2, V%d.D2", V(b), t)
		g.free, g.v[b] = g.v[b], t
	})
}

func newBLAKE2b2x(spill [3]int) *blake2b2x {
	g := &blake2b2x{free: 29, spill: spill}
	for i := range g.v {
		g.v[i] = i
	}
	r := 16
	for i := range g.msg {
		g.msg[i] = -1
		if i != spill[0] && i != spill[1] && i != spill[2] {
			g.msg[i] = r
			r++
		}
	}
	for round := range 12 {
		s := blake2bSigma(round)
		g.b.WriteString(fmt.Sprintf("\t// round %d\n", round))
		g.gs([4][6]int{{0, 4, 8, 12, s[0], s[1]}, {1, 5, 9, 13, s[2], s[3]}, {2, 6, 10, 14, s[4], s[5]}, {3, 7, 11, 15, s[6], s[7]}})
		g.gs([4][6]int{{0, 5, 10, 15, s[8], s[9]}, {1, 6, 11, 12, s[10], s[11]}, {2, 7, 8, 13, s[12], s[13]}, {3, 4, 9, 14, s[14], s[15]}})
	}
	return g
}

func genBLAKE2b2x(out *bytes.Buffer) {
	// Every word is added once per round: any three cost the same loads;
	// keep the last three in memory.
	g := newBLAKE2b2x([3]int{13, 14, 15})
	out.WriteString("\n// BLAKE2b IV, each word in both lanes.\n")
	for i, v := range consts.BLAKE2bIV {
		fmt.Fprintf(out, "DATA\t·blake2bIV2NEON+%d(SB)/8, $0x%016x\n", 16*i, v)
		fmt.Fprintf(out, "DATA\t·blake2bIV2NEON+%d(SB)/8, $0x%016x\n", 16*i+8, v)
	}
	out.WriteString("GLOBL\t·blake2bIV2NEON(SB), RODATA|NOPTR, $128\n")
	fmt.Fprintf(out, `
// func blake2bNEON2(st *[8][2]uint64, p *[2]*byte, chunks int, c0 uint64, flag uint64, s *[6]uint64)
//
// BLAKE2b on two streams, one per 64-bit lane: st[i] is h[i] of both.
// Chunk k is compressed with the counter c0+128*(k+1) (high word zero) and
// f0 = flag. R3, R4 the lanes' data, R7 the constants, R8 the counter; s
// holds message words 13, 14 and 15 of both lanes (R10, R12, R13). R11,
// R14 the IV, each word in both lanes.
// V0..V15 the working words (renamed as the rounds go), V16..V28 the other
// message words, V29 scratch, V30 and V31 the rotate-by-24 and -16 tables.
TEXT ·blake2bNEON2(SB), NOSPLIT, $0-48
	MOVD	st+0(FP), R0
	MOVD	p+8(FP), R1
	MOVD	chunks+16(FP), R2
	MOVD	c0+24(FP), R8
	MOVD	flag+32(FP), R6
	MOVD	s+40(FP), R10
	CBZ	R2, done2
	LDP	(R1), (R3, R4)
	MOVD	$·blake2bConstNEON(SB), R7
	ADD	$64, R7, R9
	VLD1	(R9), [V30.B16, V31.B16]
	ADD	$16, R10, R12
	ADD	$32, R10, R13
	ADD	$64, R0, R9
	MOVD	$·blake2bIV2NEON(SB), R11
	ADD	$64, R11, R14

loop2:
	ADD	$128, R8, R8
	// Message: lane 0 in V0..V7, lane 1 in V8..V15, then word i of both
	// lanes into its register (or its slot in s).
	VLD1.P	64(R3), [V0.D2, V1.D2, V2.D2, V3.D2]
	VLD1.P	64(R3), [V4.D2, V5.D2, V6.D2, V7.D2]
	VLD1.P	64(R4), [V8.D2, V9.D2, V10.D2, V11.D2]
	VLD1.P	64(R4), [V12.D2, V13.D2, V14.D2, V15.D2]
`)
	for i := range 16 {
		dst := g.msg[i]
		if dst < 0 {
			dst = 29 // staged in the scratch, then stored
		}
		op := "VTRN1"
		if i%2 == 1 {
			op = "VTRN2"
		}
		fmt.Fprintf(out, "\t%s\tV%d.D2, V%d.D2, V%d.D2\n", op, 8+i/2, i/2, dst)
		if g.msg[i] < 0 {
			for k, s := range g.spill {
				if s == i {
					fmt.Fprintf(out, "\tVST1\t[V29.D2], (%s)\n", []string{"R10", "R12", "R13"}[k])
				}
			}
		}
	}
	out.WriteString(`	// v0..v7 = h, v8..v15 = IV, v12 ^= counter, v14 ^= flag
	VLD1	(R0), [V0.D2, V1.D2, V2.D2, V3.D2]
	VLD1	(R9), [V4.D2, V5.D2, V6.D2, V7.D2]
	VLD1	(R11), [V8.D2, V9.D2, V10.D2, V11.D2]
	VLD1	(R14), [V12.D2, V13.D2, V14.D2, V15.D2]
	VDUP	R8, V29.D2
	VEOR	V29.B16, V12.B16, V12.B16
	VDUP	R6, V29.D2
	VEOR	V29.B16, V14.B16, V14.B16
`)
	out.Write(g.b.Bytes())
	fmt.Fprintf(out, `
	// h ^= v[0:8] ^ v[8:16], through the free message registers.
	VLD1	(R0), [V16.D2, V17.D2, V18.D2, V19.D2]
	VLD1	(R9), [V20.D2, V21.D2, V22.D2, V23.D2]
`)
	for i := range 8 {
		fmt.Fprintf(out, "\tVEOR\tV%d.B16, V%d.B16, V%d.B16\n", g.v[i], 16+i, 16+i)
	}
	for i := range 8 {
		fmt.Fprintf(out, "\tVEOR\tV%d.B16, V%d.B16, V%d.B16\n", g.v[8+i], 16+i, 16+i)
	}
	out.WriteString(`	VST1	[V16.D2, V17.D2, V18.D2, V19.D2], (R0)
	VST1	[V20.D2, V21.D2, V22.D2, V23.D2], (R9)
	SUBS	$1, R2, R2
	BNE	loop2

done2:
	RET
`)
}
