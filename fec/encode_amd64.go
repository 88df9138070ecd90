//go:build !purego

//go:generate sh -c "cd _asm && go run . -out ../rs_amd64.s -stubs ../rs_stubs_amd64.go -pkg fec"

package fec

import (
	"encoding/binary"

	"golang.org/x/sys/cpu"
)

// rsKernel is the contract of the generated kernels (rs_amd64.s, from
// _asm/rs.go), one per roots value: for each of groups groups of
// lanes*width consecutive codewords (src advancing by that many bytes), the
// parity registers start at zero and take the k message rows, row j at
// src + j*stride; then register i of vector v of the group is stored at
// dst + (i*lanes + v)*width, the next group's registers after it. tab[i]
// describes the multiplication by the generator coefficient of register i
// (see multTable).
type rsKernel func(tab *[8]uint64, src *byte, stride, k, groups int, dst *byte)

// vecImpl is one family of kernels.
type vecImpl struct {
	name      string
	available bool
	width     int // bytes (codewords) per vector
	// lanes returns the vectors per group: must match _asm/rs.go.
	lanes   func(roots int) int
	pshufb  bool // nibble tables rather than GFNI matrices
	kernels [MaxRoots + 1]rsKernel
}

// The implementations, fastest first. VGF2P8MULB would multiply in the AES
// field (0x11b), not ours (0x11d); VGF2P8AFFINEQB with the bit matrix of
// "multiply by g" works in any field, 64 (zmm) or 32 (ymm) bytes at once.
var vecImpls = []*vecImpl{
	{
		name:      "gfni512",
		available: cpu.X86.HasAVX512F && cpu.X86.HasAVX512GFNI,
		width:     64,
		lanes: func(roots int) int {
			switch {
			case roots <= 6:
				return 4
			case roots <= 14:
				return 2
			}
			return 1
		},
		kernels: [MaxRoots + 1]rsKernel{
			2: rsGFNI512R2, 3: rsGFNI512R3, 4: rsGFNI512R4, 5: rsGFNI512R5, 6: rsGFNI512R6,
			7: rsGFNI512R7, 8: rsGFNI512R8, 9: rsGFNI512R9, 10: rsGFNI512R10, 11: rsGFNI512R11,
			12: rsGFNI512R12, 13: rsGFNI512R13, 14: rsGFNI512R14, 15: rsGFNI512R15, 16: rsGFNI512R16,
			17: rsGFNI512R17, 18: rsGFNI512R18, 19: rsGFNI512R19, 20: rsGFNI512R20, 21: rsGFNI512R21,
			22: rsGFNI512R22, 23: rsGFNI512R23, 24: rsGFNI512R24,
		},
	},
	{
		// For CPUs with GFNI but not AVX-512 (Intel Alder Lake and later
		// client cores, Tremont/Gracemont); 16 registers, so the parity
		// registers past the 14th live in memory.
		name:      "gfni256",
		available: cpu.X86.HasAVX2 && hasGFNI,
		width:     32,
		lanes: func(roots int) int {
			switch {
			case roots <= 2:
				return 4
			case roots <= 6:
				return 2
			}
			return 1
		},
		kernels: [MaxRoots + 1]rsKernel{
			2: rsGFNI256R2, 3: rsGFNI256R3, 4: rsGFNI256R4, 5: rsGFNI256R5, 6: rsGFNI256R6,
			7: rsGFNI256R7, 8: rsGFNI256R8, 9: rsGFNI256R9, 10: rsGFNI256R10, 11: rsGFNI256R11,
			12: rsGFNI256R12, 13: rsGFNI256R13, 14: rsGFNI256R14, 15: rsGFNI256R15, 16: rsGFNI256R16,
			17: rsGFNI256R17, 18: rsGFNI256R18, 19: rsGFNI256R19, 20: rsGFNI256R20, 21: rsGFNI256R21,
			22: rsGFNI256R22, 23: rsGFNI256R23, 24: rsGFNI256R24,
		},
	},
	{
		// For x86-64-v3 CPUs without GFNI (AMD Zen 1-3, Intel Haswell to
		// Skylake): two VPSHUFB lookups and an XOR per product.
		name:      "avx2",
		available: cpu.X86.HasAVX2,
		width:     32,
		lanes: func(roots int) int {
			if roots <= 4 {
				return 2
			}
			return 1
		},
		pshufb: true,
		kernels: [MaxRoots + 1]rsKernel{
			2: rsAVX2R2, 3: rsAVX2R3, 4: rsAVX2R4, 5: rsAVX2R5, 6: rsAVX2R6,
			7: rsAVX2R7, 8: rsAVX2R8, 9: rsAVX2R9, 10: rsAVX2R10, 11: rsAVX2R11,
			12: rsAVX2R12, 13: rsAVX2R13, 14: rsAVX2R14, 15: rsAVX2R15, 16: rsAVX2R16,
			17: rsAVX2R17, 18: rsAVX2R18, 19: rsAVX2R19, 20: rsAVX2R20, 21: rsAVX2R21,
			22: rsAVX2R22, 23: rsAVX2R23, 24: rsAVX2R24,
		},
	},
}

