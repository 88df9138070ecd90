package merkle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/veritytree/veritytree/hashes"
)

// builtTree is a random image and its tree, in memory.
type builtTree struct {
	g          *Geometry
	data, hash *memFile
	root       []byte
}

func buildRandom(t testing.TB, rng *rand.Rand, p Params) *builtTree {
	g, err := NewGeometry(p)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, g.DataSize())
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	hash := &memFile{b: make([]byte, p.HashOffset)}
	root, err := Build(context.Background(), g, &memFile{b: data}, hash, &BuildOptions{Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	hash.b = append(hash.b, make([]byte, int(g.HashEnd())-len(hash.b))...)
	return &builtTree{g: g, data: &memFile{b: data}, hash: hash, root: root}
}

func TestVerifyIntact(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range campaignSize(40, 12) {
		p := randomParams(rng)
		bt := buildRandom(t, rng, p)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			for _, jobs := range []int{1, 2} {
				if jobs == 2 {
					smallChunks(t)
				}
				rep, err := Verify(context.Background(), bt.g, bt.data, bt.hash, bt.root, &VerifyOptions{Jobs: jobs})
				if err != nil {
					t.Fatalf("jobs %d: %v", jobs, err)
				}
				if !rep.OK() || len(rep.Problems) != 0 || rep.RootMismatch || rep.UncheckedDataBlocks != 0 {
					t.Fatalf("jobs %d: intact image reported: %+v %v", jobs, rep, rep.Problems)
				}
			}
		})
	}
}

// target is where a campaign flips a byte and what Verify must then name.
type target struct {
	kind   string
	offset uint64 // in its file
	want   CorruptionError
}

// pickTarget chooses a byte in the data, in a used digest slot or in the
// padding of a random hash block of a random level, or in the superblock
// area, and says which block Verify must report.
func pickTarget(rng *rand.Rand, bt *builtTree) target {
	g := bt.g
	hbs := uint64(g.HashBlockSize)
	for {
		switch rng.IntN(4) {
		case 0:
			i := rng.Uint64N(g.DataBlocks)
			off := i*uint64(g.DataBlockSize) + rng.Uint64N(uint64(g.DataBlockSize))
			return target{"data", off, CorruptionError{Level: DataLevel, Index: i, Offset: i * uint64(g.DataBlockSize)}}
		case 1, 2:
			if g.Levels == 0 {
				continue
			}
			level := rng.IntN(g.Levels)
			i := rng.Uint64N(g.LevelBlocks[level])
			off := g.BlockOffset(Level(level), i) + rng.Uint64N(hbs)
			return target{fmt.Sprintf("hash level %d", level), off, CorruptionError{Level: Level(level), Index: i, Offset: g.BlockOffset(Level(level), i)}}
		case 3:
			if !g.Superblock {
				continue
			}
			// Reserved bytes, salt padding and the gap up to the tree: bytes
			// that are zero whatever the parameters.
			area := g.TreeOffset() - g.HashOffset
			for {
				o := rng.Uint64N(area)
				if o >= SuperblockSize || (o >= 82 && o < 88) || (o >= 88+uint64(len(g.Salt))) {
					return target{"superblock area", g.HashOffset + o, CorruptionError{Level: HeaderLevel, Offset: g.HashOffset + o}}
				}
			}
		}
	}
}

// TestVerifyCorruptionCampaign flips one random byte at a time, everywhere,
// and checks that Verify finds exactly that block, then restores it.
func TestVerifyCorruptionCampaign(t *testing.T) {
	smallChunks(t) // corruption found in any chunk and read, not just the first
	rng := rand.New(rand.NewPCG(21, 22))
	images, flips := 40, 60
	if testing.Short() {
		images = 10
	}
	counts := map[string]int{}
	for img := range images {
		p := randomParams(rng)
		bt := buildRandom(t, rng, p)
		for range flips {
			tg := pickTarget(rng, bt)
			file := bt.hash
			if tg.kind == "data" {
				file = bt.data
			}
			orig := file.b[tg.offset]
			file.b[tg.offset] ^= byte(1 + rng.IntN(255))
			rep, err := Verify(context.Background(), bt.g, bt.data, bt.hash, bt.root, &VerifyOptions{Jobs: 1 + rng.IntN(3)})
			file.b[tg.offset] = orig
			if err != nil {
				t.Fatalf("image %d, %s: %v", img, tg.kind, err)
			}
			if rep.OK() || len(rep.Problems) != 1 {
				t.Fatalf("image %d (%+v): flip in %s at %d: want one problem, got %d: %v", img, p, tg.kind, tg.offset, len(rep.Problems), rep.Problems)
			}
			got := rep.Problems[0]
			if got.Level != tg.want.Level || got.Index != tg.want.Index || got.Offset != tg.want.Offset {
				t.Fatalf("image %d: flip in %s at %d: reported %v, want level %d index %d offset %d",
					img, tg.kind, tg.offset, got, tg.want.Level, tg.want.Index, tg.want.Offset)
			}
			if !errors.Is(got, ErrCorrupt) {
				t.Fatal("problem does not wrap ErrCorrupt")
			}
			counts[tg.kind]++
		}
		// Restored: clean again.
		if rep, err := Verify(context.Background(), bt.g, bt.data, bt.hash, bt.root, nil); err != nil || !rep.OK() {
			t.Fatalf("image %d after restoring: %v %v", img, err, rep.Problems)
		}
	}
	t.Logf("single-byte flips found and located: %v", counts)
}

