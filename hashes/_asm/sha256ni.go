package main

import (
	"fmt"

	"github.com/veritytree/veritytree/hashes/internal/consts"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// slot is where one 4-word message vector of one stream lives: a register
// when there are enough, else a 16-byte aligned stack slot.
type slot struct {
	r     VecPhysical
	m     Mem
	inReg bool
	hi    bool // r is X16..X31, reachable only with EVEX (AVX-512VL)
}

func (s slot) op() Op {
	if s.inReg {
		return s.r
	}
	return s.m
}

// genSHA256NI generates sha256NIx1..x4: N independent SHA-256 streams
// compressed with the SHA extensions, their quad-rounds interleaved so that
// the latency-bound SHA256RNDS2 chains of different streams overlap.
//
// SHA-NI needs the legacy SSE encoding, so only X0..X15 exist (X0 is the
// implicit operand of SHA256RNDS2): with 4 streams, 8 registers hold the
// states and the message schedules of all but the first stream live in an
// aligned stack area. Only SSE2/SSSE3/SSE4.1 and SHA are used, so it runs on
// every CPU that has the SHA extensions (including Goldmont, without AVX).
func genSHA256NI() {
	k := GLOBL("sha256niK", RODATA|NOPTR)
	for i, v := range consts.SHA256K {
		DATA(4*i, U32(v))
	}
	flip := GLOBL("sha256niFlip", RODATA|NOPTR)
	DATA(0, U64(0x0405060700010203))
	DATA(8, U64(0x0c0d0e0f08090a0b))

	for n := 1; n <= 4; n++ {
		sha256NIStreams(n, k, flip, false)
	}
	for n := 3; n <= 4; n++ {
		sha256NIStreams(n, k, flip, true)
	}
	genCPUID()
}

// genCPUID generates cpuid: golang.org/x/sys/cpu does not report the SHA
// extensions (CPUID.(EAX=7,ECX=0):EBX bit 29), so the package asks itself.
func genCPUID() {
	TEXT("cpuid", NOSPLIT, "func(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)")
	Doc("cpuid executes CPUID with EAX=leaf and ECX=subleaf.")
	Load(Param("leaf"), EAX)
	Load(Param("subleaf"), ECX)
	CPUID()
	Store(EAX, Return("eax"))
	Store(EBX, Return("ebx"))
	Store(ECX, Return("ecx"))
	Store(EDX, Return("edx"))
	RET()
}

// With evex, the message schedules that do not fit in X0..X15 live in
// X16..X31 instead of memory (moved with EVEX VMOVDQA64, AVX-512VL): the
// schedule's chain through store-to-load forwarding otherwise limits 4
// streams.
func sha256NIStreams(n int, k, flip Mem, evex bool) {
	name := fmt.Sprintf("sha256NIx%d", n)
	if evex {
		name += "VL"
	}
	TEXT(name, NOSPLIT, "func(state *[4][8]uint32, ptrs *[4]*byte, chunks int)")
	if !evex {
		Doc(fmt.Sprintf("%s compresses chunks 64-byte chunks of each of %d streams:", name, n),
			"stream s reads ptrs[s][0:64*chunks] and updates state[s] (h0..h7).")
	} else {
		Doc(fmt.Sprintf("%s compresses chunks 64-byte chunks of each of %d streams:", name, n),
			"stream s reads ptrs[s][0:64*chunks] and updates state[s] (h0..h7).",
			"It keeps message words in X16..X31 and needs AVX-512VL.")
	}
	hiRegs := []VecPhysical{X16, X17, X18, X19, X20, X21, X22, X23, X24, X25, X26, X27, X28, X29, X30, X31}
	nextHi := 0

	xs := []VecPhysical{X0, X1, X2, X3, X4, X5, X6, X7, X8, X9, X10, X11, X12, X13, X14, X15}
	next := 1
	take := func() VecPhysical { r := xs[next]; next++; return r }
	wk := X0
	s0 := make([]VecPhysical, n)
	s1 := make([]VecPhysical, n)
	for s := range n {
		s0[s], s1[s] = take(), take()
	}
	tAlign := take()
	// Streams whose schedule stays in registers; the rest need two more temporaries.
	free := 16 - next
	inRegs := min(n, free/4)
	if inRegs < n {
		inRegs = min(n, (free-2)/4)
	}
	var t1, t3 VecPhysical
	if inRegs < n {
		t1, t3 = take(), take()
	}
	msgs := make([][4]slot, n)
	for s := range inRegs {
		for j := range 4 {
			msgs[s][j] = slot{r: take(), inReg: true}
		}
	}
	if evex {
		for s := inRegs; s < n; s++ {
			for j := range 4 {
				msgs[s][j] = slot{r: hiRegs[nextHi], inReg: true, hi: true}
				nextHi++
			}
		}
		inRegs = n
	}
	// Feed-forward copies of the state, in registers if any are left.
	ff := make([][2]slot, n)
	for s := range n {
		for j := range 2 {
			if next < 16 {
				ff[s][j] = slot{r: take(), inReg: true}
			} else if evex && nextHi < 16 {
				ff[s][j] = slot{r: hiRegs[nextHi], inReg: true, hi: true}
				nextHi++
			}
		}
	}
	memSlots := 0
	for s := range n {
		if s >= inRegs {
			memSlots += 4
		}
		for j := range 2 {
			if !ff[s][j].inReg {
				memSlots++
			}
		}
	}

	statePtr := Load(Param("state"), GP64())
	ptrsPtr := Load(Param("ptrs"), GP64())
	cnt := Load(Param("chunks"), GP64())
	p := make([]GPVirtual, n)
	for s := range n {
		p[s] = GP64()
		MOVQ(Mem{Base: ptrsPtr, Disp: 8 * s}, p[s])
	}
	if memSlots > 0 {
		local := AllocLocal(16*memSlots + 16)
		base := GP64()
		LEAQ(local, base)
		ADDQ(Imm(15), base)
		ANDQ(I32(-16), base)
		off := 0
		alloc := func() slot { m := Mem{Base: base, Disp: off}; off += 16; return slot{m: m} }
		for s := inRegs; s < n; s++ {
			for j := range 4 {
				msgs[s][j] = alloc()
			}
		}
		for s := range n {
			for j := range 2 {
				if !ff[s][j].inReg {
					ff[s][j] = alloc()
				}
			}
		}
	}

	Comment("Load the states as ABEF and CDGH.")
	for s := range n {
		st := Mem{Base: statePtr, Disp: 32 * s}
		MOVOU(st, s0[s])               // DCBA
		MOVOU(st.Offset(16), s1[s])    // HGFE
		PSHUFD(U8(0xb1), s0[s], s0[s]) // CDAB
		PSHUFD(U8(0x1b), s1[s], s1[s]) // EFGH
		MOVO(s0[s], tAlign)
		PALIGNR(U8(8), s1[s], s0[s])     // ABEF
		PBLENDW(U8(0xf0), tAlign, s1[s]) // CDGH
	}
	TESTQ(cnt, cnt)
	JZ(LabelRef("done"))

	loopLabel("loop")
	for s := range n {
		for j, r := range []VecPhysical{s0[s], s1[s]} {
			if ff[s][j].hi {
				VMOVDQA64(r, ff[s][j].r)
			} else {
				MOVO(r, ff[s][j].op())
			}
		}
	}
	// load and store move a slot that is not a low register through one.
	load := func(sl slot, r VecPhysical) {
		if sl.hi {
			VMOVDQA64(sl.r, r)
		} else {
			MOVO(sl.m, r)
		}
	}
	store := func(r VecPhysical, sl slot) {
		if sl.hi {
			VMOVDQA64(r, sl.r)
		} else {
			MOVO(r, sl.m)
		}
	}
	low := func(sl slot) bool { return sl.inReg && !sl.hi }
	for i := range 16 {
		Commentf("Quad-round %d.", i)
		for s := range n {
			m := &msgs[s]
			mi, mPrev, mNext := m[i&3], m[(i-1)&3], m[(i+1)&3]
			if i < 4 {
				dst := tAlign
				if low(mi) {
					dst = mi.r
				}
				MOVOU(Mem{Base: p[s], Disp: 16 * i}, dst)
				PSHUFB(flip, dst)
				if !low(mi) {
					store(dst, mi)
				}
			}
			// cur holds m[i] in a low register.
			cur := mi.r
			if !low(mi) {
				cur = t1
				if i < 4 {
					MOVO(tAlign, cur)
				} else {
					load(mi, cur)
				}
			}
			MOVO(cur, wk)
			PADDD(k.Offset(16*i), wk)
			SHA256RNDS2(wk, s0[s], s1[s])
			if i >= 3 && i <= 14 {
				if mPrev.hi {
					VPALIGNR(U8(4), mPrev.r, cur, tAlign)
				} else {
					MOVO(cur, tAlign)
					PALIGNR(U8(4), mPrev.op(), tAlign)
				}
				if low(mNext) {
					PADDD(tAlign, mNext.r)
					SHA256MSG2(cur, mNext.r)
				} else {
					load(mNext, t3)
					PADDD(tAlign, t3)
					SHA256MSG2(cur, t3)
					store(t3, mNext)
				}
			}
			PSHUFD(U8(0x0e), wk, wk)
			SHA256RNDS2(wk, s1[s], s0[s])
			if i >= 1 && i <= 12 {
				if low(mPrev) {
					SHA256MSG1(cur, mPrev.r)
				} else {
					load(mPrev, t3)
					SHA256MSG1(cur, t3)
					store(t3, mPrev)
				}
			}
		}
	}
	for s := range n {
		for j, r := range []VecPhysical{s0[s], s1[s]} {
			if ff[s][j].hi {
				VPADDD(ff[s][j].r, r, r)
			} else {
				PADDD(ff[s][j].op(), r)
			}
		}
		ADDQ(Imm(64), p[s])
	}
	DECQ(cnt)
	JNZ(LabelRef("loop"))

	Label("done")
	Comment("Store the states as h0..h7.")
	for s := range n {
		st := Mem{Base: statePtr, Disp: 32 * s}
		PSHUFD(U8(0x1b), s0[s], s0[s]) // FEBA
		PSHUFD(U8(0xb1), s1[s], s1[s]) // DCHG
		MOVO(s0[s], tAlign)
		PBLENDW(U8(0xf0), s1[s], s0[s]) // DCBA
		PALIGNR(U8(8), tAlign, s1[s])   // HGFE
		MOVOU(s0[s], st)
		MOVOU(s1[s], st.Offset(16))
	}
	if evex {
		VZEROUPPER()
	}
	RET()
}
