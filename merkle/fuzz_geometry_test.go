package merkle

import (
	"errors"
	"math/bits"
	"testing"

	"github.com/veritytree/veritytree/hashes"
)

// FuzzNewGeometry: any parameters either fail with ErrInvalidParams or
// give a geometry whose arithmetic does not wrap: levels that shrink to one
// top block, every block's offset inside [TreeOffset, HashEnd), HashEnd
// after the hash offset and below 2^63, and every data block with a parent.
func FuzzNewGeometry(f *testing.F) {
	f.Add("sha256", 1, 4096, 4096, uint64(262144), uint64(0), true, 32)
	f.Add("sha1", 0, 512, 1024, uint64(1), uint64(4096), false, 0)
	f.Add("blake2b-256", 1, 524288, 512, uint64(1)<<40, uint64(1)<<62, true, 256)
	f.Add("sha512", 1, 4096, 4096, ^uint64(0), ^uint64(0)-511, true, 1)
	f.Fuzz(func(t *testing.T, alg string, format, dbs, hbs int, blocks, offset uint64, sb bool, saltLen int) {
		a, err := hashes.Lookup(alg)
		if err != nil {
			return
		}
		if saltLen < 0 || saltLen > 1024 {
			return
		}
		p := Params{Hash: a, LegacyFormat: format == 0, Salt: make([]byte, saltLen), DataBlockSize: dbs, HashBlockSize: hbs,
			DataBlocks: blocks, HashOffset: offset, Superblock: sb}
		g, err := NewGeometry(p)
		if err != nil {
			if !errors.Is(err, ErrInvalidParams) {
				t.Fatalf("error does not wrap ErrInvalidParams: %v", err)
			}
			return
		}
		if hi, _ := bits.Mul64(g.DataBlocks, uint64(g.DataBlockSize)); hi != 0 {
			t.Fatalf("accepted %d blocks of %d bytes: more than 2^64 bytes", g.DataBlocks, g.DataBlockSize)
		}
		end := g.HashEnd()
		if end < g.TreeOffset() || g.TreeOffset() < g.HashOffset || end > 1<<63 {
			t.Fatalf("hash offset %d, tree at %d, end %d", g.HashOffset, g.TreeOffset(), end)
		}
		if g.Levels != len(g.LevelBlocks) || (g.Levels > 0 && g.LevelBlocks[g.Levels-1] != 1) {
			t.Fatalf("%d levels of %v blocks: the top level is not one block", g.Levels, g.LevelBlocks)
		}
		hbsz := uint64(g.HashBlockSize)
		for _, b := range []uint64{0, g.DataBlocks - 1, g.DataBlocks / 2} {
			// From a data block (level -1) up to the top.
			for idx, lvl := b, DataLevel; lvl < g.TopLevel(); lvl++ {
				parent, off := g.Parent(lvl, idx)
				if off < 0 || off+g.DigestSize > g.HashBlockSize {
					t.Fatalf("level %d block %d: digest at %d of a %d-byte block", lvl, idx, off, g.HashBlockSize)
				}
				if parent >= g.LevelBlocks[lvl+1] {
					t.Fatalf("level %d block %d: parent %d of %d blocks", lvl, idx, parent, g.LevelBlocks[lvl+1])
				}
				bo := g.BlockOffset(lvl+1, parent)
				if bo < g.TreeOffset() || bo+hbsz > end || (bo-g.TreeOffset())%hbsz != 0 {
					t.Fatalf("level %d block %d: offset %d outside [%d, %d)", lvl+1, parent, bo, g.TreeOffset(), end)
				}
				idx = parent
			}
		}
	})
}