func TestVerifyWrongRootAndManyProblems(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	p := Params{Hash: randomParams(rng).Hash, DataBlockSize: 512, HashBlockSize: 512, DataBlocks: 1000, Superblock: true}
	bt := buildRandom(t, rng, p)
	wrong := bytes.Clone(bt.root)
	wrong[0] ^= 1
	rep, err := Verify(context.Background(), bt.g, bt.data, bt.hash, wrong, nil)
	if err != nil {
		t.Fatal(err)
	}
	top := bt.g.Levels - 1
	if !rep.RootMismatch || len(rep.Problems) != 1 || rep.Problems[0].Level != Level(top) || rep.UncheckedDataBlocks != 1000 {
		t.Fatalf("wrong root: %+v %v", rep, rep.Problems)
	}
	// Every data block corrupted: all counted, the list capped.
	for i := uint64(0); i < 1000; i++ {
		bt.data.b[i*512+7] ^= 0x40
	}
	rep, err = Verify(context.Background(), bt.g, bt.data, bt.hash, bt.root, &VerifyOptions{MaxProblems: 10})
	if err != nil {
		t.Fatal(err)
	}
	if rep.CorruptDataBlocks != 1000 || len(rep.Problems) != 10 || !rep.Truncated {
		t.Fatalf("1000 corrupted blocks: count %d, listed %d, truncated %v", rep.CorruptDataBlocks, len(rep.Problems), rep.Truncated)
	}
	for i, pr := range rep.Problems {
		if pr.Level != DataLevel || pr.Index != uint64(i) {
			t.Fatalf("problem %d is %v", i, pr)
		}
	}
}

func TestVerifyShortHashDevice(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	bt := buildRandom(t, rng, Params{Hash: randomParams(rng).Hash, DataBlockSize: 4096, HashBlockSize: 4096, DataBlocks: 300, Superblock: true})
	short := &memFile{b: bt.hash.b[:len(bt.hash.b)-100]}
	_, err := Verify(context.Background(), bt.g, bt.data, short, bt.root, nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short hash device: %v", err)
	}
	if _, err := Verify(context.Background(), bt.g, bt.data, bt.hash, bt.root[:5], nil); err == nil {
		t.Fatal("short root accepted")
	}
}

// TestVerifyOnProblem: the callback sees every problem in order, past the
// cap, so that a caller can stream them in bounded memory.
func TestVerifyOnProblem(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	p := Params{Hash: randomParams(rng).Hash, DataBlockSize: 512, HashBlockSize: 4096, DataBlocks: 1000, Superblock: true}
	bt := buildRandom(t, rng, p)
	bt.hash.b[bt.g.HashOffset+SuperblockSize+3] = 1 // the zero gap after the superblock
	bt.hash.b[bt.g.BlockOffset(0, 1)] ^= 1
	for i := uint64(0); i < 1000; i += 2 {
		bt.data.b[i*512] ^= 0x40
	}
	var seen []*CorruptionError
	rep, err := Verify(context.Background(), bt.g, bt.data, bt.hash, bt.root, &VerifyOptions{Jobs: 2, MaxProblems: 3,
		OnProblem: func(e *CorruptionError) { seen = append(seen, e) }})
	if err != nil {
		t.Fatal(err)
	}
	total := rep.CorruptHeaderBytes + rep.CorruptHashBlocks + rep.CorruptDataBlocks
	if len(rep.Problems) != 3 || !rep.Truncated || uint64(len(seen)) != total || total < 400 {
		t.Fatalf("listed %d, truncated %v, seen %d of %d", len(rep.Problems), rep.Truncated, len(seen), total)
	}
	for i, pr := range rep.Problems {
		if seen[i] != pr {
			t.Fatalf("problem %d: listed %v, called with %v", i, pr, seen[i])
		}
	}
	if seen[0].Level != HeaderLevel || seen[1].Level != 0 || seen[1].Index != 1 || seen[len(seen)-1].Level != DataLevel {
		t.Fatalf("order: %v, %v, ..., %v", seen[0], seen[1], seen[len(seen)-1])
	}
	for i := 3; i < len(seen); i++ {
		if seen[i-1].Level == DataLevel && seen[i].Index <= seen[i-1].Index {
			t.Fatalf("data problems out of order: %v then %v", seen[i-1], seen[i])
		}
	}
}

// A hash block's bad padding is told from a digest mismatch by Fault, and
// its place by PaddingAt, without reading Reason.
func TestVerifyFaultPadding(t *testing.T) {
	for _, pad := range []bool{true, false} {
		bt := buildRandom(t, rand.New(rand.NewPCG(5, 6)), Params{Hash: hashes.SHA256, DataBlockSize: 4096, HashBlockSize: 4096, DataBlocks: 3})
		const at = 3*32 + 5 // past the three digests of the only hash block
		want := CorruptionError{Level: DataLevel, Index: 1, Offset: 4096, Fault: FaultDigest}
		if pad {
			bt.hash.b[bt.g.BlockOffset(0, 0)+at] = 1
			want = CorruptionError{Level: 0, Offset: bt.g.BlockOffset(0, 0), Fault: FaultPadding, PaddingAt: at}
		} else {
			bt.data.b[4096] ^= 1
		}
		rep, err := Verify(context.Background(), bt.g, bt.data, bt.hash, bt.root, &VerifyOptions{Jobs: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) != 1 {
			t.Fatalf("padding %v: %d problems, want 1: %v", pad, len(rep.Problems), rep.Problems)
		}
		got := *rep.Problems[0]
		got.Reason = ""
		if got != want {
			t.Errorf("padding %v: got %+v, want %+v", pad, got, want)
		}
	}
}
