package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// minRoots and maxRoots are package fec's bounds on the parity bytes per
// codeword: one kernel per roots value, its register file unrolled.
const (
	minRoots = 2
	maxRoots = 24
)

// kind is how a kernel multiplies by the generator coefficients.
type kind int

const (
	// gfni512: VGF2P8AFFINEQB on zmm (AVX-512F + GFNI), the 8x8 bit
	// matrix broadcast from memory; 32 registers.
	gfni512 kind = iota
	// gfni256: VGF2P8AFFINEQB on ymm (AVX + GFNI, VEX); 16 registers.
	gfni256
	// avx2: two VPSHUFB lookups of 16-entry tables (products of the low
	// and of the high nibble) on ymm; 16 registers.
	avx2
)

// genRS generates, for each roots value r, the systematic RS encoders
// rsGFNI512R<r>, rsGFNI256R<r> and rsAVX2R<r>, with the contract of
// rsKernel in fec/encode_amd64.go: groups groups of lanes*width codewords,
// each column of src a codeword's message bytes (k rows, stride bytes
// apart), parity stored register by register.
func genRS() {
	for r := minRoots; r <= maxRoots; r++ {
		genKernel(fmt.Sprintf("rsGFNI512R%d", r), gfni512, r)
	}
	for r := minRoots; r <= maxRoots; r++ {
		genKernel(fmt.Sprintf("rsGFNI256R%d", r), gfni256, r)
	}
	for r := minRoots; r <= maxRoots; r++ {
		genKernel(fmt.Sprintf("rsAVX2R%d", r), avx2, r)
	}
	genCPUID()
}

// lanes is how many vectors of codewords a kernel keeps in flight; it must
// match vecImpl.lanes in fec/encode_amd64.go. More than one only matters for
// small roots, where one vector's chain from a row to the next (xor,
// product, xor: about 5 cycles) is longer than its roots products. Powers
// of two, so that a group divides the 512-codeword tile. Each vector takes
// roots parity registers and the feedback (and, for avx2, its high
// nibbles); the product temporaries and the avx2 mask come on top. With
// one vector, parity registers that do not fit live in memory, in the
// vector's output slot.
func lanes(k kind, r int) int {
	switch k {
	case gfni512: // 32 registers: lanes*(r+2)
		switch {
		case r <= 6:
			return 4
		case r <= 14:
			return 2
		}
	case gfni256: // 16 registers: lanes*(r+2)
		switch {
		case r <= 2:
			return 4
		case r <= 6:
			return 2
		}
	case avx2: // 16 registers: lanes*(r+2) + 3
		if r <= 4 {
			return 2
		}
	}
	return 1
}

// genCPUID generates cpuid: golang.org/x/sys/cpu reports GFNI only with
// AVX-512 (HasAVX512GFNI), and the ymm kernels need it without.
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

// affine emits VGF2P8AFFINEQB(.BCST) $0, m, x, dst: dst = m·x byte by byte,
// m an 8x8 bit matrix (one qword, broadcast from memory on zmm). avo v0.5.0
// does not know the GFNI instructions, so the instruction is built by hand;
// the Go assembler encodes it (EVEX for zmm, VEX for ymm).
func affine(m Mem, x, dst Register, bcst bool) {
	i := &ir.Instruction{
		Opcode:   "VGF2P8AFFINEQB",
		Operands: []Op{U8(0), m, x, dst},
		Inputs:   []Op{m, x},
		Outputs:  []Op{dst},
		ISA:      []string{"GFNI"},
	}
	if bcst {
		i.Suffixes = []string{"BCST"}
	}
	Instruction(i)
}

