package asmarm

import "fmt"

// An encoder for the few AArch32 Advanced SIMD (NEON) and VFP instructions
// the generated code uses. Go's arm assembler knows none of them, so each is
// emitted as WORD $0x... with its GNU mnemonic in a comment; as_test.go
// checks every encoding against GNU as. Encodings: ARM Architecture
// Reference Manual ARMv7-A/R, chapter A8 (A1 encodings, unconditional
// 1111001x space for Advanced SIMD, cond=AL for VFP loads and moves).

// Reg is a NEON register: d0..d31 or q0..q15.
type Reg struct {
	N int  // register number
	Q bool // quadword
}

// D returns the doubleword register dn; Q the quadword register qn.
func D(n int) Reg { return Reg{N: n} }
func Q(n int) Reg { return Reg{N: n, Q: true} }

func (r Reg) String() string {
	if r.Q {
		return fmt.Sprintf("q%d", r.N)
	}
	return fmt.Sprintf("d%d", r.N)
}

// Lo and Hi are the doublewords of a quadword register.
func (r Reg) Lo() Reg { r.mustQ(); return D(2 * r.N) }
func (r Reg) Hi() Reg { r.mustQ(); return D(2*r.N + 1) }

func (r Reg) mustQ() {
	if !r.Q {
		panic(fmt.Sprintf("%v is not a quadword register", r))
	}
}

// dnum is the doubleword number of the register's first doubleword, which
// is what the instruction fields hold (Vd:D etc. with Q registers even).
func (r Reg) dnum() uint32 {
	if r.Q {
		if r.N < 0 || r.N > 15 {
			panic(fmt.Sprintf("bad register %v", r))
		}
		return uint32(2 * r.N)
	}
	if r.N < 0 || r.N > 31 {
		panic(fmt.Sprintf("bad register %v", r))
	}
	return uint32(r.N)
}

// Inst is one encoded instruction and its GNU assembler spelling.
type Inst struct {
	Word uint32
	Asm  string
}

func (i Inst) String() string { return fmt.Sprintf("WORD\t$0x%08x\t// %s", i.Word, i.Asm) }

func sameShape(regs ...Reg) {
	for _, r := range regs[1:] {
		if r.Q != regs[0].Q {
			panic(fmt.Sprintf("mixed register sizes: %v", regs))
		}
	}
}

// fields places d, n, m in Vd:D (bits 15-12, 22), Vn:N (19-16, 7), Vm:M
// (3-0, 5) and sets Q (bit 6) for quadword operands.
func fields(d, n, m Reg) uint32 {
	dd, nn, mm := d.dnum(), n.dnum(), m.dnum()
	w := (dd>>4&1)<<22 | (nn&15)<<16 | (dd&15)<<12 | (nn>>4&1)<<7 | (mm>>4&1)<<5 | mm&15
	if d.Q {
		w |= 1 << 6
	}
	return w
}

func three(base uint32, mnem string, d, n, m Reg) Inst {
	sameShape(d, n, m)
	return Inst{base | fields(d, n, m), fmt.Sprintf("%s %v, %v, %v", mnem, d, n, m)}
}

// VADDI64 is vadd.i64 d, n, m.
func VADDI64(d, n, m Reg) Inst { return three(0xf2300800, "vadd.i64", d, n, m) }

// VEOR is veor d, n, m.
func VEOR(d, n, m Reg) Inst { return three(0xf3000110, "veor", d, n, m) }

// VORR is vorr d, n, m (vmov d, n when n == m).
func VORR(d, n, m Reg) Inst { return three(0xf2200110, "vorr", d, n, m) }

// VEXT8 is vext.8 d, n, m, #imm: bytes imm.. of n, then the low bytes of m.
func VEXT8(d, n, m Reg, imm int) Inst {
	sameShape(d, n, m)
	if imm < 0 || (!d.Q && imm > 7) || imm > 15 {
		panic("vext: bad immediate")
	}
	return Inst{0xf2b00000 | fields(d, n, m) | uint32(imm)<<8, fmt.Sprintf("vext.8 %v, %v, %v, #%d", d, n, m, imm)}
}

