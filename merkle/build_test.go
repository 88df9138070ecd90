package merkle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/hashes"
)

// memFile is an in-memory io.ReaderAt and io.WriterAt that grows on write.
type memFile struct{ b []byte }

func (m *memFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(m.b)) {
		return 0, io.EOF
	}
	n := copy(p, m.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (m *memFile) WriteAt(p []byte, off int64) (int, error) {
	if end := int(off) + len(p); end > len(m.b) {
		m.b = append(m.b, make([]byte, end-len(m.b))...)
	}
	return copy(m.b[off:], p), nil
}

// naiveTree builds the whole tree in memory, level by level, straight from
// the format's description, with the standard streaming hash: the model
// Build is checked against. It returns the hash area (tree only) and root.
func naiveTree(p Params, data []byte) (tree, root []byte) {
	h := p.Hash.New()
	digest := func(block []byte) []byte {
		h.Reset()
		if !p.LegacyFormat {
			h.Write(p.Salt)
			h.Write(block)
		} else {
			h.Write(block)
			h.Write(p.Salt)
		}
		return h.Sum(nil)
	}
	ds := p.Hash.Size()
	slot := ds
	if !p.LegacyFormat {
		for slot = 1; slot < ds; slot *= 2 {
		}
	}
	hpb := 1
	for hpb*2 <= p.HashBlockSize/ds {
		hpb *= 2
	}
	var blocks [][]byte
	for i := uint64(0); i < p.DataBlocks; i++ {
		blocks = append(blocks, data[i*uint64(p.DataBlockSize):(i+1)*uint64(p.DataBlockSize)])
	}
	var levels [][]byte
	for len(blocks) > 1 {
		var level []byte
		var next [][]byte
		for i := 0; i < len(blocks); i += hpb {
			hb := make([]byte, p.HashBlockSize)
			for j := 0; j < hpb && i+j < len(blocks); j++ {
				copy(hb[j*slot:], digest(blocks[i+j]))
			}
			level = append(level, hb...)
			next = append(next, hb)
		}
		levels = append(levels, level)
		blocks = next
	}
	for i := len(levels) - 1; i >= 0; i-- {
		tree = append(tree, levels[i]...)
	}
	return tree, digest(blocks[0])
}

// campaignSize is how many random cases a campaign draws: full, or a prefix of
// them (short) under -short, which keeps the quick command quick; the
// full campaign runs without -short (.ci/run).
func campaignSize(full, short int) int {
	if testing.Short() {
		return short
	}
	return full
}

func randomParams(rng *rand.Rand) Params {
	algs := []*hashes.Algorithm{hashes.SHA1, hashes.SHA256, hashes.SHA512, hashes.BLAKE2b256}
	sizes := []int{512, 1024, 2048, 4096, 8192}
	p := Params{
		Hash:          algs[rng.IntN(len(algs))],
		LegacyFormat:  rng.IntN(2) == 0,
		Salt:          make([]byte, []int{0, 1, 32, 100, 256}[rng.IntN(5)]),
		DataBlockSize: sizes[rng.IntN(len(sizes))],
		HashBlockSize: sizes[rng.IntN(len(sizes))],
	}
	for i := range p.Salt {
		p.Salt[i] = byte(rng.Uint32())
	}
	switch rng.IntN(3) {
	case 0:
		p.DataBlocks = uint64(1 + rng.IntN(4))
	case 1:
		p.DataBlocks = uint64(1 + rng.IntN(300))
	default:
		p.DataBlocks = uint64(1 + rng.IntN(3000))
	}
	if rng.IntN(2) == 0 {
		p.Superblock = true
		p.HashOffset = uint64(rng.IntN(20)) * 512
	} else {
		p.HashOffset = uint64(rng.IntN(3)) * uint64(p.HashBlockSize)
	}
	p.UUID[3] = byte(rng.Uint32())
	return p
}

func TestBuildMatchesNaiveModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range campaignSize(60, 20) {
		p := randomParams(rng)
		name := fmt.Sprintf("%d-%s-v%d-%d-%d-n%d-salt%d-sb%v-off%d", i, p.Hash.Name(), p.Format(), p.DataBlockSize,
			p.HashBlockSize, p.DataBlocks, len(p.Salt), p.Superblock, p.HashOffset)
		t.Run(name, func(t *testing.T) {
			g, err := NewGeometry(p)
			if err != nil {
				t.Fatal(err)
			}
			data := make([]byte, g.DataSize()+uint64(rng.IntN(100)))
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
			wantTree, wantRoot := naiveTree(p, data)
			for _, jobs := range []int{1, 3} {
				if jobs == 3 {
					smallChunks(t)
				}
				// Bytes before the hash offset must stay as they were.
				out := &memFile{b: bytes.Repeat([]byte{0xcc}, int(p.HashOffset))}
				root, err := Build(context.Background(), g, &memFile{b: data}, out, &BuildOptions{Jobs: jobs})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(root, wantRoot) {
					t.Fatalf("jobs %d: root %x, want %x", jobs, root, wantRoot)
				}
				if uint64(len(out.b)) > g.HashEnd() {
					t.Fatalf("wrote %d bytes, past the tree's end %d", len(out.b), g.HashEnd())
				}
				// An empty tree (one data block) writes nothing; pad to compare.
				out.b = append(out.b, make([]byte, int(g.HashEnd())-len(out.b))...)
				if !bytes.Equal(out.b[:p.HashOffset], bytes.Repeat([]byte{0xcc}, int(p.HashOffset))) {
					t.Fatalf("bytes before the hash offset changed")
				}
				if p.Superblock {
					sb := out.b[p.HashOffset : p.HashOffset+SuperblockSize]
					if !bytes.Equal(sb, EncodeSuperblock(g)) {
						t.Fatalf("superblock differs")
					}
					if firstNonZero(out.b[p.HashOffset+SuperblockSize:g.TreeOffset()]) >= 0 {
						t.Fatalf("gap between superblock and tree not zero")
					}
				}
				if !bytes.Equal(out.b[g.TreeOffset():], wantTree) {
					t.Fatalf("jobs %d: tree differs from the model", jobs)
				}
			}
		})
	}
}

