package merkle

// Tests of BuildOptions.Runs: blocks whose content the caller knows are not
// read, and the tree is the same as when they are read.

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/veritytree/veritytree/hashes"
)

// runsGuard is an io.ReaderAt over b that fails the test when a read
// touches a block inside one of the runs.
type runsGuard struct {
	t    *testing.T
	b    []byte
	dbs  int64
	runs []Run
	mu   sync.Mutex
	read int64 // bytes read
}

func (r *runsGuard) ReadAt(p []byte, off int64) (int, error) {
	r.mu.Lock()
	r.read += int64(len(p))
	r.mu.Unlock()
	first, end := off/r.dbs, (off+int64(len(p))+r.dbs-1)/r.dbs
	for _, run := range r.runs {
		if int64(run.Start) < end && int64(run.Start+run.Count) > first {
			r.t.Errorf("read of bytes %d+%d touches run %d+%d", off, len(p), run.Start, run.Count)
			break
		}
	}
	return (&memFile{b: r.b}).ReadAt(p, off)
}

// runsImage returns data of blocks blocks with the given runs filled in
// (zeros or their pattern) and random bytes elsewhere.
func runsImage(rng *rand.Rand, dbs int, blocks uint64, runs []Run) []byte {
	data := make([]byte, int(blocks)*dbs)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for _, r := range runs {
		b := data[int(r.Start)*dbs : int(r.Start+r.Count)*dbs]
		if len(r.Pattern) == 0 {
			clear(b)
			continue
		}
		for off := 0; off < len(b); off += len(r.Pattern) {
			copy(b[off:], r.Pattern)
		}
	}
	return data
}

// randomRuns returns sorted, non-overlapping runs over blocks blocks, some
// long (across chunks), some one block, some adjacent, with zero and
// pattern content.
func randomRuns(rng *rand.Rand, dbs int, blocks uint64) []Run {
	patterns := [][]byte{nil, {}, {0xde, 0xad, 0xbe, 0xef}, {1, 2, 3, 4}, bytes.Repeat([]byte{7}, dbs), {0, 0, 0, 0}}
	var runs []Run
	for pos := uint64(0); pos < blocks; {
		pos += uint64(rng.IntN(3000)) / uint64(1+rng.IntN(30))
		if pos >= blocks {
			break
		}
		n := min(blocks-pos, 1+uint64(rng.IntN(5000))/uint64(1+rng.IntN(50)))
		runs = append(runs, Run{Start: pos, Count: n, Pattern: patterns[rng.IntN(len(patterns))]})
		pos += n
	}
	return runs
}

func TestBuildRunsMatchModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	cases := campaignSize(40, 5) // -short: two of them several chunks long (tens of MiB)
	for i := range cases {
		p := randomParams(rng)
		if i%4 == 0 {
			p.DataBlocks = 5000 + uint64(rng.IntN(3000)) // several chunks
		}
		runs := randomRuns(rng, p.DataBlockSize, p.DataBlocks)
		name := fmt.Sprintf("%d-%s-v%d-%d-%d-n%d-runs%d", i, p.Hash.Name(), p.Format(), p.DataBlockSize,
			p.HashBlockSize, p.DataBlocks, len(runs))
		t.Run(name, func(t *testing.T) {
			g, err := NewGeometry(p)
			if err != nil {
				t.Fatal(err)
			}
			data := runsImage(rng, p.DataBlockSize, p.DataBlocks, runs)
			wantTree, wantRoot := naiveTree(p, data)
			for _, jobs := range []int{1, 3} {
				if jobs == 3 {
					smallChunks(t)
				}
				guard := &runsGuard{t: t, b: data, dbs: int64(p.DataBlockSize), runs: runs}
				out := &memFile{}
				root, err := Build(context.Background(), g, guard, out, &BuildOptions{Jobs: jobs, Runs: runs})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(root, wantRoot) {
					t.Fatalf("jobs %d: root %x, want %x", jobs, root, wantRoot)
				}
				out.b = append(out.b, make([]byte, int(g.HashEnd())-len(out.b))...)
				if !bytes.Equal(out.b[g.TreeOffset():], wantTree) {
					t.Fatalf("jobs %d: tree differs from the model", jobs)
				}
				var inRuns uint64
				for _, r := range runs {
					inRuns += r.Count
				}
				if want := int64(p.DataBlocks-inRuns) * int64(p.DataBlockSize); guard.read != want {
					t.Errorf("jobs %d: read %d bytes, want %d (the blocks outside the runs, once)", jobs, guard.read, want)
				}
			}
		})
	}
}

