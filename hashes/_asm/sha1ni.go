package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genSHA1NI generates sha1NIx1..x4: N independent SHA-1 streams compressed
// with the SHA extensions, their quad-rounds interleaved so that the
// latency-bound SHA1RNDS4 chains of different streams overlap.
//
// Like SHA-256's, the SHA instructions only have the legacy SSE encoding, so
// X0..X15 are all there is. Each stream keeps three registers: ABCD, E (the
// ABCD of four rounds back, which SHA1NEXTE turns into E) and W, the message
// quad of the current quad-round. The four quads of each stream's schedule
// window also go to an aligned stack area, from where they are read as
// memory operands: quad k = msg2(msg1(W[k-4], W[k-3]) ^ W[k-2], W[k-1]) is
// computed in one go at quad-round k-1, so the only link from one quad to
// the next (W[k-1], through SHA1MSG2) stays in a register and the stack
// copies are only read a quad-round or more after they were written, off
// the critical path (store-to-load forwarding would lengthen it). The
// feed-forward copies of the state live on the stack too (touched once a
// chunk). Only SSSE3/SSE4.1 and SHA are used.
func genSHA1NI() {
	// PSHUFB with this mask reverses the 16 bytes: the big-endian words
	// W0..W3 land as W0 in the top dword, the order SHA1RNDS4 wants.
	flip := GLOBL("sha1niFlip", RODATA|NOPTR)
	DATA(0, U64(0x08090a0b0c0d0e0f))
	DATA(8, U64(0x0001020304050607))
	for n := 1; n <= 4; n++ {
		sha1NIStreams(n, flip)
	}
}

// xpool hands out free vector registers: the ABCD copy that becomes the
// next E and each new message quad take a free register, and the E and
// quad they replace give theirs back, so no register-to-register moves
// are spent on keeping roles in fixed registers.
type xpool struct{ free []VecPhysical }

func (p *xpool) take() VecPhysical {
	r := p.free[0]
	p.free = p.free[1:]
	return r
}

func (p *xpool) put(r VecPhysical) { p.free = append(p.free, r) }

// remove takes r, which must be free, out of the pool.
func (p *xpool) remove(r VecPhysical) {
	for i, f := range p.free {
		if f == r {
			p.free = append(p.free[:i], p.free[i+1:]...)
			return
		}
	}
	panic(fmt.Sprintf("register %v is not free", r))
}

