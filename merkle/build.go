package merkle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"sync"

	"github.com/veritytree/veritytree/hashes"
)

// BuildOptions tune Build. The zero value is ready to use.
type BuildOptions struct {
	// Jobs is how many goroutines hash data blocks; 0 means one per CPU.
	// The output is the same for every value.
	Jobs int
	// Progress, if set, is called from one goroutine with the number of
	// data bytes hashed so far.
	Progress func(done uint64)
	// Runs, if set, lists runs of data blocks whose content the caller
	// already knows (holes of a sparse file, FILL and DONT_CARE chunks of
	// an Android sparse image): Build hashes one such block once and uses
	// its digest for every block of the run, without reading the run from
	// data. The runs must be sorted by Start and must not overlap; Build
	// trusts their content (a wrong run gives a wrong tree). The tree is
	// the same as without Runs when the promise holds.
	Runs []Run
}

// Run is a run of Count data blocks from data block Start on, each of which
// is Pattern repeated to the data block size; an empty Pattern means zeros.
// len(Pattern) must divide the data block size.
type Run struct {
	Start, Count uint64
	Pattern      []byte
}

// knownRun is a Run with its block digest, as the chunk hasher uses it.
type knownRun struct {
	start, end uint64 // data block indexes, end exclusive
	digest     []byte
}

// prepareRuns checks runs against g and computes the digest of each
// distinct pattern once.
func prepareRuns(g *Geometry, runs []Run) ([]knownRun, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	dbs := g.DataBlockSize
	h := g.Hash.NewBlockHasher(dbs, g.Salt, g.SaltPosition())
	digests := map[string][]byte{}
	block := make([]byte, dbs)
	out := make([]knownRun, 0, len(runs))
	var prevEnd uint64
	for i, r := range runs {
		switch {
		case r.Count == 0:
			continue
		case r.Start < prevEnd:
			return nil, fmt.Errorf("merkle: BuildOptions.Runs[%d] (blocks %d+%d) is out of order or overlaps the run before it", i, r.Start, r.Count)
		case r.Start >= g.DataBlocks || r.Count > g.DataBlocks-r.Start:
			return nil, fmt.Errorf("merkle: BuildOptions.Runs[%d] (blocks %d+%d) ends past the %d data blocks", i, r.Start, r.Count, g.DataBlocks)
		case len(r.Pattern) > dbs || len(r.Pattern) > 0 && dbs%len(r.Pattern) != 0:
			return nil, fmt.Errorf("merkle: BuildOptions.Runs[%d]: a %d-byte pattern does not repeat evenly in a %d-byte block", i, len(r.Pattern), dbs)
		}
		prevEnd = r.Start + r.Count
		d, ok := digests[string(r.Pattern)]
		if !ok {
			if len(r.Pattern) == 0 {
				clear(block)
			} else {
				for off := 0; off < dbs; off += len(r.Pattern) {
					copy(block[off:], r.Pattern)
				}
			}
			d = make([]byte, g.DigestSize)
			h.HashBlocks(d, g.DigestSize, block)
			digests[string(r.Pattern)] = d
		}
		if n := len(out); n > 0 && out[n-1].end == r.Start && bytes.Equal(out[n-1].digest, d) {
			out[n-1].end = prevEnd // adjacent runs of the same content
			continue
		}
		out = append(out, knownRun{start: r.Start, end: prevEnd, digest: d})
	}
	return out, nil
}

// chunkBytes is how much data one job covers: the unit of ordered delivery.
// Large, so that handing chunks between goroutines costs little.
var chunkBytes = 4 << 20

// readBytes is how much data a worker reads at once into its own buffer and
// hashes before the next read. Large reads keep the system calls few, and a
// buffer reused for every read stays in the core's L2 cache, so hashing
// reads back what the page-cache copy just wrote instead of fetching it from
// memory again: on an AMD EPYC VM (1 MiB L2) 256 KiB reads made veritygen 1.2x
// faster than 1 MiB ones, and 64-512 KiB were all within a few percent.
var readBytes = 256 << 10