// VREV6432 is vrev64.32 d, m: swaps the 32-bit halves of each 64-bit lane.
func VREV6432(d, m Reg) Inst {
	sameShape(d, m)
	return Inst{0xf3b80000 | fields(d, D(0), m), fmt.Sprintf("vrev64.32 %v, %v", d, m)}
}

// shift encodes the 64-bit shift-by-immediate forms (L=1, bit 7).
func shift(base uint32, mnem string, d, m Reg, imm6 int, imm int) Inst {
	sameShape(d, m)
	return Inst{base | fields(d, D(0), m) | 1<<7 | uint32(imm6)<<16, fmt.Sprintf("%s %v, %v, #%d", mnem, d, m, imm)}
}

// VSHRU64 is vshr.u64 d, m, #imm (1..64).
func VSHRU64(d, m Reg, imm int) Inst {
	return shift(0xf3800010, "vshr.u64", d, m, (64-imm)&63, imm)
}

// VSRI64 is vsri.64 d, m, #imm (1..64).
func VSRI64(d, m Reg, imm int) Inst { return shift(0xf3800410, "vsri.64", d, m, (64-imm)&63, imm) }

// VSLI64 is vsli.64 d, m, #imm (0..63).
func VSLI64(d, m Reg, imm int) Inst { return shift(0xf3800510, "vsli.64", d, m, imm, imm) }

// VSHLI64 is vshl.i64 d, m, #imm (0..63).
func VSHLI64(d, m Reg, imm int) Inst { return shift(0xf2800510, "vshl.i64", d, m, imm, imm) }

// dlist spells a list of n consecutive doublewords from first.
func dlist(first Reg, n int) string {
	if first.Q {
		panic("register lists are of doublewords")
	}
	if n == 1 {
		return fmt.Sprintf("{%v}", first)
	}
	return fmt.Sprintf("{%v-d%d}", first, first.N+n-1)
}

// vldst encodes vld1/vst1 (multiple single elements) of n = 1..4
// consecutive doublewords at [rn], with writeback ([rn]!) if wb.
func vldst(base uint32, mnem string, size int, first Reg, n int, rn int, wb bool) Inst {
	types := map[int]uint32{1: 7, 2: 10, 3: 6, 4: 2}
	sizes := map[int]uint32{8: 0, 16: 1, 32: 2, 64: 3}
	typ, ok1 := types[n]
	sz, ok2 := sizes[size]
	if !ok1 || !ok2 || first.Q || first.N+n > 32 || rn < 0 || rn > 14 {
		panic("vld1/vst1: bad operands")
	}
	rm, suffix := uint32(15), ""
	if wb {
		rm, suffix = 13, "!"
	}
	d := first.dnum()
	w := base | (d>>4&1)<<22 | uint32(rn)<<16 | (d&15)<<12 | typ<<8 | sz<<6 | rm
	return Inst{w, fmt.Sprintf("%s.%d %s, [r%d]%s", mnem, size, dlist(first, n), rn, suffix)}
}

// VLD1 is vld1.<size> {first-...}, [rn] (or [rn]! with wb).
func VLD1(size int, first Reg, n int, rn int, wb bool) Inst {
	return vldst(0xf4200000, "vld1", size, first, n, rn, wb)
}

// VST1 is vst1.<size> {first-...}, [rn] (or [rn]! with wb).
func VST1(size int, first Reg, n int, rn int, wb bool) Inst {
	return vldst(0xf4000000, "vst1", size, first, n, rn, wb)
}

func vldstm(base uint32, mnem string, rn int, first Reg, n int) Inst {
	if first.Q || n < 1 || n > 16 || first.N+n > 32 || rn < 0 || rn > 14 {
		panic("vldm/vstm: bad operands")
	}
	d := first.dnum()
	return Inst{base | (d>>4&1)<<22 | uint32(rn)<<16 | (d&15)<<12 | uint32(2*n), fmt.Sprintf("%s r%d, %s", mnem, rn, dlist(first, n))}
}