// hasGFNI reports GFNI (CPUID.(EAX=7,ECX=0):ECX bit 8), which
// golang.org/x/sys/cpu reports only with AVX-512.
var hasGFNI = func() bool {
	if maxLeaf, _, _, _ := cpuid(0, 0); maxLeaf < 7 {
		return false
	}
	_, _, ecx, _ := cpuid(7, 0)
	return ecx&(1<<8) != 0
}()

// Implementations returns the names of the encoders this machine runs, the
// default first; "generic" is always last.
func Implementations() []string {
	var names []string
	for _, im := range vecImpls {
		if im.available {
			names = append(names, im.name)
		}
	}
	return append(names, "generic")
}

// pickImpl returns the implementation named (or by PreferImplementation
// when name is ""), or the fastest available one if that names none this machine runs;
// nil means generic.
func pickImpl(name string) *vecImpl {
	if name == "" {
		name = preferredImpl()
	}
	if name == "generic" {
		return nil
	}
	for _, im := range vecImpls {
		if im.available && im.name == name {
			return im
		}
	}
	for _, im := range vecImpls {
		if im.available {
			return im
		}
	}
	return nil
}

// gfAffine returns the bit matrix of x -> c*x in the field, laid out for
// VGF2P8AFFINEQB: bit i of the product is the parity of x AND byte 7-i.
func gfAffine(c byte) uint64 {
	var m uint64
	for i := range 8 {
		var row byte
		for j := range 8 {
			if gfMul(c, 1<<j)>>i&1 != 0 {
				row |= 1 << j
			}
		}
		m |= uint64(row) << (8 * (7 - i))
	}
	return m
}

// multTable returns the kernels' table for roots: entry i (64 bytes)
// multiplies by g[roots-1-i], the coefficient of register i as in
// encoder.tab. For GFNI it is the matrix of gfAffine in 4 copies (the ymm
// kernels load 32 bytes; the zmm ones broadcast 8); for VPSHUFB, the
// products of the 16 low nibbles, then of the 16 high nibbles, each twice
// (the lookup stays inside 16-byte lanes).
func multTable(roots int, pshufb bool) *[MaxRoots][8]uint64 {
	gen := generator(roots)
	var tab [MaxRoots][8]uint64
	for i := range roots {
		c := gen[roots-1-i]
		if !pshufb {
			a := gfAffine(c)
			tab[i] = [8]uint64{a, a, a, a}
			continue
		}
		var b [64]byte
		for n := range 16 {
			lo, hi := gfMul(c, byte(n)), gfMul(c, byte(n<<4))
			b[n], b[16+n], b[32+n], b[48+n] = lo, lo, hi, hi
		}
		for w := range 8 {
			tab[i][w] = binary.LittleEndian.Uint64(b[8*w:])
		}
	}
	return &tab
}

// newTileEncoder returns the tile encoder of implementation name ("" for
// the default) for roots, or nil for the Go LFSR.
func newTileEncoder(roots int, name string) tileEncoder {
	im := pickImpl(name)
	if im == nil {
		return nil
	}
	kern := im.kernels[roots]
	group := im.lanes(roots) * im.width
	tab := multTable(roots, im.pshufb)
	scratch := make([]byte, roots*tileCodewords)
	return func(src []byte, stride, k, tl int, out []byte) int {
		groups := min(tl, tileCodewords) / group
		if groups == 0 {
			return 0
		}
		n := groups * group
		// The kernel reads k rows of n bytes and writes n*roots bytes.
		_ = src[(k-1)*stride+n-1]
		_ = out[n*roots-1]
		kern(&tab[0], &src[0], stride, k, groups, &scratch[0])
		for g := range groups {
			transpose(out[g*group*roots:(g+1)*group*roots], scratch[g*roots*group:(g+1)*roots*group], roots, group)
		}
		return n
	}
}