// genKernel generates one kernel: for each group of lanes*width codewords,
// the registers r[0..roots-1] of each vector start at zero and each of the
// k rows m updates them as the division register does (fb = m ^ r[0];
// r[i] = r[i+1] ^ fb*g_i; r[roots-1] = fb*g_{roots-1}: written in place,
// r[i+1] is read before it is overwritten), then r[i] of vector v goes to
// dst + (i*lanes + v)*width.
//
// tab holds 64 bytes per register i: for gfni, the matrix of g_i in 4
// copies (the zmm kernels broadcast the first; VEX has no broadcast, so the
// ymm ones load 32 bytes); for avx2, the products g_i*n and g_i*(n<<4),
// n = 0..15, twice each (VPSHUFB looks up within 16-byte lanes).
func genKernel(name string, kd kind, roots int) {
	TEXT(name, NOSPLIT, "func(tab *[8]uint64, src *byte, stride, k, groups int, dst *byte)")
	Pragma("noescape")
	zmm := kd == gfni512
	width := 32
	if zmm {
		width = 64
	}
	nl := lanes(kd, roots)
	Doc(fmt.Sprintf("%s encodes groups of %d codewords for roots %d.", name, nl*width, roots))

	tabp := Load(Param("tab"), RAX)
	srcp := Load(Param("src"), RSI)
	stride := Load(Param("stride"), RDX)
	Load(Param("k"), R8)
	groups := Load(Param("groups"), R9)
	dstp := Load(Param("dst"), RDI)
	row, left := RBX, RCX

	var vecs []VecPhysical
	if zmm {
		vecs = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
			Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}
	} else {
		vecs = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
	}
	take := func() VecPhysical {
		v := vecs[0]
		vecs = vecs[1:]
		return v
	}
	// fb[v] is the feedback (for avx2, its low nibbles once split), tmp[v]
	// the product; avx2 shares one product and one high-nibble lookup
	// temporary between vectors (register renaming makes the reuse free)
	// and keeps each vector's high nibbles in hi[v].
	fb := make([]VecPhysical, nl)
	tmp := make([]VecPhysical, nl)
	hi := make([]VecPhysical, nl)
	var mask, hitmp VecPhysical
	if kd == avx2 {
		mask, hitmp = take(), take()
		t := take()
		for v := range nl {
			fb[v], hi[v], tmp[v] = take(), take(), t
		}
	} else {
		for v := range nl {
			fb[v], tmp[v] = take(), take()
		}
	}
	par := make([][]VecPhysical, nl)
	for v := range nl {
		for range roots {
			if len(vecs) == 0 {
				break
			}
			par[v] = append(par[v], take())
		}
	}
	inReg := len(par[0])
	if inReg < roots && nl != 1 {
		panic("spilled parity registers need one vector")
	}
	slot := func(i, v int) Mem { return Mem{Base: dstp, Disp: (i*nl + v) * width} }
	tab := func(i, off int) Mem { return Mem{Base: tabp, Disp: 64*i + off} }
	xor := func(a Op, b, dst Register) {
		if zmm {
			VPXORQ(a, b, dst)
		} else {
			VPXOR(a, b, dst)
		}
	}
	store := func(x Register, m Mem) {
		if zmm {
			VMOVDQU64(x, m)
		} else {
			VMOVDQU(x, m)
		}
	}
	// product sets dst to fb[v] times g_i.
	product := func(i, v int, dst Register) {
		if kd != avx2 {
			affine(tab(i, 0), fb[v], dst, zmm)
			return
		}
		VMOVDQU(tab(i, 0), dst)
		VPSHUFB(fb[v], dst, dst)
		VMOVDQU(tab(i, 32), hitmp)
		VPSHUFB(hi[v], hitmp, hitmp)
		VPXOR(hitmp, dst, dst)
	}

	if kd == avx2 {
		MOVQ(U64(0x0f0f0f0f0f0f0f0f), R10)
		MOVQ(R10, mask.AsX())
		VPBROADCASTQ(mask.AsX(), mask)
	}

	Label(name + "_group")
	for v := range nl {
		for _, p := range par[v] {
			xor(p, p, p)
		}
	}
	if inReg < roots {
		xor(tmp[0], tmp[0], tmp[0])
		for i := inReg; i < roots; i++ {
			store(tmp[0], slot(i, 0))
		}
	}
	MOVQ(srcp, row)
	MOVQ(R8, left)

	Label(name + "_row")
	for v := range nl {
		xor(Mem{Base: row, Disp: v * width}, par[v][0], fb[v])
		if kd == avx2 {
			VPSRLQ(U8(4), fb[v], hi[v])
			VPAND(mask, hi[v], hi[v])
			VPAND(mask, fb[v], fb[v])
		}
	}
	for i := range roots {
		for v := range nl {
			last := i == roots-1
			switch {
			case last && i < inReg:
				product(i, v, par[v][i])
			case last:
				product(i, v, tmp[v])
				store(tmp[v], slot(i, v))
			case i+1 < inReg:
				product(i, v, tmp[v])
				xor(tmp[v], par[v][i+1], par[v][i])
			case i < inReg:
				product(i, v, tmp[v])
				xor(slot(i+1, v), tmp[v], par[v][i])
			default:
				product(i, v, tmp[v])
				xor(slot(i+1, v), tmp[v], tmp[v])
				store(tmp[v], slot(i, v))
			}
		}
	}
	ADDQ(stride, row)
	DECQ(left)
	JNZ(LabelRef(name + "_row"))

	for i := range inReg {
		for v := range nl {
			store(par[v][i], slot(i, v))
		}
	}
	ADDQ(U32(nl*width), srcp)
	ADDQ(U32(roots*nl*width), dstp)
	DECQ(groups)
	JNZ(LabelRef(name + "_group"))
	VZEROUPPER()
	RET()
}
