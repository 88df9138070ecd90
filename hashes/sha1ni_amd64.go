//go:build !purego

package hashes

import "encoding/binary"

//go:generate sh -c "cd _asm && go run . -alg sha1ni -out ../sha1ni_amd64.s -stubs ../sha1ni_stubs_amd64.go -pkg hashes"

// sha1NIKernels[n] compresses n interleaved SHA-1 streams with the SHA
// extensions.
var sha1NIKernels = [5]func(*[4][5]uint32, *[4]*byte, int){1: sha1NIx1, 2: sha1NIx2, 3: sha1NIx3, 4: sha1NIx4}

// sha1NI is sha256NI for SHA-1: four blocks at a time, one SHA-NI
// instruction stream each, interleaved (a remainder of 1..3 blocks uses
// the 1..3-stream kernel).
type sha1NI struct {
	lay  *msgLayout
	mid  [5]uint32 // state after the salt-only chunks
	scr  []byte    // 4 lanes of lay.scratch bytes
	st   [4][5]uint32
	ptrs [4]*byte
}

func newSHA1NI(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
	lay := newMsgLayout(64, padMD64, blockSize, salt, pos, false)
	h := &sha1NI{lay: lay, scr: make([]byte, 4*lay.scratch)}
	for l := range 4 {
		copy(h.scr[l*lay.scratch:], lay.template)
	}
	copy(h.st[0][:], sha1IV)
	if lay.pre > 0 {
		h.ptrs[0] = &salt[0]
		sha1NIx1(&h.st, &h.ptrs, lay.pre)
		h.ptrs[0] = nil
	}
	h.mid = h.st[0]
	return h
}

func (h *sha1NI) hashBlocks(dst []byte, stride int, blocks []byte) {
	lay := h.lay
	bs, sz := lay.blockSize, lay.scratch
	n := len(blocks) / bs
	for i := 0; i < n; i += 4 {
		w := min(4, n-i)
		kernel := sha1NIKernels[w]
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
			d := dst[(i+l)*stride : (i+l)*stride+20]
			for j, v := range h.st[l] {
				binary.BigEndian.PutUint32(d[4*j:], v)
			}
		}
	}
	h.ptrs = [4]*byte{} // don't keep the caller's blocks alive
}