// TestBuildRunsAllKnown: an image made of one run reads nothing at all.
func TestBuildRunsAllKnown(t *testing.T) {
	const blocks = 100000 // 400 MiB of zeros, never read
	g, err := NewGeometry(Params{Hash: hashes.SHA256, Salt: []byte{1, 2, 3},
		DataBlockSize: 4096, HashBlockSize: 4096, DataBlocks: blocks, Superblock: true})
	if err != nil {
		t.Fatal(err)
	}
	runs := []Run{{Start: 0, Count: blocks}}
	guard := &runsGuard{t: t, dbs: 4096, runs: runs}
	root, err := Build(context.Background(), g, guard, &memFile{}, &BuildOptions{Runs: runs})
	if err != nil {
		t.Fatal(err)
	}
	// The same tree with the zeros read (errReaderAt reads as zeros).
	want, err := Build(context.Background(), g, errReaderAt{size: 1 << 40}, &memFile{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(root, want) || guard.read != 0 {
		t.Fatalf("root %x (want %x), %d bytes read (want 0)", root, want, guard.read)
	}
}

func TestBuildRunsInvalid(t *testing.T) {
	g, err := NewGeometry(Params{Hash: hashes.SHA256, DataBlockSize: 4096, HashBlockSize: 4096, DataBlocks: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		runs []Run
		want string
	}{
		{[]Run{{Start: 10, Count: 5}, {Start: 12, Count: 1}}, "Runs[1] (blocks 12+1) is out of order or overlaps"},
		{[]Run{{Start: 10, Count: 5}, {Start: 2, Count: 1}}, "Runs[1] (blocks 2+1) is out of order"},
		{[]Run{{Start: 99, Count: 2}}, "Runs[0] (blocks 99+2) ends past the 100 data blocks"},
		{[]Run{{Start: 100, Count: 1}}, "ends past the 100 data blocks"},
		{[]Run{{Start: 1, Count: 1<<64 - 1}}, "ends past"},
		{[]Run{{Start: 0, Count: 1, Pattern: []byte{1, 2, 3}}}, "3-byte pattern does not repeat evenly in a 4096-byte block"},
		{[]Run{{Start: 0, Count: 1, Pattern: make([]byte, 8192)}}, "8192-byte pattern"},
	} {
		out := &memFile{}
		_, err := Build(context.Background(), g, errReaderAt{size: 1 << 40}, out, &BuildOptions{Runs: tc.runs})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("runs %v: error %v, want one containing %q", tc.runs, err, tc.want)
		}
		if len(out.b) != 0 {
			t.Errorf("runs %v: %d bytes written before the error", tc.runs, len(out.b))
		}
	}
	// Empty runs are ignored wherever they are.
	_, err = Build(context.Background(), g, errReaderAt{size: 1 << 40}, &memFile{}, &BuildOptions{Runs: []Run{{Start: 500}, {Start: 3, Count: 2}, {Start: 0}}})
	if err != nil {
		t.Errorf("empty runs: %v", err)
	}
}

// TestVerifyRuns: Verify given the runs reads only the blocks outside them,
// still finds corruption there, and checks the runs' content against the
// tree: a run that the tree does not agree with is reported, block by block.
func TestVerifyRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	var flips, lies int
	n := campaignSize(12, 4) // -short: each of 1, 2 and 3 jobs still
	for i := range n {
		p := randomParams(rng)
		p.DataBlocks = 2000 + uint64(rng.IntN(3000))
		runs := randomRuns(rng, p.DataBlockSize, p.DataBlocks)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			smallChunks(t)
			g, err := NewGeometry(p)
			if err != nil {
				t.Fatal(err)
			}
			data := runsImage(rng, p.DataBlockSize, p.DataBlocks, runs)
			hash := &memFile{}
			root, err := Build(context.Background(), g, &memFile{b: data}, hash, nil)
			if err != nil {
				t.Fatal(err)
			}
			verify := func(runs []Run, data []byte) (*VerifyReport, *runsGuard) {
				guard := &runsGuard{t: t, b: data, dbs: int64(p.DataBlockSize), runs: runs}
				rep, err := Verify(context.Background(), g, guard, hash, root, &VerifyOptions{Jobs: 1 + i%3, Runs: runs, MaxProblems: -1})
				if err != nil {
					t.Fatal(err)
				}
				return rep, guard
			}
			var inRuns uint64
			for _, r := range runs {
				inRuns += r.Count
			}
			rep, guard := verify(runs, data)
			if !rep.OK() {
				t.Fatalf("intact image with runs: %v", rep.Problems)
			}
			if want := int64(p.DataBlocks-inRuns) * int64(p.DataBlockSize); guard.read != want {
				t.Errorf("read %d bytes, want %d (the blocks outside the runs)", guard.read, want)
			}

			// A flipped byte outside the runs is found.
			var outside []uint64
			for b := uint64(0); b < p.DataBlocks && len(outside) < 50; b++ {
				if !inAnyRun(runs, b) {
					outside = append(outside, b)
				}
			}
			if len(outside) > 0 {
				b := outside[rng.IntN(len(outside))]
				bad := bytes.Clone(data)
				bad[int(b)*p.DataBlockSize+rng.IntN(p.DataBlockSize)] ^= 0x10
				rep, _ = verify(runs, bad)
				flips++
				if rep.CorruptDataBlocks != 1 || rep.Problems[0].Index != b {
					t.Errorf("flip in block %d: %d corrupt, problems %v", b, rep.CorruptDataBlocks, rep.Problems)
				}
			}

			// A run the data does not hold: a stretch of non-run blocks
			// claimed as zeros. Every one of them is reported.
			if len(outside) >= 3 && outside[2] == outside[0]+2 {
				lie := append([]Run{{Start: outside[0], Count: 3}}, runsWithout(runs, outside[0], outside[0]+3)...)
				sortRuns(lie)
				rep, _ = verify(lie, data)
				lies++
				if rep.CorruptDataBlocks != 3 {
					t.Errorf("a false run of 3 blocks: %d corrupt, problems %v", rep.CorruptDataBlocks, rep.Problems)
				}
				for k, pr := range rep.Problems {
					if pr.Level != DataLevel || pr.Index != outside[0]+uint64(k) {
						t.Errorf("problem %d: %v, want data block %d", k, pr, outside[0]+uint64(k))
					}
				}
			}
		})
	}
	if flips < n/2 || lies < n/2 {
		t.Errorf("only %d flips and %d false runs tried; change the seed", flips, lies)
	}
}

func inAnyRun(runs []Run, b uint64) bool {
	for _, r := range runs {
		if b >= r.Start && b < r.Start+r.Count {
			return true
		}
	}
	return false
}

// runsWithout returns the runs that do not touch blocks [from, to).
func runsWithout(runs []Run, from, to uint64) []Run {
	var out []Run
	for _, r := range runs {
		if r.Start+r.Count <= from || r.Start >= to {
			out = append(out, r)
		}
	}
	return out
}

func sortRuns(runs []Run) {
	slices.SortFunc(runs, func(a, b Run) int { return cmp.Compare(a.Start, b.Start) })
}