// transpose writes the parity of n codewords (n a multiple of 8) from the
// kernel's layout, register i of codeword c at s[i*n+c], to Encode's, the
// roots bytes of codeword c consecutive at out[c*roots:]. It goes by 8x8
// blocks of bytes, transposed in 64-bit words (three stages of masked
// swaps), so that every load and most stores are 8 bytes wide rather than
// one: byte by byte, this cost as much as the kernel for roots 24.
func transpose(out, s []byte, roots, n int) {
	for i0 := 0; i0 < roots; i0 += 8 {
		rem := min(8, roots-i0)
		// The rows of this block; those past roots read as zero.
		var rows [8][]byte
		for j := range rows {
			rows[j] = zeros[:n]
			if j < rem {
				rows[j] = s[(i0+j)*n : (i0+j+1)*n]
			}
		}
		for c0 := 0; c0+8 <= n; c0 += 8 {
			x0 := binary.LittleEndian.Uint64(rows[0][c0:])
			x1 := binary.LittleEndian.Uint64(rows[1][c0:])
			x2 := binary.LittleEndian.Uint64(rows[2][c0:])
			x3 := binary.LittleEndian.Uint64(rows[3][c0:])
			x4 := binary.LittleEndian.Uint64(rows[4][c0:])
			x5 := binary.LittleEndian.Uint64(rows[5][c0:])
			x6 := binary.LittleEndian.Uint64(rows[6][c0:])
			x7 := binary.LittleEndian.Uint64(rows[7][c0:])
			x0, x1 = swapBytes(x0, x1, 8, 0x00ff00ff00ff00ff)
			x2, x3 = swapBytes(x2, x3, 8, 0x00ff00ff00ff00ff)
			x4, x5 = swapBytes(x4, x5, 8, 0x00ff00ff00ff00ff)
			x6, x7 = swapBytes(x6, x7, 8, 0x00ff00ff00ff00ff)
			x0, x2 = swapBytes(x0, x2, 16, 0x0000ffff0000ffff)
			x1, x3 = swapBytes(x1, x3, 16, 0x0000ffff0000ffff)
			x4, x6 = swapBytes(x4, x6, 16, 0x0000ffff0000ffff)
			x5, x7 = swapBytes(x5, x7, 16, 0x0000ffff0000ffff)
			x0, x4 = swapBytes(x0, x4, 32, 0x00000000ffffffff)
			x1, x5 = swapBytes(x1, x5, 32, 0x00000000ffffffff)
			x2, x6 = swapBytes(x2, x6, 32, 0x00000000ffffffff)
			x3, x7 = swapBytes(x3, x7, 32, 0x00000000ffffffff)
			// x<c> holds registers i0..i0+7 of codeword c0+c.
			o := out[c0*roots+i0 : (c0+8)*roots]
			if rem == 8 {
				binary.LittleEndian.PutUint64(o[0*roots:], x0)
				binary.LittleEndian.PutUint64(o[1*roots:], x1)
				binary.LittleEndian.PutUint64(o[2*roots:], x2)
				binary.LittleEndian.PutUint64(o[3*roots:], x3)
				binary.LittleEndian.PutUint64(o[4*roots:], x4)
				binary.LittleEndian.PutUint64(o[5*roots:], x5)
				binary.LittleEndian.PutUint64(o[6*roots:], x6)
				binary.LittleEndian.PutUint64(o[7*roots:], x7)
				continue
			}
			for c, y := range [8]uint64{x0, x1, x2, x3, x4, x5, x6, x7} {
				putPartial(o[c*roots:c*roots+rem], y)
			}
		}
	}
}

// zeros stands in for the rows past roots of transpose's last block.
var zeros [tileCodewords]byte

// swapBytes is one stage of the 8x8 transpose: the elements of a under
// ^mask and those of b under mask trade places.
func swapBytes(a, b uint64, shift uint, mask uint64) (uint64, uint64) {
	t := (a>>shift ^ b) & mask
	return a ^ t<<shift, b ^ t
}

// putPartial stores the len(o) < 8 low bytes of y.
func putPartial(o []byte, y uint64) {
	if len(o)&4 != 0 {
		binary.LittleEndian.PutUint32(o, uint32(y))
		o, y = o[4:], y>>32
	}
	if len(o)&2 != 0 {
		binary.LittleEndian.PutUint16(o, uint16(y))
		o, y = o[2:], y>>16
	}
	if len(o)&1 != 0 {
		o[0] = byte(y)
	}
}
