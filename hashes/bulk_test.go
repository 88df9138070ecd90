package hashes

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestHashBlocksEveryShape runs every implementation this machine can run
// (including the SIMD ones, which TestHashBlocksAllImplementations samples)
// over the grid of block sizes, salt sizes, both salt positions and counts
// around the lane counts (1..4 SHA-NI streams, 4/8/16 vector lanes, two
// groups), with the blocks at odd addresses, against the reference.
func TestHashBlocksEveryShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	blockSizes := []int{1, 31, 32, 33, 55, 64, 65, 96, 100, 127, 128, 129, 160, 4096}
	saltSizes := []int{0, 1, 31, 32, 33, 64, 96, 100, 128, 160, 256, 1000}
	counts := []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33}
	if testing.Short() {
		counts = []int{1, 3, 5, 16, 17, 33}
		// Empty, one byte, odd, one sha256 block, one sha512 block, many.
		saltSizes = []int{0, 1, 33, 64, 100, 128, 1000}
	}
	for _, a := range all {
		ref := reference(t, a)
		for _, impl := range a.Implementations() {
			if impl == "generic" {
				continue
			}
			t.Run(a.Name()+"/"+impl, func(t *testing.T) {
				for _, bs := range blockSizes {
					for _, ss := range saltSizes {
						for _, pos := range []SaltPosition{SaltBefore, SaltAfter} {
							salt := randBytes(rng, ss)
							bh, err := a.NewBlockHasherImpl(impl, bs, salt, pos)
							if err != nil {
								t.Fatal(err)
							}
							for _, count := range counts {
								if bs*count > 1<<17 && count%8 != 1 {
									continue
								}
								shift := rng.IntN(64)
								buf := randBytes(rng, bs*count+shift)
								blocks := buf[shift:]
								dst := make([]byte, a.Size()*count)
								bh.HashBlocks(dst, a.Size(), blocks)
								for i := range count {
									want := refSum(ref, salt, blocks[i*bs:(i+1)*bs], pos)
									if got := dst[i*a.Size() : (i+1)*a.Size()]; !bytes.Equal(got, want) {
										t.Fatalf("block size %d, salt %d, pos %d, count %d: block %d: %x, want %x",
											bs, ss, pos, count, i, got, want)
									}
								}
							}
						}
					}
				}
			})
		}
	}
}

// TestHashBlocksReusedHasher checks that a BlockHasher gives the same digests
// on repeated and interleaved calls of different lengths (state and scratch
// of one call must not leak into the next).
func TestHashBlocksReusedHasher(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, a := range all {
		ref := reference(t, a)
		for _, impl := range a.Implementations() {
			salt := randBytes(rng, 32)
			bh, err := a.NewBlockHasherImpl(impl, 4096, salt, SaltBefore)
			if err != nil {
				t.Fatal(err)
			}
			for _, count := range []int{33, 1, 17, 2, 40} {
				blocks := randBytes(rng, 4096*count)
				dst := make([]byte, 64*count)
				bh.HashBlocks(dst, 64, blocks)
				for i := range count {
					want := refSum(ref, salt, blocks[i*4096:(i+1)*4096], SaltBefore)
					if !bytes.Equal(dst[64*i:64*i+a.Size()], want) {
						t.Fatalf("%s/%s count %d block %d differs", a.Name(), impl, count, i)
					}
				}
			}
		}
	}
}

func ExampleAlgorithm_Implementations() {
	fmt.Println(SHA256.Implementations()[len(SHA256.Implementations())-1])
	// Output: generic
}