// levelBatchBytes bounds the hash blocks buffered per level before they are
// hashed into the level above (on every CPU: levelHasher) and written out.
// On this 2-vCPU VM, where waking an idle thread takes about 0.1 ms, two
// goroutines hashed a 1 MiB batch of SHA-256 blocks 1.0x as fast as one
// (4 MiB: 1.4x, 16 MiB: 1.7x), but 4 MiB batches made veritycheck 14%
// slower on a 1 GiB image: 1 MiB it is.
var levelBatchBytes = 1 << 20

// levelBatchBlocks is how many hash blocks of one level are handled at once.
func levelBatchBlocks(g *Geometry) uint64 {
	return uint64(max(1, levelBatchBytes/g.HashBlockSize))
}

// Build reads the g.DataBlocks data blocks from data, writes the superblock
// (if g.Superblock) and the tree to hash at the places g gives, and returns
// the root hash. Memory use is bounded by the number of jobs and the block
// sizes, not by the image size. Nothing outside the superblock and the tree
// (from g.HashOffset to g.HashEnd()) is written.
func Build(ctx context.Context, g *Geometry, data io.ReaderAt, hash io.WriterAt, opts *BuildOptions) ([]byte, error) {
	if opts == nil {
		opts = &BuildOptions{}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	runs, err := prepareRuns(g, opts.Runs)
	if err != nil {
		return nil, err
	}
	if g.Superblock {
		if err := writeSuperblock(g, hash); err != nil {
			return nil, err
		}
	}
	t := newTreeWriter(g, hash, opts.Jobs)
	err = forEachDataChunk(ctx, g, data, runs, opts.Jobs, func(c *dataChunk) error {
		if err := t.add(0, c.digests[:c.n*g.DigestSlot], c.n); err != nil {
			return err
		}
		if opts.Progress != nil {
			opts.Progress((c.first + uint64(c.n)) * uint64(g.DataBlockSize))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t.finish()
}

// writeSuperblock writes the superblock and zeroes the bytes between it and
// the tree, so a tree written into an existing file reads as veritysetup's.
func writeSuperblock(g *Geometry, w io.WriterAt) error {
	gap := g.TreeOffset() - g.HashOffset
	b := make([]byte, gap)
	copy(b, EncodeSuperblock(g))
	if _, err := w.WriteAt(b, int64(g.HashOffset)); err != nil {
		return fmt.Errorf("writing superblock: %w", err)
	}
	return nil
}

// dataChunk is one job: consecutive data blocks and their digests, at
// DigestSlot stride.
type dataChunk struct {
	first   uint64 // index of the first data block
	n       int
	digests []byte
	err     error
	done    chan struct{}
}

// chunkBlocks returns how many data blocks one job takes.
func chunkBlocks(g *Geometry) int {
	n := max(1, chunkBytes/g.DataBlockSize)
	if uint64(n) > g.DataBlocks {
		n = int(g.DataBlocks)
	}
	return n
}

// chunkWorker is what one hashing goroutine owns: its hasher and the buffer
// it reads into.
type chunkWorker struct {
	h   *hashes.BlockHasher
	buf []byte
}

func newChunkWorker(g *Geometry) *chunkWorker {
	return &chunkWorker{
		h:   g.Hash.NewBlockHasher(g.DataBlockSize, g.Salt, g.SaltPosition()),
		buf: make([]byte, readBlocks(g)*g.DataBlockSize),
	}
}

// readBlocks returns how many data blocks a worker reads at once.
func readBlocks(g *Geometry) int {
	return min(max(1, readBytes/g.DataBlockSize), chunkBlocks(g))
}

// hashChunk reads and hashes the blocks of c; blocks inside known runs get
// their run's digest without being read.
func (w *chunkWorker) hashChunk(g *Geometry, data io.ReaderAt, runs []knownRun, c *dataChunk) {
	if len(runs) == 0 {
		w.hashBlocks(g, data, c, 0, c.n)
		return
	}
	first, end := c.first, c.first+uint64(c.n)
	// The first run that ends after this chunk's first block.
	i := sort.Search(len(runs), func(i int) bool { return runs[i].end > first })
	slot := g.DigestSlot
	for pos := first; pos < end && c.err == nil; {
		if i < len(runs) && runs[i].start <= pos {
			stop := min(runs[i].end, end)
			for b := pos; b < stop; b++ {
				copy(c.digests[int(b-first)*slot:], runs[i].digest)
			}
			pos = stop
			i++
			continue
		}
		stop := end
		if i < len(runs) && runs[i].start < end {
			stop = runs[i].start
		}
		w.hashBlocks(g, data, c, int(pos-first), int(stop-first))
		pos = stop
	}
}

// hashBlocks reads and hashes blocks [from, to) of c (indexes in c), a
// buffer at a time.
func (w *chunkWorker) hashBlocks(g *Geometry, data io.ReaderAt, c *dataChunk, from, to int) {
	dbs := g.DataBlockSize
	per := len(w.buf) / dbs
	for ; from < to; from += per {
		n := min(per, to-from)
		buf := w.buf[:n*dbs]
		off := int64(c.first+uint64(from)) * int64(dbs)
		if got, err := data.ReadAt(buf, off); got < len(buf) {
			if err == nil || err == io.EOF {
				err = fmt.Errorf("%w: the data ends at byte %d, but the tree covers %d blocks of %d bytes (%d bytes)",
					io.ErrUnexpectedEOF, off+int64(got), g.DataBlocks, dbs, g.DataSize())
			}
			c.err = fmt.Errorf("reading data block %d: %w", c.first+uint64(from)+uint64(got/dbs), err)
			return
		}
		w.h.HashBlocks(c.digests[from*g.DigestSlot:], g.DigestSlot, buf)
	}
}

// forEachDataChunk hashes all data blocks of g in chunks on jobs goroutines
// and calls fn with each chunk, in order, from the calling goroutine. The
// chunk is reused after fn returns. Blocks in runs (see BuildOptions.Runs,
// already checked by prepareRuns) get their run's digest without a read.
func forEachDataChunk(ctx context.Context, g *Geometry, data io.ReaderAt, runs []knownRun, jobs int, fn func(*dataChunk) error) error {
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	per := chunkBlocks(g)
	nchunks := (g.DataBlocks + uint64(per) - 1) / uint64(per)
	if uint64(jobs) > nchunks {
		jobs = int(nchunks)
	}
	newChunk := func() *dataChunk {
		return &dataChunk{
			digests: make([]byte, per*g.DigestSlot),
			done:    make(chan struct{}, 1),
		}
	}
	setup := func(c *dataChunk, i uint64) {
		c.first = i * uint64(per)
		c.n = int(min(uint64(per), g.DataBlocks-c.first))
		c.err = nil
	}

	if jobs == 1 {
		c, w := newChunk(), newChunkWorker(g)
		for i := range nchunks {
			if err := ctx.Err(); err != nil {
				return err
			}
			setup(c, i)
			w.hashChunk(g, data, runs, c)
			if c.err != nil {
				return c.err
			}
			if err := fn(c); err != nil {
				return err
			}
		}
		return nil
	}

	// Ordered pipeline: the dispatcher queues chunks in order to inflight
	// and hands them to the workers; this goroutine waits for each in turn.
	// 2*jobs chunks circulate, which bounds memory.
	nbuf := 2 * jobs
	free := make(chan *dataChunk, nbuf)
	for range nbuf {
		free <- newChunk()
	}
	inflight := make(chan *dataChunk, nbuf)
	work := make(chan *dataChunk, nbuf)
	stop := make(chan struct{})
	go func() {
		defer close(inflight)
		defer close(work)
		for i := range nchunks {
			// select picks at random among ready cases: look at ctx first
			// so that a cancellation is not outrun by free chunks.
			if ctx.Err() != nil {
				return
			}
			var c *dataChunk
			select {
			case c = <-free:
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
			setup(c, i)
			inflight <- c // never blocks: at most nbuf chunks exist
			work <- c
		}
	}()
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newChunkWorker(g)
			for c := range work {
				w.hashChunk(g, data, runs, c)
				c.done <- struct{}{}
			}
		}()
	}

	var err error
	var seen uint64
	for c := range inflight {
		<-c.done
		if err == nil {
			err = c.err
			if err == nil {
				err = fn(c)
			}
			if err != nil {
				close(stop)
			}
			seen++
		}
		free <- c
	}
	wg.Wait()
	if err == nil && seen != nchunks {
		err = ctx.Err()
		if err == nil {
			err = errors.New("merkle: internal error: chunks missing")
		}
	}
	return err
}

// treeWriter receives digests level by level, fills hash blocks, writes
// them, and pushes their digests to the level above. It keeps at most
// levelBatchBytes of hash blocks per level.
type treeWriter struct {
	g      *Geometry
	w      io.WriterAt
	levels []*levelBuffer
	h      *levelHasher
	root   []byte
}

type levelBuffer struct {
	buf    []byte // batch hash blocks
	batch  uint64 // capacity in blocks
	first  uint64 // index in the level of buf's first block
	filled uint64 // digests received so far for this level
	next   []byte // digests of buf's blocks, for the level above
}

func newTreeWriter(g *Geometry, w io.WriterAt, jobs int) *treeWriter {
	t := &treeWriter{g: g, w: w, h: newLevelHasher(g, jobs)}
	perBatch := levelBatchBlocks(g)
	for i := range g.Levels {
		batch := min(perBatch, g.LevelBlocks[i])
		t.levels = append(t.levels, &levelBuffer{
			buf:   make([]byte, batch*uint64(g.HashBlockSize)),
			batch: batch,
			next:  make([]byte, batch*uint64(g.DigestSlot)),
		})
	}
	return t
}

// add appends n digests (at DigestSlot stride) to level; level == Levels
// means the digest is the root.
func (t *treeWriter) add(level Level, digests []byte, n int) error {
	g := t.g
	if level == g.TopLevel()+1 {
		if n != 1 || t.root != nil {
			return errors.New("merkle: internal error: more than one root")
		}
		t.root = append([]byte(nil), digests[:g.DigestSize]...)
		return nil
	}
	lb := t.levels[level]
	hpb := uint64(g.HashesPerBlock)
	slot := g.DigestSlot
	for n > 0 {
		block, idx := lb.filled/hpb, lb.filled%hpb
		if block >= lb.first+lb.batch {
			if err := t.flush(level); err != nil {
				return err
			}
		}
		take := min(uint64(n), hpb-idx)
		off := (block-lb.first)*uint64(g.HashBlockSize) + idx*uint64(slot)
		copy(lb.buf[off:off+take*uint64(slot)], digests)
		digests = digests[take*uint64(slot):]
		n -= int(take)
		lb.filled += take
	}
	return nil
}

// flush hashes and writes the blocks buffered for level (all that have
// received a digest), passes their digests up and empties the buffer.
func (t *treeWriter) flush(level Level) error {
	g := t.g
	lb := t.levels[level]
	hpb := uint64(g.HashesPerBlock)
	count := (lb.filled+hpb-1)/hpb - lb.first
	if count == 0 {
		return nil
	}
	blocks := lb.buf[:count*uint64(g.HashBlockSize)]
	t.h.HashBlocks(lb.next, g.DigestSlot, blocks)
	if _, err := t.w.WriteAt(blocks, int64(g.BlockOffset(level, lb.first))); err != nil {
		return fmt.Errorf("writing hash level %d: %w", level, err)
	}
	clear(blocks)
	lb.first += count
	return t.add(level+1, lb.next[:count*uint64(g.DigestSlot)], int(count))
}

// finish flushes every level from the bottom up and returns the root.
func (t *treeWriter) finish() ([]byte, error) {
	for level := range t.levels {
		lb := t.levels[level]
		if want := t.g.LevelBlocks[level] * uint64(t.g.HashesPerBlock); lb.filled > want {
			return nil, errors.New("merkle: internal error: level overfilled")
		}
		if err := t.flush(Level(level)); err != nil {
			return nil, err
		}
		if lb.first != t.g.LevelBlocks[level] {
			return nil, fmt.Errorf("merkle: internal error: level %d has %d blocks, want %d", level, lb.first, t.g.LevelBlocks[level])
		}
	}
	if t.root == nil {
		return nil, errors.New("merkle: internal error: no root")
	}
	return t.root, nil
}