// smallChunks makes the pipeline use chunks and reads of a few blocks, and
// level batches of a few hash blocks hashed in parts of two, for the rest of
// the test, so that small images cross many chunk, read and batch
// boundaries (none a multiple of another). Not for parallel tests.
func smallChunks(t *testing.T) {
	chunk, read, batch, part := chunkBytes, readBytes, levelBatchBytes, minLevelPart
	chunkBytes, readBytes, levelBatchBytes, minLevelPart = 7*4096, 3*4096, 5*4096, 2
	t.Cleanup(func() { chunkBytes, readBytes, levelBatchBytes, minLevelPart = chunk, read, batch, part })
}

// errReaderAt fails (or ends) at a given offset.
type errReaderAt struct {
	size int64
	err  error
}

func (r errReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) <= r.size {
		clear(p)
		return len(p), nil
	}
	n := max(0, int(r.size-off))
	clear(p[:n])
	return n, r.err
}

type errWriterAt struct{ after int }

func (w *errWriterAt) WriteAt(p []byte, off int64) (int, error) {
	if w.after == 0 {
		return 0, errors.New("disk full")
	}
	w.after--
	return len(p), nil
}

func TestBuildErrors(t *testing.T) {
	g, err := NewGeometry(Params{Hash: hashes.SHA256, DataBlockSize: 4096, HashBlockSize: 4096,
		DataBlocks: 2000, Superblock: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, jobs := range []int{1, 2, 8} {
		_, err := Build(context.Background(), g, errReaderAt{size: 1000*4096 + 17, err: io.EOF}, &memFile{}, &BuildOptions{Jobs: jobs})
		if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "block 1000") {
			t.Errorf("jobs %d, short data: %v", jobs, err)
		}
		ioErr := errors.New("medium error")
		_, err = Build(context.Background(), g, errReaderAt{size: 5 * 4096, err: ioErr}, &memFile{}, &BuildOptions{Jobs: jobs})
		if !errors.Is(err, ioErr) || !strings.Contains(err.Error(), "block 5") {
			t.Errorf("jobs %d, read error: %v", jobs, err)
		}
		_, err = Build(context.Background(), g, errReaderAt{size: 1 << 40}, &errWriterAt{after: 1}, &BuildOptions{Jobs: jobs})
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("jobs %d, write error: %v", jobs, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = Build(ctx, g, errReaderAt{size: 1 << 40}, &memFile{}, &BuildOptions{Jobs: jobs})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("jobs %d, canceled: %v", jobs, err)
		}
	}
}

func TestBuildProgress(t *testing.T) {
	g, _ := NewGeometry(Params{Hash: hashes.SHA1, DataBlockSize: 512, HashBlockSize: 4096, DataBlocks: 5000})
	var last uint64
	_, err := Build(context.Background(), g, errReaderAt{size: 1 << 40}, &memFile{}, &BuildOptions{Jobs: 2,
		Progress: func(done uint64) {
			if done <= last {
				t.Errorf("progress went from %d to %d", last, done)
			}
			last = done
		}})
	if err != nil || last != g.DataSize() {
		t.Fatalf("err %v, last progress %d, want %d", err, last, g.DataSize())
	}
}

// discard is a WriterAt that keeps nothing, so the test measures Build's
// own memory.
type discard struct{}

func (discard) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }

// TestBuildMemoryBounded: allocations do not grow with the image size.
func TestBuildMemoryBounded(t *testing.T) {
	// Level batches of 16 blocks, so that both images fill them.
	old := levelBatchBytes
	levelBatchBytes = 16 * 4096
	defer func() { levelBatchBytes = old }()
	alloc := func(blocks uint64) uint64 {
		g, _ := NewGeometry(Params{Hash: hashes.SHA1, DataBlockSize: 4096, HashBlockSize: 4096, DataBlocks: blocks})
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := Build(context.Background(), g, errReaderAt{size: 1 << 50}, discard{}, &BuildOptions{Jobs: 2}); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	// From 128 MiB on, every buffer is at its cap (level 0 has more blocks
	// than one batch holds).
	small, large := alloc(1<<15), alloc(1<<19) // 128 MiB and 2 GiB images
	t.Logf("allocated %d bytes for 128 MiB, %d for 2 GiB", small, large)
	if large > small+small/2 {
		t.Fatalf("allocations grow with the image: %d bytes for 128 MiB, %d for 2 GiB", small, large)
	}
}
