package hashes

import (
	"bytes"
	"math/rand/v2"
	"syscall"
	"testing"
)

// guarded returns n bytes that start right after and end right before an
// inaccessible page, so an implementation reading outside blocks faults.
func guarded(t *testing.T, n int) []byte {
	page := syscall.Getpagesize()
	data := (n + page - 1) / page * page
	mem, err := syscall.Mmap(-1, 0, data+2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skip("mmap:", err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[:page], syscall.PROT_NONE); err != nil {
		t.Skip("mprotect:", err)
	}
	if err := syscall.Mprotect(mem[page+data:], syscall.PROT_NONE); err != nil {
		t.Skip("mprotect:", err)
	}
	return mem[page+data-n : page+data]
}

// TestHashBlocksStaysInBounds hashes blocks that end at a guard page (and,
// for whole pages, start at one) with every implementation.
func TestHashBlocksStaysInBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, a := range all {
		ref := reference(t, a)
		for _, impl := range a.Implementations() {
			for _, bs := range []int{1, 63, 64, 100, 128, 4096} {
				for _, ss := range []int{0, 32, 100} {
					for _, pos := range []SaltPosition{SaltBefore, SaltAfter} {
						for _, count := range []int{1, 5, 17} {
							salt := randBytes(rng, ss)
							bh, err := a.NewBlockHasherImpl(impl, bs, salt, pos)
							if err != nil {
								t.Fatal(err)
							}
							blocks := guarded(t, bs*count)
							copy(blocks, randBytes(rng, len(blocks)))
							dst := make([]byte, a.Size()*count)
							bh.HashBlocks(dst, a.Size(), blocks)
							for i := range count {
								want := refSum(ref, salt, blocks[i*bs:(i+1)*bs], pos)
								if !bytes.Equal(dst[i*a.Size():(i+1)*a.Size()], want) {
									t.Fatalf("%s/%s bs %d salt %d pos %d count %d: block %d differs", a.Name(), impl, bs, ss, pos, count, i)
								}
							}
						}
					}
				}
			}
		}
	}
}
