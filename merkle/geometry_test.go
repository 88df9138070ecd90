package merkle

import (
	"errors"
	"testing"

	"github.com/veritytree/veritytree/hashes"
)

// naiveLevels computes the level sizes the way the format describes them
// in words: keep dividing (rounding up) until one block is left.
func naiveLevels(dataBlocks uint64, hpb uint64) []uint64 {
	var sizes []uint64
	for n := dataBlocks; n > 1; {
		n = (n + hpb - 1) / hpb
		sizes = append(sizes, n)
	}
	return sizes
}

func TestGeometryShapes(t *testing.T) {
	type tc struct {
		alg       *hashes.Algorithm
		format    int
		hbs       int
		slot, hpb int
	}
	cases := []tc{
		{hashes.SHA256, 1, 4096, 32, 128},
		{hashes.SHA256, 0, 4096, 32, 128},
		{hashes.SHA1, 1, 4096, 32, 128},
		{hashes.SHA1, 0, 4096, 20, 128}, // 204 fit; rounded down to a power of two
		{hashes.SHA512, 1, 512, 64, 8},
		{hashes.SHA512, 0, 1024, 64, 16},
		{hashes.BLAKE2b256, 1, 512, 32, 16},
		{hashes.SHA1, 0, 512, 20, 16}, // 25 fit
		{hashes.SHA256, 1, 512 << 10, 32, 16384},
	}
	for _, c := range cases {
		hpb := uint64(c.hpb)
		for _, n := range []uint64{1, 2, 3, hpb - 1, hpb, hpb + 1, hpb * hpb, hpb*hpb + 1, hpb*hpb*hpb + 7, 1 << 40} {
			g, err := NewGeometry(Params{Hash: c.alg, LegacyFormat: c.format == 0, DataBlockSize: 4096, HashBlockSize: c.hbs, DataBlocks: n})
			if err != nil {
				t.Fatalf("%s/%d/%d blocks: %v", c.alg.Name(), c.hbs, n, err)
			}
			if g.DigestSlot != c.slot || g.HashesPerBlock != c.hpb {
				t.Fatalf("%s format %d hbs %d: slot %d hpb %d, want %d %d", c.alg.Name(), c.format, c.hbs, g.DigestSlot, g.HashesPerBlock, c.slot, c.hpb)
			}
			want := naiveLevels(n, hpb)
			if g.Levels != len(want) {
				t.Fatalf("%d blocks, hpb %d: %d levels, want %d", n, hpb, g.Levels, len(want))
			}
			var total uint64
			for i, w := range want {
				if g.LevelBlocks[i] != w {
					t.Fatalf("%d blocks: level %d has %d blocks, want %d", n, i, g.LevelBlocks[i], w)
				}
				total += w
			}
			if g.HashBlocks != total {
				t.Fatalf("HashBlocks %d, want %d", g.HashBlocks, total)
			}
			// Highest level first, then each lower level right after.
			next := g.HashStartBlock
			for i := g.Levels - 1; i >= 0; i-- {
				if g.LevelStart[i] != next {
					t.Fatalf("level %d starts at %d, want %d", i, g.LevelStart[i], next)
				}
				next += g.LevelBlocks[i]
			}
			if g.Levels > 0 && g.LevelBlocks[g.Levels-1] != 1 {
				t.Fatalf("top level has %d blocks", g.LevelBlocks[g.Levels-1])
			}
		}
	}
}