func sha1NIStreams(n int, flip Mem) {
	name := fmt.Sprintf("sha1NIx%d", n)
	TEXT(name, NOSPLIT, "func(state *[4][5]uint32, ptrs *[4]*byte, chunks int)")
	Doc(fmt.Sprintf("%s compresses chunks 64-byte chunks of each of %d streams:", name, n),
		"stream s reads ptrs[s][0:64*chunks] and updates state[s] (h0..h4).")

	xp := &xpool{free: []VecPhysical{X0, X1, X2, X3, X4, X5, X6, X7, X8, X9, X10, X11, X12, X13, X14, X15}}
	mask := xp.take()
	abcd := make([]VecPhysical, n)
	e := make([]VecPhysical, n)
	for s := range n {
		abcd[s], e[s] = xp.take(), xp.take()
	}

	statePtr := Load(Param("state"), GP64())
	ptrsPtr := Load(Param("ptrs"), GP64())
	cnt := Load(Param("chunks"), GP64())
	p := make([]GPVirtual, n)
	for s := range n {
		p[s] = GP64()
		MOVQ(Mem{Base: ptrsPtr, Disp: 8 * s}, p[s])
	}
	// Per stream: 4 schedule quads, then the feed-forward ABCD and E. SSE
	// memory operands must be 16-byte aligned.
	const perStream = 6
	local := AllocLocal(16*perStream*n + 16)
	base := GP64()
	LEAQ(local, base)
	ADDQ(Imm(15), base)
	ANDQ(I32(-16), base)
	wSlot := func(s, j int) Mem { return Mem{Base: base, Disp: 16 * (perStream*s + j&3)} }
	ffA := func(s int) Mem { return Mem{Base: base, Disp: 16 * (perStream*s + 4)} }
	ffE := func(s int) Mem { return Mem{Base: base, Disp: 16 * (perStream*s + 5)} }

	Comment("Load the states: ABCD with A in the top dword, E in the top dword of zeros.")
	for s := range n {
		st := Mem{Base: statePtr, Disp: 20 * s}
		MOVOU(st, abcd[s])
		PSHUFD(U8(0x1b), abcd[s], abcd[s])
		// The low dwords of E must be zero: quad-round 0 adds E to W0..W3.
		PXOR(e[s], e[s])
		PINSRD(U8(3), st.Offset(16), e[s])
	}
	e0 := append([]VecPhysical(nil), e...) // where the loop expects E
	MOVOU(flip, mask)
	TESTQ(cnt, cnt)
	JZ(LabelRef("done"))

	loopLabel("loop")
	for s := range n {
		MOVO(abcd[s], ffA(s))
		MOVO(e[s], ffE(s))
	}
	w := make([]VecPhysical, n) // W[i] of each stream in quad-round i
	for i := range 20 {
		Commentf("Quad-round %d.", i)
		for s := range n {
			if i < 4 {
				r := xp.take()
				MOVOU(Mem{Base: p[s], Disp: 16 * i}, r)
				PSHUFB(mask, r)
				MOVO(r, wSlot(s, i))
				if i > 0 {
					xp.put(w[s])
				}
				w[s] = r
			}
			// e becomes W[i] + E, where E is rol(A, 30) of four rounds
			// back (SHA1NEXTE) or, in quad-round 0, the state's E.
			if i == 0 {
				PADDD(w[s], e[s])
			} else {
				SHA1NEXTE(w[s], e[s])
			}
			next := xp.take()
			MOVO(abcd[s], next)
			SHA1RNDS4(U8(i/5), e[s], abcd[s])
			xp.put(e[s])
			e[s] = next
			if i >= 3 && i <= 18 {
				// W[i+1] from W[i-3] (its slot), W[i-2], W[i-1] and W[i].
				r := xp.take()
				MOVO(wSlot(s, i+1), r)
				SHA1MSG1(wSlot(s, i-2), r)
				PXOR(wSlot(s, i-1), r)
				SHA1MSG2(w[s], r)
				if i+1 <= 17 { // read again as W[k-2] for k = i+3 <= 20
					MOVO(r, wSlot(s, i+1))
				}
				xp.put(w[s])
				w[s] = r
			}
		}
	}
	for s := range n {
		xp.put(w[s])
	}
	Comment("Bring each E back to the register the loop started with.")
	moveBack(e, e0, xp)
	Comment("Feed forward: E from the A of four rounds back, plus the saved E; ABCD plus the saved ABCD.")
	for s := range n {
		SHA1NEXTE(ffE(s), e[s])
		PADDD(ffA(s), abcd[s])
		ADDQ(Imm(64), p[s])
	}
	DECQ(cnt)
	JNZ(LabelRef("loop"))

	Label("done")
	Comment("Store the states as h0..h4.")
	for s := range n {
		st := Mem{Base: statePtr, Disp: 20 * s}
		PSHUFD(U8(0x1b), abcd[s], abcd[s])
		MOVOU(abcd[s], st)
		PEXTRD(U8(3), e[s], st.Offset(16))
	}
	RET()
}

// moveBack moves cur[s] to want[s] for every s at once (a parallel move:
// a register may be both a source and another move's destination),
// through a free register of xp where the moves form a cycle, and leaves
// cur equal to want.
func moveBack(cur, want []VecPhysical, xp *xpool) {
	for {
		pending := -1
		for s := range cur {
			if cur[s] == want[s] {
				continue
			}
			pending = s
			blocked := false
			for t := range cur {
				if t != s && cur[t] != want[t] && cur[t] == want[s] {
					blocked = true
				}
			}
			if !blocked {
				MOVO(cur[s], want[s])
				xp.put(cur[s])
				xp.remove(want[s])
				cur[s] = want[s]
				pending = -2
				break
			}
		}
		switch pending {
		case -1:
			return
		case -2:
			continue
		}
		// Every pending move's destination is another's source: a cycle.
		t := xp.take()
		MOVO(cur[pending], t)
		xp.put(cur[pending])
		cur[pending] = t
	}
}
