//go:build !purego

package hashes

import (
	"encoding/binary"

	"golang.org/x/sys/cpu"
)

//go:generate sh -c "cd _asm && go run . -alg sha256ni -out ../sha256ni_amd64.s -stubs ../sha256ni_stubs_amd64.go -pkg hashes"

var sha256IV = [8]uint32{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}

// sha256NIKernels[n] compresses n interleaved streams with the SHA
// extensions. With AVX-512VL the 3- and 4-stream kernels keep the message
// schedules that do not fit in X0..X15 in X16..X31 rather than on the stack,
// whose store-to-load forwarding would lengthen the schedule's chain.
var sha256NIKernels = func() [5]func(*[4][8]uint32, *[4]*byte, int) {
	k := [5]func(*[4][8]uint32, *[4]*byte, int){1: sha256NIx1, 2: sha256NIx2, 3: sha256NIx3, 4: sha256NIx4}
	if cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BW {
		k[3], k[4] = sha256NIx3VL, sha256NIx4VL
	}
	return k
}()

// sha256NI hashes four blocks at a time, one SHA-NI instruction stream each,
// interleaved (a remainder of 1..3 blocks uses the 1..3-stream kernel).
type sha256NI struct {
	lay  *msgLayout
	mid  [8]uint32 // state after the salt-only chunks
	scr  []byte    // 4 lanes of lay.scratch bytes
	st   [4][8]uint32
	ptrs [4]*byte
}

func newSHA256NI(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
	lay := newMsgLayout(64, padMD64, blockSize, salt, pos, false)
	h := &sha256NI{lay: lay, scr: make([]byte, 4*lay.scratch)}
	for l := range 4 {
		copy(h.scr[l*lay.scratch:], lay.template)
	}
	h.st[0] = sha256IV
	if lay.pre > 0 {
		h.ptrs[0] = &salt[0]
		sha256NIx1(&h.st, &h.ptrs, lay.pre)
		h.ptrs[0] = nil
	}
	h.mid = h.st[0]
	return h
}

func (h *sha256NI) hashBlocks(dst []byte, stride int, blocks []byte) {
	lay := h.lay
	bs, sz := lay.blockSize, lay.scratch
	n := len(blocks) / bs
	for i := 0; i < n; i += 4 {
		w := min(4, n-i)
		kernel := sha256NIKernels[w]
		for l := range w {
			lay.fill(h.scr[l*sz:(l+1)*sz], blocks[(i+l)*bs:(i+l+1)*bs])
			h.st[l] = h.mid
		}
		if lay.headN > 0 {
			for l := range w {
				h.ptrs[l] = &h.scr[l*sz]
			}
			kernel(&h.st, &h.ptrs, lay.headN)
		}
		if lay.directN > 0 {
			for l := range w {
				h.ptrs[l] = &blocks[(i+l)*bs+lay.directOff]
			}
			kernel(&h.st, &h.ptrs, lay.directN)
		}
		if lay.tailN > 0 {
			for l := range w {
				h.ptrs[l] = &h.scr[l*sz+lay.headN*64]
			}
			kernel(&h.st, &h.ptrs, lay.tailN)
		}
		for l := range w {
			d := dst[(i+l)*stride : (i+l)*stride+32]
			for j, v := range h.st[l] {
				binary.BigEndian.PutUint32(d[4*j:], v)
			}
		}
	}
	h.ptrs = [4]*byte{} // don't keep the caller's blocks alive
}