// VLDMIA is vldmia rn, {first-...}: n doublewords from a word-aligned address.
func VLDMIA(rn int, first Reg, n int) Inst { return vldstm(0xec900b00, "vldmia", rn, first, n) }

// VSTMIA is vstmia rn, {first-...}.
func VSTMIA(rn int, first Reg, n int) Inst { return vldstm(0xec800b00, "vstmia", rn, first, n) }

// VMOVDRR is vmov dm, rt, rt2: dm = rt2:rt.
func VMOVDRR(dm Reg, rt, rt2 int) Inst {
	if dm.Q || rt < 0 || rt > 14 || rt2 < 0 || rt2 > 14 {
		panic("vmov: bad operands")
	}
	m := dm.dnum()
	return Inst{0xec400b10 | uint32(rt2)<<16 | uint32(rt)<<12 | (m>>4&1)<<5 | m&15, fmt.Sprintf("vmov %v, r%d, r%d", dm, rt, rt2)}
}

// VADDI32 is vadd.i32 d, n, m.
func VADDI32(d, n, m Reg) Inst { return three(0xf2200800, "vadd.i32", d, n, m) }

// VAND is vand d, n, m.
func VAND(d, n, m Reg) Inst { return three(0xf2000110, "vand", d, n, m) }

// VBSL is vbsl d, n, m: d = (d & n) | (^d & m).
func VBSL(d, n, m Reg) Inst { return three(0xf3100110, "vbsl", d, n, m) }

// shift32 encodes the 32-bit shift-by-immediate forms (L=0, imm6 = 1xxxxx).
func shift32(base uint32, mnem string, d, m Reg, imm6 int, imm int) Inst {
	sameShape(d, m)
	return Inst{base | fields(d, D(0), m) | uint32(imm6)<<16, fmt.Sprintf("%s %v, %v, #%d", mnem, d, m, imm)}
}

// VSHRU32 is vshr.u32 d, m, #imm (1..32).
func VSHRU32(d, m Reg, imm int) Inst { return shift32(0xf3800010, "vshr.u32", d, m, 64-imm, imm) }

// VSLI32 is vsli.32 d, m, #imm (0..31).
func VSLI32(d, m Reg, imm int) Inst { return shift32(0xf3800510, "vsli.32", d, m, 32+imm, imm) }

// VSHLI32 is vshl.i32 d, m, #imm (0..31).
func VSHLI32(d, m Reg, imm int) Inst { return shift32(0xf2800510, "vshl.i32", d, m, 32+imm, imm) }

// VSRI32 is vsri.32 d, m, #imm (1..32).
func VSRI32(d, m Reg, imm int) Inst { return shift32(0xf3800410, "vsri.32", d, m, 64-imm, imm) }

// VTRN32 is vtrn.32 d, m.
func VTRN32(d, m Reg) Inst {
	sameShape(d, m)
	return Inst{0xf3ba0080 | fields(d, D(0), m), fmt.Sprintf("vtrn.32 %v, %v", d, m)}
}

// VSWP is vswp d, m.
func VSWP(d, m Reg) Inst {
	sameShape(d, m)
	return Inst{0xf3b20000 | fields(d, D(0), m), fmt.Sprintf("vswp %v, %v", d, m)}
}

// VREV328 is vrev32.8 d, m: byte-swaps each 32-bit lane.
func VREV328(d, m Reg) Inst {
	sameShape(d, m)
	return Inst{0xf3b00080 | fields(d, D(0), m), fmt.Sprintf("vrev32.8 %v, %v", d, m)}
}

// VLD1Dup32 is vld1.32 {q.lo[], q.hi[]}, [rn]!: one word into all lanes of
// a quadword register, post-incrementing rn by 4.
func VLD1Dup32(q Reg, rn int) Inst {
	q.mustQ()
	d := q.dnum()
	w := 0xf4a00c00 | (d>>4&1)<<22 | uint32(rn)<<16 | (d&15)<<12 | 2<<6 | 1<<5 | 13
	return Inst{w, fmt.Sprintf("vld1.32 {%v[], %v[]}, [r%d]!", q.Lo(), q.Hi(), rn)}
}