func TestGeometryHashStart(t *testing.T) {
	for _, c := range []struct {
		hbs        int
		offset     uint64
		superblock bool
		start      uint64
	}{
		{4096, 0, true, 1},
		{4096, 0, false, 0},
		{512, 0, true, 1},
		{1024, 0, true, 1},
		{4096, 3584, true, 1}, // superblock ends exactly at the block boundary
		{4096, 4096, true, 2},
		{4096, 8192, false, 2},
		{512, 1 << 33, true, (1<<33)/512 + 1},
		{4096, 5 << 32, false, (5 << 32) / 4096},
	} {
		g, err := NewGeometry(Params{Hash: hashes.SHA256, DataBlockSize: 4096, HashBlockSize: c.hbs,
			DataBlocks: 1000, HashOffset: c.offset, Superblock: c.superblock})
		if err != nil {
			t.Fatal(err)
		}
		if g.HashStartBlock != c.start {
			t.Errorf("hbs %d offset %d sb %v: start %d, want %d", c.hbs, c.offset, c.superblock, g.HashStartBlock, c.start)
		}
		if g.TreeOffset() != c.start*uint64(c.hbs) || g.HashEnd() != (c.start+g.HashBlocks)*uint64(c.hbs) {
			t.Errorf("TreeOffset %d HashEnd %d", g.TreeOffset(), g.HashEnd())
		}
	}
}

func TestGeometryDigestOffsets(t *testing.T) {
	g, err := NewGeometry(Params{Hash: hashes.SHA1, LegacyFormat: true, DataBlockSize: 512, HashBlockSize: 512,
		DataBlocks: 16*16*16 + 3, Superblock: true, HashOffset: 1 << 32})
	if err != nil {
		t.Fatal(err)
	}
	hbs := uint64(512)
	// Data block 17: level-0 block 1, slot 1, packed 20-byte digests.
	if got, want := g.DigestOffset(-1, 17), (g.LevelStart[0]+1)*hbs+20; got != want {
		t.Errorf("data block 17 digest at %d, want %d", got, want)
	}
	// Level-1 block 35: level-2 block 2, slot 3.
	if got, want := g.DigestOffset(1, 35), (g.LevelStart[2]+2)*hbs+60; got != want {
		t.Errorf("level 1 block 35 digest at %d, want %d", got, want)
	}
	if g.BlockOffset(0, 0) <= 1<<32 {
		t.Errorf("offsets past 4 GiB: level 0 at %d", g.BlockOffset(0, 0))
	}
}

func TestGeometryInvalid(t *testing.T) {
	ok := Params{Hash: hashes.SHA256, DataBlockSize: 4096, HashBlockSize: 4096, DataBlocks: 10, Superblock: true}
	for name, mod := range map[string]func(*Params){
		"no hash":              func(p *Params) { p.Hash = nil },
		"salt 257":             func(p *Params) { p.Salt = make([]byte, 257) },
		"dbs 256":              func(p *Params) { p.DataBlockSize = 256 },
		"dbs 1 MiB":            func(p *Params) { p.DataBlockSize = 1 << 20 },
		"dbs 3000":             func(p *Params) { p.DataBlockSize = 3000 },
		"hbs 64":               func(p *Params) { p.HashBlockSize = 64 },
		"hbs 6144":             func(p *Params) { p.HashBlockSize = 6144 },
		"no data":              func(p *Params) { p.DataBlocks = 0 },
		"data overflows":       func(p *Params) { p.DataBlocks = 1 << 60 },
		"offset 100":           func(p *Params) { p.HashOffset = 100 },
		"offset 512 no sb":     func(p *Params) { p.HashOffset = 512; p.Superblock = false },
		"hash end overflows":   func(p *Params) { p.HashOffset = 1<<63 - 4096 },
		"hash end overflows 2": func(p *Params) { p.HashOffset = 1 << 63; p.Superblock = false },
	} {
		p := ok
		mod(&p)
		if _, err := NewGeometry(p); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("%s: err = %v, want ErrInvalidParams", name, err)
		}
	}
	if _, err := NewGeometry(ok); err != nil {
		t.Fatal(err)
	}
}

func TestLevelString(t *testing.T) {
	for l, want := range map[Level]string{DataLevel: "data", HeaderLevel: "superblock area", PastTreeLevel: "past the tree", 0: "level 0", 3: "level 3", -9: "Level(-9)"} {
		if got := l.String(); got != want {
			t.Errorf("Level(%d).String() = %q, want %q", int(l), got, want)
		}
		if l.IsTree() != (l >= 0) {
			t.Errorf("Level(%d).IsTree() = %v", int(l), l.IsTree())
		}
	}
}
