//go:build !purego

package hashes

import "encoding/binary"

//go:generate sh -c "cd _asm && go run . -alg blake2b -out ../blake2b_amd64.s -stubs ../blake2b_stubs_amd64.go -pkg hashes"

// blake2bGroup is the state of 8 lanes as the AVX-512 kernels keep it:
// [0:8] the chaining values h[word][lane], [8:28] the transposed message
// words (see the generator, _asm/blake2b.go).
type blake2bGroup = [28][8]uint64

// blake2bAVX512 hashes 16 blocks at a time (two interleaved groups of 8
// lanes, one block per 64-bit lane), or 8 when 8 or fewer are left.
type blake2bAVX512 struct {
	lay   *msgLayout
	mid   [8]uint64 // h after the salt-only chunks
	carry [4]uint64 // the salt's last 32 bytes, for the half mode
	scr   []byte    // 16 lanes of lay.scratch bytes
	g     [2]blake2bGroup
	ptrs  [16]*byte
	small bulkHasher // for a single block left over: 8 lanes for 1 cost more

	// avx2: 4 lanes of ymm registers (blake2bAVX2x4) instead, state in g4.
	avx2 bool
	g4   [28 * 4]uint64
}

func newBLAKE2bAVX2(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
	h := newBLAKE2bAVX512(a, blockSize, salt, pos).(*blake2bAVX512)
	h.avx2 = true
	return h
}

func newBLAKE2bAVX512(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
	lay := newMsgLayout(128, padZero, blockSize, salt, pos, true)
	h := &blake2bAVX512{lay: lay, scr: make([]byte, 16*lay.scratch), small: newStreamingBulk(a, blockSize, salt, pos)}
	for l := range 16 {
		copy(h.scr[l*lay.scratch:], lay.template)
	}
	h.mid = [8]uint64{blake2bIV0 ^ (uint64(a.size) | 1<<16 | 1<<24), blake2bIV1, blake2bIV2, blake2bIV3,
		blake2bIV4, blake2bIV5, blake2bIV6, blake2bIV7}
	if lay.pre > 0 {
		var c [2]uint64
		blake2bBlocksGeneric(&h.mid, &c, 0, salt[:lay.pre*128])
	}
	if lay.half {
		for i := range h.carry {
			h.carry[i] = binary.LittleEndian.Uint64(salt[len(salt)-32+8*i:])
		}
	}
	return h
}

func (h *blake2bAVX512) hashBlocks(dst []byte, stride int, blocks []byte) {
	lay := h.lay
	bs, sz := lay.blockSize, lay.scratch
	n := len(blocks) / bs
	for i := 0; i < n; {
		w := min(16, n-i)
		if w == 1 {
			h.small.hashBlocks(dst[i*stride:], stride, blocks[i*bs:])
			break
		}
		lanes := 16
		if w <= 8 {
			lanes = 8
		}
		if h.avx2 {
			w, lanes = min(4, w), 4
		}
		for l := range w {
			lay.fill(h.scr[l*sz:(l+1)*sz], blocks[(i+l)*bs:(i+l+1)*bs])
		}
		if h.avx2 {
			for k, m := range h.mid {
				h.g4[4*k], h.g4[4*k+1], h.g4[4*k+2], h.g4[4*k+3] = m, m, m, m
			}
			for k, c := range h.carry {
				r := 4 * (8 + k)
				h.g4[r], h.g4[r+1], h.g4[r+2], h.g4[r+3] = c, c, c, c
			}
		}
		for gi := range lanes / 8 {
			g := &h.g[gi]
			for k := range 8 {
				g[k] = [8]uint64{h.mid[k], h.mid[k], h.mid[k], h.mid[k], h.mid[k], h.mid[k], h.mid[k], h.mid[k]}
			}
			if lay.half {
				for k, c := range h.carry {
					g[8+k] = [8]uint64{c, c, c, c, c, c, c, c}
				}
			}
		}
		setPtrs := func(base func(l int) *byte) { setLanePtrs(h.ptrs[:lanes], w, base) }
		run := func(chunks, first int, flag uint64, half bool) {
			counter := uint64(first) * 128
			if flag != 0 {
				counter = uint64(lay.msgLen) - 128 // wraps for short messages: only the low word counts
			}
			switch lanes {
			case 4:
				blake2bAVX2x4(&h.g4, (*[4]*byte)(h.ptrs[:4]), chunks, counter, flag, half)
			case 16:
				blake2bAVX512x16(&h.g, &h.ptrs, chunks, counter, flag, half)
			default:
				blake2bAVX512x8((*[1]blake2bGroup)(h.g[:1]), (*[8]*byte)(h.ptrs[:8]), chunks, counter, flag, half)
			}
		}
		k := lay.pre
		if lay.headN > 0 {
			setPtrs(func(l int) *byte { return &h.scr[l*sz] })
			run(lay.headN, k, 0, false)
			k += lay.headN
		}
		if lay.directN > 0 {
			setPtrs(func(l int) *byte { return &blocks[(i+l)*bs+lay.directOff] })
			run(lay.directN, k, 0, lay.half)
			k += lay.directN
		}
		if lay.tailN > 1 {
			setPtrs(func(l int) *byte { return &h.scr[l*sz+lay.headN*128] })
			run(lay.tailN-1, k, 0, false)
		}
		setPtrs(func(l int) *byte { return &h.scr[l*sz+(lay.headN+lay.tailN-1)*128] })
		run(1, 0, ^uint64(0), false)
		for l := range w {
			d := dst[(i+l)*stride : (i+l)*stride+32]
			for k := range 4 {
				v := h.g[l/8][k][l%8]
				if h.avx2 {
					v = h.g4[4*k+l]
				}
				binary.LittleEndian.PutUint64(d[8*k:], v)
			}
		}
		i += w
	}
	h.ptrs = [16]*byte{}
}
