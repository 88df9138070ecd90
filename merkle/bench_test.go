package merkle

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/veritytree/veritytree/hashes"
)

// BenchmarkBuild and BenchmarkVerify run the whole pipeline (reads into the
// workers' buffers, hashing on every CPU, the tree levels) on a 64 MiB image
// in memory: the figure to compare with BenchmarkHashBlocks' per-core speed
// times the CPUs, without the page cache and the file system.
func BenchmarkBuild(b *testing.B) {
	for _, a := range []*hashes.Algorithm{hashes.SHA256, hashes.SHA1, hashes.SHA512, hashes.BLAKE2b256} {
		b.Run(fmt.Sprintf("%s/jobs%d", a.Name(), runtime.GOMAXPROCS(0)), func(b *testing.B) {
			bt := benchTree(b, a)
			b.SetBytes(int64(bt.g.DataSize()))
			for b.Loop() {
				if _, err := Build(context.Background(), bt.g, bt.data, discard{}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerify(b *testing.B) {
	for _, a := range []*hashes.Algorithm{hashes.SHA256, hashes.SHA1, hashes.SHA512, hashes.BLAKE2b256} {
		b.Run(fmt.Sprintf("%s/jobs%d", a.Name(), runtime.GOMAXPROCS(0)), func(b *testing.B) {
			bt := benchTree(b, a)
			b.SetBytes(int64(bt.g.DataSize()))
			for b.Loop() {
				rep, err := Verify(context.Background(), bt.g, bt.data, bt.hash, bt.root, nil)
				if err != nil || !rep.OK() {
					b.Fatal(err, rep)
				}
			}
		})
	}
}

func benchTree(b *testing.B, a *hashes.Algorithm) *builtTree {
	return buildRandom(b, rand.New(rand.NewPCG(1, 2)), Params{Hash: a, Salt: make([]byte, 32),
		DataBlockSize: 4096, HashBlockSize: 4096, DataBlocks: 64 << 20 / 4096, Superblock: true})
}

// BenchmarkLevelHasher hashes one batch of hash blocks (levelBatchBytes)
// as the tree levels are hashed, on one goroutine and on every CPU.
func BenchmarkLevelHasher(b *testing.B) {
	for _, a := range []*hashes.Algorithm{hashes.SHA256, hashes.SHA512} {
		for _, jobs := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("%s/jobs%d", a.Name(), jobs), func(b *testing.B) {
				g, err := NewGeometry(Params{Hash: a, Salt: make([]byte, 32), DataBlockSize: 4096,
					HashBlockSize: 4096, DataBlocks: 1 << 20})
				if err != nil {
					b.Fatal(err)
				}
				h := newLevelHasher(g, jobs)
				blocks := make([]byte, levelBatchBlocks(g)*4096)
				dst := make([]byte, levelBatchBlocks(g)*uint64(g.DigestSlot))
				b.SetBytes(int64(len(blocks)))
				for b.Loop() {
					h.HashBlocks(dst, g.DigestSlot, blocks)
				}
			})
		}
	}
}

// BenchmarkReader reads a 64 MiB image through the verifying Reader:
// sequentially in 128 KiB reads (as a file system reads ahead), and 4 KiB
// reads at random places (the tree's hash blocks cached after the first).
func BenchmarkReader(b *testing.B) {
	bt := benchTree(b, hashes.SHA256)
	r, err := NewReader(bt.g, bt.data, bt.hash, bt.root, nil)
	if err != nil {
		b.Fatal(err)
	}
	size := int64(bt.g.DataSize())
	b.Run("seq128k", func(b *testing.B) {
		buf := make([]byte, 128<<10)
		b.SetBytes(size)
		for b.Loop() {
			for off := int64(0); off < size; off += int64(len(buf)) {
				if _, err := r.ReadAt(buf, off); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("rand4k", func(b *testing.B) {
		buf := make([]byte, 4096)
		rng := rand.New(rand.NewPCG(5, 6))
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			if _, err := r.ReadAt(buf, rng.Int64N(size/4096)*4096); err != nil {
				b.Fatal(err)
			}
		}
	})
}