// VLD1Post is vld1.<size> {first-...}, [rn], rm: post-increment by rm.
func VLD1Post(size int, first Reg, n int, rn, rm int) Inst {
	i := vldst(0xf4200000, "vld1", size, first, n, rn, false)
	if rm < 0 || rm > 12 {
		panic("vld1: bad post-increment register")
	}
	return Inst{i.Word&^15 | uint32(rm), fmt.Sprintf("%s, r%d", i.Asm, rm)}
}

// VSTMIAW is vstmia rn!, {first-...}: store and advance rn.
func VSTMIAW(rn int, first Reg, n int) Inst {
	i := vldstm(0xeca00b00, "vstmia", rn, first, n)
	return Inst{i.Word, fmt.Sprintf("vstmia r%d!, %s", rn, dlist(first, n))}
}

// VREV648 is vrev64.8 d, m: byte-swaps each 64-bit lane.
func VREV648(d, m Reg) Inst {
	sameShape(d, m)
	return Inst{0xf3b00000 | fields(d, D(0), m), fmt.Sprintf("vrev64.8 %v, %v", d, m)}
}

// The ARMv8 Cryptography Extension in AArch32 state (ARM ARM for ARMv8-A,
// F6: the SHA instructions are in the Advanced SIMD space, all quadword).

func crypto3(base uint32, mnem string, d, n, m Reg) Inst {
	d.mustQ()
	n.mustQ()
	m.mustQ()
	return Inst{base | fields(d, n, m), fmt.Sprintf("%s.32 %v, %v, %v", mnem, d, n, m)}
}

func crypto2(base uint32, mnem string, d, m Reg) Inst {
	d.mustQ()
	m.mustQ()
	// Bit 6 is part of the opcode here (clear for sha1su1), not Q.
	return Inst{base | fields(d, D(0), m)&^(1<<6), fmt.Sprintf("%s.32 %v, %v", mnem, d, m)}
}

// SHA1C is sha1c.32 d, n, m: four rounds with Choose; d abcd, n e (its
// low word), m W+K.
func SHA1C(d, n, m Reg) Inst { return crypto3(0xf2000c40, "sha1c", d, n, m) }

// SHA1P is sha1p.32 d, n, m: four rounds with Parity.
func SHA1P(d, n, m Reg) Inst { return crypto3(0xf2100c40, "sha1p", d, n, m) }

// SHA1M is sha1m.32 d, n, m: four rounds with Majority.
func SHA1M(d, n, m Reg) Inst { return crypto3(0xf2200c40, "sha1m", d, n, m) }

// SHA1SU0 is sha1su0.32 d, n, m: the first half of the schedule update.
func SHA1SU0(d, n, m Reg) Inst { return crypto3(0xf2300c40, "sha1su0", d, n, m) }

// SHA1H is sha1h.32 d, m: the low word of m rotated left by 30 (the next
// e), the other words zero.
func SHA1H(d, m Reg) Inst { return crypto2(0xf3b902c0, "sha1h", d, m) }

// SHA1SU1 is sha1su1.32 d, m: the second half of the schedule update.
func SHA1SU1(d, m Reg) Inst { return crypto2(0xf3ba0380, "sha1su1", d, m) }

// SHA256H is sha256h.32 d, n, m: four rounds' abcd; d abcd, n efgh, m W+K.
func SHA256H(d, n, m Reg) Inst { return crypto3(0xf3000c40, "sha256h", d, n, m) }

// SHA256H2 is sha256h2.32 d, n, m: four rounds' efgh; d efgh, n the old
// abcd, m W+K.
func SHA256H2(d, n, m Reg) Inst { return crypto3(0xf3100c40, "sha256h2", d, n, m) }

// SHA256SU0 is sha256su0.32 d, m: the first half of the schedule update.
func SHA256SU0(d, m Reg) Inst { return crypto2(0xf3ba03c0, "sha256su0", d, m) }

// SHA256SU1 is sha256su1.32 d, n, m: the second half of the schedule update.
func SHA256SU1(d, n, m Reg) Inst { return crypto3(0xf3200c40, "sha256su1", d, n, m) }
