//go:build !purego

package hashes

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/veritytree/veritytree/hashes/internal/consts"
)

//go:generate sh -c "cd _asm && go run . -alg sha256ni -out ../sha256ni_amd64.s -stubs ../sha256ni_stubs_amd64.go -pkg hashes"

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

// shaNI hashes four blocks at a time, one SHA-NI instruction stream each,
// interleaved (a remainder of 1..3 blocks uses the 1..3-stream kernel), for
// SHA-1 (5 state words) and SHA-256 (8). The state of stream l is words
// [l*words, (l+1)*words) of st, as the kernels' [4][words]uint32 lays it out.
type shaNI struct {
	lay     *msgLayout
	words   int
	kernels [5]func(st []uint32, ptrs *[4]*byte, chunks int)
	mid     []uint32 // state after the salt-only chunks
	scr     []byte   // 4 lanes of lay.scratch bytes
	st      []uint32
	ptrs    [4]*byte
}

func newSHANI(iv []uint32, kernels [5]func([]uint32, *[4]*byte, int), blockSize int, salt []byte, pos SaltPosition) *shaNI {
	lay := newMsgLayout(64, padMD64, blockSize, salt, pos, false)
	words := len(iv)
	h := &shaNI{lay: lay, words: words, kernels: kernels, scr: make([]byte, 4*lay.scratch), st: make([]uint32, 4*words)}
	for l := range 4 {
		copy(h.scr[l*lay.scratch:], lay.template)
	}
	copy(h.st, iv)
	if lay.pre > 0 {
		h.ptrs[0] = &salt[0]
		kernels[1](h.st, &h.ptrs, lay.pre)
		h.ptrs[0] = nil
	}
	h.mid = append([]uint32(nil), h.st[:words]...)
	return h
}

func newSHA256NI(a *Algorithm, blockSize int, salt []byte, pos SaltPosition) bulkHasher {
	var k [5]func([]uint32, *[4]*byte, int)
	for n, kernel := range sha256NIKernels {
		if kernel != nil {
			k[n] = func(st []uint32, p *[4]*byte, chunks int) {
				kernel((*[4][8]uint32)(unsafe.Pointer(&st[0])), p, chunks)
			}
		}
	}
	return newSHANI(consts.SHA256IV[:], k, blockSize, salt, pos)
}

func (h *shaNI) hashBlocks(dst []byte, stride int, blocks []byte) {
	lay, words := h.lay, h.words
	bs, sz := lay.blockSize, lay.scratch
	n := len(blocks) / bs
	for i := 0; i < n; i += 4 {
		w := min(4, n-i)
		kernel := h.kernels[w]
		for l := range w {
			lay.fill(h.scr[l*sz:(l+1)*sz], blocks[(i+l)*bs:(i+l+1)*bs])
			copy(h.st[l*words:], h.mid)
		}
		if lay.headN > 0 {
			for l := range w {
				h.ptrs[l] = &h.scr[l*sz]
			}
			kernel(h.st, &h.ptrs, lay.headN)
		}
		if lay.directN > 0 {
			for l := range w {
				h.ptrs[l] = &blocks[(i+l)*bs+lay.directOff]
			}
			kernel(h.st, &h.ptrs, lay.directN)
		}
		if lay.tailN > 0 {
			for l := range w {
				h.ptrs[l] = &h.scr[l*sz+lay.headN*64]
			}
			kernel(h.st, &h.ptrs, lay.tailN)
		}
		for l := range w {
			d := dst[(i+l)*stride : (i+l)*stride+4*words]
			for j, v := range h.st[l*words : (l+1)*words] {
				binary.BigEndian.PutUint32(d[4*j:], v)
			}
		}
	}
	h.ptrs = [4]*byte{} // don't keep the caller's blocks alive
}
