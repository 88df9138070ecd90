package merkle

import (
	"runtime"
	"sync"

	"github.com/veritytree/veritytree/hashes"
)

// levelHasher hashes a batch of hash blocks on up to jobs goroutines. The
// levels above the data are small next to it (1/128 of it for SHA-256 and
// 4 KiB blocks, 1/64 for SHA-512), but hashed on one goroutine they would
// bound a build on many cores: at 64 cores the data takes about as long as
// SHA-256 levels hashed serially (and half as long as SHA-512's).
type levelHasher struct {
	hs        []*hashes.BlockHasher
	blockSize int
}

// minLevelPart is the fewest hash blocks worth a goroutine of their own.
var minLevelPart = 16

func newLevelHasher(g *Geometry, jobs int) *levelHasher {
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	n := min(jobs, max(1, int(levelBatchBlocks(g))/minLevelPart))
	h := &levelHasher{blockSize: g.HashBlockSize}
	for range n {
		h.hs = append(h.hs, g.Hash.NewBlockHasher(g.HashBlockSize, g.Salt, g.SaltPosition()))
	}
	return h
}

// HashBlocks is BlockHasher.HashBlocks, split into parts of at least
// minLevelPart blocks hashed concurrently.
func (h *levelHasher) HashBlocks(dst []byte, stride int, blocks []byte) {
	bs := h.blockSize
	n := len(blocks) / bs
	parts := min(len(h.hs), n/minLevelPart)
	if parts <= 1 {
		h.hs[0].HashBlocks(dst, stride, blocks)
		return
	}
	per := (n + parts - 1) / parts
	var wg sync.WaitGroup
	for p := 1; p < parts; p++ {
		from, to := p*per, min(n, (p+1)*per)
		if from >= to {
			break
		}
		wg.Go(func() { h.hs[p].HashBlocks(dst[from*stride:], stride, blocks[from*bs:to*bs]) })
	}
	h.hs[0].HashBlocks(dst, stride, blocks[:per*bs])
	wg.Wait()
}
