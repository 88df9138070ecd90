package asmarm

import (
	"bytes"
	"fmt"

	"github.com/veritytree/veritytree/hashes/internal/consts"
)

// genSHA256CE4 writes sha256CE4: SHA-256 with the ARMv8 SHA-256
// instructions on the four streams of the multi-buffer layer, two at a time
// with their instructions interleaved (SHA256H/H2 have a long latency: one
// stream alone leaves the unit idle).
//
// Per pair: V0, V1 abcd and V2, V3 efgh of the two streams, V4, V5 the
// abcd copies SHA256H2 needs, V6, V7 W+K, V8..V11 and V12..V15 the message
// schedules, V16..V31 K. The scratch s (R8) holds the pair's state at the
// chunk start (0..63), the parked state of lanes 2, 3 (64..127) and the
// result of lanes 0, 1 (128..191).
func genSHA256CE4(out *bytes.Buffer) {
	ins := func(format string, args ...any) { fmt.Fprintf(out, "\t"+format+"\n", args...) }
	out.WriteString(`
// SHA-256 round constants, in order.
`)
	kTable(out, "·sha256KCE", consts.SHA256K[:], 1)
	out.WriteString(`
// func sha256CE4(st *[8][4]uint32, p *[4]*byte, chunks int, s *[48]uint32)
TEXT ·sha256CE4(SB), NOSPLIT, $0-32
	MOVD	st+0(FP), R0
	MOVD	p+8(FP), R1
	MOVD	chunks+16(FP), R2
	MOVD	s+24(FP), R8
	CBZ	R2, done
	MOVD	$·sha256KCE(SB), R7
	VLD1.P	64(R7), [V16.S4, V17.S4, V18.S4, V19.S4]
	VLD1.P	64(R7), [V20.S4, V21.S4, V22.S4, V23.S4]
	VLD1.P	64(R7), [V24.S4, V25.S4, V26.S4, V27.S4]
	VLD1	(R7), [V28.S4, V29.S4, V30.S4, V31.S4]
	ADD	$64, R0, R9
	ADD	$64, R8, R10
	ADD	$128, R8, R11
	// abcd and efgh of each lane: lanes 2, 3 parked, lanes 0, 1 in V0..V3.
	VLD4	(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD4	(R9), [V4.S4, V5.S4, V6.S4, V7.S4]
	VST1	[V2.S4, V3.S4], (R10)
	ADD	$96, R8, R12
	VST1	[V6.S4, V7.S4], (R12)
	VMOV	V4.B16, V2.B16
	VMOV	V5.B16, V3.B16
	LDP	(R1), (R3, R4)
	MOVD	R2, R13
	MOVD	$2, R14

pair:
	MOVD	R13, R2

loop:
	VLD1.P	64(R3), [V8.B16, V9.B16, V10.B16, V11.B16]
	VLD1.P	64(R4), [V12.B16, V13.B16, V14.B16, V15.B16]
	VST1	[V0.S4, V1.S4, V2.S4, V3.S4], (R8)
`)
	for i := range 8 {
		ins("VREV32\tV%d.B16, V%d.B16", 8+i, 8+i)
	}
	M := func(s, q int) int { return 8 + 4*s + q%4 }
	for q := range 16 {
		fmt.Fprintf(out, "\t// rounds %d..%d\n", 4*q, 4*q+3)
		for s := range 2 {
			ins("VADD\tV%d.S4, V%d.S4, V%d.S4", 16+q, M(s, q), 6+s)
		}
		if q < 12 {
			for s := range 2 {
				ins("SHA256SU0\tV%d.S4, V%d.S4", M(s, q+1), M(s, q))
			}
		}
		for s := range 2 {
			ins("VMOV\tV%d.B16, V%d.B16", s, 4+s)
		}
		for s := range 2 {
			ins("SHA256H\tV%d.S4, V%d, V%d", 6+s, 2+s, s)
		}
		for s := range 2 {
			ins("SHA256H2\tV%d.S4, V%d, V%d", 6+s, 4+s, 2+s)
		}
		if q >= 1 && q <= 12 {
			for s := range 2 {
				ins("SHA256SU1\tV%d.S4, V%d.S4, V%d.S4", M(s, q+2), M(s, q+1), M(s, q-1))
			}
		}
	}
	out.WriteString(`
	VLD1	(R8), [V8.S4, V9.S4, V10.S4, V11.S4]
	VADD	V8.S4, V0.S4, V0.S4
	VADD	V9.S4, V1.S4, V1.S4
	VADD	V10.S4, V2.S4, V2.S4
	VADD	V11.S4, V3.S4, V3.S4
	SUBS	$1, R2, R2
	BNE	loop

	SUBS	$1, R14, R14
	BEQ	last
	// Lanes 0, 1 done: keep them, take lanes 2, 3.
	VST1	[V0.S4, V1.S4, V2.S4, V3.S4], (R11)
	VLD1	(R10), [V0.S4, V1.S4, V2.S4, V3.S4]
	LDP	16(R1), (R3, R4)
	B	pair

last:
	// V0..V3: abcd2, abcd3, efgh2, efgh3; lanes 0, 1 at R11.
	VMOV	V2.B16, V6.B16
	VMOV	V3.B16, V7.B16
	VMOV	V0.B16, V2.B16
	VMOV	V1.B16, V3.B16
	VLD1	(R11), [V0.S4, V1.S4]
	ADD	$32, R11, R12
	VLD1	(R12), [V4.S4, V5.S4]
	VST4	[V0.S4, V1.S4, V2.S4, V3.S4], (R0)
	VST4	[V4.S4, V5.S4, V6.S4, V7.S4], (R9)

done:
	RET
`)
}
