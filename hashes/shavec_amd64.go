//go:build !purego

package hashes

import (
	"unsafe"

	"github.com/veritytree/veritytree/hashes/internal/consts"
)

//go:generate sh -c "cd _asm && go run . -alg shavec -out ../shavec_amd64.s -stubs ../shavec_stubs_amd64.go -pkg hashes"

// vecMD drives a multi-lane AVX-512 SHA kernel: one block per 32-bit (SHA-1,
// SHA-256: 16 lanes) or 64-bit (SHA-512: 8 lanes) vector lane, the message
// words transposed so that each vector holds the same word of every block.
type vecMD[W uint32 | uint64] struct {
	lay           *msgLayout
	lanes, nState int
	size          int // digest bytes
	st            []W // nState+16+carry rows of lanes words: see the kernels
	mid           []W // state after the salt-only chunks
	carry         []W // the salt's last 32 bytes, for the half mode
	scr           []byte
	ptrs          [16]*byte
	kernel        func(st []W, ptrs *[16]*byte, chunks int, half bool)

	// A last group of at most smallMax blocks goes to small instead: a
	// vector pass costs as much for one block as for all the lanes.
	small    bulkHasher
	smallMax int
}

func newVecMD[W uint32 | uint64](lanes int, iv []W, size int, kernel func([]W, *[16]*byte, int, bool),
	blockSize int, salt []byte, pos SaltPosition) *vecMD[W] {
	wordBytes := int(unsafe.Sizeof(W(0)))
	pad := padMD64
	if wordBytes == 8 {
		pad = padMD128
	}
	chunk := 16 * wordBytes
	lay := newMsgLayout(chunk, pad, blockSize, salt, pos, true)
	nCarry := 32 / wordBytes
	h := &vecMD[W]{
		lay: lay, lanes: lanes, nState: len(iv), size: size, kernel: kernel,
		st:  make([]W, (len(iv)+16+nCarry)*lanes),
		scr: make([]byte, lanes*lay.scratch),
	}
	for l := range lanes {
		copy(h.scr[l*lay.scratch:], lay.template)
	}
	// The midstate: every lane hashes the salt-only chunks.
	h.mid = iv
	h.reset()
	if lay.pre > 0 {
		for l := range lanes {
			h.ptrs[l] = &salt[0]
		}
		kernel(h.st, &h.ptrs, lay.pre, false)
		h.ptrs = [16]*byte{}
		h.mid = make([]W, len(iv))
		for i := range h.mid {
			h.mid[i] = h.st[i*lanes]
		}
	}
	if lay.half {
		h.carry = make([]W, nCarry)
		for i := range h.carry {
			h.carry[i] = getBE[W](salt[len(salt)-32+wordBytes*i:])
		}
	}
	return h
}

// setLanePtrs points the first w lanes at base(l) and the rest at lane 0's
// block, hashed again and dropped: a vector pass always runs every lane.
func setLanePtrs(ptrs []*byte, w int, base func(l int) *byte) {
	for l := range ptrs {
		if l < w {
			ptrs[l] = base(l)
		} else {
			ptrs[l] = ptrs[0]
		}
	}
}

func getBE[W uint32 | uint64](b []byte) W {
	var v W
	for i := range int(unsafe.Sizeof(v)) {
		v = v<<8 | W(b[i])
	}
	return v
}

// reset sets every lane's state to the midstate and its carry to the salt's.
func (h *vecMD[W]) reset() {
	for i, v := range h.mid {
		row := h.st[i*h.lanes : (i+1)*h.lanes]
		for l := range row {
			row[l] = v
		}
	}
	for i, v := range h.carry {
		row := h.st[(h.nState+i)*h.lanes : (h.nState+i+1)*h.lanes]
		for l := range row {
			row[l] = v
		}
	}
}

func (h *vecMD[W]) hashBlocks(dst []byte, stride int, blocks []byte) {
	lay := h.lay
	bs, sz, lanes := lay.blockSize, lay.scratch, h.lanes
	n := len(blocks) / bs
	wb := int(unsafe.Sizeof(W(0)))
	for i := 0; i < n; i += lanes {
		w := min(lanes, n-i)
		if w <= h.smallMax {
			h.small.hashBlocks(dst[i*stride:], stride, blocks[i*bs:])
			break
		}
		for l := range w {
			lay.fill(h.scr[l*sz:(l+1)*sz], blocks[(i+l)*bs:(i+l+1)*bs])
		}
		h.reset()
		setPtrs := func(base func(l int) *byte) { setLanePtrs(h.ptrs[:lanes], w, base) }
		if lay.headN > 0 {
			setPtrs(func(l int) *byte { return &h.scr[l*sz] })
			h.kernel(h.st, &h.ptrs, lay.headN, false)
		}
		if lay.directN > 0 {
			setPtrs(func(l int) *byte { return &blocks[(i+l)*bs+lay.directOff] })
			h.kernel(h.st, &h.ptrs, lay.directN, lay.half)
		}
		if lay.tailN > 0 {
			setPtrs(func(l int) *byte { return &h.scr[l*sz+lay.headN*lay.chunk] })
			h.kernel(h.st, &h.ptrs, lay.tailN, false)
		}
		for l := range w {
			d := dst[(i+l)*stride : (i+l)*stride+h.size]
			for k := 0; k*wb < h.size; k++ {
				v := h.st[k*lanes+l]
				for b := range wb {
					d[k*wb+b] = byte(v >> (8 * (wb - 1 - b)))
				}
			}
		}
	}
	h.ptrs = [16]*byte{}
}

// The smallMax values below are lanes × (speed of small / speed of the
// vector kernel), from the speeds measured on Zen 4 (BenchmarkHashBlocks).

func newSHA1AVX512(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
	h := newVecMD(16, consts.SHA1IV[:], 20, func(st []uint32, p *[16]*byte, n int, half bool) {
		sha1AVX512x16((*[464]uint32)(st), p, n, half)
	}, blockSize, salt, pos)
	if sha1NI4.available() {
		h.small, h.smallMax = newSHA1NI(a, blockSize, salt, pos), 11
	} else {
		h.small, h.smallMax = newStreamingBulk(a, blockSize, salt, pos), 4
	}
	return h
}

func newSHA256AVX512(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
	h := newVecMD(16, consts.SHA256IV[:], 32, func(st []uint32, p *[16]*byte, n int, half bool) {
		sha256AVX512x16((*[512]uint32)(st), p, n, half)
	}, blockSize, salt, pos)
	if shaNI4.available() {
		h.small, h.smallMax = newSHA256NI(a, blockSize, salt, pos), 11
	} else {
		h.small, h.smallMax = newStreamingBulk(a, blockSize, salt, pos), 2
	}
	return h
}

func newSHA512AVX512(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
	h := newVecMD(8, consts.SHA512IV[:], 64, func(st []uint64, p *[16]*byte, n int, half bool) {
		sha512AVX512x8((*[224]uint64)(st), (*[8]*byte)(p[:8]), n, half)
	}, blockSize, salt, pos)
	h.small, h.smallMax = newStreamingBulk(a, blockSize, salt, pos), 2
	return h
}
